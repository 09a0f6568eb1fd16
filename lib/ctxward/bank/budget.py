"""Budget allocation (seed 000 §6, §18): line costs, per-phase budget, carryover, guardrails.

Costs are kept in half-lines (a LOW entry is 0.5 lines), so every sum is exact.

    TOTAL_BUDGET = 100 lines for `## Completed Phases` (config `bank.total_budget`)
    PER_PHASE    = floor(TOTAL / estimated_phases), at least 5; 8 phases (→ 12) when unknown
    carryover    = floor(unused × 0.20); the other 80% is released
    phase budget = PER_PHASE + the previous phase's carryover

Priority-greedy: entries in band order, highest score first. CRITICAL is always expanded
(3 lines); HIGH is expanded (2 lines) while the phase and the section both have 2 lines left,
else standard (1 line); MEDIUM standard (1 line); LOW aggressive (0.5 lines, filename only).

The seed's §6 example says "8 lines carried to next phase" where §18's formula carries
floor(8 × 0.20) = 1: the formula is the rule (phase 2 of that example starts with 13 lines), and
8 is what phase 1 left unused. Either way the example's allocations come out the same.
"""

from __future__ import annotations

from collections.abc import Sequence

from ctxward.core.values import Value
from ctxward.errors import Escalated

TOTAL_BUDGET = 100
DEFAULT_PHASES = 8
MIN_PER_PHASE = 5
CARRY_PERCENT = 20
CRITICAL_OVERFLOW = 5  # more than this many CRITICAL entries in one phase: "Budget risk."
BANDS = ("CRITICAL", "HIGH", "MEDIUM", "LOW")
# (band, mode) → cost in half-lines. "trimmed" is a MEDIUM entry cut to 0.5 lines by C7.
COSTS = {
    ("CRITICAL", "expanded"): 6,
    ("HIGH", "expanded"): 4,
    ("HIGH", "standard"): 2,
    ("MEDIUM", "standard"): 2,
    ("MEDIUM", "trimmed"): 1,
    ("LOW", "aggressive"): 1,
}
MODE_TEMPLATES = {
    "expanded": {"CRITICAL": "compress/critical.md.j2", "HIGH": "compress/high.md.j2"},
    "standard": {"HIGH": "compress/medium.md.j2", "MEDIUM": "compress/medium.md.j2"},
    "aggressive": {"LOW": "compress/low.md.j2"},
    "trimmed": {"MEDIUM": "compress/low.md.j2"},
}


def per_phase(total: int, phases: int) -> int:
    """PER_PHASE_BUDGET = floor(total / phases), never below 5 lines."""
    if phases < 1:
        raise ValueError("the number of phases must be at least 1")
    return max(MIN_PER_PHASE, total // phases)


def carryover(unused_half: int) -> int:
    """Whole lines carried to the next phase: floor(20% of the unused lines)."""
    return max(unused_half, 0) * CARRY_PERCENT // 200


def cost(band: str, mode: str) -> int:
    """The cost of an entry in half-lines."""
    return COSTS[(band, mode)]


def lines(half: int) -> str:
    """Half-lines as the seed writes lines: "4", "5.5"."""
    return str(half // 2) if half % 2 == 0 else f"{half / 2:.1f}"


def band_rank(band: str) -> int:
    return BANDS.index(band) if band in BANDS else len(BANDS)


class Candidate(Value):
    """What allocation needs of an entry: its band, score and a tie-breaking key."""

    key: str
    band: str
    score: float


def priority_order(items: Sequence[Candidate]) -> list[int]:
    """Indexes of `items`, highest priority first (band, then score, then key: deterministic)."""
    return sorted(
        range(len(items)),
        key=lambda i: (band_rank(items[i].band), -items[i].score, items[i].key),
    )


def allocate(
    items: Sequence[Candidate], phase_left_half: int, total_left_half: int | None = None
) -> list[str]:
    """The mode of each item (in the order given), priority-greedy over the budget left.

    `phase_left_half` is what the phase has left (its budget minus what its other entries use);
    `total_left_half` what the section has left under TOTAL_BUDGET (None: no section limit).
    """
    modes = [""] * len(items)
    phase_left = phase_left_half
    total_left = total_left_half
    for index in priority_order(items):
        band = items[index].band
        if band == "CRITICAL":
            mode = "expanded"
        elif band == "HIGH":
            room = phase_left if total_left is None else min(phase_left, total_left)
            mode = "expanded" if room >= COSTS[("HIGH", "expanded")] else "standard"
        elif band == "MEDIUM":
            mode = "standard"
        else:
            mode = "aggressive"
        modes[index] = mode
        spent = COSTS[(band if band in BANDS else "LOW", mode)]
        phase_left -= spent
        if total_left is not None:
            total_left -= spent
    return modes


def check_critical(critical_half: int, total: int) -> None:
    """§18 "Exceed budget": CRITICAL entries alone above TOTAL_BUDGET escalate (exit code 4)."""
    if critical_half > total * 2:
        raise Escalated(
            f"CRITICAL entries require {lines(critical_half)} lines but budget is {total}. "
            "Options: (1) increase budget (this promotion: --budget LINES), "
            "(2) increase TOTAL_BUDGET permanently (bank.total_budget in .ctxward/config.yaml), "
            "(3) split phase. Nothing was written."
        )


def overflow(phase: str, critical: int) -> str | None:
    """§18 "Overflow": the flag for more than 5 CRITICAL entries in a phase, else None."""
    if critical > CRITICAL_OVERFLOW:
        return f"Phase {phase} has {critical} > {CRITICAL_OVERFLOW} CRITICAL entries. Budget risk."
    return None
