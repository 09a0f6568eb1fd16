"""Host adapters: a host's hook payload in, a HookEvent out; an Outcome in, the host's answer out.

Claude Code's contract is hookio's own (`read_event`, `render_outcome`): its payload shape is the
internal one. Every other host has one module here that maps its payload onto the same internal
event, so `events/*` never see host-specific keys, and renders the handler's Outcome the way that
host applies it. `hookio.run(..., host=NAME)` picks the module through `adapter_for`.

Every fact about a host lives in this package: the list of hosts (`HOSTS`, here, the one list),
payloads and answers (`opencode`, `codex`, `gemini`), the commands a host runs (`wiring`), where
each host reads its hooks and the canonical blocks ctxward writes there (`settings`), versions
and trust (`claude_version`, `codex_trust`, `gemini_trust`), synthetic payloads for doctor
(`payloads`).
"""

from __future__ import annotations

from ctxward.errors import HookInputError

# `typing.TYPE_CHECKING` without importing typing: every hook imports this package.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Protocol

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
