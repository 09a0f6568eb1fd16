"""SessionStart: after a compaction (or on resume), put the active invariants before the model.

SessionStart(compact) additionalContext is the channel that reaches the model after compaction
(it arrives as a system message right after the summary); PostCompact's output reaches nobody.
When the session has a seed 001 summary (.ctxward/sessions/, written by PreCompact), its recovery
text follows the invariants, within the same limit: it shrinks or becomes a pointer to the file
before any rule is cut for it.
"""

from __future__ import annotations

from ctxward.hookio import NOTHING, HookEvent, Outcome
from ctxward.invariants import fresh_plans, readable_plans
from ctxward.sessionfiles import summary_path

REINJECT_SOURCES = frozenset({"compact", "resume"})


def handle(event: HookEvent) -> Outcome:
    source = event.text("source")
    if source not in REINJECT_SOURCES:
        return NOTHING
    # One stat: sessions.py (the extractor) is imported only when there is a summary to recover.
    # First: a payload with a broken session id is refused before any payload is distilled.
    recover = summary_path(event.project, event.session_id).is_file()
    readable, unreadable = readable_plans(event.project)
    plans = fresh_plans(event.project, [plan for plan in readable if plan.rule_count])
    if not plans and not unreadable and not recover:
        return NOTHING
    from ctxward.config import load
    from ctxward.offload import render_rules_within

    limit = load(event.project).injection.limit_chars
    text = ""
    if plans or unreadable:
        text = render_rules_within(
            event.project,
            "session_start_context.md.j2",
            plans,
            limit,
            source=source,
            unreadable=unreadable,
        )
    if recover:  # seed 001 recovery: after the invariants, in what room they leave
        from ctxward.sessions import with_recovery

        text = with_recovery(event.project, event.session_id, text, limit, source)
    return Outcome(context=text) if text else NOTHING
