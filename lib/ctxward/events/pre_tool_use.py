"""PreToolUse: the G9 dispatch guard for the sub-agent tool (Agent, legacy Task).

Every other tool leaves at once, importing nothing beyond the standard library.
"""

from __future__ import annotations

from ctxward.hookio import NOTHING, HookEvent, Outcome

DISPATCH_TOOLS = frozenset({"Agent", "Task"})


def handle(event: HookEvent) -> Outcome:
    return NOTHING
