"""SessionStart: after a compaction (or on resume), put the active invariants before the model.

SessionStart(compact) additionalContext is the channel that reaches the model after compaction
(it arrives as a system message right after the summary); PostCompact's output reaches nobody.
When the session has a seed 001 summary (.ctxward/sessions/, written by PreCompact), its recovery
text follows the invariants, within the same limit: it shrinks or becomes a pointer to the file
before any rule is cut for it.

Only plans trusted on this machine are injected (`invariants.trust`), read from the very bytes whose
hash was found trusted: never from a `.compaction-payload.md`, which a repository can commit
with any rules under a copied "distilled from sha256=..." header. Untrusted plans are counted in
one line for the user (`systemMessage`, which the model does not read), when a session starts,
resumes or is compacted: the moments their rules would have been given, not every event.
"""

from __future__ import annotations

from collections.abc import Sequence

from ctxward.core.project import Project
from ctxward.core.sessionfiles import summary_path
from ctxward.hooktypes import NOTHING, HookEvent, Outcome
from ctxward.invariants.model import Plan, RuleRef
from ctxward.invariants.read import plans_for_the_model

REINJECT_SOURCES = frozenset({"compact", "resume"})
# Where the user hears of untrusted plans: also a fresh start, before any compaction.
NOTICE_SOURCES = REINJECT_SOURCES | {"startup"}


def handle(event: HookEvent) -> Outcome:
    source = event.text("source")
    if source not in NOTICE_SOURCES:
        return NOTHING
    # One stat: sessions.py (the extractor) is imported only when there is a summary to recover.
    # First: a payload with a broken session id is refused before any plan is read.
    # Never for a payload without a session id: that file's name is predictable, so a cloned
    # repository could commit one; a summary is recovered only into the session that wrote it.
    recover = (
        source in REINJECT_SOURCES
        and bool(event.session_id)
        and summary_path(event.project, event.session_id).is_file()
    )
    plans, untrusted, unreadable = plans_for_the_model(event.project)
    notice = None
    if untrusted:
        from ctxward.invariants.trust import untrusted_notice

        notice = untrusted_notice(untrusted)
    if source not in REINJECT_SOURCES or not (plans or unreadable or recover):
        return Outcome(notice=notice) if notice else NOTHING
    from ctxward.core.config import load
    from ctxward.invariants import ledger
    from ctxward.invariants.rulesets import fingerprints, unique, without

    limit = load(event.project).injection.limit_chars
    plans = unique(plans)
    # What the model has already in this context segment is not said again (invariants.ledger).
    # OpenCode rebuilds the system prompt for every request: there, every rule the summary of
    # this segment does not carry, in every request (`per_request_rules`).
    per_request = bool(event.data.get("per_request"))
    said = ledger.read(event.project, event.session_id)
    todo = without(plans, said.kept if per_request else said.known)
    text = ""
    if todo or unreadable:
        text, shown = rules_text(event.project, plans, todo, unreadable, source, limit)
        if not per_request:
            resumed = event.text("transcript_path") if source == "resume" else None
            ledger.record(event.project, event.session_id, fingerprints(shown), resumed_in=resumed)
    elif source == "resume" and not per_request:
        ledger.record(event.project, event.session_id, (), resumed_in=event.text("transcript_path"))
    if recover:  # seed 001 recovery: after the invariants, in what room they leave
        from ctxward.sessions.recovery import with_recovery

        text = with_recovery(event.project, event.session_id, text, limit, source)
    if not text and not notice:
        return NOTHING
    return Outcome(context=text or None, notice=notice)


def rules_text(
    project: Project,
    plans: Sequence[Plan],
    todo: Sequence[Plan],
    unreadable: Sequence[str],
    source: str,
    limit: int,
) -> tuple[str, list[RuleRef]]:
    """SessionStart's text of `todo` (the rules of `plans` still to say), within `limit`, and
    the rules it shows in full. Also what OpenCode's post-compact counts on the system prompt
    to carry, so that its one-time restatement holds only the rest (events/post_compact.py)."""
    from ctxward.invariants.inject import render_rules_shown

    already = sum(plan.rule_count for plan in plans) - sum(plan.rule_count for plan in todo)
    return render_rules_shown(
        project,
        "invariants/session_start_context.md.j2",
        todo,
        limit,
        source=source,
        unreadable=unreadable,
        already=already,
    )
