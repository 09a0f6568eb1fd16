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

PreToolUse on the sub-agent tool (`Agent`, legacy `Task`: DISPATCH_TOOLS) FAILS CLOSED, because
the G9 dispatch guard may not let through what it could not measure. Instead of exit 1, the
hook then exits 0 with a `permissionDecision: "deny"` whose reason names the problem (the one
stderr line is still written), when:

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

Every hook runs under a watchdog (`_Watchdog`) from the start of `run`: past its budget it is
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
import json
import os
import sys
import time

from ctxward.errors import BudgetExceeded, CtxwardError, HookInputError, digits_problem

# `typing.TYPE_CHECKING` without importing typing: this module is the hot path's first import.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import IO, Any, NoReturn

    from ctxward.hooktypes import NOTHING as NOTHING
    from ctxward.hooktypes import Handler as Handler
    from ctxward.hooktypes import HookEvent as HookEvent
    from ctxward.hooktypes import Outcome as Outcome

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
# Hosts whose PreToolUse takes Claude Code's deny JSON when the guard cannot check a call.
_DENY_JSON_HOSTS = frozenset({"claude", "codex"})
# `ctxward-hook --host NAME`: the hosts whose installed hooks run the argv-free entry point.
_ARGV_HOSTS = (["codex"], ["gemini"])
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
# Tool-result events the drift observer watches (ctxward.drift.observe; it answers on the hot path).
_OBSERVED_EVENTS = ("PostToolUse", "PostToolUseFailure")


_TYPES = frozenset({"HookEvent", "Outcome", "Handler", "NOTHING"})


# Once the budget is spent the watchdog raises again at this interval until the hook is out, so
# an `except Exception` on the way (the best-effort steps have some) cannot hold it back; in a
# hook process, one that still runs _LAST_RESORT seconds later is ended from the alarm itself.
_WATCHDOG_REPEAT = 0.05
_LAST_RESORT = 1.0


class _Watchdog:
    """A SIGALRM timer that raises BudgetExceeded in the main thread when the budget runs out.

    CPython runs a signal handler between bytecodes, and `re` and the YAML parser check for
    signals as they go, so even a call that would run for minutes is interrupted. `run` may be
    called in-process (tests, `ctxward hook`): the watchdog does nothing outside the main
    thread or where the platform has no SIGALRM, and it puts back the previous handler and
    timer when it ends. A timer already running (a test's deadline, say) keeps its deadline:
    when it comes first, its own handler is called.

    `expired` stays True once the budget ran out, even if the alarm was caught on the way: what
    the handler returns that late is not an answer. `overrun`, when given, is called from the
    alarm _LAST_RESORT seconds past the budget (it ends the process: the hook entries only).
    """

    __slots__ = ("_active", "_outer", "_previous", "deadline", "expired", "overrun", "seconds")

    def __init__(
        self,
        seconds: float,
        *,
        deadline: float | None = None,
        overrun: Callable[[], NoReturn] | None = None,
    ) -> None:
        self.seconds = seconds
        self.deadline = time.monotonic() + seconds if deadline is None else deadline
        self.overrun = overrun
        self.expired = False
        self._active = False
        self._previous: Any = None
        self._outer: tuple[float, float] | None = None  # (deadline, interval) of a timer before

    def __enter__(self) -> _Watchdog:
        try:
            import signal

            self._previous = signal.signal(signal.SIGALRM, self._expire)
        except (ImportError, AttributeError, ValueError):  # no SIGALRM; not the main thread
            return self
        left, interval = signal.setitimer(signal.ITIMER_REAL, 0)
        if left > 0:
            self._outer = (time.monotonic() + left, interval)
        self._active = True
        self._arm()
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self._disarm()
        except BudgetExceeded:  # a last alarm on the way out: put everything back, then raise
            self._disarm()
            raise

    def budget(self, seconds: float) -> None:
        """Make the budget `seconds` from the start (the event is known only once read)."""
        self.deadline += seconds - self.seconds
        self.seconds = seconds
        if self._active:
            self._arm()

    def _arm(self) -> None:
        import signal

        due = self.deadline if self._outer is None else min(self.deadline, self._outer[0])
        signal.setitimer(signal.ITIMER_REAL, max(due - time.monotonic(), 1e-6), _WATCHDOG_REPEAT)

    def _expire(self, signum: int, frame: object) -> None:
        now = time.monotonic()
        if self._outer is not None and now >= self._outer[0] - 0.001:
            self._outer = None  # its deadline came first: its handler decides what happens
            if callable(self._previous):
                self._previous(signum, frame)
            self._arm()
            return
        if not self._active or now < self.deadline - 0.001:
            return
        self.expired = True
        if self.overrun is not None and now >= self.deadline + _LAST_RESORT:
            self.overrun()
        raise BudgetExceeded(f"ran past its {self.seconds:g} s budget")

    def _disarm(self) -> None:
        if not self._active:
            return
        import signal

        self._active = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        previous = signal.SIG_DFL if self._previous is None else self._previous
        signal.signal(signal.SIGALRM, previous)
        if self._outer is not None:  # the earlier timer goes on (at once if it is due)
            due, interval = self._outer
            signal.setitimer(signal.ITIMER_REAL, max(due - time.monotonic(), 1e-6), interval)


def is_dispatch_tool(tool_name: object) -> bool:
    """Whether a payload's tool_name is the sub-agent tool (any JSON value may come in)."""
    return isinstance(tool_name, str) and tool_name in DISPATCH_TOOLS


def __getattr__(name: str) -> Any:
    """HookEvent, Outcome, Handler and NOTHING, from ctxward.hooktypes on first use.

    They are dataclasses, and `dataclasses` (through `inspect`) costs more than the rest of a
    no-op hook; importing them here only when asked keeps the PreToolUse no-op path at `json`.
    """
    if name in _TYPES:
        from ctxward import hooktypes

        return getattr(hooktypes, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise HookInputError(f"payload is not JSON: {exc.msg} at line {exc.lineno}") from None
    except ValueError:  # json's only other error: an integer past Python's conversion limit
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
    watchdog = _Watchdog(
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
        stderr.write(f"ctxward: {label}: {_one_line(str(exc))}\n")
        if host in _DENY_JSON_HOSTS and _guards_dispatch(raw, event_name):
            return _deny_unchecked(_one_line(str(exc)), stdout)
        return 1
    except Exception as exc:  # noqa: BLE001 - a hook must never show the user a traceback
        where = _log_traceback(event, label, env)
        problem = _one_line(f"{type(exc).__name__}: {exc}")
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
    watchdog: _Watchdog,
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
        with _Watchdog(
            watchdog.seconds, deadline=watchdog.deadline, overrun=watchdog.overrun and _quit
        ) as after:
            work()
        if after.expired:
            raise BudgetExceeded(problem)
    except CtxwardError as exc:  # BudgetExceeded included
        stderr.write(f"ctxward: {event.name}: after the answer: {_one_line(str(exc))}\n")
    except Exception as exc:  # noqa: BLE001 - a hook must never show the user a traceback
        where = _log_traceback(event, event.name, env)
        problem = _one_line(f"{type(exc).__name__}: {exc}")
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


def _one_line(text: str) -> str:
    """`text` with every run of whitespace (newlines included) folded to one space."""
    return " ".join(text.split())


def _log_traceback(event: HookEvent | None, label: str, env: Mapping[str, str]) -> str:
    import traceback
    from datetime import datetime, timezone

    from ctxward.core.project import Project, find_root

    try:
        project = event.project if event else Project(find_root(env))
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S.%fZ")
        path = project.log_dir / f"{stamp}-{label}.log"
        from ctxward.core.fsutil import atomic_write

        atomic_write(path, traceback.format_exc())
        return project.relative(path)
    except Exception:  # noqa: BLE001 - logging must not mask the original error
        return "traceback not saved: the log folder is not writable"


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
