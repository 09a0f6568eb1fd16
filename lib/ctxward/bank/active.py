"""`01-active-context.md`: `## Completed Phases` (priority-aware, budgeted) and `## Plans`.

ctxward owns those two sections; every other section of the file is kept as it is. Inside
`## Completed Phases` each phase is a `### Phase N` subsection with its budget marker, and each
entry one block: a marker comment with its key, content hash, band, score, mode and cost, then
the L1 band template's lines as a list item:

    <!-- ctxward:entry key="2026-01-02|1|hermes|t:auth endpoint" hash="…" band="CRITICAL" … -->
    - **CRITICAL 0.82** [hermes] What changed: …
      To Aphrodite (…): …
      Gotcha: …

Entries are sorted by band, then score, within their phase. A line in the section that is not an
entry is kept (after the phase's entries); the generated `_Budget: …_` lines are regenerated.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from ctxward.bank import budget
from ctxward.bank.markup import (
    Section,
    cell,
    escaped,
    natural_key,
    parse_marker,
    split_row,
    split_sections,
    trim_blank,
)

FILE = "01-active-context.md"
TITLE = "Active Context"
COMPLETED = "Completed Phases"
PLANS = "Plans"
PLAN_HEADER = ("Date", "Feature", "Plan", "Status")
_PHASE_HEADING = re.compile(r"^### (?:Phase )?(?P<label>\S.*?)\s*$")
_BAND_PREFIX = re.compile(r"^\*\*(?:CRITICAL|HIGH|MEDIUM|LOW) [0-9.]+\*\* ")
_GENERATED = ("_Budget:", "_Completed Phases:")


@dataclass(slots=True)
class Row:
    """One compressed entry in `## Completed Phases`."""

    key: str  # "date|phase|agent|identity" (bank.identity; "date|phase|agent" before issue 16)
    hash: str
    band: str
    score: float
    mode: str
    agent: str  # as the entry wrote it
    status: str = ""
    title: str = ""
    files: str = ""
    partial: bool = False
    lines: list[str] = field(default_factory=list)
    previous: str = ""  # the hash of the version this one updated (issue 16; archived)

    @property
    def date(self) -> str:
        return self.key.split("|")[0]

    @property
    def phase(self) -> str:
        parts = self.key.split("|")
        return parts[1] if len(parts) > 1 else ""

    @property
    def cost(self) -> int:
        """Half-lines (seed 000 §6 line cost table)."""
        return budget.COSTS.get((self.band, self.mode), 2)

    def marker(self) -> dict[str, str]:
        return escaped(
            {
                "key": self.key,
                "hash": self.hash,
                "band": self.band,
                "score": f"{self.score:.2f}",
                "mode": self.mode,
                "cost": budget.lines(self.cost),
                "agent": self.agent,
                "status": self.status,
                "title": self.title,
                "files": self.files,
                "partial": "yes" if self.partial else "",
                "previous": self.previous,
            }
        )


@dataclass(slots=True)
class Phase:
    label: str
    allocated: int  # whole lines: PER_PHASE + carried_in
    carried_in: int
    rows: list[Row] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def used(self) -> int:
        """Half-lines used by the phase's entries."""
        return sum(row.cost for row in self.rows)

    @property
    def unused(self) -> int:
        return max(self.allocated * 2 - self.used, 0)

    @property
    def carry_out(self) -> int:
        return budget.carryover(self.unused)

    def sort(self) -> None:
        self.rows.sort(key=lambda r: (budget.band_rank(r.band), -r.score, r.key))


@dataclass(slots=True)
class PlanRow:
    date: str
    feature: str
    plan: str
    status: str

    @property
    def key(self) -> tuple[str, str]:
        return (self.date, self.feature.casefold())


@dataclass(slots=True)
class ActiveContext:
    head: list[str] = field(default_factory=lambda: [f"# {TITLE}"])
    order: list[str | Section] = field(default_factory=lambda: [COMPLETED])
    params: dict[str, str] = field(default_factory=dict)
    phases: dict[str, Phase] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    plans: list[PlanRow] = field(default_factory=list)
    plan_notes: list[str] = field(default_factory=list)

    def rows(self) -> Iterable[Row]:
        for phase in self.phases.values():
            yield from phase.rows

    @property
    def used(self) -> int:
        """Half-lines used in `## Completed Phases`."""
        return sum(phase.used for phase in self.phases.values())

    def ordered_phases(self) -> list[Phase]:
        return sorted(self.phases.values(), key=lambda p: natural_key(p.label))


def parse(text: str) -> ActiveContext:
    """Read `01-active-context.md` back."""
    sections = split_sections(text)
    doc = ActiveContext(head=trim_blank(sections[0].lines) or [f"# {TITLE}"], order=[])
    for section in sections[1:]:
        if section.heading == COMPLETED and COMPLETED not in doc.order:
            doc.order.append(COMPLETED)
            _parse_completed(doc, section.lines)
        elif section.heading == PLANS and PLANS not in doc.order:
            doc.order.append(PLANS)
            _parse_plans(doc, section.lines)
        else:
            doc.order.append(section)
    if COMPLETED not in doc.order:
        doc.order.append(COMPLETED)
    return doc


def _parse_completed(doc: ActiveContext, lines: Iterable[str]) -> None:
    phase: Phase | None = None
    row: Row | None = None
    for line in lines:
        marker = parse_marker(line)
        if marker is not None:
            kind, attrs = marker
            row = None
            if kind == "bank":
                doc.params = attrs
            elif kind == "phase" and phase is not None:
                phase.allocated = _int(attrs.get("allocated"), phase.allocated)
                phase.carried_in = _int(attrs.get("carried-in"), 0)
            elif kind == "entry":
                row = _row(attrs)
                if phase is None or phase.label != row.phase:
                    phase = doc.phases.setdefault(row.phase, Phase(row.phase, 0, 0))
                phase.rows.append(row)
            continue
        heading = _PHASE_HEADING.match(line)
        if heading is not None:
            row = None
            label = heading.group("label")
            phase = doc.phases.setdefault(label, Phase(label, 0, 0))
            continue
        if row is not None and line.startswith("- ") and not row.lines:
            row.lines.append(_BAND_PREFIX.sub("", line[2:]))
            continue
        if row is not None and line.startswith("  ") and row.lines:
            row.lines.append(line[2:])
            continue
        row = None
        if not line.strip() or line.startswith(_GENERATED):
            continue
        (phase.notes if phase is not None else doc.notes).append(line)


def _int(value: str | None, default: int) -> int:
    try:
        return int(value) if value is not None else default
    except ValueError:
        return default


def _float(value: str | None) -> float:
    try:
        return float(value) if value is not None else 0.0
    except ValueError:
        return 0.0


def _row(attrs: dict[str, str]) -> Row:
    return Row(
        key=attrs.get("key", "||"),
        hash=attrs.get("hash", ""),
        band=attrs.get("band", "MEDIUM"),
        score=_float(attrs.get("score")),
        mode=attrs.get("mode", "standard"),
        agent=attrs.get("agent", ""),
        status=attrs.get("status", ""),
        title=attrs.get("title", ""),
        files=attrs.get("files", ""),
        partial=attrs.get("partial") == "yes",
        previous=attrs.get("previous", ""),
    )


def _parse_plans(doc: ActiveContext, lines: Iterable[str]) -> None:
    wanted = [name.casefold() for name in PLAN_HEADER]
    for line in lines:
        cells = split_row(line)
        if cells is None:
            if line.strip() and not line.lstrip().startswith("|"):
                doc.plan_notes.append(line)
            continue
        if [c.casefold() for c in cells] == wanted:
            continue
        cells = (cells + [""] * 4)[:4]
        doc.plans.append(PlanRow(*cells))


def render(doc: ActiveContext, total: int) -> str:
    """The whole file (templates bank/active_context.md.j2 and bank/completed_phases.md.j2)."""
    from ctxward.core.render import render as render_template

    blocks: list[str] = []
    for item in doc.order:
        if item == COMPLETED:
            blocks.append(render_completed(doc, total))
        elif item == PLANS:
            blocks.append(
                render_template(
                    "bank/plans.md.j2",
                    heading=PLANS,
                    header=list(PLAN_HEADER),
                    rows=[
                        [cell(p.date), cell(p.feature), cell(p.plan), cell(p.status)]
                        for p in doc.plans
                    ],
                    notes=doc.plan_notes,
                ).rstrip("\n")
            )
        elif isinstance(item, Section):
            body = list(item.lines)
            while body and not body[-1].strip():
                body.pop()
            blocks.append("\n".join([f"## {item.heading}", *body]))
    return render_template("bank/active_context.md.j2", head=doc.head, blocks=blocks)


def render_completed(doc: ActiveContext, total: int) -> str:
    from ctxward.core.render import render as render_template

    phases = []
    for phase in doc.ordered_phases():
        phase.sort()
        phases.append(
            {
                "label": phase.label,
                "marker": escaped({"allocated": phase.allocated, "carried-in": phase.carried_in}),
                "used": budget.lines(phase.used),
                "allocated": phase.allocated,
                "carried_in": phase.carried_in,
                "unused": budget.lines(phase.unused),
                "carry_out": phase.carry_out,
                "rows": [
                    {
                        "marker": row.marker(),
                        "band": row.band,
                        "score": f"{row.score:.2f}",
                        "lines": row.lines,
                    }
                    for row in phase.rows
                ],
                "notes": phase.notes,
            }
        )
    return render_template(
        "bank/completed_phases.md.j2",
        heading=COMPLETED,
        params=escaped(doc.params),
        used=budget.lines(doc.used),
        total=total,
        phases=phases,
        notes=doc.notes,
    ).rstrip("\n")
