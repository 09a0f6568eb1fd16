"""SubagentStop: fires for every sub-agent, and for the compaction agent (agent_type "").

For the compaction agent only: the rules its summary kept go to the session's ledger
(`ctxward.invariants.ledger`), so that SessionStart(compact) restates exactly the others.

Order in this handler: the G0 report cap, then its artifact (both in `subagents.reports`), then
C8, then the debate filing check (`events.stop`: a sub-agent that ran a debate does not stop
while its verdict is unfiled). A final report over 40 lines / 2 KB is saved (scrubbed) as a
G7 artifact with its ArtifactMeta, and, under `reports.enforce: block`, the stop is blocked once
with `{"decision": "block", "reason": ...}`: the reason reaches the sub-agent, which then writes a
short report that references the file. The compaction agent is never touched.
"""

from __future__ import annotations

from ctxward.core.log import best_effort, log_failure
from ctxward.hooktypes import NOTHING, HookEvent, Outcome


def handle(event: HookEvent) -> Outcome:
    if event.data.get("agent_type") == "":  # the compaction agent: its reply is the summary
        _summary_known(event)
        return NOTHING
    from ctxward.subagents.reports import enforce_cap

    cap = enforce_cap(event.project, event.data)  # cap -> artifact
    _stage_summary(event)  # C8, after the cap and its artifact
    if cap.blocks:
        return Outcome(decision="block", reason=cap.reason)
    if not event.data.get("agent_type"):
        return NOTHING  # the compaction agent (agent_type "") is never held
    from ctxward.events.stop import unfiled_reason

    reason = unfiled_reason(event, "subagent_stop-debate")  # seed 002: file before moving on
    return Outcome(decision="block", reason=reason) if reason else NOTHING


def _summary_known(event: HookEvent) -> None:
    """Claude Code fires this before SessionStart(compact), with the summary as
    `last_assistant_message` (2.1.332): the rules it kept go to the ledger (invariants.ledger), so
    that SessionStart(compact) states exactly the others. Silent; a failure is logged."""
    summary = event.data.get("last_assistant_message")
    if not isinstance(summary, str) or not event.session_id:
        return
    try:
        from ctxward.core.limits import MAX_CHECKED_SUMMARY_CHARS
        from ctxward.invariants import ledger
        from ctxward.invariants.distill import all_rules
        from ctxward.invariants.read import plans_for_the_model
        from ctxward.invariants.verdicts import KEPT, grade

        rules = all_rules(plans_for_the_model(event.project)[0])
        if not rules:
            return
        verdicts = grade(rules, summary[:MAX_CHECKED_SUMMARY_CHARS])
        kept = {v.ref.fingerprint for v in verdicts if v.verdict == KEPT}
        # A rule also declared elsewhere counts as kept only when every copy was.
        kept -= {v.ref.fingerprint for v in verdicts if v.verdict != KEPT}
        ledger.summary_kept(event.project, event.session_id, kept)
    except Exception:  # noqa: BLE001 - the compaction must go on; the rules are stated in full
        log_failure(event.project, "subagent_stop-summary")


def _stage_summary(event: HookEvent) -> None:
    """C8: stage a CRITICAL/HIGH subtask_summary for L2 (ctxward.compress.handoff.subagent_stopped).

    Never blocks and never fails the sub-agent: any error is logged to .ctxward/log/.
    """
    with best_effort(event.project, "subagent_stop-c8"):  # never the hook's answer or exit
        from ctxward.compress.handoff import subagent_stopped

        subagent_stopped(event.project, event.data)
