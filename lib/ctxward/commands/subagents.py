"""Sub-agent context economy commands: artifact record/path, reduce (G7); share, shared-read,
heartbeat (G8). Thin: parse options, call ctxward.subagents.artifacts, echo a template or JSON."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import click

from ctxward.commands import Group, echo_json, json_option, project_of
from ctxward.commands.scrub import read_source
from ctxward.core.fsutil import ensure_folder
from ctxward.core.render import render
from ctxward.errors import BadInput, CtxwardError

F = TypeVar("F", bound=Callable[..., Any])

session_option = click.option(
    "--session",
    "session",
    metavar="SID",
    help="Session id (default: $CLAUDE_CODE_SESSION_ID, else 'local').",
)


def _session(session: str | None) -> str:
    from ctxward.subagents.artifacts import resolve_session

    return resolve_session(session, os.environ)


def json_errors(command: F) -> F:
    """With --json, an expected failure is also a JSON envelope on stdout: {ok: false, error}."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except CtxwardError as exc:
            if kwargs.get("as_json"):
                default = "BAD_INPUT" if isinstance(exc, BadInput) else "ERROR"
                code = str(getattr(exc, "code", default))
                echo_json({"ok": False, "error": {"code": code, "message": str(exc)}})
            raise

    return wrapper  # type: ignore[return-value]


def _warn(warnings: Iterable[Any]) -> None:
    for warning in warnings:
        text = render("subagents/warning.txt.j2", code=warning.code, message=warning.message)
        click.echo(text, nl=False, err=True)


def _echo_warned(
    as_json: bool, data: dict[str, Any], warnings: Sequence[Any], template: str, **fields: Any
) -> None:
    """`data` as JSON with "ok" and the warnings; or the warnings on stderr, then `template`."""
    if as_json:
        echo_json({"ok": True, **data, "warnings": warnings})
        return
    _warn(warnings)
    click.echo(render(template, **fields), nl=False)


@click.group(cls=Group)
def artifact() -> None:
    """Record sub-agent artifacts as metadata: the content stays on disk.

    \b
    Example:
        ctxward artifact record .ctxward/sub_agents/local/artifacts/003-rd-001.md \\
            --role rd --rid 003 --idx 1 --summary "wrote the RD tech doc"
    """


@artifact.command("record")
@click.argument("path", type=click.Path(path_type=Path, dir_okay=True))
@click.option("--role", required=True, help="The sub-agent's role (rd, qa-perf, ...).")
@click.option("--rid", required=True, help="The request id the artifact answers (003, ...).")
@click.option("--idx", required=True, type=int, help="The artifact's index for this role.")
@click.option("--batch", help="The batch it belongs to (default: the rid).")
@click.option("--summary", help="At most 200 characters; the reducer view shows it.")
@click.option(
    "--status",
    type=click.Choice(["created", "finalized", "partial", "failed"]),
    default="finalized",
    show_default=True,
)
@session_option
@json_option
@click.pass_context
@json_errors
def artifact_record(
    ctx: click.Context,
    path: Path,
    role: str,
    rid: str,
    idx: int,
    batch: str | None,
    summary: str | None,
    status: str,
    session: str | None,
    as_json: bool,
) -> None:
    """Hash PATH and write its ArtifactMeta record (path, size, sha256, status, summary).

    With --json, prints the ArtifactMeta itself: share it as '<role>.completed'.

    \b
    Example:
        ctxward artifact record out/003-rd-001.md --role rd --rid 003 --idx 1 --json
    """
    from ctxward.core.text import size_text_compact
    from ctxward.subagents.artifacts import record_artifact

    project = project_of(ctx)
    recorded = record_artifact(
        project,
        _session(session),
        path,
        rid=rid,
        role=role,
        idx=idx,
        batch=batch,
        summary=summary,
        status=status,
    )
    _warn(recorded.warnings)
    if as_json:
        echo_json(recorded.meta.as_dict())
        return
    text = render(
        "subagents/artifact_record.txt.j2",
        meta=recorded.meta,
        size=size_text_compact(recorded.meta.size),
        batch=recorded.batch,
        record=project.relative(recorded.record_path),
    )
    click.echo(text, nl=False)


@artifact.command("path")
@click.option("--role", required=True, help="The sub-agent's role.")
@click.option("--rid", required=True, help="The request id.")
@click.option("--idx", required=True, type=int, help="The artifact's index for this role.")
@click.option("--ext", default="md", show_default=True, help="The file extension.")
@session_option
@click.pass_context
@json_errors
def artifact_path_command(
    ctx: click.Context, role: str, rid: str, idx: int, ext: str, session: str | None
) -> None:
    """Print where the artifact <rid>-<role>-<idx>.<ext> belongs (the folder is created).

    \b
    Example:
        ctxward artifact path --rid 003 --role rd --idx 1
    """
    from ctxward.subagents.artifacts import artifact_path

    project = project_of(ctx)
    path = artifact_path(project, _session(session), rid, role, idx, ext)
    ensure_folder(path.parent)
    click.echo(render("subagents/artifact_path.txt.j2", path=project.relative(path)), nl=False)


@click.command()
@click.option("--batch", required=True, help="The batch to reduce.")
@session_option
@json_option
@click.pass_context
@json_errors
def reduce(ctx: click.Context, batch: str, session: str | None, as_json: bool) -> None:
    """The orchestrator's view of a batch: one line of metadata per sub-agent, no content.

    \b
    Example:
        ctxward reduce --batch 003
    """
    from ctxward.subagents.batch import load_batch, reducer_view

    project = project_of(ctx)
    found = load_batch(project, _session(session), batch)
    view = reducer_view(project, found)
    if as_json:
        echo_json(
            {
                "ok": True,
                "session": found.session,
                "batch": found.batch,
                "done": found.done,
                "total": found.total,
                "elapsedSeconds": round(found.elapsed_seconds, 1),
                "artifacts": [item.meta.as_dict() for item in found.artifacts],
                "waiting": found.roles_without_artifact,
                "unreadable": found.unreadable,
                "view": view,
            }
        )
    else:
        click.echo(view, nl=False)


@click.command()
@click.option("--batch", required=True, help="The batch whose channel to write.")
@click.option("--key", required=True, help="The entry's key, e.g. rd.completed.")
@click.option("--value", required=True, help="A JSON value ('-' reads it from stdin).")
@session_option
@json_option
@click.pass_context
@json_errors
def share(
    ctx: click.Context, batch: str, key: str, value: str, session: str | None, as_json: bool
) -> None:
    """Write KEY=VALUE to the batch's shared channel; the last write of a key wins.

    Values of 1 KB or more draw a warning; 64 KB or more are refused (exit 2, nothing written).

    \b
    Example:
        ctxward share --batch 003 --key rd.found-blocker --value '{"reason": "no schema"}'
    """
    from ctxward.subagents.channel import share as share_value

    project = project_of(ctx)
    text = read_source("-") if value == "-" else value
    shared = share_value(project, _session(session), batch, key, text)
    data = {
        "batch": shared.batch,
        "key": shared.key,
        "bytes": shared.bytes,
        "writtenAt": shared.written_at,
        "replaced": shared.replaced,
        "path": project.relative(shared.path),
    }
    _echo_warned(as_json, data, shared.warnings, "subagents/share.txt.j2", **data)


@click.command("shared-read")
@click.option("--batch", required=True, help="The batch whose channel to read.")
@click.option("--since", metavar="ISO", help="Only entries written at or after this time.")
@click.option("--key", "key_glob", metavar="GLOB", help="Only keys matching GLOB ('*' wildcard).")
@session_option
@json_option
@click.pass_context
@json_errors
def shared_read(
    ctx: click.Context,
    batch: str,
    since: str | None,
    key_glob: str | None,
    session: str | None,
    as_json: bool,
) -> None:
    """Read the batch's shared entries, oldest first.

    \b
    Example:
        ctxward shared-read --batch 003 --key '*.completed' --json
    """
    from ctxward.subagents.channel import shared_read as read_entries

    project = project_of(ctx)
    entries = read_entries(project, _session(session), batch, since=since, key_glob=key_glob)
    if as_json:
        echo_json({"ok": True, "batch": batch, "count": len(entries), "entries": entries})
        return
    text = render(
        "subagents/shared_read.txt.j2",
        batch=batch,
        entries=entries,
        filtered=bool(since or key_glob),
    )
    click.echo(text, nl=False)


@click.command()
@click.option("--batch", required=True, help="The sub-agent's batch.")
@click.option("--role", required=True, help="The sub-agent's role.")
@click.option(
    "--status",
    type=click.Choice(["started", "running", "done", "failed"]),
    required=True,
)
@session_option
@json_option
@click.pass_context
@json_errors
def heartbeat(
    ctx: click.Context, batch: str, role: str, status: str, session: str | None, as_json: bool
) -> None:
    """Report a sub-agent's status; 'done' warns COMPLETED_WITHOUT_SHARE when
    '<role>.completed' was not shared first.

    \b
    Example:
        ctxward heartbeat --batch 003 --role rd --status done
    """
    from ctxward.subagents.channel import heartbeat as beat

    project = project_of(ctx)
    result = beat(project, _session(session), batch, role, status)
    data = {"batch": result.batch, "role": result.role, "status": result.status, "at": result.at}
    _echo_warned(as_json, data, result.warnings, "subagents/heartbeat.txt.j2", **data)


COMMANDS = (artifact, reduce, share, shared_read, heartbeat)
