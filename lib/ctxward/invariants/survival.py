"""Survival reports: which active invariants a compaction summary carried, on disk as JSON."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ctxward.core.fsutil import atomic_write, read_regular
from ctxward.core.project import Project
from ctxward.invariants.model import RuleRef
from ctxward.invariants.verdicts import KEPT, Verdict, grade


def report_name(session_id: str, moment: datetime) -> str:
    """`<session_id>-<UTC timestamp>.json`; an id unsafe as a file name is replaced by its hash."""
    from ctxward.core.sessionfiles import safe_id

    return f"{safe_id(session_id)}-{moment.strftime('%Y%m%dT%H%M%S%fZ')}.json"


def write_report(
    project: Project,
    rules: Sequence[RuleRef],
    *,
    session_id: str,
    trigger: str,
    compact_summary: str,
    now: datetime | None = None,
    verdicts: Sequence[Verdict] | None = None,
) -> Path:
    """Grade `rules` against the summary and write the report; return its path.

    `verdicts`: when the caller has graded them already (PostCompact, which also restates the
    altered and lost ones). `survived` lists the kept rules, `missing` the altered and lost
    ones (what is restated); `verdicts` every rule with its verdict, why, and fingerprint.
    """
    moment = (now or datetime.now(timezone.utc)).astimezone(timezone.utc)
    graded = list(grade(rules, compact_summary) if verdicts is None else verdicts)
    report = {
        "session_id": session_id,
        "trigger": trigger,
        "checked_at": moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        "survived": [_scrubbed(v.ref) for v in graded if v.verdict == KEPT],
        "missing": [_scrubbed(v.ref) for v in graded if v.verdict != KEPT],
        "verdicts": [_verdict_row(v) for v in graded],
    }
    path = project.compactions_dir / report_name(session_id, moment)
    atomic_write(path, _dump(report), validate=json.loads)
    return path


def _scrubbed(ref: RuleRef) -> dict[str, str]:
    """The rule as a report row, with any secret a hand-edited plan file held redacted."""
    from ctxward.core.scrub import redact

    return {key: redact(value) for key, value in ref.as_dict().items()}


def _verdict_row(verdict: Verdict) -> dict[str, str]:
    from ctxward.core.fingerprint import short
    from ctxward.core.scrub import redact

    return {
        **_scrubbed(verdict.ref),
        "fingerprint": short(verdict.ref.fingerprint),
        "verdict": verdict.verdict,
        "why": redact(verdict.why),
    }


def _dump(report: Mapping[str, object]) -> str:
    """Indented JSON with one rule per line, so a report reads (and diffs) like a list."""
    lines = []
    for key, value in report.items():
        if isinstance(value, list):
            rows = ",\n".join(f"    {json.dumps(row, ensure_ascii=False)}" for row in value)
            lines.append(
                f"  {json.dumps(key)}: [\n{rows}\n  ]" if rows else f"  {json.dumps(key)}: []"
            )
        else:
            lines.append(f"  {json.dumps(key)}: {json.dumps(value, ensure_ascii=False)}")
    return "{\n" + ",\n".join(lines) + "\n}\n"


def _is_report(value: object) -> bool:
    """Whether a parsed file has a report's shape (a hand-edited one may not)."""
    return (
        isinstance(value, dict)
        and all(isinstance(value.get(key), str) for key in ("session_id", "trigger", "checked_at"))
        and all(isinstance(value.get(key), list) for key in ("survived", "missing"))
        and all(
            isinstance(row, dict) and all(isinstance(row.get(k), str) for k in _ROW)
            for row in value["survived"] + value["missing"]
        )
    )


_ROW = ("slug", "skill", "rule")


def read_reports(project: Project, limit: int = 5) -> list[dict[str, Any]]:
    """The newest survival reports first, each with its `path`; unreadable files are skipped."""
    if not project.compactions_dir.is_dir():
        return []
    paths = sorted(
        project.compactions_dir.glob("*.json"), key=lambda p: (p.stat().st_mtime, p.name)
    )
    reports: list[dict[str, Any]] = []
    for path in reversed(paths):
        if len(reports) == limit:
            break
        try:
            report = json.loads(read_regular(path).decode("utf-8"))
        except (OSError, ValueError, RecursionError):
            continue
        if _is_report(report):
            reports.append({"path": project.relative(path), **report})
    return reports
