"""`ctxward drift`: which stuck-pattern signatures fired in a session (seed 002)."""

from __future__ import annotations

import os

import click

from ctxward.commands import echo_result, json_option, project_of
from ctxward.drift import tell


@click.command("drift")
@click.argument("session", required=False)
@click.option(
    "--transcript",
    "from_transcript",
    is_flag=True,
    help="Compute from the Claude Code transcript even when the hook logged the session.",
)
@json_option
@click.pass_context
def drift_command(
    ctx: click.Context, session: str | None, from_transcript: bool, as_json: bool
) -> None:
    """Show the drift signatures that fired in SESSION: when, and the evidence.

    SESSION is a session id (its hook log .ctxward/sessions/<id>.tools.jsonl, else its Claude
    Code transcript), or the path of a hook log or a transcript. Without it: the current
    session ($CLAUDE_CODE_SESSION_ID), else the newest hook log, else the project's newest
    transcript. A session that ran without the hook is computed from its transcript with the
    thresholds in force now. Writes nothing; exit 2 when no session is found.

    \b
    Example:
        ctxward drift
        ctxward drift 876f70ae-3637-4f57-b055-c61867a928f5 --json
        ctxward drift ~/.claude/projects/-home-me-repo/SESSION.jsonl
    """
    result = tell.report(
        project_of(ctx, anywhere=True), session, os.environ, from_transcript=from_transcript
    )
    echo_result(as_json, result, "drift/report.txt.j2", report=result)
