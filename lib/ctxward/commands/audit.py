"""`ctxward audit`: what fills the context window of a Claude Code session (seed 004 G0)."""

from __future__ import annotations

import os
from pathlib import Path

import click

from ctxward.commands import echo_json, echo_result, json_option, project_of
from ctxward.core.render import render


@click.command()
@click.argument("transcript", required=False, type=click.Path(path_type=Path))
@click.option("--top", default=10, show_default=True, type=click.IntRange(1, 1000))
@click.option("--summary", is_flag=True, help="Counts and the first names only (≤ 2 KB).")
@click.option("--html", "html_file", type=click.Path(path_type=Path), help="Also write a page.")
@click.option("--no-subagents", is_flag=True, help="Skip <session>/subagents/ transcripts.")
@json_option
@click.pass_context
def audit(
    ctx: click.Context,
    transcript: Path | None,
    top: int,
    summary: bool,
    html_file: Path | None,
    no_subagents: bool,
    as_json: bool,
) -> None:
    """Report what fills the context: top groups by tool and key, per compaction segment,
    and the context size of every request. Read-only and fail-soft: a missing, unreadable or
    foreign file gives {"available": false, "reason": ...} and exit 0; so does anything but a
    regular file (a FIFO, a device: never waited on) and a file past 2 GiB.

    TRANSCRIPT defaults to the current session's ($CLAUDE_CODE_SESSION_ID), else the newest
    one of this project under ~/.claude/projects/.

    \b
    Example:
        ctxward audit --summary --json
        ctxward audit ~/.claude/projects/-home-me-repo/SESSION.jsonl --html audit.html
    """
    from ctxward.transcript import audit as transcript_audit
    from ctxward.transcript import reader
    from ctxward.transcript import report as transcript_report

    path = transcript or reader.find_transcript(project_of(ctx, anywhere=True).root, os.environ)
    try:
        if path is None:
            folder = reader.projects_dir(os.environ)
            raise FileNotFoundError(f"no transcript of this project under {folder}")
        result = transcript_audit.audit(path, top=top, subagents=not no_subagents)
    except (OSError, transcript_audit.NotATranscript) as exc:
        reason = str(exc) if isinstance(exc, transcript_audit.NotATranscript) else _os_reason(exc)
        echo_result(
            as_json,
            transcript_audit.unavailable(reason),
            "transcript/audit_unavailable.txt.j2",
            reason=reason,
        )
        return
    if html_file is not None:
        from ctxward.core.fsutil import atomic_write

        page = render("transcript/audit_report.html.j2", page=transcript_report.page_model(result))
        # The user named it: their own links on the way are theirs to follow (`out.html` too).
        atomic_write(html_file.parent.resolve() / html_file.name, page)
    if summary:
        body = transcript_report.summary(result, names=top)
        echo_result(as_json, body, "transcript/audit_summary.txt.j2", s=body)
    elif as_json:
        echo_json(result.as_dict())
    else:
        model = transcript_report.text_model(result.as_dict())
        click.echo(render("transcript/audit_report.txt.j2", audit=model, top_segment=5), nl=False)


def _os_reason(exc: OSError) -> str:
    if exc.filename:
        return f"{exc.filename}: {exc.strerror or exc}"
    return str(exc)
