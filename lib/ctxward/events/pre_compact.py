"""PreCompact: distill every plan's payload, then hand the summarizer its instructions.

Claude Code appends a PreCompact hook's exit-0 stdout to the compaction prompt as
"Additional Instructions" (seen with 2.1.332, manual and auto). PreCompact may fire several times
for one compaction: distilling is idempotent and rewrites nothing that is already identical.
"""

from __future__ import annotations

from ctxward.hookio import NOTHING, HookEvent, Outcome
from ctxward.invariants import distill, load_plans


def handle(event: HookEvent) -> Outcome:
    plans = [plan for plan in load_plans(event.project) if plan.rule_count]
    if not plans:
        return NOTHING
    for plan in plans:
        distill(event.project, plan)
    from ctxward.config import load
    from ctxward.offload import render_rules_within

    limit = load(event.project).injection.limit_chars
    text = render_rules_within(event.project, "precompact_instructions.md.j2", plans, limit)
    return Outcome(plain=text)
