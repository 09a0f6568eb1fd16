"""Host adapters: a host's hook payload in, a HookEvent out; an Outcome in, the host's answer out.

Claude Code's contract is hookio's own (`read_event`, `render_outcome`): its payload shape is the
internal one. Every other host has one module here that maps its payload onto the same internal
event, so `events/*` never see host-specific keys, and renders the handler's Outcome the way that
host applies it. `hookio.run(..., host=NAME)` picks the module through `adapter_for`.

Every fact about a host lives in this package: the list of hosts (`HOSTS`, here, the one list),
payloads and answers (`opencode`, `codex`, `gemini`), the commands a host runs (`wiring`), where
each host reads its hooks and the canonical blocks ctxward writes there (`settings`), versions
and trust (`claude_version`, `codex_trust`, `gemini_trust`), synthetic payloads for doctor
(`payloads`), and here the payload checks the adapters share (`event_name`, `optional_text`).
"""

from __future__ import annotations

from ctxward.errors import HookInputError

# `typing.TYPE_CHECKING` without importing typing: every hook imports this package.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Collection, Mapping
    from typing import Any, Protocol

    from ctxward.hooktypes import HookEvent, Outcome

    class HostAdapter(Protocol):
        """What a host module provides (a module satisfies this protocol)."""

        def read_event(
            self, raw: bytes, env: Mapping[str, str], expected: str | None = None
        ) -> HookEvent: ...

        def render_outcome(self, event: HookEvent, outcome: Outcome) -> str: ...


CLAUDE = "claude"
OPENCODE = "opencode"
CODEX = "codex"
GEMINI = "gemini"
HOSTS = (CLAUDE, OPENCODE, CODEX, GEMINI)


def adapter_for(host: str) -> HostAdapter:
    """The adapter module of a host other than Claude Code; HookInputError for an unknown one."""
    if host == OPENCODE:
        from ctxward.hosts import opencode

        return opencode
    if host == CODEX:
        from ctxward.hosts import codex

        return codex
    if host == GEMINI:
        from ctxward.hosts import gemini

        return gemini
    raise HookInputError(f"unknown host {host!r} (known: {', '.join(HOSTS)})")


def event_name(payload: Mapping[str, Any], host: str, handled: Collection[str]) -> str:
    """The payload's `hook_event_name`, one of `handled`; HookInputError naming `host`."""
    name = payload.get("hook_event_name")
    if not isinstance(name, str) or not name:
        raise HookInputError(f"{host} payload has no 'hook_event_name'")
    if name not in handled:
        raise HookInputError(
            f"{host} event {name!r} is not handled by ctxward (handled: {', '.join(handled)})"
        )
    return name


def optional_text(payload: Mapping[str, Any], key: str, host: str) -> str | None:
    """The payload's string field `key` (None when absent); HookInputError for another type."""
    value = payload.get(key)
    if value is not None and not isinstance(value, str):
        raise HookInputError(f"{host} payload field {key!r} is not a string")
    return value
