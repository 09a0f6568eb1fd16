"""The values that pass between hookio and the event handlers: HookEvent in, Outcome out.

`ctxward.hookio` re-exports these names (import them from there); they live apart so that the
hook hot path, which imports hookio first, does not pay for `dataclasses` before it has to.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ctxward.errors import HookInputError

if TYPE_CHECKING:
    from ctxward.project import Project


@dataclass(frozen=True, slots=True)
class HookEvent:
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


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a handler decided; `render_outcome` turns it into the host's stdout."""

    context: str | None = None  # for the model (hookSpecificOutput.additionalContext)
    notice: str | None = None  # for the user only (systemMessage)
    plain: str | None = None  # raw stdout (PreCompact: appended to the summarizer's prompt)
    decision: str | None = None  # PreToolUse: "allow" or "deny"
    reason: str | None = None  # PreToolUse: permissionDecisionReason (the model reads a deny)
    updated_input: Mapping[str, Any] | None = field(default=None)


Handler = Callable[[HookEvent], Outcome]
NOTHING = Outcome()
