"""G0: the cap on a sub-agent's final report, enforced by the SubagentStop hook.

A final report longer than 40 lines or 2 KB fills the orchestrator's window (seed 004 G0: 20
reports ≈ 60 KB). When a sub-agent stops with one, its full text is written (scrubbed) as an
artifact with an ArtifactMeta record, and — under ``reports.enforce: block``, the default — the
stop is blocked once with a reason that names the file and asks for a ≤ 40-line summary that
references it. ``offload`` only records; ``off`` does nothing.

Never blocked: the compaction agent (Claude Code fires SubagentStop for its own summarizer with
``agent_type`` "", and older versions send no agent_type at all), a stop that already continues
from a stop hook (``stop_hook_active``), and an agent whose previous stop we blocked: never twice
in a row. Standard library only until a report is actually over the cap.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from ctxward.core.project import Project
from ctxward.core.values import Value

MAX_LINES = 40
MAX_BYTES = 2048
REPORTS_BATCH = "reports"
_MARKERS = "report-cap"  # .ctxward/report-cap/<session>/<agent>.json: did we block it last time?


class Size(Value):
    lines: int
    bytes: int

    @property
    def over(self) -> bool:
        """True when the report is longer than 40 lines or 2 KB."""
        return self.lines > MAX_LINES or self.bytes > MAX_BYTES


def measure(text: str) -> Size:
    """Lines (a trailing newline does not start a line) and UTF-8 bytes of `text`."""
    return Size(len(text.splitlines()), len(text.encode("utf-8")))


def final_report(data: Mapping[str, Any]) -> str:
    """`last_assistant_message`, else the last assistant text of `agent_transcript_path`."""
    message = data.get("last_assistant_message")
    if isinstance(message, str) and message.strip():
        return message
    path = data.get("agent_transcript_path")
    if not isinstance(path, str) or not path:
        return ""
    from ctxward.transcript.reader import last_assistant_text

    return last_assistant_text(os.path.expanduser(path))


class CapResult(Value):
    """What the cap did: 'exempt', 'off', 'under', 'recorded' or 'blocked'."""

    action: str
    size: Size | None = None
    path: Path | None = None  # the artifact holding the full report
    sha256: str | None = None
    reason: str | None = None  # the block reason sent to the sub-agent

    @property
    def blocks(self) -> bool:
        """Whether the stop is blocked (with `reason` for the sub-agent)."""
        return self.action == "blocked" and self.reason is not None


def _text(data: Mapping[str, Any], key: str) -> str:
    value = data.get(key)
    return value if isinstance(value, str) else ""


def enforce_cap(
    project: Project, data: Mapping[str, Any], *, now: datetime | None = None
) -> CapResult:
    """Apply the report cap to one SubagentStop payload (see the module doc)."""
    agent_type = _text(data, "agent_type")
    if not agent_type:
        return CapResult("exempt")
    report = final_report(data)
    size = measure(report)
    if not size.over:
        _forget_block(project, data)
        return CapResult("under", size)
    from ctxward.core.config import load

    mode = load(project).reports.enforce
    if mode == "off":
        return CapResult("off", size)
    from ctxward.subagents.artifacts import safe_name, save_text_artifact

    session = safe_name(_text(data, "session_id"), "unknown-session")
    agent_id = safe_name(_text(data, "agent_id"), "agent")
    saved = save_text_artifact(
        project,
        session,
        report,
        rid=agent_id,
        role=safe_name(agent_type, "agent"),
        batch=REPORTS_BATCH,
        now=now,
    )
    full_path = (project.root / saved.meta.path).resolve()
    blocked_before = _blocked_last_time(project, session, agent_id)
    if mode != "block" or data.get("stop_hook_active") is True or blocked_before:
        _remember(project, session, agent_id, blocked=False)
        return CapResult("recorded", size, full_path, saved.meta.sha256)
    from ctxward.core.render import render

    reason = render(
        "subagents/report_cap.md.j2",
        lines=size.lines,
        kb=f"{size.bytes / 1024:.1f}",
        max_lines=MAX_LINES,
        max_kb=MAX_BYTES // 1024,
        path=str(full_path),
        sha256=saved.meta.sha256,
    ).strip()
    _remember(project, session, agent_id, blocked=True)
    return CapResult("blocked", size, full_path, saved.meta.sha256, reason)


def _marker(project: Project, session: str, agent_id: str) -> Path:
    return project.state_dir / _MARKERS / session / f"{agent_id}.json"


def _blocked_last_time(project: Project, session: str, agent_id: str) -> bool:
    from ctxward.core.fsutil import read_regular

    try:
        state = json.loads(read_regular(_marker(project, session, agent_id)).decode("utf-8"))
    except (OSError, ValueError, RecursionError):  # a FIFO too: never waited on
        return False
    return isinstance(state, dict) and state.get("blocked") is True


def _remember(project: Project, session: str, agent_id: str, *, blocked: bool) -> None:
    from ctxward.core.fsutil import atomic_write

    atomic_write(_marker(project, session, agent_id), json.dumps({"blocked": blocked}) + "\n")


def _forget_block(project: Project, data: Mapping[str, Any]) -> None:
    """After a short report, the next long one may be blocked again (only when we blocked)."""
    agent_id = _text(data, "agent_id")
    if not agent_id or not (project.state_dir / _MARKERS).is_dir():
        return
    from ctxward.subagents.artifacts import safe_name

    session = safe_name(_text(data, "session_id"), "unknown-session")
    agent = safe_name(agent_id, "agent")
    if _blocked_last_time(project, session, agent):
        _remember(project, session, agent, blocked=False)
