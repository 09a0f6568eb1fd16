"""Drift detection (seed 002): each signature at threshold-1 and at threshold, reported once,
cleared and reported again, the bounded state, the config, the log on disk, concurrency."""

from __future__ import annotations

import json
import multiprocessing
import os
from pathlib import Path
from typing import Any

import pytest

from ctxward.core import drift_settings
from ctxward.core.config import load
from ctxward.core.project import Project
from ctxward.drift import machine
from ctxward.drift import observe as drift_observe
from ctxward.drift import signatures as drift_signatures
from ctxward.drift import tell as drift_tell
from ctxward.errors import BadInput, CtxwardError

ROOT = "/srv/proj"  # a made-up project root


def call(tool: str = "Bash", ok: bool = True, call_id: str = "", **tool_input: Any) -> list[Any]:
    return drift_signatures.entry(tool, tool_input, ok, call_id, ROOT)


def bash(command: str, ok: bool = True) -> list[Any]:
    return call("Bash", ok, command=command)


def edit(path: str, n: int, ok: bool = True) -> list[Any]:
    return call("Edit", ok, file_path=f"{ROOT}/{path}", old_string=f"a{n}", new_string=f"b{n}")


def other(n: int) -> list[Any]:
    """A call that trips nothing: a distinct, non-search, non-write, successful call."""
    return call("WebFetch", url=f"https://example.com/{n}")


def feed(tracker: machine.Tracker, calls: list[list[Any]]) -> list[list[str]]:
    """The signatures that started with each call, in order."""
    return [[r["signature"] for r in tracker.observe(c)] for c in calls]


# --- what a call is reduced to ---------------------------------------------------------------


def test_arguments_are_normalised_before_hashing():
    a = call("Bash", command="npm  test\n", description="Run the tests")
    b = call("Bash", command="npm test", description="Run the suite again", timeout=None)
    c = call("Bash", command="npm test --watch")
    assert a[drift_signatures.ARGS] == call("Bash", command="npm test")[drift_signatures.ARGS]
    assert a[drift_signatures.ARGS] != b[drift_signatures.ARGS]  # a new key is a new call
    assert a[drift_signatures.ARGS] != c[drift_signatures.ARGS]
    assert drift_signatures.args_digest({"b": 1, "a": [1, "x  y"]}) == drift_signatures.args_digest(
        {"a": [1, "x y"], "b": 1}
    )


@pytest.mark.parametrize(
    "tool, tool_input, kind, file, key",
    [
        # Seed 002 names ls/find/grep as searches: reading a file is not one.
        ("Read", {"file_path": f"{ROOT}/src/a.py"}, "", "src/a.py", "Read:src/a.py"),
        ("Edit", {"file_path": f"{ROOT}/src/a.py"}, "write", "src/a.py", "Edit:src/a.py"),
        (
            "Write",
            {"file_path": "/elsewhere/b.py"},
            "write",
            "/elsewhere/b.py",
            "Write:/elsewhere/b.py",
        ),
        (
            "NotebookEdit",
            {"notebook_path": f"{ROOT}/n.ipynb"},
            "write",
            "n.ipynb",
            "NotebookEdit:n.ipynb",
        ),
        ("edit", {"filePath": f"{ROOT}/x.ts"}, "write", "x.ts", "edit:x.ts"),
        ("Grep", {"pattern": "foo", "path": "src"}, "search", "", "Grep:"),
        ("Glob", {"pattern": "**/*.py"}, "search", "", "Glob:"),
        ("Bash", {"command": "ls -la"}, "search", "", "Bash:ls"),
        ("Bash", {"command": "cd src && rg foo | head -5"}, "search", "", "Bash:cd"),
        ("Bash", {"command": "FOO=1 /usr/bin/grep -r x ."}, "search", "", "Bash:grep"),
        ("Bash", {"command": "pytest -q"}, "", "", "Bash:pytest"),
        ("Bash", {"command": "ls && make"}, "", "", "Bash:ls"),
        ("bash", {"command": "cat a.txt"}, "", "", "bash:cat"),  # reading is not searching
        ("Agent", {"prompt": "x"}, "", "", "Agent:"),
    ],
)
def test_entry_classifies_the_call(tool, tool_input, kind, file, key):
    made = drift_signatures.entry(tool, tool_input, True, "id", ROOT)
    assert (
        made[drift_signatures.KIND],
        made[drift_signatures.FILE],
        made[drift_signatures.KEY],
    ) == (kind, file, key)


# --- each signature: threshold - 1, threshold, once, cleared, again ---------------------------


def test_repetition_loop():
    tracker = machine.Tracker()
    assert feed(tracker, [bash("npm test"), other(1), bash("npm test")]) == [[], [], []]
    (started,) = tracker.observe(bash("npm test"))  # 3 in the last 10
    assert started["signature"] == "repetition"
    assert started["evidence"] == {
        "tool": "Bash",
        "args": bash("npm test")[drift_signatures.ARGS],
        "count": 3,
        "window": 4,
        "id": "",
    }
    assert feed(tracker, [bash("npm test")]) == [[]]  # still holding: not told again
    assert tracker.active == ["repetition"]
    assert feed(tracker, [other(n) for n in range(2, 7)]) == [[]] * 5
    assert tracker.active == ["repetition"]  # 4 copies still among the last 10
    feed(tracker, [other(n) for n in range(7, 10)])
    assert tracker.active == []  # cleared: fewer than 3 copies among the last 10
    assert feed(tracker, [bash("npm test")] * 3)[-1] == ["repetition"]  # formed again


def test_repetition_counts_only_inside_the_window():
    tracker = machine.Tracker()
    calls = [bash("make"), *(other(n) for n in range(8)), bash("make"), bash("make")]
    assert feed(tracker, calls) == [[]] * 11  # the first `make` is 11 calls back
    assert feed(tracker, [bash("make")]) == [["repetition"]]


def test_failure_spiral():
    tracker = machine.Tracker()
    failing = [bash(f"make target{n}", ok=False) for n in range(8)]
    assert feed(tracker, failing[:3]) == [[], [], []]
    assert feed(tracker, failing[3:4]) == [["failure_spiral"]]
    assert tracker.holding()["failure_spiral"] == {"count": 4, "tools": {"Bash": 4}}
    assert feed(tracker, failing[4:5]) == [[]]  # still spiralling: told once
    assert feed(tracker, [other(1)]) == [[]] and tracker.active == []  # a success clears it
    assert feed(tracker, failing[5:8]) == [[], [], []]
    assert feed(tracker, [bash("make again", ok=False)]) == [["failure_spiral"]]


def test_tool_cycling():
    tracker = machine.Tracker()
    a = [bash(f"pytest -k t{n}") for n in range(4)]
    b = [other(n) for n in range(4)]
    assert feed(tracker, [a[0], b[0], a[1], b[1], a[2]]) == [[]] * 5
    assert feed(tracker, [b[2]]) == [["tool_cycling"]]
    assert tracker.holding()["tool_cycling"] == {"a": "Bash", "b": "WebFetch", "calls": 6}
    assert feed(tracker, [a[3]]) == [[]]
    assert feed(tracker, [a[3]]) == [[]] and "tool_cycling" not in tracker.active  # A A breaks it


def test_tool_cycling_is_by_tool_name_whatever_the_targets():
    """Seed 002 "Tool cycling: A-B-A-B-A-B alternation, 6 calls": Read a.py / Bash / Read b.py /
    Bash ... alternates two tools, though no call repeats."""
    tracker = machine.Tracker()
    calls = []
    for n in range(3):
        calls += [call("Read", file_path=f"{ROOT}/src/m{n}.py"), bash(f"python -m t{n}")]
    assert feed(tracker, calls[:5]) == [[]] * 5  # 5 calls: one below the threshold
    assert feed(tracker, calls[5:]) == [["tool_cycling"]]  # the 6th
    assert tracker.holding()["tool_cycling"] == {"a": "Read", "b": "Bash", "calls": 6}


def test_tool_cycling_needs_two_different_keys():
    tracker = machine.Tracker()
    assert all("tool_cycling" not in s for s in feed(tracker, [other(n) for n in range(8)]))


def test_rework_churn():
    tracker = machine.Tracker()
    assert feed(tracker, [edit("src/a.py", 1), other(1), edit("src/a.py", 2), other(2)]) == [[]] * 4
    assert feed(tracker, [edit("src/b.py", 1), edit("src/a.py", 3, ok=False)]) == [[], []]
    assert feed(tracker, [edit("src/a.py", 4)]) == [["rework_churn"]]
    assert tracker.holding()["rework_churn"] == {"file": "src/a.py", "writes": 3, "window": 7}
    assert feed(tracker, [edit("src/a.py", 5)]) == [[]]


def test_rework_churn_counts_only_inside_the_window():
    tracker = machine.Tracker()
    calls = [edit("a.py", 1), *(other(n) for n in range(8)), edit("a.py", 2), edit("a.py", 3)]
    assert feed(tracker, calls) == [[]] * 11


def test_excessive_searching():
    tracker = machine.Tracker()
    searches = [
        call("Grep", pattern="foo"),
        call("Glob", pattern="**/*.py"),
        bash("find . -name '*.py'"),
        bash("ls -la src"),
        bash("grep -rn bar src | head -3"),
        bash("rg -n baz"),
    ]
    reads = [call("Read", file_path=f"{ROOT}/{n}.py") for n in range(3)] + [bash("cat a.py")]
    assert feed(tracker, [searches[0], other(1), *reads, *searches[1:4]]) == [[]] * 9  # 4
    assert feed(tracker, [searches[4]]) == [["excessive_searching"]]  # the 5th ls/find/grep
    assert tracker.holding()["excessive_searching"] == {
        "searches": 5,
        "tools": {"Bash": 3, "Glob": 1, "Grep": 1},
    }
    assert feed(tracker, [searches[5]]) == [[]]
    assert feed(tracker, [edit("a.py", 1, ok=False)]) == [[]]  # a failed edit is no edit
    assert feed(tracker, [edit("a.py", 2)]) == [[]] and tracker.active == []
    assert feed(tracker, searches[:4]) == [[]] * 4


def test_silence_needs_a_host_that_shows_text():
    tracker = machine.Tracker()  # Claude Code's hook: no text seen, silence never counted
    assert all(s == [] for s in feed(tracker, [other(n) for n in range(100)]))
    assert tracker.quiet is None

    shown = machine.Tracker()
    shown.text()
    assert feed(shown, [other(n) for n in range(14)]) == [[]] * 14
    assert feed(shown, [other(14)]) == [["silence"]]
    assert feed(shown, [other(15)]) == [[]]
    shown.text()
    assert shown.active == []
    assert feed(shown, [other(n) for n in range(15)])[-1] == ["silence"]


def test_silence_counted_by_the_host():
    tracker = machine.Tracker()
    assert tracker.observe(other(1), quiet=14) == []
    assert [r["signature"] for r in tracker.observe(other(2), quiet=15)] == ["silence"]
    assert tracker.observe(other(3), quiet=1) == [] and tracker.active == []


def test_several_signatures_start_with_one_call():
    tracker = machine.Tracker()
    assert feed(tracker, [bash("ls /nope", ok=False)] * 4) == [
        [],
        [],
        ["repetition"],
        ["failure_spiral"],
    ]
    assert feed(tracker, [bash("ls /nope", ok=False)]) == [["excessive_searching"]]


def test_disabled_signatures_and_observer():
    limits = drift_settings.parse_limits({"repetition": {"enabled": False}}, "x")
    tracker = machine.Tracker(limits)
    assert feed(tracker, [bash("a", ok=False)] * 4)[-1] == ["failure_spiral"]
    assert "repetition" not in tracker.active
    off = machine.Tracker(drift_settings.parse_limits({"enabled": False}, "x"))
    assert all(s == [] for s in feed(off, [bash("a", ok=False)] * 20))


def test_thresholds_come_from_the_limits():
    limits = drift_settings.parse_limits(
        {"repetition": {"count": 2, "window": 4}, "failure_spiral": {"count": 6}}, "x"
    )
    tracker = machine.Tracker(limits)
    assert feed(tracker, [bash("a", ok=False), bash("a", ok=False)])[-1] == ["repetition"]
    assert feed(tracker, [bash(f"b{n}", ok=False) for n in range(3)]) == [[], [], []]
    assert feed(tracker, [bash("c", ok=False)]) == [["failure_spiral"]]


# --- bounded state ---------------------------------------------------------------------------


@pytest.mark.slow  # a heavy variant: the slow stage (CI) runs it
def test_the_window_and_the_state_stay_bounded():
    tracker = machine.Tracker()
    for n in range(20_000):
        tracker.observe(
            drift_signatures.entry("Edit", {"file_path": f"/p/{n}.py" * 20}, n % 7 != 0, f"id{n}")
        )
    assert tracker.n == 20_000
    assert len(tracker.window) == drift_settings.window_size(tracker.limits) == 10
    assert len(tracker.ids) == drift_signatures.RECENT_IDS
    assert len(json.dumps(tracker.to_json())) < 8_000


def test_state_round_trips_and_garbage_is_refused():
    tracker = machine.Tracker()
    tracker.text()
    feed(tracker, [bash("x", ok=False)] * 5)
    again = machine.Tracker.from_json(json.loads(json.dumps(tracker.to_json())), tracker.limits)
    assert again.to_json() == tracker.to_json()
    for bad in [{}, {"v": 99}, {"v": 1, "n": -1}, {**tracker.to_json(), "window": [[1]]}]:
        with pytest.raises(ValueError):
            machine.Tracker.from_json(bad, tracker.limits)


# --- configuration ---------------------------------------------------------------------------


def test_default_limits_are_the_seeds_table():
    limits = drift_settings.default_limits()
    assert limits["repetition"] == {"enabled": True, "count": 3, "window": 10}
    assert limits["failure_spiral"]["count"] == 4
    assert limits["tool_cycling"]["calls"] == 6
    assert limits["rework_churn"]["writes"] == 3
    assert limits["excessive_searching"]["searches"] == 5
    assert limits["silence"]["calls"] == 15
    assert limits is not drift_settings.default_limits()


@pytest.mark.parametrize(
    "section, message",
    [
        ([1], "x: expected a mapping, got list"),
        ({"loops": {}}, "x: unknown key 'loops'"),
        (
            {"repetition": {"times": 3}},
            "x.repetition.times: unknown key (known: count, enabled, window)",
        ),
        ({"repetition": {"count": "3"}}, "x.repetition.count: expected a whole number, got '3'"),
        ({"repetition": {"count": True}}, "x.repetition.count: expected a whole number"),
        ({"failure_spiral": {"count": 1}}, "x.failure_spiral.count: 1 is outside 2..1000"),
        ({"repetition": {"window": 500}}, "x.repetition.window: 500 is outside 2..50"),
        (
            {"repetition": {"count": 5, "window": 4}},
            "x.repetition: count 5 is larger than its window 4",
        ),
        ({"enabled": "yes"}, "x.enabled: expected true or false, got 'yes'"),
        ({"silence": []}, "x.silence: expected a mapping, got list"),
    ],
)
def test_bad_config_is_refused_naming_the_key(section, message):
    with pytest.raises(BadInput, match=message.replace("(", r"\(").replace(")", r"\)")):
        drift_settings.parse_limits(section, "x")


def test_config_yaml_drift_section(project):
    (project / ".ctxward").mkdir()
    (project / ".ctxward" / "config.yaml").write_text(
        "drift:\n  excessive_searching: {searches: 8}\n  silence: {enabled: false}\n",
        encoding="utf-8",
    )
    limits = load(Project(project)).drift
    assert limits["excessive_searching"] == {"enabled": True, "searches": 8}
    assert limits["silence"]["enabled"] is False
    assert limits["repetition"]["count"] == 3
    assert load(Project(project)).as_dict()["drift"] == limits


# --- the hook path on disk -------------------------------------------------------------------


def payload(
    n: int,
    *,
    event: str = "PostToolUse",
    command: str = "npm test",
    session: str = "s-1",
    cwd: str = "",
    **extra: Any,
) -> dict[str, Any]:
    return {
        "session_id": session,
        "cwd": cwd,
        "hook_event_name": event,
        "tool_name": "Bash",
        "tool_input": {"command": command, "description": "run it"},
        "tool_use_id": f"toolu_{session}_{n}",
        **extra,
    }


def log_lines(project: Path, session: str = "s-1") -> list[dict[str, Any]]:
    path = project / ".ctxward" / "sessions" / f"{session}.tools.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_record_writes_one_line_per_call_and_the_reports(project):
    for n in range(1, 3):
        assert drift_observe.record(project, "PostToolUse", payload(n)) == []
    (report,) = drift_observe.record(project, "PostToolUse", payload(3))
    assert report["signature"] == "repetition" and report["n"] == 3
    assert drift_observe.record(project, "PostToolUse", payload(4)) == []
    lines = log_lines(project)
    assert [line.get("n") for line in lines] == [1, 2, 3, 3, 4]
    assert lines[0] == {
        "n": 1,
        "t": lines[0]["t"],
        "tool": "Bash",
        "args": drift_signatures.args_digest({"command": "npm test", "description": "run it"}),
        "ok": True,
        "key": "Bash:npm",
        "id": "toolu_s-1_1",
    }
    assert lines[3]["drift"] == "repetition"
    assert lines[3]["evidence"]["count"] == 3
    assert "npm test" not in json.dumps(lines)  # no argument text on disk


def test_the_same_call_observed_twice_is_one_line(project):
    drift_observe.record(project, "PostToolUse", payload(1))
    drift_observe.record(project, "PostToolUse", payload(1))
    assert len(log_lines(project)) == 1


def test_the_fast_path_leaves_the_reports_for_the_handler(project):
    env = {"CLAUDE_PROJECT_DIR": str(project)}
    assert drift_observe.observed_quietly(payload(1), env) is True
    assert drift_observe.observed_quietly(payload(2), env) is True
    assert drift_observe.observed_quietly(payload(3), env) is False  # something to tell
    (report,) = drift_observe.record(project, "PostToolUse", payload(3))  # the full path, same call
    assert report["signature"] == "repetition"
    assert drift_observe.record(project, "PostToolUse", payload(3)) == []  # told once
    assert [line["n"] for line in log_lines(project)] == [1, 2, 3, 3]


def test_the_fast_path_recognises_a_call_without_an_id(project):
    env = {"CLAUDE_PROJECT_DIR": str(project)}
    calls = [{**payload(n), "tool_use_id": None} for n in range(1, 4)]
    assert [drift_observe.observed_quietly(c, env) for c in calls] == [True, True, False]
    assert len(drift_observe.record(project, "PostToolUse", calls[2])) == 1
    assert len([line for line in log_lines(project) if "tool" in line]) == 3


def test_the_fast_path_says_false_on_anything_unusual(project, tmp_path):
    env = {"CLAUDE_PROJECT_DIR": str(project)}
    assert drift_observe.observed_quietly({**payload(1), "tool_name": None}, env) is False
    assert drift_observe.observed_quietly({**payload(1), "session_id": 3}, env) is False
    assert drift_observe.observed_quietly({**payload(1), "hook_event_name": "Stop"}, env) is False
    blocked = tmp_path / "ro"
    blocked.mkdir()
    (blocked / ".ctxward").write_text("a file where a folder should be", encoding="utf-8")
    assert drift_observe.observed_quietly(payload(1), {"CLAUDE_PROJECT_DIR": str(blocked)}) is False


def test_the_project_root_is_found_as_find_root_does(project):
    sub = project / "src" / "deep"
    sub.mkdir(parents=True)
    assert drift_observe.observed_quietly(payload(1, cwd=str(sub)), {}) is True
    assert len(log_lines(project)) == 1


def test_a_lost_state_is_rebuilt_from_the_log(project):
    failed = "PostToolUseFailure"
    for n in range(1, 3):
        drift_observe.record(project, failed, payload(n, event=failed))
    state = project / ".ctxward" / "sessions" / "s-1.drift.json"
    state.write_text("{not json", encoding="utf-8")
    (report,) = drift_observe.record(project, failed, payload(3, event=failed))
    assert report["signature"] == "repetition" and report["n"] == 3
    state.unlink()
    reports = drift_observe.record(project, failed, payload(4, event=failed))
    assert [r["signature"] for r in reports] == ["failure_spiral"]  # repetition: still held
    assert [line["n"] for line in log_lines(project) if "tool" in line] == [1, 2, 3, 4]


def test_the_config_is_read_again_when_it_changes(project):
    drift_observe.record(project, "PostToolUse", payload(1))
    config = project / ".ctxward" / "config.yaml"
    config.write_text("drift:\n  repetition: {count: 2}\n", encoding="utf-8")
    (report,) = drift_observe.record(project, "PostToolUse", payload(2))
    assert report["evidence"]["count"] == 2
    config.write_text("drift:\n  enabled: false\n", encoding="utf-8")
    assert drift_observe.record(project, "PostToolUse", payload(3)) == []
    assert len([line for line in log_lines(project) if "tool" in line]) == 2  # off: not logged
    config.write_text("drift: {repetition: {count: 0}}\n", encoding="utf-8")
    with pytest.raises(BadInput, match=r"drift\.repetition\.count: 0 is outside"):
        drift_observe.record(project, "PostToolUse", payload(4))


def test_the_observer_switched_off_writes_no_log(project):
    (project / ".ctxward").mkdir()
    (project / ".ctxward" / "config.yaml").write_text("drift: {enabled: false}\n", "utf-8")
    for n in range(5):
        assert drift_observe.record(project, "PostToolUseFailure", payload(n)) == []
    assert not (project / ".ctxward" / "sessions" / "s-1.tools.jsonl").exists()


def test_the_log_refuses_a_symlink(project, tmp_path):
    folder = project / ".ctxward" / "sessions"
    folder.mkdir(parents=True)
    target = tmp_path / "elsewhere.txt"
    target.write_text("", encoding="utf-8")
    (folder / "s-1.tools.jsonl").symlink_to(target)
    with pytest.raises(CtxwardError, match="symbolic link"):
        drift_observe.record(project, "PostToolUse", payload(1))
    assert target.read_text(encoding="utf-8") == ""


def test_a_linked_sessions_folder_is_not_written_through(project, tmp_path):
    """A clone commits `.ctxward/sessions -> elsewhere`: the observer refuses it, writes nothing."""
    elsewhere = tmp_path / "victim"
    elsewhere.mkdir()
    (project / ".ctxward").mkdir()
    (project / ".ctxward" / "sessions").symlink_to(elsewhere)
    with pytest.raises(CtxwardError, match="symbolic link"):
        drift_observe.record(project, "PostToolUse", payload(1))
    assert not drift_observe.observed_quietly(payload(1), {"CLAUDE_PROJECT_DIR": str(project)})
    assert list(elsewhere.iterdir()) == []


def test_no_project_is_observed_nothing_is_made(tmp_path):
    """A cwd that no marker names as a project: no `.ctxward/` appears in it."""
    loose = tmp_path / "loose"
    loose.mkdir()
    data = {**payload(1), "cwd": str(loose)}
    assert drift_observe.observed_quietly(data, {})
    assert list(loose.iterdir()) == []


# --- concurrency -----------------------------------------------------------------------------


def _hammer(root: str, session: str, start: int, count: int) -> None:
    for n in range(start, start + count):
        command = f"step {n % 5}"  # repeats: reports are written too
        data = payload(n, session=session, command=command)
        if n % 3 == 0:
            data["hook_event_name"] = "PostToolUseFailure"
        drift_observe.record(root, data["hook_event_name"], data)


def _run_all(jobs: list[tuple[str, str, int, int]]) -> None:
    context = multiprocessing.get_context("fork")
    processes = [context.Process(target=_hammer, args=job) for job in jobs]
    for process in processes:
        process.start()
    for process in processes:
        process.join(60)
        assert process.exitcode == 0


def test_concurrent_sessions_in_one_project_stay_apart(project):
    _run_all([(str(project), "alpha", 0, 150), (str(project), "beta", 1000, 150)])
    for session in ("alpha", "beta"):
        calls = [line for line in log_lines(project, session) if "tool" in line]
        assert [line["n"] for line in calls] == list(range(1, 151))
        ids = {line["id"] for line in calls}
        assert all(f"toolu_{session}_" in i for i in ids) and len(ids) == 150


@pytest.mark.slow  # a heavy variant: the slow stage (CI) runs it
def test_concurrent_calls_of_one_session_are_serialised(project):
    _run_all([(str(project), "same", k * 100, 100) for k in range(4)])
    lines = log_lines(project, "same")  # every line parses: no interleaving
    calls = [line for line in lines if "tool" in line]
    assert sorted(line["n"] for line in calls) == list(range(1, 401))
    assert len({line["id"] for line in calls}) == 400
    state = json.loads((project / ".ctxward" / "sessions" / "same.drift.json").read_text("utf-8"))
    assert state["n"] == 400 and len(state["window"]) == 10


def test_no_temporary_file_is_left_behind(project):
    _hammer(str(project), "tidy", 0, 20)
    names = sorted(p.name for p in (project / ".ctxward" / "sessions").iterdir())
    assert names == ["tidy.drift.json", "tidy.tools.jsonl"]


def test_a_temporary_state_file_left_by_a_crash_is_reused(project):
    _hammer(str(project), "tidy", 0, 2)
    folder = project / ".ctxward" / "sessions"
    (folder / "tidy.drift.json.tmp").write_text('{"half', encoding="utf-8")  # killed mid-write
    _hammer(str(project), "tidy", 2, 1)
    assert sorted(p.name for p in folder.iterdir()) == ["tidy.drift.json", "tidy.tools.jsonl"]
    assert json.loads((folder / "tidy.drift.json").read_text("utf-8"))["n"] == 3


def test_switched_off_a_crash_leftover_is_removed_and_a_fresh_one_left_alone(project):
    folder = project / ".ctxward" / "sessions"
    folder.mkdir(parents=True)
    (project / ".ctxward" / "config.yaml").write_text("drift: {enabled: false}\n", "utf-8")
    leftover = folder / "s-1.drift.json.tmp"
    leftover.write_text('{"half', encoding="utf-8")  # another call writing it right now
    assert drift_observe.record(project, "PostToolUse", payload(1)) == []
    assert leftover.exists() and not (folder / "s-1.drift.json").exists()
    os.utime(leftover, (1_000_000_000, 1_000_000_000))  # a crash's, long ago
    assert drift_observe.record(project, "PostToolUse", payload(2)) == []
    assert not leftover.exists()
    assert drift_observe.record(project, "PostToolUse", payload(3)) == []
    assert json.loads((folder / "s-1.drift.json").read_text("utf-8"))["off"] is True
    assert sorted(p.name for p in folder.iterdir()) == ["s-1.drift.json"]


def test_unsafe_session_ids_become_hashed_file_names(project):
    drift_observe.record(project, "PostToolUse", payload(1, session="../../etc/passwd"))
    (log,) = (project / ".ctxward" / "sessions").glob("*.tools.jsonl")
    assert log.name.startswith("id-") and log.parent == project / ".ctxward" / "sessions"
    assert not (project.parent / "etc").exists()


def test_os_environment_is_not_required(project, monkeypatch):
    monkeypatch.delenv("CLAUDE_PROJECT_DIR", raising=False)
    monkeypatch.chdir(project)
    assert drift_observe.observed_quietly(payload(1), os.environ) is True


@pytest.mark.parametrize(
    "session_id", ["abc-DEF_123", "", "a/b", "..", "x" * 128, "x" * 129, "é", "a b", "\x00"]
)
def test_session_file_names_follow_the_pending_scheme(session_id):
    from ctxward.invariants.pending import safe_id

    assert drift_observe.safe_id(session_id) == safe_id(session_id)


def test_the_invariants_file_name_is_the_one_activation_writes():
    from ctxward.invariants.model import INVARIANTS_FILE

    assert drift_tell.INVARIANTS_FILE == INVARIANTS_FILE


def test_a_sub_agents_calls_have_their_own_window(project):
    for n in range(2):
        drift_observe.record(project, "PostToolUse", payload(n))
    inside = [{**payload(10 + n), "agent_id": "a85995de1c25d0350"} for n in range(2)]
    assert [drift_observe.record(project, "PostToolUse", data) for data in inside] == [[], []]
    names = sorted(p.name for p in (project / ".ctxward" / "sessions").glob("*.tools.jsonl"))
    assert names == ["s-1-agent-a85995de1c25d0350.tools.jsonl", "s-1.tools.jsonl"]
