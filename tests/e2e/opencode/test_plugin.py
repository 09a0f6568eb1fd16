"""hooks/opencode/ctxward.js under plain Node: what it sends, what it applies, how it fails.

No OpenCode here: drive_plugin.mjs calls the plugin's hooks the way OpenCode 1.18.33 does (the
real client is test_opencode.py). Most tests put a fake `ctxward` behind $CTXWARD_BIN that
records what it was given and answers what the test says; the last one runs the real one.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

# Node.js drives the real plugin through real ctxward processes: the slow stage (CI) runs it.
pytestmark = pytest.mark.slow

HERE = Path(__file__).resolve().parent
PLUGIN = HERE.parents[2] / "hooks" / "opencode" / "ctxward.js"
DRIVER = HERE / "drive_plugin.mjs"
BLOCKED = (
    "ctxward: the dispatch guard could not check this task call, so it is blocked "
    "(the guard fails closed): "
)
FAKE = textwrap.dedent(
    """\
    #!{python}
    import json, pathlib, sys, time
    here = pathlib.Path(__file__).parent
    stdin = sys.stdin.read()
    with open(here / "calls.jsonl", "a") as log:
        log.write(json.dumps({{"argv": sys.argv[1:], "stdin": stdin}}) + "\\n")
    answers = json.loads((here / "answers.json").read_text())
    answer = answers.get(sys.argv[2], answers.get("*", {{}}))
    time.sleep(answer.get("sleep", 0))
    sys.stdout.write(answer.get("stdout", ""))
    sys.stderr.write(answer.get("stderr", ""))
    sys.exit(answer.get("exit", 0))
    """
)


class Fake:
    """A fake `ctxward`: answers per event from answers.json, logs each call to calls.jsonl."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.path = folder / "ctxward"
        self.path.write_text(FAKE.format(python=sys.executable), encoding="utf-8")
        self.path.chmod(0o755)
        self.answer()

    def answer(self, **per_event: dict[str, Any]) -> None:
        """`answer(**{"pre-tool-use": {"stdout": "...", "exit": 0, "sleep": 0}, "*": {...}})`."""
        (self.folder / "answers.json").write_text(json.dumps(per_event), encoding="utf-8")

    def calls(self, event: str | None = None) -> list[dict[str, Any]]:
        log = self.folder / "calls.jsonl"
        if not log.exists():
            return []
        calls = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
        for call in calls:
            call["stdin"] = json.loads(call["stdin"])
        return [c for c in calls if event is None or c["argv"][1] == event]


@pytest.fixture
def fake(tmp_path: Path) -> Fake:
    folder = tmp_path / "fake"
    folder.mkdir()
    return Fake(folder)


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    return root


Drive = Callable[..., dict[str, Any]]


@pytest.fixture
def drive(node: str, scratch: Path, fake: Fake) -> Drive:
    """Run steps through the plugin; returns {results: [{output, error}], logs, messageReads}."""

    def run(
        *steps: dict[str, Any],
        summary: str | None = "MOCK-SUMMARY",
        env: dict[str, str] | None = None,
        plugin: Path = PLUGIN,
    ) -> dict[str, Any]:
        scenario = {"ctx": {"directory": str(scratch), "summary": summary}, "steps": list(steps)}
        environment = {
            "PATH": os.environ["PATH"],
            "HOME": os.environ["HOME"],  # the same user: the plans it trusted are trusted here
            "CTXWARD_BIN": str(fake.path),
            **(env or {}),
        }
        if os.environ.get("PYTHONPATH"):  # a worktree's ctxward, run by the venv's scripts
            environment.setdefault("PYTHONPATH", os.environ["PYTHONPATH"])
        done = subprocess.run(
            [node, str(DRIVER), str(plugin)],
            input=json.dumps(scenario),
            capture_output=True,
            text=True,
            env=environment,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, f"driver failed:\n{done.stdout}\n{done.stderr}"
        result: dict[str, Any] = json.loads(done.stdout)
        return result

    return run


def task(prompt: str = "do it", call: str = "call_1", tool: str = "task") -> dict[str, Any]:
    args = {"description": "d", "prompt": prompt, "subagent_type": "general"}
    return {
        "hook": "tool.execute.before",
        "input": {"tool": tool, "sessionID": "ses_p", "callID": call},
        "output": {"args": args},
    }


def after(call: str = "call_1", output: str = "<task>DONE</task>") -> dict[str, Any]:
    return {
        "hook": "tool.execute.after",
        "input": {"tool": "task", "sessionID": "ses_p", "callID": call, "args": {}},
        "output": {"title": "d", "output": output, "metadata": {}},
    }


def compacting(prompt: str | None = None) -> dict[str, Any]:
    output: dict[str, Any] = {"context": []}
    if prompt is not None:
        output["prompt"] = prompt
    return {
        "hook": "experimental.session.compacting",
        "input": {"sessionID": "ses_p"},
        "output": output,
    }


def system(session: str = "ses_p") -> dict[str, Any]:
    return {
        "hook": "experimental.chat.system.transform",
        "input": {"sessionID": session, "model": {"id": "mock-model"}},
        "output": {"system": ["You are opencode"]},
    }


def event(kind: str, session: str = "ses_p") -> dict[str, Any]:
    properties: dict[str, Any] = {"sessionID": session}
    if kind == "session.created":
        properties["info"] = {"id": session}
    return {
        "hook": "event",
        "input": {"event": {"id": "evt_1", "type": kind, "properties": properties}},
    }


def autocontinue(session: str = "ses_p") -> dict[str, Any]:
    return {
        "hook": "experimental.compaction.autocontinue",
        "input": {"sessionID": session, "agent": "build", "overflow": False},
        "output": {"enabled": True},
    }


# --- the file itself ---------------------------------------------------------------------------


def test_plugin_file_imports_only_node_builtins_and_exports_only_the_plugin():
    """OpenCode treats every export as a plugin, and a file that fails to load is not logged."""
    source = PLUGIN.read_text(encoding="utf-8")
    imports = re.findall(r'^import .* from "([^"]+)"$', source, flags=re.MULTILINE)
    assert imports and all(name.startswith("node:") for name in imports), imports
    assert re.findall(r"^export\b.*$", source, flags=re.MULTILINE) == ["export default {"]


def test_plugin_file_parses_as_an_es_module(node):
    # `node --check FILE` accepts a broken ES module on Node 20; stdin with a module type does not.
    done = subprocess.run(
        [node, "--input-type=module", "--check"],
        input=PLUGIN.read_text(encoding="utf-8"),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr


# --- the dispatch guard (tool.execute.before on `task`) ----------------------------------------


def test_other_tools_never_start_ctxward(drive, fake):
    result = drive(task(tool="bash"), task(tool="read"))

    assert fake.calls() == []
    assert [r["error"] for r in result["results"]] == [None, None]


def test_a_task_call_sends_the_hook_input_and_args(drive, fake, scratch):
    result = drive(task("hello"))

    (call,) = fake.calls()
    assert call["argv"] == ["hook", "pre-tool-use", "--host", "opencode"]
    assert call["stdin"] == {
        "hook": "tool.execute.before",
        "input": {"tool": "task", "sessionID": "ses_p", "callID": "call_1"},
        "output": {"args": {"description": "d", "prompt": "hello", "subagent_type": "general"}},
        "directory": str(scratch),
        "worktree": str(scratch),
    }
    assert result["results"] == [{"output": task("hello")["output"], "error": None}]


def test_deny_throws_the_reason_verbatim(drive, fake):
    reason = "PROMPT_TOO_LARGE: the ctxward dispatch guard denied this Task call.\n\nSplit it."
    fake.answer(**{"pre-tool-use": {"stdout": json.dumps({"deny": reason, "notice": "denied"})}})

    result = drive(task())

    assert result["results"][0]["error"] == reason
    assert result["logs"] == [{"level": "warn", "service": "ctxward", "message": "denied"}]


def test_offload_rewrites_args_in_place_and_the_note_follows_the_result(drive, fake):
    answer = {"args": {"prompt": "[ctxward C9: moved]"}, "note": "NOTE for the model"}
    fake.answer(**{"pre-tool-use": {"stdout": json.dumps(answer)}})

    result = drive(task("big", "call_1"), after("call_2"), after("call_1"), after("call_1"))

    before, other, first, again = result["results"]
    assert before == {
        "output": {
            "args": {
                "description": "d",
                "prompt": "[ctxward C9: moved]",
                "subagent_type": "general",
            }
        },
        "error": None,
    }
    assert other["output"]["output"] == "<task>DONE</task>"
    assert first["output"]["output"] == "<task>DONE</task>\n\nNOTE for the model"
    assert again["output"]["output"] == "<task>DONE</task>"  # delivered once


@pytest.mark.parametrize(
    "answer, env, why",
    [
        (
            {"exit": 1, "stderr": "ctxward: PreToolUse: bad config\n"},
            {},
            "ctxward: PreToolUse: bad config",
        ),
        ({"exit": 3}, {}, "hook pre-tool-use exited 3"),
        (
            {"sleep": 3},
            {"CTXWARD_HOOK_TIMEOUT_MS": "150"},
            "hook pre-tool-use timed out after 150 ms",
        ),
        ({"stdout": "not json"}, {}, "printed something that is not a JSON object"),
        ({"stdout": "[1]"}, {}, "printed something that is not a JSON object"),
        (
            {"stdout": '{"hookSpecificOutput": {"permissionDecision": "deny"}}'},
            {},
            "unexpected answer hookSpecificOutput",
        ),
        ({"stdout": '{"args": "x"}'}, {}, "args is not an object"),
        ({}, {"CTXWARD_BIN": "/nonexistent/ctxward"}, "cannot run /nonexistent/ctxward"),
    ],
    ids=["exit-1", "exit-3", "timeout", "garbage", "array", "claude-shape", "bad-args", "absent"],
)
def test_the_guard_fails_closed(drive, fake, answer, env, why):
    fake.answer(**{"pre-tool-use": answer})

    result = drive(task(), env=env)

    error = result["results"][0]["error"]
    assert error.startswith(BLOCKED), error
    assert why in error


def baked_plugin(folder: Path, program: Path) -> Path:
    """The plugin as `ctxward install opencode` writes it, naming `program`."""
    from ctxward.hosts import wiring as hookcommand

    path = folder / "plugin" / "ctxward.js"
    path.parent.mkdir(parents=True, exist_ok=True)
    text = hookcommand.plugin_text(PLUGIN.read_text(encoding="utf-8"), str(program))
    path.write_text(text, encoding="utf-8")
    return path


def test_the_installed_plugin_runs_its_baked_ctxward_without_path(drive, fake, tmp_path):
    plugin = baked_plugin(tmp_path, fake.path)
    no_path = {"CTXWARD_BIN": "", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path / "home")}
    result = drive(task("hello"), env=no_path, plugin=plugin)
    assert [call["argv"][1] for call in fake.calls()] == ["pre-tool-use"]
    assert result["results"][0]["error"] is None


def test_without_a_baked_path_the_plugin_finds_ctxward_on_path_but_not_in_a_relative_folder(
    drive, fake, tmp_path
):
    env = {"CTXWARD_BIN": "", "PATH": f"{fake.folder}:/usr/bin:/bin", "HOME": str(tmp_path)}
    assert drive(task(), env=env)["results"][0]["error"] is None
    assert len(fake.calls()) == 1
    folder = os.path.relpath(fake.folder)  # from the driver's working folder: it would resolve
    assert (Path.cwd() / folder / "ctxward").is_file()
    relative = {**env, "PATH": f"{folder}:/usr/bin:/bin"}
    result = drive(task(), env=relative)
    assert len(fake.calls()) == 1  # not started from a relative PATH folder
    assert result["results"][0]["error"].startswith("ctxward blocked this task call")


def test_with_ctxward_gone_tasks_are_blocked_with_one_line_and_nothing_else_runs(
    drive, fake, tmp_path
):
    plugin = baked_plugin(tmp_path, tmp_path / "gone" / "ctxward")
    gone = {"CTXWARD_BIN": "", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path / "home")}
    steps = [
        event("session.created"),
        system(),
        task("one", "call_1"),
        after("call_1"),
        compacting(),
        task("two", "call_2"),
        system(),
    ]
    result = drive(*steps, env=gone, plugin=plugin)
    line = (
        f"ctxward blocked this task call: the dispatch guard cannot run, ctxward is missing (not "
        f"at {tmp_path / 'gone' / 'ctxward'}, not on PATH, not in ~/.local/bin). Install ctxward "
        f"(pipx install ctxward), then run: ctxward install opencode (or remove {plugin})."
    )
    errors = [r["error"] for r in result["results"]]
    assert errors == [None, None, line, None, None, line, None]
    assert fake.calls() == []
    (notice,) = result["logs"]  # one line in OpenCode's log, for every other hook
    assert notice["level"] == "warn"
    assert notice["message"].startswith("ctxward is missing (not at ")
    assert "its hooks do nothing in this session and task calls are blocked" in notice["message"]


# --- compaction: instructions, system prompt, survival -----------------------------------------


def test_compacting_pushes_the_instructions_into_context(drive, fake):
    fake.answer(**{"pre-compact": {"stdout": json.dumps({"context": ["KEEP THE RULES"]})}})

    result = drive(compacting())

    (call,) = fake.calls("pre-compact")
    assert call["stdin"]["hook"] == "experimental.session.compacting"
    assert call["stdin"]["input"] == {"sessionID": "ses_p"}
    assert result["results"][0] == {"output": {"context": ["KEEP THE RULES"]}, "error": None}


def test_compacting_appends_to_a_prompt_another_plugin_replaced(drive, fake):
    fake.answer(**{"pre-compact": {"stdout": json.dumps({"context": ["KEEP"]})}})

    result = drive(compacting(prompt="Summarize."))

    assert result["results"][0]["output"] == {"context": [], "prompt": "Summarize.\n\nKEEP"}


def test_system_prompt_source_follows_the_session(drive, fake, tmp_path):
    fake.answer(**{"session-start": {"stdout": json.dumps({"system": ["RULES"]})}})

    result = drive(
        event("session.created", "ses_new"),
        system("ses_new"),
        event("session.compacted", "ses_new"),
        system("ses_new"),
        system("ses_old"),
        {"hook": "experimental.chat.system.transform", "input": {}, "output": {"system": []}},
    )

    sources = [c["stdin"]["plugin"]["source"] for c in fake.calls("session-start")]
    assert sources == ["startup", "compact", "resume"]  # no session id: not asked at all
    outputs = [r["output"] for r in result["results"] if r["output"].get("system")]
    assert outputs == [{"system": ["You are opencode", "RULES"]}] * 3


def test_system_answer_is_reused_until_a_watched_file_changes(drive, fake, tmp_path):
    watched = tmp_path / "invariants.md"
    watched.write_text("one", encoding="utf-8")
    answer = {"system": ["RULES"], "watch": [str(watched), str(tmp_path / "absent")]}
    fake.answer(**{"session-start": {"stdout": json.dumps(answer)}})
    change = {"hook": "event", "input": {"event": {"type": "file.edited", "properties": {}}}}

    result = drive(system(), system(), system())
    assert len(fake.calls("session-start")) == 1
    assert [r["output"]["system"] for r in result["results"]] == [["You are opencode", "RULES"]] * 3

    watched.write_text("two!", encoding="utf-8")
    drive(change, system())
    assert len(fake.calls("session-start")) == 2  # a new process asks again anyway
    drive(system(), system())
    assert len(fake.calls("session-start")) == 3


def test_after_a_compaction_each_session_has_its_own_system_answer(drive, fake, tmp_path):
    """The rules a session's summary lacks are that session's: one session's cached answer is
    never another's (two reopened sessions, one process); each is still reused."""
    watched = tmp_path / "plans"
    watched.mkdir()
    answer = {"system": ["RULES"], "watch": [str(watched)]}
    fake.answer(**{"session-start": {"stdout": json.dumps(answer)}})

    drive(system("ses_a"), system("ses_b"), system("ses_a"), system("ses_b"))

    asked = [c["stdin"]["input"]["sessionID"] for c in fake.calls("session-start")]
    assert asked == ["ses_a", "ses_b"]


def test_compacted_session_sends_trigger_and_the_summary_read_back(drive, fake):
    result = drive(
        autocontinue("ses_auto"),
        event("session.compacted", "ses_auto"),
        event("session.compacted", "ses_manual"),
        summary="## Goal\n- keep rule one",
    )

    calls = fake.calls("post-compact")  # both run at once (OpenCode does not await `event`)
    by_session = {
        c["stdin"]["input"]["event"]["properties"]["sessionID"]: c["stdin"]["plugin"] for c in calls
    }
    assert by_session == {
        "ses_auto": {"trigger": "auto", "summary": "## Goal\n- keep rule one"},
        "ses_manual": {"trigger": "manual", "summary": "## Goal\n- keep rule one"},
    }
    assert calls[0]["stdin"]["hook"] == "event"
    assert calls[0]["stdin"]["input"]["event"]["type"] == "session.compacted"
    assert result["messageReads"] == 2


def test_compacted_session_without_a_summary_sends_null(drive, fake):
    drive(event("session.compacted"), summary=None)

    assert fake.calls("post-compact")[0]["stdin"]["plugin"] == {
        "trigger": "manual",
        "summary": None,
    }


@pytest.mark.parametrize(
    "answer, env",
    [
        ({"exit": 1, "stderr": "ctxward: boom\n"}, {}),
        ({"sleep": 3}, {"CTXWARD_HOOK_TIMEOUT_MS": "150"}),
        ({"stdout": "garbage"}, {}),
        ({}, {"CTXWARD_BIN": "/nonexistent/ctxward"}),
    ],
    ids=["exit-1", "timeout", "garbage", "absent"],
)
def test_compaction_hooks_fail_open_and_say_so_once(drive, fake, answer, env):
    fake.answer(**{"*": answer})

    result = drive(
        compacting(),
        event("session.created"),
        system(),
        system(),
        event("session.compacted"),
        system(),
        env=env,
    )

    assert [r["error"] for r in result["results"]] == [None] * 6
    assert result["results"][0]["output"] == {"context": []}
    assert all(
        r["output"].get("system", ["You are opencode"]) == ["You are opencode"]
        for r in result["results"]
    )
    messages = [log["message"] for log in result["logs"]]
    assert len(messages) == len(set(messages))  # each distinct problem once
    assert {m.split(" ", 2)[1] for m in messages} == {
        "pre-compact",
        "session-start",
        "post-compact:",
    }
    assert all(log["service"] == "ctxward" for log in result["logs"])


# --- the real ctxward --------------------------------------------------------------------------


@pytest.mark.slow
def test_round_trip_through_the_real_ctxward(drive, scratch):
    venv_bin = Path(sys.executable).parent
    env = {"PATH": f"{venv_bin}{os.pathsep}{os.environ['PATH']}", "CTXWARD_BIN": "ctxward"}
    subprocess.run(["git", "init", "-q", str(scratch)], check=True, timeout=30)
    activated = subprocess.run(
        [str(venv_bin / "ctxward"), "-C", str(scratch), "activate", "deep-review", "--slug", "p"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert activated.returncode == 0, activated.stderr
    rules = [
        line[2:]
        for line in (scratch / "docs/plans/p/invariants.md").read_text().splitlines()
        if line.startswith("- ") and "**" not in line
    ]
    assert len(rules) >= 4

    paragraphs = "E2E\n\n" + "Check one module.\n\n" * 11_500
    result = drive(
        compacting(),
        event("session.created"),
        system(),
        event("session.compacted"),
        system(),
        task(paragraphs, "call_big"),
        task("E2E\n" + "x" * 220_000, "call_paste"),
        after("call_paste"),
        summary=f"## Goal\n- {rules[0]}\n",
        env=env,
    )

    errors = [r["error"] for r in result["results"]]
    outputs = [r["output"] for r in result["results"]]
    assert errors[:5] == [None] * 5
    assert all(rule in outputs[0]["context"][0] for rule in rules)
    assert outputs[2] == {"system": ["You are opencode"]}  # startup: nothing added
    # After the compaction: what the summary lacks, once (the summary kept the first rule).
    assert outputs[4]["system"][1:] and len(outputs[4]["system"]) == 2
    assert all(f"- {rule}\n" in outputs[4]["system"][1] for rule in rules[1:])
    assert f"- {rules[0]}\n" not in outputs[4]["system"][1]
    assert errors[5].startswith("PROMPT_TOO_LARGE: the ctxward dispatch guard denied this Task")
    assert errors[6] is None
    assert outputs[6]["args"]["prompt"].startswith("[ctxward C9: pasted block of ")
    assert "ctxward dispatch guard:" in outputs[7]["output"]
    (report,) = (scratch / ".ctxward" / "compactions").glob("*.json")
    survived = json.loads(report.read_text())["survived"]
    assert [entry["rule"] for entry in survived] == [rules[0]]


# --- the drift observer (tool.execute.after, errored tool parts, text) --------------------------


def tool_after(tool: str = "bash", call: str = "call_1", exit: int | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {} if exit is None else {"exit": exit}
    return {
        "hook": "tool.execute.after",
        "input": {"tool": tool, "sessionID": "ses_p", "callID": call, "args": {"command": "x"}},
        "output": {"title": "t", "output": "out", "metadata": metadata},
    }


def part_updated(call: str = "call_9", status: str = "error", kind: str = "tool") -> dict[str, Any]:
    part = {
        "id": "prt_1",
        "sessionID": "ses_p",
        "messageID": "msg_1",
        "type": kind,
        "callID": call,
        "tool": "read",
        "state": {"status": status, "input": {"filePath": "/p/a.ts"}, "error": "ENOENT: long text"},
    }
    return {
        "hook": "event",
        "input": {"event": {"type": "message.part.updated", "properties": {"part": part}}},
    }


def text_done() -> dict[str, Any]:
    return {
        "hook": "experimental.text.complete",
        "input": {"sessionID": "ses_p", "messageID": "msg_2", "partID": "prt_2"},
        "output": {"text": "I will try another way."},
    }


def test_every_tool_result_goes_to_the_drift_observer(drive, fake, scratch):
    result = drive(tool_after("read", "call_1"), tool_after("bash", "call_2", exit=1))

    (ok,) = fake.calls("post-tool-use")
    assert ok["argv"] == ["hook", "post-tool-use", "--host", "opencode"]
    assert ok["stdin"] == {
        "hook": "tool.execute.after",
        "input": {
            "tool": "read",
            "sessionID": "ses_p",
            "callID": "call_1",
            "args": {"command": "x"},
        },
        "directory": str(scratch),
        "worktree": str(scratch),
        "plugin": {"failed": False, "quiet": 1},
    }
    (failed,) = fake.calls("post-tool-use-failure")
    assert failed["stdin"]["plugin"] == {"failed": True, "quiet": 2}
    assert [r["output"]["output"] for r in result["results"]] == ["out", "out"]  # untouched


def test_an_errored_tool_part_is_observed_once_as_a_failure(drive, fake):
    drive(
        part_updated("call_9"),
        part_updated("call_9"),  # OpenCode may publish the same part again
        part_updated("call_8", status="completed"),
        part_updated("call_7", kind="text"),
    )

    (call,) = fake.calls("post-tool-use-failure")
    assert call["stdin"]["hook"] == "event"
    assert call["stdin"]["input"] == {
        "event": {
            "type": "message.part.updated",
            "properties": {
                "part": {
                    "tool": "read",
                    "sessionID": "ses_p",
                    "callID": "call_9",
                    "state": {"status": "error", "input": {"filePath": "/p/a.ts"}},
                }
            },
        }
    }
    assert fake.calls("post-tool-use") == []


def test_text_from_the_model_resets_the_silence_count(drive, fake):
    drive(tool_after(call="c1"), tool_after(call="c2"), text_done(), tool_after(call="c3"))

    assert [c["stdin"]["plugin"]["quiet"] for c in fake.calls("post-tool-use")] == [1, 2, 1]


def test_a_drift_fact_goes_into_the_next_request_once(drive, fake):
    fake.answer(**{"post-tool-use": {"stdout": json.dumps({"note": "DRIFT FACT"}), "sleep": 0.5}})

    result = drive(tool_after(), system(), system())

    outputs = [r["output"] for r in result["results"]]
    assert outputs[0]["output"] == "out"  # the tool's own result is left alone
    assert outputs[1]["system"] == ["You are opencode", "DRIFT FACT"]  # waited for the observer
    assert outputs[2]["system"] == ["You are opencode"]


def test_no_drift_fact_in_the_summarizers_request(drive, fake):
    fake.answer(**{"post-tool-use": {"stdout": json.dumps({"note": "DRIFT FACT"})}})

    result = drive(tool_after(), compacting(), system(), event("session.compacted"), system())

    systems = [r["output"].get("system") for r in result["results"]]
    assert systems[2] == ["You are opencode"]
    assert systems[4] == ["You are opencode", "DRIFT FACT"]


def test_the_drift_observer_fails_open(drive, fake):
    fake.answer(**{"post-tool-use": {"exit": 1, "stderr": "ctxward: PostToolUse: boom\n"}})

    result = drive(tool_after(call="c1"), tool_after(call="c2"), system())

    assert [r["error"] for r in result["results"]] == [None, None, None]
    assert result["logs"] == [
        {
            "level": "warn",
            "service": "ctxward",
            "message": "ctxward: post-tool-use (no drift check for this call): "
            "ctxward: PostToolUse: boom",
        }
    ]


def test_the_rules_a_summary_lost_go_into_the_next_request_once(drive, fake):
    """post-compact's `restate` (issue 17 item 4): waited for, pushed once, then forgotten."""
    fake.answer(
        **{"post-compact": {"stdout": json.dumps({"restate": ["LOST RULES"]}), "sleep": 0.5}}
    )

    result = drive(compacting(), event("session.compacted"), system(), system(), summary="s")

    systems = [r["output"].get("system") for r in result["results"]]
    assert systems[2] == ["You are opencode", "LOST RULES"]  # waited for the post-compact call
    assert systems[3] == ["You are opencode"]
