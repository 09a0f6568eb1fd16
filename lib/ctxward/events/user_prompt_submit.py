"""UserPromptSubmit: hand the model, once, the invariants the last compaction summary lost.

PostCompact checks which active rules the summary carried and leaves the lost ones in
`.ctxward/pending/<session id>.json` (`ctxward.invariants.pending`), because its own output reaches
nobody. The next prompt of that session takes the entry and answers with
`hookSpecificOutput.additionalContext`, which Claude Code 2.1.332 puts in the system message that
follows the prompt, as `UserPromptSubmit hook additional context: <text>`. The entry is removed as
it is taken, so the rules are restated once; with nothing pending there is no output. An entry
that ctxward did not seal on this machine for this session (one committed to the repository) is
removed and named in one line, never injected (`ctxward.invariants.pending.take`).

This runs on every prompt: standard library only, and one `stat` of a path derived from the
session id when nothing is pending (`hookio` answers that case through
`invariants.pending.nothing_pending` before building an event). Claude Code does not run this hook
for a local command such as `/compact` (it goes to the summarizer, not the model); should one
arrive here anyway, the entry is left for the next real prompt.
"""

from __future__ import annotations

from ctxward.invariants.pending import pending_path, take

# `typing.TYPE_CHECKING` without importing typing: this module is on every prompt's path.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from ctxward.hooktypes import HookEvent, Outcome

# Slash commands Claude Code runs itself, without sending the prompt to the model.
LOCAL_COMMANDS = frozenset({"/compact", "/clear", "/exit", "/quit", "/resume", "/cost", "/help"})


def handle(event: HookEvent) -> Outcome:
    from ctxward.hooktypes import NOTHING, Outcome

    if not pending_path(event.project, event.session_id).is_file():
        return NOTHING
    if _is_local_command(event.text("prompt")):
        return NOTHING
    entry = take(event.project, event.session_id)
    if entry is None:
        return NOTHING
    context: str = entry["context"]
    shown = entry.get("shown")
    if isinstance(shown, list):  # stated now: not again in this segment (ctxward.invariants.ledger)
        from ctxward.invariants import ledger

        ledger.record(event.project, event.session_id, [fp for fp in shown if isinstance(fp, str)])
    return Outcome(context=context)


def _is_local_command(prompt: str) -> bool:
    words = prompt.split(maxsplit=1)
    return bool(words) and words[0] in LOCAL_COMMANDS
