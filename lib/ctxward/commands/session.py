"""`ctxward session`: seed 001 session compression, by hand (PreCompact does it on its own)."""

from __future__ import annotations

import os
from pathlib import Path

import click

from ctxward.commands import Group, echo_json, echo_result, json_option, project_of
from ctxward.core.project import Project
from ctxward.errors import BadInput
from ctxward.sessions import budget, extract, recovery, store


@click.group(cls=Group)
def session() -> None:
    """Compress a Claude Code session into a ≤ 200-token summary.

    \b
    Example:
        ctxward session summarize
        ctxward session stats --json
    """


transcript_argument = click.argument(
    "transcript", required=False, type=click.Path(path_type=Path, dir_okay=False)
)


def _transcript(project: Project, given: Path | None) -> Path:
    """TRANSCRIPT, else the current session's, else the project's newest; BadInput if none."""
    from ctxward.transcript import reader

    path = given or reader.find_transcript(project.root, os.environ)
    if path is None:
        folder = reader.projects_dir(os.environ)
        raise BadInput(f"no transcript of this project under {folder}; name one")
    if not path.exists():
        raise BadInput(f"{path}: no such file")
    return path  # a FIFO, a device, a folder: refused when opened (`_summarize`), never awaited


def _summarize(path: Path, session_id: str = "") -> tuple[extract.Extraction, budget.Summary]:
    try:
        return store.summarize(path, session_id)
    except OSError as exc:
        raise BadInput(f"{path}: {exc.strerror or exc}") from None


@session.command("summarize")
@transcript_argument
@click.option("--session-id", help="Name the summary by this id (default: the transcript's).")
@json_option
@click.pass_context
def summarize_command(
    ctx: click.Context, transcript: Path | None, session_id: str | None, as_json: bool
) -> None:
    """Summarize TRANSCRIPT and write .ctxward/sessions/<session id>.yaml.

    TRANSCRIPT defaults to the current session's ($CLAUDE_CODE_SESSION_ID), else the newest
    one of this project under ~/.claude/projects/. Prints the YAML that was written; --json
    prints {"path", "session_summary", "overflow", "dropped", "stats"}.

    \b
    Example:
        ctxward session summarize
        ctxward session summarize ~/.claude/projects/-home-me-repo/SESSION.jsonl --json
    """
    project = project_of(ctx)
    path = _transcript(project, transcript)
    extraction, summary = _summarize(path, session_id or "")
    written = store.write(project, summary, path)
    if as_json:
        echo_json(
            {
                "path": project.relative(written.path),
                "session_summary": recovery.as_dict(summary),
                "dropped": {name: list(items) for name, items in summary.dropped.items()},
                "overflow": {name: list(items) for name, items in summary.overflow.items()},
                "stats": recovery.stats(extraction, summary, path),
            }
        )
    else:
        from ctxward.core.fsutil import read_regular_text

        click.echo(read_regular_text(written.path), nl=False)
        click.echo(f"ctxward: wrote {project.relative(written.path)}", err=True)


@session.command("stats")
@transcript_argument
@json_option
@click.pass_context
def stats_command(ctx: click.Context, transcript: Path | None, as_json: bool) -> None:
    """Print the compression ratio and the counts per category; writes nothing.

    \b
    Example:
        ctxward session stats --json
    """
    path = _transcript(project_of(ctx, anywhere=True), transcript)
    extraction, summary = _summarize(path)
    body = recovery.stats(extraction, summary, path)
    echo_result(as_json, body, "sessions/cli_stats.txt.j2", stats=body)
