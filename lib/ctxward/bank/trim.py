"""C7 size-based trim (seed 000 §18) of `## Completed Phases`, when it passes TOTAL_BUDGET lines.

1. Entries are taken lowest score first.
2. LOW entries are removed (their whole 0.5-line row) until the section fits.
3. If it still does not fit, MEDIUM entries are cut to 0.5 lines each (the LOW form,
   `[agent] — <files>`), lowest score first, until it fits.
4. CRITICAL and HIGH entries are never trimmed (the section may then stay over; `bank status`
   shows it).
5. Whatever is removed or cut is first archived, as it stood, to
   `_notes/archive/YYYY-MM-compressed-entries.md`.

Lines are the seed's budget lines (CRITICAL 3, HIGH 2 or 1, MEDIUM 1, LOW 0.5).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ctxward.bank import archive, budget
from ctxward.bank.active import ActiveContext, Row


@dataclass(slots=True)
class Trim:
    before: int  # half-lines
    after: int
    removed: list[Row] = field(default_factory=list)
    cut: list[Row] = field(default_factory=list)
    archive: str = ""  # bank-relative path of the archive file
    total: int = budget.TOTAL_BUDGET

    @property
    def trimmed(self) -> bool:
        return bool(self.removed or self.cut)

    def as_dict(self) -> dict[str, object]:
        return {
            "lines_before": budget.lines(self.before),
            "lines_after": budget.lines(self.after),
            "removed": len(self.removed),
            "cut": len(self.cut),
            "archive": self.archive,
            "total": self.total,
            "log": log_line(self),
        }


def log_line(trim: Trim) -> str:
    """The seed's log line (template bank/trim_line.txt.j2)."""
    from ctxward.core.render import render

    return render("bank/trim_line.txt.j2", trim=trim).strip()


def c7(doc: ActiveContext, total: int, store: archive.Archive, today: str) -> Trim:
    """Trim `doc` in place down to `total` lines; archive what goes into `store`."""
    limit = total * 2
    report = Trim(doc.used, doc.used, archive=archive.relpath(store.month), total=total)
    if doc.used <= limit:
        return report
    candidates = sorted(
        (row for row in doc.rows() if row.band in ("LOW", "MEDIUM")),
        key=lambda r: (r.score, r.key),
    )
    used = doc.used
    for row in candidates:
        if used <= limit:
            break
        if row.band == "LOW":
            store.add(row, "removed", today)
            used -= row.cost
            report.removed.append(row)
    if report.removed:
        gone = {id(row) for row in report.removed}
        for phase in doc.phases.values():
            phase.rows = [r for r in phase.rows if id(r) not in gone]
    for row in candidates:
        if used <= limit:
            break
        if row.band == "MEDIUM" and row.mode == "standard":
            store.add(row, "cut", today)
            before = row.cost
            row.mode = "trimmed"
            row.lines = _low_lines(row)
            used -= before - row.cost
            report.cut.append(row)
    report.after = doc.used
    return report


def _low_lines(row: Row) -> list[str]:
    from ctxward.core.render import render

    text = render(
        budget.MODE_TEMPLATES["trimmed"]["MEDIUM"],
        entry={"agent": row.agent, "partial": row.partial, "files": row.files},
    )
    return [line for line in text.splitlines() if line.strip()]
