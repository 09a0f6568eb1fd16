"""Survival reports: which active invariants a compaction summary carried, on disk as JSON."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path

from ctxward.fsutil import atomic_write, sha256_hex
from ctxward.invariants import RuleRef, check_survival
from ctxward.project import Project

_SAFE_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")


def report_name(session_id: str, moment: datetime) -> str:
    """`<session_id>-<UTC timestamp>.json`; an id unsafe as a file name is replaced by its hash."""
    safe = session_id if _SAFE_ID.fullmatch(session_id) else "id-" + sha256_hex(session_id)[:16]
    return f"{safe}-{moment.strftime('%Y%m%dT%H%M%S%fZ')}.json"


def write_report(
    project: Project,
    rules: Sequence[RuleRef],
    *,
    session_id: str,
    trigger: str,
    compact_summary: str,
    now: datetime | None = None,
) -> Path:
    """Check `rules` against the summary and write the report; return its path."""
    moment = (now or datetime.now(timezone.utc)).astimezone(timezone.utc)
    survived, missing = check_survival(rules, compact_summary)
    report = {
        "session_id": session_id,
        "trigger": trigger,
        "checked_at": moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        "survived": [asdict(ref) for ref in survived],
        "missing": [asdict(ref) for ref in missing],
    }
    path = project.compactions_dir / report_name(session_id, moment)
    atomic_write(path, json.dumps(report, ensure_ascii=False, indent=2) + "\n", validate=json.loads)
    return path


def latest_reports(project: Project, limit: int = 10) -> list[Path]:
    """The newest survival reports first."""
    if not project.compactions_dir.is_dir():
        return []
    paths = sorted(project.compactions_dir.glob("*.json"), key=lambda p: p.stat().st_mtime)
    return paths[::-1][:limit]
