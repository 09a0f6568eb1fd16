"""PostCompact: check which active invariants the summary carried, and write a survival report.

PostCompact's output reaches neither the model nor (after an auto compaction) the user, so this
handler prints nothing; the report under .ctxward/compactions/ is its whole effect.
"""

from __future__ import annotations

from ctxward.hookio import NOTHING, HookEvent, Outcome
from ctxward.invariants import all_rules, load_plans


def handle(event: HookEvent) -> Outcome:
    rules = all_rules(load_plans(event.project))
    if rules:
        from ctxward.survival import write_report

        write_report(
            event.project,
            rules,
            session_id=event.session_id,
            trigger=event.text("trigger"),
            compact_summary=event.text("compact_summary"),
        )
    return NOTHING
