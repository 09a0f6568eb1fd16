"""`bank trim` on its own: the C7 trim as one transaction (01 and the archive, or nothing)."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ctxward.bank import active, archive, state, trim, txn
from ctxward.core.project import Project


def run_trim(project: Project, *, now: datetime | None = None) -> dict[str, Any]:
    """Run C7 now; return its report (with the seed's log line under "log")."""
    from ctxward.core.config import load as load_config
    from ctxward.core.scrub import redact

    now = now or datetime.now(timezone.utc)
    total = load_config(project).bank.total_budget
    month = now.strftime("%Y-%m")
    bank = project.bank_dir
    if not bank.is_dir():
        report = trim.Trim(0, 0, archive=archive.relpath(month), total=total)
        return {**report.as_dict(), "written": []}
    with state.session(project):
        current = state.load(bank)
        doc = current.active
        store_path = bank / archive.relpath(month)
        text = archive.read(store_path)
        store = archive.parse(month, text)
        report = trim.c7(doc, total, store, now.strftime("%Y-%m-%d"))
        written: list[str] = []
        if report.trimmed:
            writes: dict[Path, str] = {
                bank / active.FILE: redact(active.render(doc, total)),
                store_path: redact(store.render()),
            }
            written = txn.commit(bank, writes)
    return {**report.as_dict(), "written": written}
