"""PostCompact: check which active invariants the summary carried, and write a survival report.

PostCompact's output reaches neither the model nor (after an auto compaction) the user, so this
handler prints nothing for Claude Code. For OpenCode (`per_request`, hosts/opencode.py) it
records in the ledger which rules the summary kept (the system prompt of each later request
states the others), and its answer restates, in the next request once, the lost and altered
rules that the system prompt has no room for. Its effects: the report under
.ctxward/compactions/, and (Claude Code, Codex) the rules the summary lost, left in
.ctxward/pending/ for the next prompt to restate once (UserPromptSubmit).
Only plans trusted on this machine are checked, reported and restated (`ctxward.invariants.trust`).
One report per compaction, however many wirings run the hook (ctxward.events.once).
"""

from __future__ import annotations

from pathlib import Path

from ctxward.errors import CtxwardError
from ctxward.hooktypes import NOTHING, HookEvent, Outcome
from ctxward.invariants.distill import all_rules
from ctxward.invariants.model import Plan, RuleRef
from ctxward.invariants.read import plans_for_the_model


def handle(event: HookEvent) -> Outcome:
    # A broken plan was named at PreCompact already, an untrusted one at SessionStart.
    plans, _untrusted, unreadable = plans_for_the_model(event.project)
    rules = all_rules(plans)
    if rules:
        from ctxward.core.config import load
        from ctxward.core.limits import MAX_CHECKED_SUMMARY_CHARS
        from ctxward.events.once import first_run
        from ctxward.invariants.survival import write_report

        load(event.project)  # a broken config fails here, before the report is written
        session_id, trigger = event.session_id, event.text("trigger")  # so does a bad field
        # Each rule is looked for in the whole summary: checked once, in a bounded summary.
        summary = event.text("compact_summary")[:MAX_CHECKED_SUMMARY_CHARS]
        if not first_run(event):  # another wiring's run of this compaction wrote the report
            return NOTHING
        from ctxward.invariants.verdicts import KEPT, grade

        verdicts = grade(rules, summary)
        missing = [verdict.ref for verdict in verdicts if verdict.verdict != KEPT]
        try:
            report = write_report(
                event.project,
                rules,
                session_id=session_id,
                trigger=trigger,
                compact_summary=summary,
                verdicts=verdicts,
            )
            if event.data.get("per_request"):  # OpenCode: the plugin restates it, once (below)
                return _restatement(event, plans, unreadable, missing, report)
            _remember_lost(event, plans, missing, report)
        except OSError as exc:  # a full disk, a read-only folder: one line, not a bug
            raise CtxwardError(
                f"survival report not written: {exc.strerror or exc}"
                + (f" ({exc.filename})" if exc.filename else "")
            ) from None
    return NOTHING


def _restatement(
    event: HookEvent,
    plans: list[Plan],
    unreadable: list[str],
    missing: list[RuleRef],
    report: Path,
) -> Outcome:
    """OpenCode: the system prompt of every request of this segment states the rules the
    summary lacks (SessionStart reads what it kept from the ledger), within the injection limit;
    the answer's `restate` holds, for the session's next request only, the lost and altered
    rules that did not fit there. No rule is in both; no pending file is left."""
    from ctxward.core.config import load
    from ctxward.events.session_start import rules_text
    from ctxward.invariants import ledger
    from ctxward.invariants.pending import render_lost
    from ctxward.invariants.rulesets import fingerprints, refs_not_in, unique, without

    plans = unique(plans)
    lacking = {ref.fingerprint for ref in missing}
    kept = {ref.fingerprint for ref in all_rules(plans)} - lacking
    ledger.summary_kept(event.project, event.session_id, kept)
    if not missing:
        return NOTHING
    todo = without(plans, kept)
    limit = load(event.project).injection.limit_chars
    system = rules_text(event.project, plans, todo, unreadable, "compact", limit)[1]
    rest = refs_not_in(missing, fingerprints(system))
    if not rest:
        return NOTHING
    return Outcome(context=render_lost(event.project, plans, rest, report=report)[0])


def _remember_lost(
    event: HookEvent, plans: list[Plan], missing: list[RuleRef], report: Path
) -> None:
    """The rules the summary lost or altered wait for the next prompt
    (events/user_prompt_submit.py), less those this segment has stated already
    (SessionStart(compact), or the /compact record: `ctxward.invariants.ledger`)."""
    from ctxward.invariants import ledger
    from ctxward.invariants.pending import remember_lost
    from ctxward.invariants.rulesets import refs_not_in

    todo = refs_not_in(missing, ledger.read(event.project, event.session_id).shown)
    remember_lost(event.project, event.session_id, plans, todo, report=report)
