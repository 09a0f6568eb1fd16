"""SessionStart: after a compaction (or on resume), put the active invariants before the model.

SessionStart(compact) additionalContext is the channel that reaches the model after compaction
(it arrives as a system message right after the summary); PostCompact's output reaches nobody.
"""

from __future__ import annotations

import dataclasses

from ctxward.hookio import NOTHING, HookEvent, Outcome
from ctxward.invariants import fresh_sections, load_plans

REINJECT_SOURCES = frozenset({"compact", "resume"})


def handle(event: HookEvent) -> Outcome:
    if event.text("source") not in REINJECT_SOURCES:
        return NOTHING
    plans = [
        dataclasses.replace(plan, sections=tuple(fresh_sections(event.project, plan)))
        for plan in load_plans(event.project)
        if plan.rule_count
    ]
    if not plans:
        return NOTHING
    from ctxward.config import load
    from ctxward.offload import render_rules_within

    limit = load(event.project).injection.limit_chars
    text = render_rules_within(
        event.project, "session_start_context.md.j2", plans, limit, source=event.text("source")
    )
    return Outcome(context=text)
