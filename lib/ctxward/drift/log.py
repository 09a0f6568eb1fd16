"""Reading a session back (`ctxward drift`; not the hook path): the call log and a transcript."""

from __future__ import annotations

from ctxward.core import hotjson
from ctxward.core.confine import refuse_links_to
from ctxward.core.drift_settings import SIGNATURES, default_limits
from ctxward.core.sessionfiles import SESSIONS_DIRNAME, safe_id
from ctxward.drift.machine import Tracker
from ctxward.drift.observe import json_objects, open_state_file
from ctxward.drift.signatures import LOG_SUFFIX, NAMES, STATE_SUFFIX, entry

# `typing.TYPE_CHECKING` without importing typing: this module is on the PostToolUse hot path.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping
    from pathlib import Path
    from typing import Any

    from ctxward.core.project import Project


def sessions_folder(project: Project) -> Path:
    return project.state_dir / SESSIONS_DIRNAME


def log_path(project: Project, session_id: str) -> Path:
    return sessions_folder(project) / f"{safe_id(session_id)}{LOG_SUFFIX}"


def newest_log(project: Project) -> Path | None:
    folder = sessions_folder(project)
    if not folder.is_dir():
        return None
    logs = [p for p in folder.glob(f"*{LOG_SUFFIX}") if p.is_file()]
    return max(logs, key=lambda p: p.stat().st_mtime, default=None)


def iter_log(path: Path) -> Iterator[dict[str, Any]]:
    """The JSON-object lines of a hook log (a partial last line is skipped)."""
    refuse_links_to(path, OSError)  # a planted sessions link is not read through
    with open(open_state_file(path), "rb") as handle:
        yield from json_objects(handle)


def read_log(project: Project, path: Path) -> dict[str, Any]:
    """What the hook observed in one session: calls, every signature that fired, when."""
    calls = 0
    failures = 0
    firings: list[dict[str, Any]] = []
    for line in iter_log(path):
        if isinstance(line.get("tool"), str):
            calls += 1
            failures += 0 if line.get("ok") else 1
        elif isinstance(line.get("drift"), str) and line["drift"] in SIGNATURES:
            evidence = line.get("evidence")
            firings.append(
                {
                    "signature": line["drift"],
                    "name": NAMES[line["drift"]],
                    "call": line.get("n"),
                    "time": _iso(line.get("t")),
                    "evidence": public_evidence(evidence) if isinstance(evidence, dict) else {},
                    "label": "",
                }
            )
    name = path.name[: -len(LOG_SUFFIX)]
    active: list[str] = []
    state = path.with_name(name + STATE_SUFFIX)
    try:
        with open(open_state_file(state), "rb") as handle:
            saved = hotjson.loads(handle.read())
        if isinstance(saved, dict) and isinstance(saved.get("active"), list):
            active = [a for a in saved["active"] if isinstance(a, str) and a in SIGNATURES]
    except (OSError, ValueError, RecursionError):  # a damaged cache: the log alone speaks
        pass
    return {
        "session": name,
        "source": "hook log",
        "path": project.relative(path),
        "calls": calls,
        "failures": failures,
        "firings": firings,
        "active": active,
    }


def analyze_transcript(
    project: Project, path: Path, limits: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The same signatures computed from a Claude Code transcript (a session without the hook).

    Calls are observed in the order their results arrive (`is_error` = failed); the model's
    text blocks feed silence drift. Sub-agent records (`isSidechain`) are left out.
    """
    from ctxward.transcript import reader

    tracker = Tracker(limits if limits is not None else default_limits())
    tracker.quiet = 0  # a transcript shows the model's text
    open_calls: dict[str, tuple[str, dict[str, Any]]] = {}
    firings: list[dict[str, Any]] = []
    failures = 0
    session = ""
    root = str(project.root)
    for record in reader.iter_records(path, types={"assistant", "user"}):
        message = record.message
        if message is None or record.is_sidechain or record.is_api_error:
            continue
        session = session or record.session_id
        root = record.cwd or root  # file paths are shown relative to the session's folder
        if record.type == "assistant":
            if message.text.strip():
                tracker.text()
            for use in message.tool_uses:
                if len(open_calls) >= reader.MAX_OPEN_TOOL_USES:
                    open_calls.pop(next(iter(open_calls)))
                open_calls[use.id] = (use.name, use.input)
            continue
        for result in message.tool_results:
            opened = open_calls.pop(result.tool_use_id, None)
            if opened is None:
                continue
            tool, params = opened
            failures += 1 if result.is_error else 0
            call = entry(tool, params, not result.is_error, result.tool_use_id, root)
            for report in tracker.observe(call):
                firings.append(
                    {
                        "signature": report["signature"],
                        "name": NAMES[report["signature"]],
                        "call": report["n"],
                        "time": record.timestamp or None,
                        "evidence": public_evidence(report["evidence"]),
                        "label": describe(tool, params, root)
                        if report["evidence"].get("id") in (None, result.tool_use_id)
                        else "",
                    }
                )
    return {
        "session": session or path.stem,
        "source": "transcript",
        "path": str(path),
        "calls": tracker.n,
        "failures": failures,
        "firings": firings,
        "active": list(tracker.active),
    }


def public_evidence(evidence: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in evidence.items() if key not in ("id", "args")}


def _iso(stamp: object) -> str | None:
    if isinstance(stamp, bool) or not isinstance(stamp, (int, float)):
        return None
    from datetime import datetime, timezone

    moment = datetime.fromtimestamp(float(stamp), tz=timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def describe(tool: str, tool_input: object, root: str = "") -> str:
    """What a call is about (the command, file or pattern), one line, scrubbed of secrets."""
    from ctxward.core.scrub import scrub
    from ctxward.transcript.measure import tool_key

    params = tool_input if isinstance(tool_input, dict) else {}
    # Scrubbed before tool_key shortens them: a secret cut in half would no longer be found.
    clean = {
        key: scrub(value)[0] if isinstance(value, str) else value
        for key, value in params.items()
        if key in _LABEL_KEYS
    }
    label = tool_key(tool, clean, root)
    if not label:
        value = clean.get("filePath")
        label = value if isinstance(value, str) else ""
    return label


_LABEL_KEYS = frozenset(
    {
        "file_path",
        "notebook_path",
        "filePath",
        "path",
        "command",
        "url",
        "query",
        "pattern",
        "subagent_type",
        "skill",
    }
)
