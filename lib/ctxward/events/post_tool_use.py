"""PostToolUse and PostToolUseFailure: the drift observer (seed 002; logic in ctxward.drift).

Every tool call is observed: one line in `.ctxward/sessions/<session id>.tools.jsonl`, the
bounded window in `<session id>.drift.json`. When a stuck-pattern signature starts to hold, the
answer carries one factual sentence per signature as `additionalContext`, which Claude Code puts
next to the tool result; each is told once, until the pattern clears and forms again.

On the installed hook path `hookio` observes the call first, with the standard library only
(`drift.observed_quietly`), and runs this handler only when a report is waiting; the handler
recognises the call as already observed and just takes the reports. Run any other way (`ctxward
hook post-tool-use`, the OpenCode plugin) it observes the call itself. Fails open, like every
hook but the dispatch guard: a problem is one stderr line and exit 1, and the tool result is
untouched.
"""

from __future__ import annotations

from ctxward import drift
from ctxward.hookio import NOTHING, HookEvent, Outcome


def handle(event: HookEvent) -> Outcome:
    reports = drift.record(event.project.root, event.name, event.data)
    if not reports:
        return NOTHING
    return Outcome(context=drift.facts(event.project, reports, event.data))
