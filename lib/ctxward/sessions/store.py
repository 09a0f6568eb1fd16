"""The summary file: `.ctxward/sessions/<session>.yaml`, written atomically and read back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ctxward.core.project import Project
from ctxward.core.sessionfiles import summary_path
from ctxward.core.values import Value
from ctxward.errors import BadInput
from ctxward.sessions.budget import Summary, compress, render_block, yaml_quoted
from ctxward.sessions.extract import Extraction, extract
from ctxward.sessions.patterns import CRITICAL


class Written(Value):
    path: Path
    summary: Summary
    changed: bool


def render_file(summary: Summary, transcript: Path | None = None) -> str:
    """The whole `.ctxward/sessions/<id>.yaml`: the summary, its source, what the budget cut."""
    from ctxward.core.render import render
    from ctxward.core.scrub import scrub

    source = None
    if transcript is not None:
        source = {"transcript": yaml_quoted(str(transcript))}
    dropped = {
        name: [yaml_quoted(item) for item in items] for name, items in summary.dropped.items()
    }
    overflow = {
        name: [yaml_quoted(item) for item in items] for name, items in summary.overflow.items()
    }
    text = render(
        "sessions/summary_file.yaml.j2",
        block=render_block(summary),
        source=source,
        dropped=dropped,
        overflow=overflow,
        budget=summary.budget,
    )
    return scrub(text)[0]


def _validate(data: bytes) -> None:
    import yaml

    loaded = yaml.safe_load(data.decode("utf-8"))
    if not isinstance(loaded, dict) or not isinstance(loaded.get("session_summary"), dict):
        raise BadInput("session summary: the file did not read back as YAML with session_summary")


def summarize(path: Path, session_id: str = "") -> tuple[Extraction, Summary]:
    extraction = extract(path, session_id)
    return extraction, compress(extraction)


def write(project: Project, summary: Summary, transcript: Path | None = None) -> Written:
    """Write the summary to `.ctxward/sessions/<session id>.yaml` (atomic, locked, idempotent)."""
    from ctxward.core.fsutil import atomic_write, locked

    path = summary_path(project, summary.session_id)
    text = render_file(summary, transcript)
    with locked(path, project.locks_dir):
        changed = atomic_write(path, text, validate=_validate)
    return Written(path, summary, changed)


def write_from_hook(project: Project, session_id: str, transcript_path: str) -> Written | None:
    """PreCompact / SessionEnd: summarize the payload's transcript; None when there is none."""
    if not transcript_path:
        return None
    path = Path(transcript_path)
    if not path.is_file():
        return None
    _, summary = summarize(path, session_id)
    if summary.is_empty() and not summary_path(project, summary.session_id).exists():
        return None  # nothing worth a file (a greeting, a /compact of nothing)
    return write(project, summary, path)


def read(project: Project, session_id: str) -> Summary | None:
    """The session's summary from disk; None when there is none or it is not one."""
    path = summary_path(project, session_id)
    from ctxward.core.fsutil import read_regular

    try:
        text = read_regular(path).decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    import yaml

    try:
        loaded = yaml.safe_load(text)
    except (yaml.YAMLError, ValueError, RecursionError):  # not ours, an integer too long, too deep
        return None
    return _from_yaml(loaded)


def _strings(value: object) -> tuple[str, ...]:
    if not isinstance(value, list):
        return ()
    return tuple(str(item) for item in value if isinstance(item, (str, int, float)))


def _from_yaml(loaded: object) -> Summary | None:
    if not isinstance(loaded, dict) or not isinstance(loaded.get("session_summary"), dict):
        return None
    block: dict[str, Any] = loaded["session_summary"]
    user = block.get("user")
    user = user if isinstance(user, dict) else {}
    architecture = block.get("architecture")
    architecture = architecture if isinstance(architecture, dict) else {}
    stack = architecture.get("stack")
    counts = (block.get("token_count"), block.get("compressed_tokens"))
    held = loaded.get("overflow")
    held = held if isinstance(held, dict) else {}
    overflow = {name: _strings(held.get(name)) for name in CRITICAL if _strings(held.get(name))}
    return Summary(
        session_id=str(block.get("session_id") or ""),
        duration=str(block.get("duration") or ""),
        token_count=counts[0] if isinstance(counts[0], int) else 0,
        decisions=_strings(block.get("decisions")),
        errors_and_fixes=_strings(block.get("errors_and_fixes")),
        action_items=_strings(block.get("action_items")),
        level=str(user.get("level") or ""),
        preferences=_strings(user.get("preferences")),
        pattern=str(architecture.get("pattern") or ""),
        stack=tuple(s.strip() for s in stack.split(",") if s.strip())
        if isinstance(stack, str)
        else (),
        skill_updates=_strings(block.get("skill_updates")),
        patterns=_strings(block.get("patterns")),
        compressed_tokens=counts[1] if isinstance(counts[1], int) else 0,
        overflow=overflow,
    )
