"""The host contract in-process: bad input -> exit 1 and one stderr line; bugs are logged."""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import ctxward.events.pre_compact
from ctxward import hookio
from ctxward.core.project import Project
from ctxward.events import HANDLERS, handler_for
from ctxward.hookio import NOTHING, HookEvent, HookInputError, Outcome, render_outcome, run
from ctxward.hosts import claude_code

LIB = Path(__file__).resolve().parent.parent / "lib"

GARBAGE = {
    "malformed-json": (b'{"hook_event_name": "PreCompact",', "not JSON"),
    "json-array": (b'[{"hook_event_name": "PreCompact"}]', "JSON list, not an object"),
    "json-string": (b'"PreCompact"', "JSON str, not an object"),
    "json-null": (b"null", "JSON NoneType, not an object"),
    "json-number": (b"42", "JSON int, not an object"),
    "not-utf8": (b'{"hook_event_name": "Pre\xffCompact"}', "not UTF-8"),
    "utf16": ('{"hook_event_name": "PreCompact"}'.encode("utf-16"), "not UTF-8"),
    "empty": (b"", "no payload"),
    "whitespace": (b" \n\t\n", "no payload"),
    "no-event": (b'{"session_id": "s"}', "no 'hook_event_name'"),
    "event-not-a-string": (b'{"hook_event_name": ["PreCompact"]}', "no 'hook_event_name'"),
    "unknown-event": (b'{"hook_event_name": "Notification"}', "unknown hook event"),
    "integer-too-long": (
        b'{"hook_event_name": "PreCompact", "n": ' + b"7" * 5000 + b"}",
        "payload has an integer of more than 4,300 digits",
    ),
}


def one_line(err: str) -> str:
    assert err.endswith("\n") and err.count("\n") == 1, repr(err)
    assert "Traceback" not in err
    return err


@pytest.mark.parametrize("case", sorted(GARBAGE))
def test_garbage_on_stdin_is_exit_1_with_one_line(run_hook, project, case):
    raw, problem = GARBAGE[case]

    code, out, err = run_hook(raw)

    assert (code, out) == (1, "")
    assert one_line(err).startswith("ctxward: ")
    assert problem in err
    assert not (project / ".ctxward").exists()


def test_captured_payload_of_an_unhandled_event(run_hook, load_payload):
    # A real payload, renamed to an event ctxward does not handle.
    code, out, err = run_hook(load_payload("Stop.json", hook_event_name="Notification"))

    assert (code, out) == (1, "")
    assert "unknown hook event 'Notification'" in one_line(err)


def test_captured_stop_payload_without_debates_is_silent(run_hook, load_payload, project):
    code, out, err = run_hook(load_payload("Stop.json"))

    assert (code, out, err) == (0, "", "")
    assert not (project / ".ctxward").exists()


@pytest.mark.parametrize(
    "pinned, fixture",
    [
        ("PreCompact", "SessionStart.compact.json"),
        ("SessionStart", "PreCompact.json"),
        ("PostCompact", "SubagentStop.json"),
        ("SubagentStop", "PostCompact.json"),
        ("PreToolUse", "SessionStart.json"),
    ],
)
def test_pinned_run_refuses_another_events_payload(project, load_payload, pinned, fixture):
    payload = load_payload(fixture)
    out, err = io.StringIO(), io.StringIO()

    code = run(
        event_name=pinned,
        stdin=io.BytesIO(json.dumps(payload).encode()),
        stdout=out,
        stderr=err,
        env={"CLAUDE_PROJECT_DIR": str(project)},
    )

    assert (code, out.getvalue()) == (1, "")
    assert f"this hook handles {pinned}, but the payload is for {payload['hook_event_name']}" in (
        one_line(err.getvalue())
    )


def test_oversized_payload_is_refused_before_parsing(run_hook, monkeypatch):
    monkeypatch.setattr(claude_code, "MAX_PAYLOAD_BYTES", 64)

    code, out, err = run_hook({"hook_event_name": "PreCompact", "padding": "x" * 100})

    assert (code, out) == (1, "")
    assert "larger than 64 bytes" in one_line(err)


def test_wrong_field_type_is_bad_input(run_hook, load_payload):
    code, out, err = run_hook(load_payload("SessionStart.compact.json", source=7))

    assert (code, out) == (1, "")
    assert "SessionStart payload field 'source' is not a string" in one_line(err)


def boom(event: HookEvent) -> Outcome:
    raise RuntimeError("boom\nwith a second line")


def test_internal_error_is_logged_and_reported_in_one_line(run_hook, project, load_payload):
    code, out, err = run_hook(load_payload("PreCompact.json"), handler=boom)

    assert (code, out) == (1, "")
    line = one_line(err)
    assert line.startswith("ctxward: internal error in PreCompact: RuntimeError: boom with a ")
    logged = line.rsplit("(details: ", 1)[1].rstrip(")\n")
    assert logged.startswith(".ctxward/log/") and logged.endswith("-PreCompact.log")
    log = (project / logged).read_text(encoding="utf-8")
    assert log.startswith("Traceback (most recent call last):")
    assert "in boom" in log
    assert "RuntimeError: boom\nwith a second line" in log


def test_internal_error_through_dispatch(run_hook, project, load_payload, monkeypatch):
    monkeypatch.setattr(ctxward.events.pre_compact, "handle", boom)

    code, out, err = run_hook(load_payload("PreCompact.json"))

    assert (code, out) == (1, "")
    assert "internal error in PreCompact: RuntimeError" in one_line(err)
    (log,) = (project / ".ctxward" / "log").iterdir()
    assert "Traceback" in log.read_text(encoding="utf-8")


def test_internal_error_when_the_log_cannot_be_written(tmp_path, load_payload):
    root = tmp_path / "not-a-folder"
    root.write_text("a file where the project should be")
    raw = json.dumps(load_payload("PreCompact.json")).encode()

    code, out, err = hookio.run_in_memory(raw, {"CLAUDE_PROJECT_DIR": str(root)}, boom)

    assert (code, out) == (1, "")
    assert "traceback not saved" in one_line(err)


def test_expected_failure_is_exit_1_one_line(run_hook, project, load_payload, trust):
    folder = project / "docs" / "plans" / "p"
    folder.mkdir(parents=True)
    (folder / "invariants.md").write_bytes(b"## x\n### Rules\n- keep me\n")
    trust("p")
    (project / ".ctxward").mkdir()
    (project / ".ctxward" / "config.yaml").write_bytes(b"injection: {limit_chars: caf\xe9}\n")

    code, out, err = run_hook(load_payload("PreCompact.json"))

    assert (code, out) == (1, "")
    assert err == "ctxward: PreCompact: .ctxward/config.yaml: not UTF-8 (byte 28)\n"
    assert not (folder / ".compaction-payload.md").exists()  # refused before any write


@pytest.mark.parametrize("event", sorted(HANDLERS))
def test_dispatch_table_names_a_handler_module_per_event(event):
    handler = handler_for(event)
    assert handler.__module__ == f"ctxward.events.{HANDLERS[event]}"
    assert handler.__name__ == "handle"


@pytest.mark.parametrize("event", sorted(HANDLERS))
def test_dispatch_calls_the_handler_of_the_payloads_event(run_hook, monkeypatch, event):
    seen = []
    module = importlib.import_module(f"ctxward.events.{HANDLERS[event]}")
    monkeypatch.setattr(module, "handle", lambda e: seen.append(e.name) or NOTHING)

    assert run_hook({"hook_event_name": event}) == (0, "", "")
    assert seen == [event]


def test_event_carries_the_project_from_the_environment(project, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    raw = json.dumps({"hook_event_name": "PreCompact", "cwd": str(other)}).encode()

    event = hookio.read_event(raw, {"CLAUDE_PROJECT_DIR": str(project)})

    assert event.project == Project(project)
    # No marker above `other` and no $CLAUDE_PROJECT_DIR: the fallback root, not a project.
    assert hookio.read_event(raw, {}).project == Project(other.resolve(), anchored=False)


def test_event_text_fields():
    event = HookEvent(
        "SessionStart", {"source": "compact", "none": None, "n": 1}, Project(Path("/nowhere"))
    )
    assert event.text("source") == "compact"
    assert event.text("none") == event.text("absent") == ""
    assert event.session_id == ""
    with pytest.raises(HookInputError, match="'n' is not a string"):
        event.text("n")


# --- rendering an Outcome for Claude Code ----------------------------------------------------


def test_nothing_renders_as_no_output():
    assert render_outcome("PreCompact", NOTHING) == ""


def test_plain_output_is_written_as_is():
    assert render_outcome("PreCompact", Outcome(plain="keep these rules\n")) == "keep these rules\n"


def test_context_renders_as_hook_specific_output():
    rendered = render_outcome("SessionStart", Outcome(context="rules — é"))
    assert rendered == (
        '{"hookSpecificOutput": {"hookEventName": "SessionStart", '
        '"additionalContext": "rules — é"}}\n'
    )


def test_pre_tool_use_decision_and_notice():
    outcome = Outcome(decision="deny", reason="too big", notice="for the user")
    assert json.loads(render_outcome("PreToolUse", outcome)) == {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": "too big",
        },
        "systemMessage": "for the user",
    }


@pytest.mark.parametrize("event", ["PreCompact", "PostCompact"])
def test_events_without_hook_specific_output_refuse_it(event):
    with pytest.raises(ValueError, match="accepts no hookSpecificOutput"):
        render_outcome(event, Outcome(context="x"))


def test_run_writes_the_answer_and_returns_0(project, monkeypatch):
    monkeypatch.setattr(
        ctxward.events.pre_compact, "handle", lambda event: Outcome(plain="answer\n")
    )
    out = io.StringIO()

    code = run(
        stdin=io.BytesIO(b'{"hook_event_name": "PreCompact"}'),
        stdout=out,
        stderr=io.StringIO(),
        env={"CLAUDE_PROJECT_DIR": str(project)},
    )

    assert (code, out.getvalue()) == (0, "answer\n")


def test_values_are_frozen_records():
    """hooktypes.Value gives what @dataclass(frozen=True, slots=True) gave these types."""
    outcome = Outcome(decision="deny", reason="too big")

    assert outcome == Outcome(decision="deny", reason="too big") != Outcome(decision="deny")
    assert outcome != ("deny", "too big") and Outcome() == NOTHING
    assert hash(outcome) == hash(Outcome(decision="deny", reason="too big"))
    assert repr(NOTHING) == (
        "Outcome(after=None, context=None, decision=None, notice=None, plain=None, reason=None, "
        "updated_input=None, updated_mcp_output=None)"
    )
    with pytest.raises(AttributeError, match="frozen"):
        outcome.reason = "other"
    with pytest.raises(AttributeError, match="frozen"):
        del outcome.reason
    with pytest.raises(AttributeError):
        outcome.extra = 1


def test_value_replace_makes_a_changed_copy():
    """`Value.replace` is `dataclasses.replace`: through `__init__`, the original untouched."""
    changed = NOTHING.replace(decision="deny", reason="too big")

    assert changed == Outcome(decision="deny", reason="too big")
    assert Outcome() == NOTHING and changed.replace() == changed
    with pytest.raises(TypeError):
        NOTHING.replace(verdict="deny")


def test_value_as_dict_is_dataclasses_asdict(tmp_path):
    """Keys in annotation order (not the sorted slots); nested Values and containers copied."""
    data = {"tool_input": {"paths": ["a", "b"]}, "pair": ("x", ["y"])}
    event = HookEvent("PreToolUse", data, Project(tmp_path))

    as_dict = event.as_dict()

    assert as_dict == {
        "name": "PreToolUse",
        "data": data,
        "project": {"root": tmp_path, "anchored": True},
    }
    assert list(as_dict) == ["name", "data", "project"]
    assert list(Outcome().as_dict()) == [
        "context",
        "notice",
        "plain",
        "decision",
        "reason",
        "updated_input",
        "after",
        "updated_mcp_output",
    ]
    copied = as_dict["data"]
    assert copied is not data and copied["tool_input"]["paths"] is not data["tool_input"]["paths"]
    assert isinstance(copied["pair"], tuple) and copied["pair"][1] is not data["pair"][1]


def test_config_and_sessions_import_without_dataclasses():
    """The hot hook paths import these two; `dataclasses` would pull in `inspect` (~5 ms)."""
    lib = Path(__file__).resolve().parents[1] / "lib"
    code = (
        f"import sys; sys.path.insert(0, {str(lib)!r}); "
        "import ctxward.core.config, ctxward.sessions.store, ctxward.sessions.recovery; "
        "print(sorted(m for m in ('dataclasses', 'inspect') if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True, check=True
    )
    assert done.stdout == "[]\n"


def with_field(payload: dict, raw_value: str) -> bytes:
    """`payload` as JSON with `"n": <raw_value>` added inside tool_input (json.dumps cannot
    write a 5,000-digit integer itself)."""
    text = json.dumps(payload)
    head, tail = text.split('"tool_input": {', 1)
    return f'{head}"tool_input": {{"n": {raw_value}, {tail}'.encode()


@pytest.mark.parametrize("pinned", [None, "PreToolUse"])
def test_a_dispatch_with_an_integer_too_long_is_denied(project, load_payload, pinned):
    raw = with_field(load_payload("PreToolUse.json"), "-" + "9" * 5000)
    out, err = io.StringIO(), io.StringIO()
    code = run(
        event_name=pinned,
        stdin=io.BytesIO(raw),
        stdout=out,
        stderr=err,
        env={"CLAUDE_PROJECT_DIR": str(project)},
    )
    assert code == 0
    answer = json.loads(out.getvalue())["hookSpecificOutput"]
    assert answer["permissionDecision"] == "deny"
    assert "an integer of more than 4,300 digits" in answer["permissionDecisionReason"]
    assert "integer of more than 4,300 digits" in one_line(err.getvalue())


def test_another_tool_with_an_integer_too_long_is_exit_1(run_hook, load_payload):
    payload = load_payload("PreToolUse.json", tool_name="Bash", tool_input={"command": "ls"})
    code, out, err = run_hook(with_field(payload, "9" * 5000))
    assert (code, out) == (1, "")
    assert "integer of more than 4,300 digits" in one_line(err)


@pytest.mark.parametrize("number", ["1e999999", "-1e-999999", "9" * 5000 + ".5", "NaN"])
def test_numbers_json_reads_as_floats_pass(run_hook, load_payload, number):
    code, out, err = run_hook(with_field(load_payload("PreToolUse.json"), number))
    assert (code, err) == (0, "")
    assert "deny" not in out


def test_refused_dispatch_reads_a_payload_with_an_integer_too_long():
    event = b'"hook_event_name": "PreToolUse"'
    big = b"1" * 5000
    assert hookio._refused_dispatch(b"{" + event + b', "tool_name": "Agent", "n": ' + big + b"}")
    assert not hookio._refused_dispatch(b"{" + event + b', "tool_name": "Bash", "n": ' + big + b"}")


# -- the watchdog: every hook within its time budget -------------------------------------------

DISPATCH = {"hook_event_name": "PreToolUse", "tool_name": "Agent", "tool_input": {"prompt": "x"}}


def run_within(payload: dict, handler, budget: float, project: Path) -> tuple[int, str, str, float]:
    """`run` with `budget` seconds; also the CPU-independent wall time the run took."""
    out, err = io.StringIO(), io.StringIO()
    start = time.monotonic()
    code = run(
        handler,
        stdin=io.BytesIO(json.dumps(payload).encode()),
        stdout=out,
        stderr=err,
        env={"CLAUDE_PROJECT_DIR": str(project)},
        budget=budget,
    )
    return code, out.getvalue(), err.getvalue(), time.monotonic() - start


def sleeper(seconds: float):
    def handle(event: HookEvent) -> Outcome:
        time.sleep(seconds)
        return Outcome(decision="allow")

    return handle


def test_a_dispatch_that_runs_past_its_budget_is_denied(project):
    code, out, err, took = run_within(DISPATCH, sleeper(30), 0.2, project)

    answer = json.loads(out)["hookSpecificOutput"]
    assert (code, answer["permissionDecision"]) == (0, "deny")
    assert "ran past its 0.2 s budget" in answer["permissionDecisionReason"]
    assert one_line(err) == "ctxward: PreToolUse: ran past its 0.2 s budget; gave up\n"
    assert took < 30 / 10  # the sleep was cut short, not waited out


def test_a_backtracking_regex_is_interrupted(project):
    """`re` checks for signals as it backtracks: a search that would take hours is cut."""

    def backtrack(event: HookEvent) -> Outcome:
        re.match(r"(a|aa)+$", "a" * 60 + "b")  # exponential: never returns by itself
        return Outcome(decision="allow")

    code, out, _, _ = run_within(DISPATCH, backtrack, 0.2, project)

    assert (code, json.loads(out)["hookSpecificOutput"]["permissionDecision"]) == (0, "deny")


def test_an_answer_after_a_caught_alarm_came_too_late(project):
    def stubborn(event: HookEvent) -> Outcome:
        for _ in range(3):
            with contextlib.suppress(Exception):  # what a best-effort step does
                time.sleep(30)
        return Outcome(decision="allow")

    _, out, _, took = run_within(DISPATCH, stubborn, 0.2, project)

    assert json.loads(out)["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert took < 30 / 10  # each sleep was cut by the next alarm


_CATCHES_EVERYTHING = """
import sys, time
from ctxward import hookio

def stubborn(event):
    while True:
        try:
            time.sleep(30)
        except Exception:
            pass

hookio._exit_process(hookio.run(stubborn, budget=0.2, ends_process=True))
"""


@pytest.mark.slow  # a heavy variant: the slow stage (CI) runs it
def test_a_hook_process_that_catches_every_alarm_is_ended_with_its_answer(project):
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", _CATCHES_EVERYTHING],
        input=json.dumps(DISPATCH).encode(),
        capture_output=True,
        timeout=60,
        env={"CLAUDE_PROJECT_DIR": str(project), "PYTHONPATH": str(LIB), "HOME": str(project)},
    )
    took = time.monotonic() - start

    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)["hookSpecificOutput"]
    assert answer["permissionDecision"] == "deny"
    assert done.stderr.decode() == "ctxward: PreToolUse: ran past its 0.2 s budget; gave up\n"
    assert took < 30 / 2


@pytest.mark.parametrize("event", ["PreCompact", "PostCompact", "UserPromptSubmit"])
def test_any_other_hook_gives_up_quietly(project, event):
    code, out, err, _ = run_within({"hook_event_name": event}, sleeper(30), 0.2, project)

    assert (code, out) == (0, "")
    assert one_line(err) == f"ctxward: {event}: ran past its 0.2 s budget; gave up\n"


def test_the_work_after_the_answer_costs_only_itself(project):
    done = []

    def slow_after() -> None:
        time.sleep(30)
        done.append(True)

    def handle(event: HookEvent) -> Outcome:
        return Outcome(plain="the rules\n", after=slow_after)

    code, out, err, took = run_within({"hook_event_name": "PreCompact"}, handle, 0.3, project)

    assert (code, out, done) == (0, "the rules\n", [])
    assert one_line(err) == "ctxward: PreCompact: after the answer: ran past its 0.3 s budget\n"
    assert took < 30 / 10


def test_a_failure_after_the_answer_leaves_the_answer_standing(project):
    def handle(event: HookEvent) -> Outcome:
        return Outcome(plain="the rules\n", after=lambda: boom(event))

    code, out, err = hookio.run_in_memory(
        b'{"hook_event_name": "PreCompact"}', {"CLAUDE_PROJECT_DIR": str(project)}, handle
    )

    assert (code, out) == (0, "the rules\n")
    assert "internal error in PreCompact: RuntimeError: boom with a second line" in one_line(err)


def test_the_previous_alarm_handler_and_timer_are_put_back(project):
    calls = []

    def mine(signum: int, frame: object) -> None:
        calls.append(signum)

    previous = signal.signal(signal.SIGALRM, mine)
    try:
        signal.setitimer(signal.ITIMER_REAL, 60)
        _, out, _, took = run_within(DISPATCH, sleeper(30), 0.2, project)
        left, _ = signal.setitimer(signal.ITIMER_REAL, 0)
        handler = signal.getsignal(signal.SIGALRM)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)

    assert json.loads(out)["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert handler is mine and calls == []
    assert 0 < left <= 60 - took + 0.01  # still counting down where it was


def test_an_earlier_timer_still_fires_its_own_handler(project):
    class Deadline(BaseException):
        pass

    def expire(signum, frame):
        raise Deadline

    previous = signal.signal(signal.SIGALRM, expire)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.2)
        with pytest.raises(Deadline):
            run_within(DISPATCH, sleeper(30), 10, project)
        assert signal.getsignal(signal.SIGALRM) is expire
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_outside_the_main_thread_there_is_no_watchdog(project):
    import threading

    results = []
    thread = threading.Thread(
        target=lambda: results.append(run_within(DISPATCH, sleeper(0.5), 0.1, project))
    )
    thread.start()
    thread.join()

    ((code, out, err, _),) = results
    assert (code, out, err) == (0, json.dumps(_allow()) + "\n", "")  # no alarm can be set there


def _allow() -> dict:
    return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}
