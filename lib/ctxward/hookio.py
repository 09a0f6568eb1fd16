"""The host contract: stdin JSON -> handler -> stdout JSON / stderr line / exit code.

This is the only module of the hook path that touches stdin, stdout, stderr or exit codes, and
it imports only the standard library: a hook that has nothing to do costs one interpreter start.

Exit codes (Claude Code's contract; README "Exit codes"):

- 0: the handler ran; its answer, if any, is on stdout (JSON when it starts with `{`).
- 1: bad input (malformed JSON, not an object, not UTF-8, too large, unknown or wrong event),
  an expected failure, or an internal error. Claude Code treats 1 as a non-blocking error: the
  action proceeds and the user sees the one stderr line.
- 2: never used by a hook: it would block compaction or the tool call.

An internal error writes its traceback to `.ctxward/log/` and prints one line naming that file.
"""

from __future__ import annotations

import io
import json
import os
import sys
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import IO, Any

from ctxward.errors import CtxwardError, HookInputError
from ctxward.project import Project, find_root

MAX_PAYLOAD_BYTES = 32 * 1024 * 1024
# Events whose hookSpecificOutput Claude Code accepts (PreCompact/PostCompact reject it).
_SPECIFIC_OUTPUT_EVENTS = frozenset({"SessionStart", "PreToolUse", "SubagentStop"})


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


def read_event(raw: bytes, env: Mapping[str, str], expected: str | None = None) -> HookEvent:
    """Parse the host's stdin bytes into a HookEvent; HookInputError names what is wrong."""
    from ctxward.events import HANDLERS

    if len(raw) > MAX_PAYLOAD_BYTES:
        raise HookInputError(f"payload is larger than {MAX_PAYLOAD_BYTES} bytes")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise HookInputError(f"payload is not UTF-8 (byte {exc.start})") from None
    if not text.strip():
        raise HookInputError("no payload on stdin (expected the host's hook JSON)")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise HookInputError(f"payload is not JSON: {exc.msg} at line {exc.lineno}") from None
    if not isinstance(data, dict):
        raise HookInputError(f"payload is a JSON {type(data).__name__}, not an object")
    name = data.get("hook_event_name")
    if not isinstance(name, str) or not name:
        raise HookInputError("payload has no 'hook_event_name'")
    if name not in HANDLERS:
        raise HookInputError(f"unknown hook event {name!r} (handled: {', '.join(HANDLERS)})")
    if expected is not None and name != expected:
        raise HookInputError(f"this hook handles {expected}, but the payload is for {name}")
    cwd = data.get("cwd")
    root = find_root(env, cwd if isinstance(cwd, str) and cwd else None)
    return HookEvent(name=name, data=data, project=Project(root))


def render_outcome(event: str, outcome: Outcome) -> str:
    """Serialise `outcome` the way Claude Code reads it for `event` ('' when nothing to say)."""
    if outcome.plain is not None:
        return outcome.plain
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
    if specific:
        if event not in _SPECIFIC_OUTPUT_EVENTS:
            raise ValueError(f"{event} accepts no hookSpecificOutput")
        body["hookSpecificOutput"] = {"hookEventName": event, **specific}
    if outcome.notice is not None:
        body["systemMessage"] = outcome.notice
    return json.dumps(body, ensure_ascii=False) + "\n" if body else ""


def run(
    handler: Handler | None = None,
    *,
    event_name: str | None = None,
    stdin: IO[bytes] | None = None,
    stdout: IO[str] | None = None,
    stderr: IO[str] | None = None,
    env: Mapping[str, str] | None = None,
) -> int:
    """Read one event, run its handler, write the host's answer; return the exit code.

    `handler` None dispatches on hook_event_name (what `ctxward-hook` does); `event_name` makes
    the run refuse payloads of any other event (what the hooks/*.py entry points do).
    """
    stdin = stdin if stdin is not None else sys.stdin.buffer
    stdout = stdout if stdout is not None else sys.stdout
    stderr = stderr if stderr is not None else sys.stderr
    env = os.environ if env is None else env
    label = event_name or "hook"
    event: HookEvent | None = None
    try:
        event = read_event(stdin.read(MAX_PAYLOAD_BYTES + 1), env, expected=event_name)
        label = event.name
        if handler is None:
            from ctxward.events import handler_for

            handler = handler_for(event.name)
        answer = render_outcome(event.name, handler(event))
    except CtxwardError as exc:
        stderr.write(f"ctxward: {label}: {exc}\n")
        return 1
    except Exception as exc:  # noqa: BLE001 - a hook must never show the user a traceback
        where = _log_traceback(event, label, env)
        stderr.write(
            f"ctxward: internal error in {label}: {type(exc).__name__}: {exc} (details: {where})\n"
        )
        return 1
    stdout.write(answer)
    stdout.flush()
    return 0


def _log_traceback(event: HookEvent | None, label: str, env: Mapping[str, str]) -> str:
    try:
        project = event.project if event else Project(find_root(env))
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S.%fZ")
        path = project.log_dir / f"{stamp}-{label}.log"
        from ctxward.fsutil import atomic_write

        atomic_write(path, traceback.format_exc())
        return project.relative(path)
    except Exception:  # noqa: BLE001 - logging must not mask the original error
        return "traceback not saved: the log folder is not writable"


def run_script(event_name: str) -> int:
    """Entry of hooks/<event>.py: the same path as `ctxward-hook`, pinned to one event.

    A plugin checkout run by a bare `python3` may lack ctxward's dependencies; when an installed
    `ctxward-hook` is on PATH, hand the (still unread) stdin over to it instead of failing.
    """
    if _dependencies_missing():
        import shutil

        installed = shutil.which("ctxward-hook")
        if installed:
            os.execv(installed, [installed])
    return run(event_name=event_name)


def _dependencies_missing() -> bool:
    from importlib.util import find_spec

    return any(find_spec(name) is None for name in ("jinja2", "yaml"))


def main() -> int:
    """`ctxward-hook`: takes no arguments; dispatches on the payload's hook_event_name."""
    return run()


def run_in_memory(
    payload: bytes, env: Mapping[str, str], handler: Handler | None = None
) -> tuple[int, str, str]:
    """Run one hook with `payload` as stdin; return (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    code = run(handler, stdin=io.BytesIO(payload), stdout=out, stderr=err, env=env)
    return code, out.getvalue(), err.getvalue()
