"""PostCompact: check which active invariants the summary carried, and write a survival report.

PostCompact's output reaches neither the model nor (after an auto compaction) the user, so this
handler prints nothing. Its effects: the report under .ctxward/compactions/, and the rules the
summary lost, left in .ctxward/pending/ for the next prompt to restate once (UserPromptSubmit).
One report per compaction, however many wirings run the hook (ctxward.once).
"""

from __future__ import annotations

from pathlib import Path

from ctxward.hookio import NOTHING, HookEvent, Outcome
from ctxward.invariants import Plan, RuleRef, all_rules, readable_plans


def handle(event: HookEvent) -> Outcome:
    plans = readable_plans(event.project)[0]  # a broken plan was named at PreCompact already
    rules = all_rules(plans)
    if rules:
        from ctxward.config import load
        from ctxward.once import first_run
        from ctxward.survival import write_report

        load(event.project)  # a broken config fails here, before the report is written
        session_id, trigger = event.session_id, event.text("trigger")  # so does a bad field
        summary = event.text("compact_summary")
        if not first_run(event):  # another wiring's run of this compaction wrote the report
            return NOTHING
        report = write_report(
            event.project,
            rules,
            session_id=session_id,
            trigger=trigger,
            compact_summary=summary,
        )
        _remember_lost(event, plans, rules, report)
    return NOTHING


def _remember_lost(event: HookEvent, plans: list[Plan], rules: list[RuleRef], report: Path) -> None:
    """The rules the summary lost wait for the next prompt (events/user_prompt_submit.py)."""
    from ctxward.invariants import check_survival
    from ctxward.pending import remember_lost

    _, missing = check_survival(rules, event.text("compact_summary"))
    remember_lost(event.project, event.session_id, plans, missing, report=report)
