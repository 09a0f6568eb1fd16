"""PreCompact: distill every trusted plan's payload, then hand the summarizer its instructions.

Claude Code appends a PreCompact hook's exit-0 stdout to the compaction prompt as
"Additional Instructions" (seen with 2.1.332, manual and auto). With two wirings (the plugin and
a settings file) it runs twice per compaction: the second run prints nothing (events.once), and
distilling is idempotent, rewriting nothing that is already identical.

Only plans trusted on this machine (`invariants.trust`) reach the summarizer; an untrusted one is
not even named here (SessionStart names them to the user). A plan that cannot be read, or was
refused (a symbolic link), is named in the instructions, and so is a payload that could not be
written (a FIFO or a link in its place, a full disk): the others' rules go on as usual, and the
rules of a plan whose payload failed are printed all the same, from its invariants.md.

The rules come first: the C11 handoff and the session summary, which read what the session
wrote (a transcript can hold a message of any size), run once the instructions are written
(`Outcome.after`), in what is left of the hook's time budget.
"""

from __future__ import annotations

import os

from ctxward.core.log import best_effort
from ctxward.errors import BudgetExceeded
from ctxward.hooktypes import NOTHING, HookEvent, Outcome
from ctxward.invariants.distill import distill_all
from ctxward.invariants.model import Plan
from ctxward.invariants.read import plans_for_the_model


def handle(event: HookEvent) -> Outcome:
    # A payload with a field of the wrong type is refused here, before anything is written.
    transcript = event.text("transcript_path")
    event.text("session_id")

    def after() -> None:
        _handoff(event)
        _session_summary(event, transcript)

    gone: list[Plan] = []  # plans whose every branch is gone: completed here (plans.scope)
    plans, _untrusted, unreadable = plans_for_the_model(event.project, gone=gone)
    if not plans and not unreadable and not gone:
        return Outcome(after=after)
    from ctxward.core.config import load
    from ctxward.events.once import first_run
    from ctxward.invariants import ledger
    from ctxward.invariants.inject import render_rules_shown
    from ctxward.invariants.rulesets import fingerprints, unique

    limit = load(event.project).injection.limit_chars  # a broken config fails before the writes
    if not first_run(
        event
    ):  # another wiring's run of this compaction said it (ctxward.events.once)
        return NOTHING
    retired = _complete_branch_gone(event, gone)
    if not plans and not unreadable:
        return Outcome(plain=retired or None, after=after)
    unwritten = distill_all(event.project, plans)[1]
    text, shown = render_rules_shown(
        event.project,
        "invariants/precompact_instructions.md.j2",
        unique(plans),
        limit,
        unreadable=unreadable,
        unwritten=unwritten,
    )
    # A new context segment (invariants.ledger); after a manual /compact, Claude Code shows the
    # model this very text (echoed in the /compact record), so its rules are said already.
    claude = "turn_id" not in event.data  # Codex's payloads carry one (see `_echoed`)
    auto = event.data.get("trigger") == "auto" and claude
    ledger.begin(
        event.project,
        event.session_id,
        fingerprints(shown) if _echoed(event) else (),
        transcript=transcript if auto else "",
    )
    return Outcome(plain=f"{text.rstrip()}\n\n{retired}" if retired else text, after=after)


def _complete_branch_gone(event: HookEvent, gone: list[Plan]) -> str:
    """Seed 003 (plans clean themselves up): one line per plan completed; '' on any failure."""
    if not gone:
        return ""
    try:
        from ctxward.invariants.plans import complete_branch_gone

        return complete_branch_gone(event.project, gone)
    except BudgetExceeded:
        raise
    except Exception:  # noqa: BLE001 - the rules of the plans that apply go out regardless
        return ""


def _echoed(event: HookEvent) -> bool:
    """Whether the host shows the model PreCompact's stdout after the compaction: Claude Code
    2.1.332 after a manual /compact (seen in tests/e2e). Not Codex (its payloads carry a
    `turn_id`; it ignores the stdout), not OpenCode (no trigger), not an auto compaction."""
    return event.data.get("trigger") == "manual" and "turn_id" not in event.data


def _session_summary(event: HookEvent, transcript: str) -> None:
    """Seed 001: compress the transcript into .ctxward/sessions/<session id>.yaml.

    Silent and idempotent like the handoff; SessionStart reads it back as the recovery text. A
    failure is logged to .ctxward/log/ and changes nothing else.
    """
    if not os.path.isfile(transcript):
        return  # nothing to summarize (and sessions.py is not worth importing for nothing)
    # The summary must not break compaction or its instructions; out of time is not a failure
    # to log: `hookio.run` gives up quietly.
    with best_effort(event.project, "pre_compact-session", reraise=(BudgetExceeded,)):
        from ctxward.sessions.store import write_from_hook

        write_from_hook(event.project, event.session_id, transcript)


def _handoff(event: HookEvent) -> None:
    """C11: a session handoff compresses the completed work staged in the bank's .tmp/.

    Silent (stdout here is the summarizer's prompt); idempotent, as PreCompact may fire several
    times; a failure is logged to .ctxward/log/ and changes nothing else.
    """
    if not (event.project.bank_dir / ".tmp").is_dir():
        return  # nothing staged: session_handoff's own first check, without its imports
    # The handoff must not break compaction or its instructions.
    with best_effort(event.project, "pre_compact-c11", reraise=(BudgetExceeded,)):
        from ctxward.compress.handoff import session_handoff

        session_handoff(event.project)
