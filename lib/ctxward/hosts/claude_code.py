"""Claude Code's hook contract: its payload in (`read_event`), an Outcome out (`render_outcome`).

Claude Code's payload shape is the internal one (`hooktypes.HookEvent`): every other host's module
here maps its payload onto it, and reuses `decode_payload`. Standard library only: `hookio`
imports this module on every hook's hot path.
"""

from __future__ import annotations

from ctxward.core.hotjson import loads
from ctxward.errors import HookInputError, digits_problem

# `typing.TYPE_CHECKING` without importing typing: this module is on the hot path.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from ctxward.hooktypes import HookEvent, Outcome

MAX_PAYLOAD_BYTES = 32 * 1024 * 1024
# Host payloads nest a few levels (tool inputs and results included); deeper is refused
# (`ctxward.core.limits`: the handlers walk tool inputs recursively).
MAX_PAYLOAD_DEPTH = 100
# Claude Code's sub-agent tool (renamed from Task in 2.1.63; both names are accepted), and
# Codex's two tools that carry text to a sub-agent (hosts/codex.py DISPATCH_TOOLS). Exact
# names: the host runs a sub-agent for no other spelling (a Cyrillic "Аgent" is another tool).
DISPATCH_TOOLS = frozenset(
    {"Agent", "Task", "spawn_agent", "multi_agent_v1send_input", "send_input"}
)
# Stops a top-level {"decision": "block", "reason"} refuses (the reason reaches the agent).
_BLOCKABLE_STOPS = frozenset({"Stop", "SubagentStop"})
# Events whose hookSpecificOutput Claude Code accepts (PreCompact/PostCompact reject it).
_SPECIFIC_OUTPUT_EVENTS = frozenset(
    {
        "SessionStart",
        "PreToolUse",
        "SubagentStop",
        "UserPromptSubmit",
        "PostToolUse",
        "PostToolUseFailure",
    }
)


def is_dispatch_tool(tool_name: object) -> bool:
    """Whether a payload's tool_name is the sub-agent tool (any JSON value may come in)."""
    return isinstance(tool_name, str) and tool_name in DISPATCH_TOOLS


def read_event(raw: bytes, env: Mapping[str, str], expected: str | None = None) -> HookEvent:
    """Parse the host's stdin bytes into a HookEvent; HookInputError names what is wrong."""
    from ctxward.core.project import find_project
    from ctxward.events import HANDLERS
    from ctxward.hooktypes import HookEvent

    data = decode_payload(raw)
    name = data.get("hook_event_name")
    if not isinstance(name, str) or not name:
        raise HookInputError("payload has no 'hook_event_name'")
    if name not in HANDLERS:
        raise HookInputError(f"unknown hook event {name!r} (handled: {', '.join(HANDLERS)})")
    if expected is not None and name != expected:
        raise HookInputError(f"this hook handles {expected}, but the payload is for {name}")
    cwd = data.get("cwd")
    project = find_project(env, cwd if isinstance(cwd, str) and cwd else None)
    return HookEvent(name=name, data=data, project=project)


def decode_payload(raw: bytes) -> dict[str, Any]:
    """The host's stdin bytes as a JSON object; HookInputError names what is wrong (any host)."""
    if len(raw) > MAX_PAYLOAD_BYTES:
        raise HookInputError(f"payload is larger than {MAX_PAYLOAD_BYTES} bytes")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise HookInputError(f"payload is not UTF-8 (byte {exc.start})") from None
    if not text.strip():
        raise HookInputError("no payload on stdin (expected the host's hook JSON)")
    try:
        data = loads(text)
    except ValueError as exc:
        import json

        if isinstance(exc, json.JSONDecodeError):
            raise HookInputError(f"payload is not JSON: {exc.msg} at line {exc.lineno}") from None
        # json's only other error: an integer past Python's conversion limit
        raise HookInputError(f"payload has {digits_problem()}") from None
    except RecursionError:  # json's scanner recurses once per level
        raise HookInputError(f"payload nests deeper than {MAX_PAYLOAD_DEPTH} levels") from None
    if not isinstance(data, dict):
        raise HookInputError(f"payload is a JSON {type(data).__name__}, not an object")
    # Cheap tests first (C-speed scans of the text): most payloads skip the walk.
    if text.count("[") + text.count("{") > MAX_PAYLOAD_DEPTH or _escapes_surrogate(text):
        from ctxward.core.limits import problem

        refused = problem(data, max_depth=MAX_PAYLOAD_DEPTH)
        if refused is not None:
            raise HookInputError(f"payload {refused}")
    return data


def _escapes_surrogate(text: str) -> bool:
    return "\\ud" in text or "\\uD" in text


def render_outcome(event: str, outcome: Outcome) -> str:
    """Serialise `outcome` the way Claude Code reads it for `event` ('' when nothing to say)."""
    if outcome.plain is not None:
        return outcome.plain
    import json  # here, not at the top: a hook with nothing to say never imports it (hotjson)

    if outcome.decision == "block":  # Stop / SubagentStop: top-level, the reason reaches the agent
        if event not in _BLOCKABLE_STOPS:
            raise ValueError(f"{event} cannot be blocked this way")
        return (
            json.dumps({"decision": "block", "reason": outcome.reason}, ensure_ascii=False) + "\n"
        )
    body: dict[str, Any] = {}
    specific: dict[str, Any] = {}
    if outcome.decision is not None:
        specific["permissionDecision"] = outcome.decision
    if outcome.reason is not None:
        specific["permissionDecisionReason"] = outcome.reason
    if outcome.updated_input is not None:
        specific["updatedInput"] = dict(outcome.updated_input)
    if outcome.context is not None:
        specific["additionalContext"] = outcome.context
    if outcome.updated_mcp_output is not None:
        specific["updatedMCPToolOutput"] = outcome.updated_mcp_output
    if specific:
        if event not in _SPECIFIC_OUTPUT_EVENTS:
            raise ValueError(f"{event} accepts no hookSpecificOutput")
        body["hookSpecificOutput"] = {"hookEventName": event, **specific}
    if outcome.notice is not None:
        body["systemMessage"] = outcome.notice
    return json.dumps(body, ensure_ascii=False) + "\n" if body else ""
