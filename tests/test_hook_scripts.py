"""Subprocess tests of the real entry points: hooks/*.py, `ctxward-hook`, and the hot path."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

# Every shim and entry point run as a real process, once per event and host: heavy variants of
# what tests/events/ checks in-process; the slow stage (CI) runs them.
pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parent.parent
HOOKS = REPO / "hooks"
LIB = REPO / "lib"
SCRIPTS = sorted(HOOKS.glob("*.py"))
HEAVY = ["click", "jinja2", "watchdog", "yaml"]
# hooks/pre_tool_use.py fails closed on unreadable input (see hookio's docstring; the guard's
# tests cover it).
FAIL_OPEN_SCRIPTS = [script for script in SCRIPTS if script.name != "pre_tool_use.py"]
PINNED = {
    "pre_compact.py": "PreCompact",
    "session_start.py": "SessionStart",
    "post_compact.py": "PostCompact",
    "subagent_stop.py": "SubagentStop",
    "stop.py": "Stop",
    "pre_tool_use.py": "PreToolUse",
    "user_prompt_submit.py": "UserPromptSubmit",
    "post_tool_use.py": "PostToolUse",
    "post_tool_use_failure.py": "PostToolUseFailure",
    "session_end.py": "SessionEnd",
}


def hook_command() -> list[str]:
    """The installed `ctxward-hook` console script (the code path settings.example.json uses)."""
    script = Path(sys.executable).with_name("ctxward-hook")
    if script.is_file():
        return [str(script)]
    return [sys.executable, "-c", "from ctxward.hookio import main; raise SystemExit(main())"]


def entry(command: str, script: str) -> list[str]:
    """hooks/<script> run by the interpreter, or `ctxward-hook` (which dispatches by itself)."""
    return [sys.executable, str(HOOKS / script)] if command == "script" else hook_command()


@pytest.fixture
def run_process(project):
    """Run a command with `payload` on stdin, CLAUDE_PROJECT_DIR set to the project."""

    def run(command: list[str], payload: dict | bytes) -> subprocess.CompletedProcess[str]:
        raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        env = {**os.environ, "CLAUDE_PROJECT_DIR": str(project)}
        result = subprocess.run(
            command, input=raw, capture_output=True, timeout=20, env=env, cwd=project
        )
        return subprocess.CompletedProcess(
            result.args,
            result.returncode,
            result.stdout.decode("utf-8"),
            result.stderr.decode("utf-8"),
        )

    return run


@pytest.fixture
def plan(project, make_skill, activate_skill):
    make_skill("alpha", ["alpha: never push to main", "alpha: cite file:line"])
    activate_skill("alpha", "fix")
    return project / "docs" / "plans" / "fix"


def test_there_is_a_script_per_event():
    assert sorted(script.name for script in SCRIPTS) == sorted(PINNED)


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_script_has_a_shebang_and_is_executable(script):
    assert script.read_text(encoding="utf-8").startswith("#!/usr/bin/env python3\n")
    assert os.access(script, os.X_OK)
    assert f'run_script("{PINNED[script.name]}")' in script.read_text(encoding="utf-8")


def one_line(err: str) -> str:
    assert err.endswith("\n") and err.count("\n") == 1, repr(err)
    assert "Traceback" not in err
    return err


# --- each script with the payloads Claude Code sends ----------------------------------------


@pytest.mark.parametrize("command", ["script", "ctxward-hook"])
def test_pre_compact(plan, load_payload, run_process, command):
    done = run_process(entry(command, "pre_compact.py"), load_payload("PreCompact.json"))

    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith("COMPACTION RESILIENCE:")
    assert "  - alpha: never push to main\n" in done.stdout
    assert (plan / ".compaction-payload.md").is_file()


@pytest.mark.parametrize("fixture", ["SessionStart.compact.json", "SessionStart.resume.json"])
@pytest.mark.parametrize("command", ["script", "ctxward-hook"])
def test_session_start_injects(plan, load_payload, run_process, fixture, command):
    done = run_process(entry(command, "session_start.py"), load_payload(fixture))

    assert (done.returncode, done.stderr) == (0, "")
    specific = json.loads(done.stdout)["hookSpecificOutput"]
    assert specific["hookEventName"] == "SessionStart"
    assert "- alpha: never push to main\n" in specific["additionalContext"]
    # From the trusted invariants.md itself: SessionStart reads and writes no payload.
    assert not (plan / ".compaction-payload.md").exists()


def test_session_start_on_startup_says_nothing(plan, load_payload, run_process):
    done = run_process(
        [sys.executable, str(HOOKS / "session_start.py")], load_payload("SessionStart.json")
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


@pytest.mark.parametrize("command", ["script", "ctxward-hook"])
def test_post_compact_writes_a_report_and_prints_nothing(
    plan, project, load_payload, run_process, command
):
    done = run_process(entry(command, "post_compact.py"), load_payload("PostCompact.json"))

    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    (report,) = (project / ".ctxward" / "compactions").iterdir()
    assert len(json.loads(report.read_text(encoding="utf-8"))["missing"]) == 2


@pytest.mark.parametrize("fixture", ["SubagentStop.json", "SubagentStop.compaction.json"])
def test_subagent_stop(plan, load_payload, run_process, fixture):
    done = run_process([sys.executable, str(HOOKS / "subagent_stop.py")], load_payload(fixture))
    assert (done.returncode, done.stderr) == (0, "")


@pytest.mark.parametrize("command", ["script", "ctxward-hook"])
def test_pre_tool_use_for_another_tool_says_nothing(load_payload, run_process, command):
    payload = load_payload("PreToolUse.json", tool_name="Bash", tool_input={"command": "ls"})

    done = run_process(entry(command, "pre_tool_use.py"), payload)

    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


# --- bad input and bugs: exit 1, one stderr line, empty stdout --------------------------------


# Each fail-open script gets one kind of garbage (every kind and every script is covered once
# in a real process; test_hookio.py runs every kind through every event in-process).
GARBAGE = [b"{not json", b"\xff\xfe\x00", b"", b'["a", "JSON", "array"]']


@pytest.mark.parametrize(
    "script, raw",
    list(zip(FAIL_OPEN_SCRIPTS, itertools.cycle(GARBAGE))),
    ids=[script.name for script in FAIL_OPEN_SCRIPTS],
)
def test_script_given_garbage_exits_1(project, run_process, script, raw):
    done = run_process([sys.executable, str(script)], raw)

    assert (done.returncode, done.stdout) == (1, "")
    assert one_line(done.stderr).startswith("ctxward: ")
    assert not (project / ".ctxward").exists()


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_script_refuses_another_events_payload(load_payload, run_process, script):
    other = (
        "SessionStart.compact.json" if PINNED[script.name] != "SessionStart" else "PreCompact.json"
    )

    done = run_process([sys.executable, str(script)], load_payload(other))

    assert (done.returncode, done.stdout) == (1, "")
    assert f"this hook handles {PINNED[script.name]}" in one_line(done.stderr)


@pytest.mark.parametrize(
    "raw",
    [b'"PreCompact"', b"", b'{"hook_event_name": "Notification"}'],
    ids=["string", "empty", "unknown-event"],
)
def test_ctxward_hook_given_garbage_exits_1(run_process, raw):
    done = run_process(hook_command(), raw)

    assert (done.returncode, done.stdout) == (1, "")
    assert one_line(done.stderr).startswith("ctxward: ")


_BROKEN_HANDLER = """
import sys
sys.path.insert(0, sys.argv[1])
import ctxward.events.pre_compact as module
def handle(event):
    raise KeyError("x")
module.handle = handle
from ctxward.hookio import main
raise SystemExit(main())
"""


def test_internal_error_in_a_real_process(plan, project, load_payload, run_process):
    done = run_process(
        [sys.executable, "-c", _BROKEN_HANDLER, str(LIB)], load_payload("PreCompact.json")
    )

    assert (done.returncode, done.stdout) == (1, "")
    line = one_line(done.stderr)
    assert line.startswith("ctxward: internal error in PreCompact: KeyError: 'x' (details: ")
    logged = line.rsplit("(details: ", 1)[1].rstrip(")\n")
    assert logged.startswith(".ctxward/log/")
    assert "Traceback" in (project / logged).read_text(encoding="utf-8")


# --- the process ends with os._exit: nothing written may be lost ------------------------------

_LOUD_HANDLER = """
import runpy, sys
target = sys.argv[1]
sys.path.insert(0, sys.argv[2])
import ctxward.events.session_start as module
from ctxward.hookio import Outcome
def handle(event):
    sys.stderr.write("ctxward: a last line, with no newline to flush it")
    return Outcome(context="é" * 1_000_000 + " end")
module.handle = handle
if target == "ctxward-hook":
    from ctxward.hookio import main
    main()
else:
    sys.argv = [target]
    runpy.run_path(target, run_name="__main__")
"""


@pytest.mark.parametrize(
    "target", ["ctxward-hook", str(HOOKS / "session_start.py")], ids=["hook", "script"]
)
def test_a_large_answer_arrives_whole_through_the_pipe(project, load_payload, target):
    """2 MB of stdout (30 pipe buffers) and an unterminated stderr line survive the fast exit.

    Buffered streams, as the hosts start hooks: stderr keeps a line without a newline in its
    buffer until it is flushed.
    """
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    done = subprocess.run(
        [sys.executable, "-c", _LOUD_HANDLER, target, str(LIB)],
        input=json.dumps(load_payload("SessionStart.compact.json")).encode(),
        capture_output=True,
        timeout=20,
        env={**env, "CLAUDE_PROJECT_DIR": str(project)},
    )

    assert done.returncode == 0
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert context == "é" * 1_000_000 + " end"
    assert done.stdout.endswith(b"}\n")
    assert done.stderr == b"ctxward: a last line, with no newline to flush it"


def test_an_answer_that_cannot_be_flushed_exits_1(tmp_path):
    code = (
        f"import io, sys; sys.path.insert(0, {str(LIB)!r})\n"
        "from ctxward import hookio\n"
        "class Closed(io.StringIO):\n"
        "    def flush(self):\n"
        "        raise BrokenPipeError(32, 'Broken pipe')\n"
        "sys.stdout = Closed()\n"
        "hookio._exit_process(0)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=20)

    assert (done.returncode, done.stderr) == (1, b"")


# --- the hot path imports nothing heavy -------------------------------------------------------

# Both entries end the process with os._exit (hookio._exit_process): the probe reports from it.
_IMPORTS = f"""
import json, os, runpy, sys
target, report = sys.argv[1], sys.argv[2]
host = target.removeprefix("ctxward-hook-")
sys.argv = ["ctxward-hook", "--host", host] if host in ("codex", "gemini") else [target]
exit_now = os._exit
def finish(code):
    heavy = sorted(m for m in sys.modules if m.split(".")[0] in {set(HEAVY)!r})
    with open(report, "w") as handle:
        json.dump({{"code": code, "heavy": heavy}}, handle)
def exit_reporting(code):
    finish(code)
    exit_now(code)
os._exit = exit_reporting
if target.startswith("ctxward-hook"):
    sys.path.insert(0, {str(LIB)!r})
    from ctxward.hookio import main
    main()
else:
    runpy.run_path(target, run_name="__main__")
finish("returned instead of ending the process")
"""


@pytest.mark.parametrize(
    "target, fixture, overrides",
    [
        (
            str(HOOKS / "pre_tool_use.py"),
            "PreToolUse.json",
            {"tool_name": "Bash", "tool_input": {"command": "ls"}},
        ),
        ("ctxward-hook", "PreToolUse.json", {"tool_name": "Bash", "tool_input": {"command": "ls"}}),
        (str(HOOKS / "pre_compact.py"), "PreCompact.json", {}),
        ("ctxward-hook", "PreCompact.auto.json", {}),
        ("ctxward-hook", "SessionStart.json", {}),
        (str(HOOKS / "user_prompt_submit.py"), "UserPromptSubmit.json", {}),
        ("ctxward-hook", "UserPromptSubmit.json", {}),
        # Codex's hooks.json runs `ctxward-hook --host codex` for every tool call and prompt.
        ("ctxward-hook-codex", "PreToolUse.json", {"tool_name": "exec_command"}),
        (
            "ctxward-hook-codex",
            "PreToolUse.json",
            {"tool_name": "spawn_agent", "tool_input": {"message": "go"}},
        ),
        ("ctxward-hook-codex", "UserPromptSubmit.json", {}),
        ("ctxward-hook-codex", "PostToolUse.json", {}),
        (str(HOOKS / "stop.py"), "Stop.json", {}),  # every turn ends with it
    ],
    ids=[
        "pre-tool-use-bash",
        "hook-bash",
        "pre-compact-no-plans",
        "hook-no-plans",
        "startup",
        "prompt-nothing-pending",
        "hook-prompt-nothing-pending",
        "codex-other-tool",
        "codex-small-spawn",
        "codex-prompt-nothing-pending",
        "codex-post-tool-quiet",
        "stop-no-debates",
    ],
)
def test_no_op_paths_import_no_heavy_module(
    project, tmp_path, load_payload, run_process, target, fixture, overrides
):
    report = tmp_path / "imports.json"

    done = run_process(
        [sys.executable, "-c", _IMPORTS, target, str(report)], load_payload(fixture, **overrides)
    )

    assert (done.stdout, done.stderr) == ("", "")
    result = json.loads(report.read_text())
    assert result == {"code": 0, "heavy": []}


GEMINI_FIXTURES = Path(__file__).parent / "fixtures" / "gemini-cli-0.61.0"


# Gemini CLI runs BeforeModel before every model request and AfterTool after every tool call.
@pytest.mark.parametrize(
    "fixture",
    ["AfterTool-read_file", "BeforeModel-first", "BeforeAgent", "BeforeTool-invoke_agent"],
)
def test_gemini_hot_paths_import_no_heavy_module(project, tmp_path, run_process, fixture):
    payload = json.loads((GEMINI_FIXTURES / f"{fixture}.json").read_text())
    payload["cwd"] = str(project)
    payload.pop("transcript_path", None)
    report = tmp_path / "imports.json"

    done = run_process(
        [sys.executable, "-c", _IMPORTS, "ctxward-hook-gemini", str(report)], payload
    )

    assert (done.stdout, done.stderr) == ("", "")
    assert json.loads(report.read_text()) == {"code": 0, "heavy": []}


def test_the_import_probe_does_see_heavy_modules(plan, tmp_path, load_payload, run_process):
    """The probe above is not blind: with a plan, PreCompact renders and imports jinja2."""
    report = tmp_path / "imports.json"

    run_process(
        [sys.executable, "-c", _IMPORTS, str(HOOKS / "pre_compact.py"), str(report)],
        load_payload("PreCompact.json"),
    )

    assert "jinja2" in json.loads(report.read_text())["heavy"]


# --- the commands install writes, run by sh as Claude Code runs them -------------------------

GUARD_PAYLOAD = "PreToolUse.json"


def run_sh(command: str, payload: dict, project: Path, path: str, home: Path):
    """`sh -c COMMAND`, as Claude Code runs a hook's command, with only `path` on PATH."""
    env = {
        "PATH": path,
        "HOME": str(home),
        "CLAUDE_PROJECT_DIR": str(project),
        "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
        "LANG": "C.UTF-8",
    }
    done = subprocess.run(
        ["/bin/sh", "-c", command],
        input=json.dumps(payload).encode(),
        capture_output=True,
        timeout=30,
        env=env,
        cwd=project,
    )
    return done.returncode, done.stdout.decode("utf-8"), done.stderr.decode("utf-8")


def a_copy_of_ctxward_hook(folder: Path) -> Path:
    """An install of ctxward-hook that can be taken away: the venv's console script, copied."""
    folder.mkdir(parents=True, exist_ok=True)
    copy = folder / "ctxward-hook"
    source = Path(hook_command()[0])
    if not source.is_file() or source.suffix:
        pytest.skip("no ctxward-hook console script next to this interpreter")
    copy.write_bytes(source.read_bytes())
    copy.chmod(0o755)
    return copy


def big_dispatch(load_payload) -> dict:
    payload = load_payload(GUARD_PAYLOAD)
    payload["tool_input"]["prompt"] = "short paragraph.\n\n" * 15_000  # 270,000 bytes
    return payload


def test_the_baked_command_runs_without_path_and_denies(project, load_payload, tmp_path):
    from ctxward.hosts import wiring as hookcommand

    hook = a_copy_of_ctxward_hook(tmp_path / "an install" / "it's bin")  # spaces and a quote
    command = hookcommand.render("claude", "PreToolUse", str(hook))
    code, out, err = run_sh(command, big_dispatch(load_payload), project, "/usr/bin:/bin", tmp_path)
    assert code == 0, err
    answer = json.loads(out)["hookSpecificOutput"]
    assert answer["permissionDecision"] == "deny"
    assert "PROMPT_EMERGENCY" in answer["permissionDecisionReason"]


def test_a_baked_path_that_is_gone_falls_back_on_path(project, load_payload, tmp_path):
    from ctxward.hosts import wiring as hookcommand

    command = hookcommand.render("claude", "PreToolUse", str(tmp_path / "gone" / "ctxward-hook"))
    on_path = a_copy_of_ctxward_hook(tmp_path / "bin")
    code, out, _ = run_sh(
        command, big_dispatch(load_payload), project, f"{on_path.parent}:/usr/bin:/bin", tmp_path
    )
    assert code == 0 and json.loads(out)["hookSpecificOutput"]["permissionDecision"] == "deny"


def test_a_broken_install_passes_to_the_next_candidate(project, load_payload, tmp_path):
    """A venv whose interpreter is gone: its script exists but exits 127 without reading."""
    from ctxward.hosts import wiring as hookcommand

    broken = tmp_path / "old" / "ctxward-hook"
    broken.parent.mkdir()
    broken.write_text("#!/nonexistent/python3\n", encoding="utf-8")
    broken.chmod(0o755)
    local = a_copy_of_ctxward_hook(tmp_path / "home" / ".local" / "bin")
    command = hookcommand.render("claude", "PreToolUse", str(broken))
    code, out, _ = run_sh(
        command, big_dispatch(load_payload), project, "/usr/bin:/bin", local.parents[2]
    )
    assert code == 0 and json.loads(out)["hookSpecificOutput"]["permissionDecision"] == "deny"


@pytest.mark.parametrize("baked", [True, False], ids=["baked", "portable"])
def test_with_ctxward_gone_the_guard_denies_with_one_line(project, load_payload, tmp_path, baked):
    from ctxward.hosts import wiring as hookcommand

    gone = str(tmp_path / "gone" / "ctxward-hook") if baked else None
    (tmp_path / "empty").mkdir()
    planted = tmp_path / "empty" / "ctxward-hook"  # a relative PATH folder's: never run
    planted.write_text(f"#!/bin/sh\ntouch {tmp_path / 'ran'}\n", encoding="utf-8")
    planted.chmod(0o755)
    command = hookcommand.render("claude", "PreToolUse", gone)
    path = "empty:/usr/bin:/bin"
    code, out, err = run_sh(command, load_payload(GUARD_PAYLOAD), tmp_path, path, tmp_path)
    assert (code, err) == (0, "")
    answer = json.loads(out)
    specific = answer["hookSpecificOutput"]
    assert (specific["hookEventName"], specific["permissionDecision"]) == ("PreToolUse", "deny")
    reason = specific["permissionDecisionReason"]
    assert "\n" not in reason and answer["systemMessage"] == reason  # the user sees it too
    assert reason.startswith(
        "ctxward blocked this sub-agent call: the dispatch guard cannot run, ctxward-hook is "
        "missing ("
    )
    assert ("not at " + str(gone) + ", " in reason) == baked
    assert "Install ctxward (pipx install ctxward), then run: ctxward install claude" in reason
    assert not (tmp_path / "ran").exists()


@pytest.mark.parametrize(
    "fixture",
    [
        "PreCompact.json",
        "PostCompact.json",
        "SubagentStop.json",
        "UserPromptSubmit.json",
        "PostToolUse.json",
        "PostToolUseFailure.json",
    ],
)
def test_with_ctxward_gone_every_other_hook_is_silent(project, load_payload, tmp_path, fixture):
    from ctxward.hosts import wiring as hookcommand

    payload = load_payload(fixture)
    command = hookcommand.render("claude", payload["hook_event_name"], str(tmp_path / "gone"))
    assert run_sh(command, payload, project, "/usr/bin:/bin", tmp_path) == (0, "", "")


def test_with_ctxward_gone_session_start_says_so_once(project, load_payload, tmp_path):
    from ctxward.hosts import wiring as hookcommand

    payload = load_payload("SessionStart.compact.json")
    command = hookcommand.render("claude", "SessionStart", None)
    code, out, err = run_sh(command, payload, project, "/usr/bin:/bin", tmp_path)
    assert (code, err) == (0, "")
    notice = json.loads(out)["systemMessage"]
    assert notice.startswith("ctxward is wired here but ctxward-hook is missing (not on PATH")
    assert "sub-agent calls are blocked" in notice


def test_the_guard_blocks_when_the_program_fails(project, load_payload, tmp_path):
    """An install whose Python cannot import ctxward exits 1 (non-blocking): made blocking."""
    from ctxward.hosts import wiring as hookcommand

    failing = tmp_path / "bin" / "ctxward-hook"
    failing.parent.mkdir()
    failing.write_text("#!/bin/sh\necho 'ModuleNotFoundError: ctxward' >&2\nexit 1\n")
    failing.chmod(0o755)
    command = hookcommand.render("claude", "PreToolUse", str(failing))
    code, out, err = run_sh(
        command, load_payload(GUARD_PAYLOAD), project, "/usr/bin:/bin", tmp_path
    )
    assert (code, out, err) == (2, "", "ModuleNotFoundError: ctxward\n")
    other = hookcommand.render("claude", "PostToolUse", str(failing))
    assert run_sh(other, load_payload("PostToolUse.json"), project, "/usr/bin", tmp_path)[0] == 1


def test_the_codex_command_runs_without_path(project, tmp_path, plan):
    from ctxward.hosts import wiring as hookcommand

    program = Path(sys.executable).with_name("ctxward-hook")
    if not program.is_file():
        pytest.skip("no ctxward-hook console script next to this interpreter")
    payload = {
        "session_id": "s",
        "turn_id": "t",
        "transcript_path": None,
        "cwd": str(project),
        "hook_event_name": "SessionStart",
        "model": "m",
        "source": "compact",
    }
    command = hookcommand.render("codex", "SessionStart", str(program))
    home = Path(os.environ["HOME"])  # the user who activated (and so trusted) the plan
    code, out, err = run_sh(command, payload, project, "/usr/bin:/bin", home)
    assert (code, err) == (0, "")
    assert "alpha: never push to main" in json.loads(out)["hookSpecificOutput"]["additionalContext"]
    gone = hookcommand.render("codex", "PreCompact", str(tmp_path / "gone"))
    assert run_sh(
        gone, {**payload, "hook_event_name": "PreCompact"}, project, "/usr/bin", tmp_path
    ) == (0, "", "")


# --- one run per compaction, however many wirings run it --------------------------------------


def parallel(commands: list[list[str]], payload: dict, project: Path) -> list[tuple[int, str]]:
    env = {**os.environ, "CLAUDE_PROJECT_DIR": str(project)}
    raw = json.dumps(payload).encode()
    processes = [
        subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=project,
        )
        for command in commands
    ]
    results = []
    for process in processes:
        out, err = process.communicate(raw, timeout=60)
        assert process.returncode == 0, err
        results.append((process.returncode, out.decode("utf-8")))
    return results


@pytest.mark.slow  # a heavy variant: the slow stage (CI) runs it
def test_a_compaction_run_by_two_wirings_gives_one_report_and_one_set_of_instructions(
    plan, project, load_payload
):
    """The plugin form (hooks/*.py) and the settings form (ctxward-hook) both wired: Claude Code
    runs both, in parallel, with the same payload."""
    both = [hook_command(), [sys.executable, str(HOOKS / "pre_compact.py")]]
    outputs = [out for _, out in parallel(both, load_payload("PreCompact.json"), project)]
    assert sorted(bool(out) for out in outputs) == [False, True]
    assert "alpha: never push to main" in "".join(outputs)
    post = [hook_command(), [sys.executable, str(HOOKS / "post_compact.py")]]
    parallel(post, load_payload("PostCompact.json"), project)
    assert len(list((project / ".ctxward" / "compactions").glob("*.json"))) == 1
    # The next compaction of the session (another prompt) gets its own.
    later = load_payload("PostCompact.json", prompt_id="the-next-one")
    parallel(post, later, project)
    assert len(list((project / ".ctxward" / "compactions").glob("*.json"))) == 2
    again = parallel(both, load_payload("PreCompact.json", prompt_id="the-next-one"), project)
    assert sorted(bool(out) for _, out in again) == [False, True]
