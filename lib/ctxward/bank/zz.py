"""`.tmp/ZZ-phase{N}-context.md` (seed 000 §8): what the next phase's agent is given.

Rendered from the bank itself — the gate's entries in `## Completed Phases` (phase N and its
parallel sub-phases Na, Nb, …) and their cross-references — so it is the same whichever process
promoted which entry, and a later promotion of the same phase rewrites it (last write wins).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ctxward.bank import budget, xref
from ctxward.bank.active import ActiveContext, Row
from ctxward.bank.markup import phase_matches

_WHAT = re.compile(r"^\[[^\]]*\](?: ⚠️ partial)? What changed: ")
_NEXT = re.compile(r"^To [^(:]*(?:\([^)]*\))?:\s*")
_GOTCHA = re.compile(r"^Gotcha:\s*")


def relpath(phase: str) -> str:
    return f".tmp/ZZ-phase{phase}-context.md"


def next_label(phase: str) -> str:
    return str(int(phase) + 1) if phase.isdigit() else f"after {phase}"


def _expanded(row: Row) -> dict[str, Any]:
    lines = list(row.lines)
    what = _WHAT.sub("", lines[0]) if lines else ""
    to_next = _NEXT.sub("", lines[1]) if len(lines) > 1 else ""
    gotcha = _GOTCHA.sub("", lines[2]) if len(lines) > 2 else ""
    return {
        "title": row.title or row.agent,
        "agent": row.agent,
        "score": f"{row.score:.2f}",
        "what": what,
        "to_next": to_next,
        "gotcha": gotcha,
        "partial": row.partial,
    }


def render(
    doc: ActiveContext,
    index: xref.Index,
    gate: str,
    receiver: str | None,
) -> str:
    """The ZZ artifact for phase `gate`."""
    from ctxward.core.render import render as render_template

    phases = [p for p in doc.ordered_phases() if phase_matches(gate, p.label)]
    rows: Sequence[Row] = sorted(
        (row for phase in phases for row in phase.rows),
        key=lambda r: (budget.band_rank(r.band), -r.score, r.key),
    )
    labels = {p.label for p in phases}
    allocated = sum(p.allocated for p in phases)
    used = sum(p.used for p in phases)
    unused = max(allocated * 2 - used, 0)
    senders = list(dict.fromkeys(row.agent for row in rows if row.agent))
    return render_template(
        "bank/zz_context.md.j2",
        phase=gate,
        next_phase=next_label(gate),
        senders=senders,
        receiver=receiver or "",
        entries=len(rows),
        updated=[
            {"title": r.title or r.agent, "agent": r.agent, "previous": r.previous, "hash": r.hash}
            for r in rows
            if r.previous
        ],
        budget={
            "allocated": allocated,
            "used": budget.lines(used),
            "unused": budget.lines(unused),
            "carried": budget.carryover(unused),
        },
        critical=[_expanded(r) for r in rows if r.band == "CRITICAL"],
        high=[_expanded(r) for r in rows if r.band == "HIGH" and r.mode == "expanded"],
        standard=[
            {
                "date": r.date,
                "agent": r.agent,
                "summary": r.title if r.mode == "standard" else " ".join(r.lines),
                "status": (r.status or "complete") + (" ⚠️" if r.partial else ""),
            }
            for r in rows
            if not (r.band == "CRITICAL" or (r.band == "HIGH" and r.mode == "expanded"))
        ],
        refs=[
            {"id": e.id, "type": e.type, "name": e.name, "file": e.location}
            for e in index.entities
            if e.phase in labels
        ]
        + [
            {"id": d.id, "type": d.type, "name": d.summary, "file": d.links_to}
            for d in index.decisions
            if d.phase in labels
        ],
    )
