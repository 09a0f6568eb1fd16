"""The host contract: stdin JSON -> handler -> stdout JSON / stderr line / exit code.

This is the only module of the hook path that touches stdin, stdout, stderr or exit codes, and
it imports only the standard library: a hook that has nothing to do costs one interpreter start.

Exit codes (Claude Code's contract; README "Exit codes"):

- 0: the handler ran; its answer, if any, is on stdout (JSON when it starts with `{`).
- 1: bad input (malformed JSON, not an object, not UTF-8, too large, nested deeper than
  MAX_PAYLOAD_DEPTH, a lone UTF-16 surrogate, an integer of more than 4,300 digits (Python's
  `sys.get_int_max_str_digits()`), unknown or wrong event), an expected failure, or an internal
  error. Claude Code treats 1 as a non-blocking error: the
  action proceeds and the user sees the one stderr line.
- 2: never used by a hook: it would block compaction or the tool call.

An internal error writes its traceback to `.ctxward/log/` and prints one line naming that file.

PreToolUse on the sub-agent tool (`Agent`, legacy `Task`: `hosts.claude_code.DISPATCH_TOOLS`)
FAILS CLOSED, because the G9 dispatch guard may not let through what it could not measure.
Instead of exit 1, the hook then exits 0 with a `permissionDecision: "deny"` whose reason names
the problem (the one stderr line is still written), when:

- the payload is PreToolUse for a dispatch tool and handling it fails (bad config, an internal
  error: anything but a decision);
- the run is pinned to PreToolUse (hooks/pre_tool_use.py, `ctxward hook pre-tool-use`) and the
  payload cannot be read (not UTF-8, not JSON, not an object, too large, an integer too long,
  no hook_event_name).
  Its matcher is `Agent|Task`, so an unreadable payload there is a dispatch. A readable payload
  for another event is still exit 1. `ctxward-hook` (not pinned) cannot tell bytes that are not
  JSON (or not UTF-8) from any other event's, so it exits 1 for them as for every other event;
  but well-formed JSON refused for its size, its depth, a lone surrogate or an integer too long
  is denied when it is a sub-agent call (`_refused_dispatch`): the model writes the tool input,
  and an oversized one must not pass by exit 1;
- the handler runs out of its time budget (`ctxward.core.limits.BUDGET_SECONDS`: 5 s of the host's
  10 s). A hook the host stops waiting for does not block: the dispatch would run unmeasured.

Every hook runs under a watchdog (`Watchdog`) from the start of `run`: past its budget it is
interrupted wherever it is, a backtracking regex or a YAML parse included. The dispatch guard
then denies as above; every other hook gives up quietly: exit 0, one stderr line. An answer
already written stays written: an Outcome's `after` work (PreCompact's handoff and session
summary) runs once the answer is out, so the rules reach the summarizer however long the rest
would have taken. The hot path below (`_needs_no_answer`) runs before `run`, outside it.

With `host="opencode"` a failure is exit 1 as usual: the OpenCode plugin blocks the task call
itself on any non-zero exit. With `host="codex"` (`ctxward-hook --host codex`, what Codex's
hooks.json runs) a dispatch is denied as for Claude Code: Codex takes the same deny JSON.

The hot path: `main` and `run_script` answer a PreToolUse call for any other tool with nothing
(exit 0) before any handler import, and so a sub-agent call that is surely in tier ok
(`events.pre_tool_use.needs_no_answer`); that path runs on every tool call when a user matches
broadly. Likewise a UserPromptSubmit with nothing pending (`pending.nothing_pending`: one stat),
which runs on every prompt. `run` itself always calls the handler. The deny reasons written here
are diagnostics (like the stderr lines), not templates: they must work when the templates cannot
be rendered.

The payload and answer shapes above are Claude Code's, which are also the internal ones. Other
hosts translate both ways in `ctxward/hosts/` (`run(..., host="opencode")`); the JSON that the
OpenCode plugin and ctxward exchange is documented in `ctxward/hosts/opencode.py`.
"""

from __future__ import annotations

import gc
import io
import os
import sys
import time

from ctxward.core.watchdog import Watchdog
from ctxward.errors import BudgetExceeded, CtxwardError, HookInputError
from ctxward.hosts.claude_code import (
    MAX_PAYLOAD_BYTES,
    decode_payload,
    is_dispatch_tool,
    read_event,
    render_outcome,
)

# `typing.TYPE_CHECKING` without importing typing: this module is the hot path's first import.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import IO, Any, NoReturn

    from ctxward.hooktypes import NOTHING as NOTHING
    from ctxward.hooktypes import Handler as Handler
    from ctxward.hooktypes import HookEvent as HookEvent
    from ctxward.hooktypes import Outcome as Outcome

# Hosts whose PreToolUse takes Claude Code's deny JSON when the guard cannot check a call.
_DENY_JSON_HOSTS = frozenset({"claude", "codex"})
# `ctxward-hook --host NAME`: the hosts whose installed hooks run the argv-free entry point.
_ARGV_HOSTS = (["codex"], ["gemini"])
# Tool-result events the drift observer watches (ctxward.drift.observe; it answers on the hot path).
_OBSERVED_EVENTS = ("PostToolUse", "PostToolUseFailure")


_TYPES = frozenset({"HookEvent", "Outcome", "Handler", "NOTHING"})


def __getattr__(name: str) -> Any:
    """HookEvent, Outcome, Handler and NOTHING, from ctxward.hooktypes on first use.

    Importing them only when asked keeps the PreToolUse no-op path from loading what it does
    not use (hooktypes and the value base it builds on).
    """
    if name in _TYPES:
        from ctxward import hooktypes

        return getattr(hooktypes, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def run(
    handler: Handler | None = None,
    *,
    event_name: str | None = None,
    stdin: IO[bytes] | None = None,
    stdout: IO[str] | None = None,
    stderr: IO[str] | None = None,
    env: Mapping[str, str] | None = None,
    host: str = "claude",
    budget: float | None = None,
    ends_process: bool = False,
) -> int:
    """Read one event, run its handler, write the host's answer; return the exit code.

    `handler` None dispatches on hook_event_name (what `ctxward-hook` does); `event_name` makes
    the run refuse payloads of any other event (what the hooks/*.py entry points do). `host`
    other than "claude" reads and answers in that host's shape through `ctxward.hosts`
    (OpenCode's JSON, both ways: `ctxward/hosts/opencode.py`); the exit codes are the same.
    `budget` (seconds) replaces the event's own time budget (tests of the watchdog).
    `ends_process` (the hook entries, which exit after it): a handler still running a second
    past its budget, having caught every alarm, is answered for and the process ended.
    """
    from ctxward.core.limits import BUDGET_SECONDS

    stdin = stdin if stdin is not None else sys.stdin.buffer
    stdout = stdout if stdout is not None else sys.stdout
    stderr = stderr if stderr is not None else sys.stderr
    env = os.environ if env is None else env
    label = event_name or "hook"
    event: HookEvent | None = None
    raw: bytes | None = None

    def overrun() -> NoReturn:
        problem = f"ran past its {watchdog.seconds:g} s budget"
        _exit_process(_out_of_time(problem, label, host, event, raw, event_name, stdout, stderr))

    # Until the payload says which event it is: the shortest budget (reading it is quick).
    watchdog = Watchdog(
        budget or BUDGET_SECONDS.get(label, min(BUDGET_SECONDS.values())),
        overrun=overrun if ends_process else None,
    )
    try:
        with watchdog:
            raw = stdin.read(MAX_PAYLOAD_BYTES + 1)
            if host == "claude":
                event = read_event(raw, env, expected=event_name)
            else:
                from ctxward.hosts import adapter_for

                adapter = adapter_for(host)
                event = adapter.read_event(raw, env, expected=event_name)
            label = event.name
            watchdog.budget(budget or BUDGET_SECONDS.get(label, watchdog.seconds))
            if handler is None:
                from ctxward.events import handler_for

                handler = handler_for(event.name)
            if event.project.anchored or event.name == "PreToolUse":
                from ctxward.core.fsutil import sweep_after_writes

                with sweep_after_writes(event.project.state_dir, event.project.plans_dir):
                    outcome = handler(event)
            else:  # not a project: nothing of ours to read, and no .ctxward/ is made in it
                from ctxward.hooktypes import NOTHING

                outcome = NOTHING
            if host == "claude":
                answer = render_outcome(event.name, outcome)
            else:
                answer = adapter.render_outcome(event, outcome)
        if watchdog.expired:  # the alarm was caught on the way: this answer came too late
            raise BudgetExceeded(f"ran past its {watchdog.seconds:g} s budget")
    except BudgetExceeded as exc:
        return _out_of_time(str(exc), label, host, event, raw, event_name, stdout, stderr)
    except CtxwardError as exc:
        from ctxward.core.text import one_line  # here: the error paths alone need it

        stderr.write(f"ctxward: {label}: {one_line(str(exc))}\n")
        if host in _DENY_JSON_HOSTS and _guards_dispatch(raw, event_name):
            return _deny_unchecked(one_line(str(exc)), stdout)
        return 1
    except Exception as exc:  # noqa: BLE001 - a hook must never show the user a traceback
        from ctxward.core.text import one_line

        where = _log_traceback(event, label, env)
        problem = one_line(f"{type(exc).__name__}: {exc}")
        stderr.write(f"ctxward: internal error in {label}: {problem} (details: {where})\n")
        if host in _DENY_JSON_HOSTS and _guards_dispatch(raw, event_name):
            return _deny_unchecked(f"internal error: {problem} (details: {where})", stdout)
        return 1
    # Written with no alarm armed: an answer cut in half would be no answer (for a dispatch,
    # an allow).
    stdout.write(answer)
    stdout.flush()
    if outcome.after is not None:
        _after_answer(outcome.after, watchdog, event, env, stderr)
    return 0


def _after_answer(
    work: Callable[[], None],
    watchdog: Watchdog,
    event: HookEvent,
    env: Mapping[str, str],
    stderr: IO[str],
) -> None:
    """An Outcome's `after` work, in what is left of the budget; the answer is out and stands,
    so whatever happens here is one stderr line at most (and the exit code stays 0)."""
    problem = f"ran past its {watchdog.seconds:g} s budget"
    try:
        if time.monotonic() >= watchdog.deadline:
            raise BudgetExceeded(problem)
        with Watchdog(
            watchdog.seconds, deadline=watchdog.deadline, overrun=watchdog.overrun and _quit
        ) as after:
            work()
        if after.expired:
            raise BudgetExceeded(problem)
    except Exception as exc:  # noqa: BLE001 - a hook must never show the user a traceback
        from ctxward.core.text import one_line  # here: the error paths alone need it

        if isinstance(exc, CtxwardError):  # BudgetExceeded included
            stderr.write(f"ctxward: {event.name}: after the answer: {one_line(str(exc))}\n")
            return
        where = _log_traceback(event, event.name, env)
        problem = one_line(f"{type(exc).__name__}: {exc}")
        stderr.write(f"ctxward: internal error in {event.name}: {problem} (details: {where})\n")


def _quit() -> NoReturn:
    """The end of a hook process whose answer is already out (`_after_answer`'s last resort)."""
    _exit_process(0)


def _out_of_time(
    problem: str,
    label: str,
    host: str,
    event: HookEvent | None,
    raw: bytes | None,
    event_name: str | None,
    stdout: IO[str],
    stderr: IO[str],
) -> int:
    """The watchdog's end of a run: a dispatch is denied (exit 1 for OpenCode, whose plugin
    then blocks the task); any other hook gives up quietly, exit 0, one stderr line."""
    stderr.write(f"ctxward: {label}: {problem}; gave up\n")
    if event is not None:
        dispatch = event.name == "PreToolUse" and is_dispatch_tool(event.data.get("tool_name"))
    else:
        dispatch = _guards_dispatch(raw, event_name)
    if not dispatch:
        return 0
    if host not in _DENY_JSON_HOSTS:
        return 1
    return _deny_unchecked(
        f"it {problem}: a call this large or this unusual cannot be measured in time; send "
        f"less, or put the text in a file and pass its path",
        stdout,
    )


def _guards_dispatch(raw: bytes | None, event_name: str | None) -> bool:
    """Whether a failure on this payload must deny: the module docstring's fail-closed cases."""
    if event_name not in (None, "PreToolUse"):
        return False
    try:
        data = decode_payload(raw) if raw is not None else None
    except HookInputError:
        if event_name is None:  # ctxward-hook: whose payload was refused?
            return _refused_dispatch(raw or b"")
        data = None
    name = data.get("hook_event_name") if data is not None else None
    if name == "PreToolUse":
        return data is not None and is_dispatch_tool(data.get("tool_name"))
    return event_name == "PreToolUse" and not (isinstance(name, str) and name)


def _refused_dispatch(raw: bytes) -> bool:
    """Whether a payload `decode_payload` refused is still a sub-agent call (ctxward-hook).

    Well-formed JSON refused for its size, its depth, a lone surrogate or an integer too long
    to convert may carry a dispatch (the model writes the tool input): it must be denied, not
    let through by exit 1. Bytes that are not UTF-8 or not JSON are no host's payload, and get
    exit 1 like any other event.
    For a payload too large or too deep to parse, Claude Code writes `hook_event_name` and
    `tool_name` before `tool_input`, so their first occurrences are the payload's own keys.
    """
    if len(raw) <= MAX_PAYLOAD_BYTES:
        try:
            # parse_int=len: an integer becomes its digit count, never converted (no limit).
            import json

            data = json.loads(raw.decode("utf-8"), parse_int=len)
        except RecursionError:
            data = None
        except ValueError:
            return False
        if data is not None:
            return (
                isinstance(data, dict)
                and data.get("hook_event_name") == "PreToolUse"
                and is_dispatch_tool(data.get("tool_name"))
            )
    import re

    event = re.search(rb'"hook_event_name"\s*:\s*"([^"\\]*)"', raw)
    tool = re.search(rb'"tool_name"\s*:\s*"([^"\\]*)"', raw)
    return (
        event is not None
        and event.group(1) == b"PreToolUse"
        and tool is not None
        and is_dispatch_tool(tool.group(1).decode("utf-8", "replace"))
    )


def _deny_unchecked(problem: str, stdout: IO[str]) -> int:
    """Answer a dispatch the guard could not check with a deny (exit 0, so the JSON is read)."""
    from ctxward.hooktypes import Outcome

    reason = (
        f"ctxward dispatch guard: this sub-agent call was denied because the guard could not "
        f"check it: {problem}. The guard fails closed and has no override; a well-formed call "
        f"(a JSON object with a string prompt) is measured normally once the problem is fixed."
    )
    notice = (
        f"ctxward: a sub-agent call was denied; the dispatch guard could not check it: {problem}"
    )
    stdout.write(
        render_outcome("PreToolUse", Outcome(decision="deny", reason=reason, notice=notice))
    )
    stdout.flush()
    return 0


def _log_traceback(event: HookEvent | None, label: str, env: Mapping[str, str]) -> str:
    from ctxward.core.log import log_failure
    from ctxward.core.project import Project, find_root

    try:
        project = event.project if event else Project(find_root(env))
    except Exception:  # noqa: BLE001 - logging must not mask the original error
        return "traceback not saved: the log folder is not writable"
    return log_failure(project, label)


def run_script(event_name: str) -> NoReturn:
    """Entry of hooks/<event>.py: the same path as `ctxward-hook`, pinned to one event.

    A plugin checkout run by a bare `python3` may lack ctxward's dependencies; when an installed
    `ctxward-hook` is on PATH, hand the payload over to it instead of failing. That check comes
    after the no-op answer, which needs none of them (it runs on every tool call). Only the
    absolute folders of PATH count: a relative one names the project, which may be a clone that
    commits its own `ctxward-hook`.

    Ends the process (`_exit_process`): never call it in-process, call `run`.
    """
    raw = sys.stdin.buffer.read(MAX_PAYLOAD_BYTES + 1)
    if _needs_no_answer(raw, event_name):
        _exit_process(0)
    if _dependencies_missing():
        import shutil

        folders = os.environ.get("PATH", os.defpath).split(os.pathsep)
        absolute = os.pathsep.join(folder for folder in folders if os.path.isabs(folder))
        installed = shutil.which("ctxward-hook", path=absolute)
        if installed and os.path.isabs(installed):
            _exec_with_stdin(installed, raw)
    _answer_and_exit(raw, event_name)


def _exec_with_stdin(program: str, raw: bytes) -> None:
    """Replace this process by `program`, whose stdin holds the bytes already read."""
    import tempfile

    with tempfile.TemporaryFile() as handle:
        handle.write(raw)
        handle.flush()
        os.lseek(handle.fileno(), 0, os.SEEK_SET)
        os.dup2(handle.fileno(), 0)
    os.execv(program, [program])


def _dependencies_missing() -> bool:
    from importlib.util import find_spec

    return any(find_spec(name) is None for name in ("jinja2", "yaml"))


def main() -> NoReturn:
    """`ctxward-hook` (Claude Code), `ctxward-hook --host codex` (Codex CLI's hooks.json) or
    `ctxward-hook --host gemini` (Gemini CLI's settings.json):
    dispatches on the payload's hook_event_name.

    A PreToolUse call for a non-dispatch tool is answered at once, anything else by `run`. Ends
    the process (`_exit_process`): never call it in-process, call `run`. Other arguments are
    ignored, as they always were.
    """
    host = sys.argv[2] if sys.argv[1:2] == ["--host"] and sys.argv[2:3] in _ARGV_HOSTS else "claude"
    raw = sys.stdin.buffer.read(MAX_PAYLOAD_BYTES + 1)
    if _needs_no_answer(raw, None, host):
        _exit_process(0)
    _answer_and_exit(raw, None, host)


def _answer_and_exit(raw: bytes, event_name: str | None, host: str = "claude") -> NoReturn:
    """A hook process's full path: `run` on the payload already read, then `_exit_process`.

    The cyclic garbage collector is switched off first. A hook process lives for tens of
    milliseconds, allocates mostly while importing (Jinja2's import alone runs ~4 ms of
    collections, bench/hook_latency.py) and ends without a teardown; reference counting still
    frees at once everything that is not in a cycle, and what is left dies with the process.
    """
    gc.disable()
    _exit_process(run(event_name=event_name, stdin=io.BytesIO(raw), host=host, ends_process=True))


def _exit_process(code: int) -> NoReturn:
    """End a hook process with `code` now: flush stdout and stderr, skip the interpreter teardown.

    Tearing down what a hook imported (Jinja2 above all) costs ~10 ms, a whole `python -c pass`
    (bench/hook_latency.py), and does nothing a hook needs: every file ctxward writes is closed
    and fsynced by `fsutil.atomic_write` before it returns, and the hook path registers no
    atexit handler and leaves no thread running (a batch write joins its threads before it
    returns). Only the two process entries (`main`, `run_script`)
    end this way; `run` returns its code (tests and `ctxward hook` call it in-process).

    An answer that cannot be flushed (the host closed the pipe) makes it exit 1, where Python's
    own shutdown would exit 120: the hook contract's "failed, non-blocking" code.
    """
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe or a closed stream: the answer is lost
            code = code or 1
    os._exit(code)


def _needs_no_answer(raw: bytes, event_name: str | None, host: str = "claude") -> bool:
    """PreToolUse for another tool, or a small dispatch, or a prompt with nothing pending, or a
    tool result the drift observer noted with nothing to tell: nothing to say (standard library
    only). A Codex payload is read in the internal shape (`hosts.codex.translate`)."""
    if event_name not in (None, "PreToolUse", "UserPromptSubmit", *_OBSERVED_EVENTS):
        return False
    try:
        data = decode_payload(raw)
    except HookInputError:
        return False  # `run` reports it (and denies when pinned to PreToolUse)
    if host == "codex":
        from ctxward.hosts.codex import translate

        data = translate(data)
    name = data.get("hook_event_name")
    if name == "UserPromptSubmit" and event_name in (None, name):
        from ctxward.invariants.pending import nothing_pending

        return nothing_pending(data, os.environ)
    if name in _OBSERVED_EVENTS and event_name in (None, name):
        from ctxward.drift.observe import observed_quietly

        return observed_quietly(data, os.environ)
    if name != "PreToolUse" or event_name not in (None, name):
        return False
    if not is_dispatch_tool(data.get("tool_name")):
        return True
    from ctxward.events.pre_tool_use import needs_no_answer

    return needs_no_answer(data, os.environ, len(raw))


def run_in_memory(
    payload: bytes, env: Mapping[str, str], handler: Handler | None = None
) -> tuple[int, str, str]:
    """Run one hook with `payload` as stdin; return (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    code = run(handler, stdin=io.BytesIO(payload), stdout=out, stderr=err, env=env)
    return code, out.getvalue(), err.getvalue()
