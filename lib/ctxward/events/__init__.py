"""One module per hook event; each exposes `handle(event) -> Outcome`.

Handlers are imported only when their event fires, so one event never pays for another's imports.
"""

from __future__ import annotations

import importlib

# `typing.TYPE_CHECKING` without importing typing: the PreToolUse hot path imports this package.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from ctxward.hooktypes import Handler

# hook_event_name -> module under ctxward.events
HANDLERS = {
    "PreCompact": "pre_compact",
    "SessionStart": "session_start",
    "PostCompact": "post_compact",
    "SubagentStop": "subagent_stop",
    "Stop": "stop",  # the debate filing check (seed 002)
    "PreToolUse": "pre_tool_use",
    "UserPromptSubmit": "user_prompt_submit",
    "PostToolUse": "post_tool_use",  # the drift observer (seed 002)
    "PostToolUseFailure": "post_tool_use",  # same handler: the event name says it failed
    "SessionEnd": "session_end",  # the seed 001 summary at session end
}


def handler_for(event_name: str) -> Handler:
    module = importlib.import_module(f"ctxward.events.{HANDLERS[event_name]}")
    handle: Handler = module.handle
    return handle
