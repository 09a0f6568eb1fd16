"""The values that pass between hookio and the event handlers: HookEvent in, Outcome out.

`ctxward.hookio` re-exports these names (import them from there); they live apart so that the
hook hot path, which imports hookio first, does not pay for them before it has to.

Both are `core.values.Value`s.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ctxward.core.values import Value
from ctxward.errors import HookInputError

if TYPE_CHECKING:
    from ctxward.core.project import Project


class HookEvent(Value):
    """One hook invocation: the event name, the host's payload, and the project it concerns."""

    name: str
    data: Mapping[str, Any]
    project: Project

    def text(self, key: str) -> str:
        """The string field `key`, '' when absent or null; HookInputError for another type."""
        value = self.data.get(key)
        if value is None:
            return ""
        if not isinstance(value, str):
            raise HookInputError(f"{self.name} payload field {key!r} is not a string")
        return value

    @property
    def session_id(self) -> str:
        return self.text("session_id")


class Outcome(Value):
    """What a handler decided; `render_outcome` turns it into the host's stdout."""

    context: str | None = None  # for the model (hookSpecificOutput.additionalContext)
    notice: str | None = None  # for the user only (systemMessage)
    plain: str | None = None  # raw stdout (PreCompact: appended to the summarizer's prompt)
    decision: str | None = None  # PreToolUse: "allow" or "deny"; SubagentStop: "block"
    reason: str | None = None  # the deny's permissionDecisionReason, or the block's reason
    updated_input: Mapping[str, Any] | None = None  # PreToolUse: the tool input to run instead
    # Best-effort work that `hookio.run` does once the answer is written, within what is left
    # of the hook's time budget (PreCompact: the session summary, after the rules are out).
    after: Callable[[], None] | None = None
    # PostToolUse of an MCP tool: the output the model gets instead.
    updated_mcp_output: object = None


Handler = Callable[[HookEvent], Outcome]
NOTHING = Outcome()
