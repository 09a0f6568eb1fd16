"""PostToolUse / PostToolUseFailure: the drift observer through hookio, in-process and as the
real entry points (hooks/post_tool_use*.py, `ctxward-hook`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ctxward import hookio

REPO = Path(__file__).resolve().parents[2]
HOOKS = REPO / "hooks"
LIB = REPO / "lib"
HEAVY = ["click", "jinja2", "watchdog", "yaml"]
HELP = (
    "what usually helps is to re-read the plan and the active invariants{plans}, change the "
    "approach, or ask the user."
)
SECRET = "gh" + "p_" + "R8x2Lq9ZtW4mN7vB1cK3pY6sD0fH5jG2aE8u"  # fake, assembled at run time


def failure(load_payload, n: int, command: str = "ls /nope", **extra: Any) -> dict[str, Any]:
    """The PostToolUseFailure payload Claude Code 2.1.332 sent for a failing `ls` (the e2e run),
    with another command and call id."""
    return load_payload(
        "PostToolUseFailure.json",
        tool_input={"command": command, "description": "List"},
        tool_use_id=f"toolu_fail_{n}",
        **extra,
    )


def context_of(out: str, event: str = "PostToolUseFailure") -> str:
    assert out.endswith("\n") and out.count("\n") == 1
    answer = json.loads(out)
    context = answer["hookSpecificOutput"]["additionalContext"]
    assert answer == {"hookSpecificOutput": {"hookEventName": event, "additionalContext": context}}
    return context


def test_a_tool_result_with_nothing_to_tell_answers_nothing(project, run_hook, load_payload):
    assert run_hook(load_payload("PostToolUse.json")) == (0, "", "")
    (log,) = (project / ".ctxward" / "sessions").glob("*.tools.jsonl")
    (line,) = [json.loads(x) for x in log.read_text(encoding="utf-8").splitlines()]
    assert line["tool"] == "Agent" and line["ok"] is True and line["n"] == 1


def test_the_third_identical_failure_is_told_to_the_model(run_hook, load_payload):
    answers = [run_hook(failure(load_payload, n)) for n in range(3)]
    assert answers[:2] == [(0, "", "")] * 2
    code, out, err = answers[2]
    assert (code, err) == (0, "")
    assert context_of(out) == (
        "ctxward drift check: repetition loop — `Bash` was called with the same arguments 3 "
        "times in a row (`ls /nope`); " + HELP.format(plans="")
    )


def test_each_signature_that_starts_gets_its_own_sentence(run_hook, load_payload):
    for n in range(3):
        run_hook(failure(load_payload, n))
    code, out, _ = run_hook(failure(load_payload, 3))
    assert code == 0
    assert context_of(out) == (
        "ctxward drift check: failure spiral — the last 4 tool calls failed in a row "
        "(Bash ×4), the latest `ls /nope`; " + HELP.format(plans="")
    )
    _, out, _ = run_hook(failure(load_payload, 4))  # the fifth `ls`: a fifth search
    assert context_of(out).startswith(
        "ctxward drift check: excessive searching — 5 searches (Bash ×5) came since the last edit;"
    )
    assert run_hook(failure(load_payload, 5)) == (0, "", "")  # all three still hold


def test_the_sentence_names_the_active_plans(run_hook, load_payload, make_skill, activate_skill):
    make_skill("review", ["review: never push to main"])
    activate_skill("review", "fix")
    for n in range(2):
        run_hook(failure(load_payload, n, command="pytest -x"))
    _, out, _ = run_hook(failure(load_payload, 2, command="pytest -x"))
    assert context_of(out).endswith(HELP.format(plans=" (docs/plans/fix/invariants.md)"))


def test_the_sentence_names_no_untrusted_plan(run_hook, load_payload, project, trust):
    """A plan committed to the repository is not "the active invariants" the model re-reads."""
    folder = project / "docs" / "plans" / "cloned"
    folder.mkdir(parents=True)
    (folder / "invariants.md").write_text("## x\n\n### Rules\n\n- obey the repository\n")
    for n in range(2):
        run_hook(failure(load_payload, n, command="pytest -x"))
    _, out, _ = run_hook(failure(load_payload, 2, command="pytest -x"))
    assert context_of(out).endswith(HELP.format(plans=""))
    trust("cloned")
    _, out, _ = run_hook(failure(load_payload, 3, command="pytest -x"))
    assert "docs/plans/cloned/invariants.md" in context_of(out)


def test_a_secret_in_the_repeated_call_is_scrubbed(run_hook, load_payload):
    command = f"curl -H 'Authorization: token {SECRET}' https://api.github.com/user"
    for n in range(2):
        run_hook(failure(load_payload, n, command=command))
    _, out, _ = run_hook(failure(load_payload, 2, command=command))
    context = context_of(out)
    assert SECRET not in context and "[REDACTED:" in context


def test_successes_are_observed_too(run_hook, load_payload):
    def edit(n: int) -> dict[str, Any]:
        return load_payload(
            "PostToolUse.json",
            tool_name="Edit",
            tool_input={"file_path": "/p/src/a.py", "old_string": f"a{n}", "new_string": f"b{n}"},
            tool_use_id=f"toolu_edit_{n}",
            tool_response={"filePath": "/p/src/a.py"},
        )

    assert [run_hook(edit(n))[1] for n in range(2)] == ["", ""]
    _, out, _ = run_hook(edit(2))
    assert context_of(out, "PostToolUse").startswith(
        "ctxward drift check: rework churn — `/p/src/a.py` was written 3 times in the last 3 "
        "tool calls;"
    )


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"tool_name": None}, "ctxward: PostToolUse: PostToolUse payload has no 'tool_name'\n"),
        (
            {"session_id": 7},
            "ctxward: PostToolUse: PostToolUse payload field 'session_id' is not a string\n",
        ),
    ],
)
def test_a_payload_it_cannot_use_is_one_line_and_exit_1(run_hook, load_payload, overrides, message):
    assert run_hook(load_payload("PostToolUse.json", **overrides)) == (1, "", message)


def test_a_bad_config_is_one_line_and_exit_1(project, run_hook, load_payload):
    (project / ".ctxward").mkdir()
    (project / ".ctxward" / "config.yaml").write_text("drift: {loops: 1}\n", encoding="utf-8")
    code, out, err = run_hook(load_payload("PostToolUse.json"))
    assert (code, out) == (1, "")
    assert err.startswith("ctxward: PostToolUse: .ctxward/config.yaml: drift: unknown key 'loops'")


def test_the_hot_path_answers_before_any_handler(project, load_payload, monkeypatch):
    """`_needs_no_answer` observes; the handler runs only when a report waits, and the call is
    logged once either way."""
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(project))
    raws = [json.dumps(failure(load_payload, n)).encode() for n in range(3)]
    assert [hookio._needs_no_answer(raw, "PostToolUseFailure") for raw in raws] == [
        True,
        True,
        False,
    ]
    code, out, err = hookio.run_in_memory(raws[2], {"CLAUDE_PROJECT_DIR": str(project)})
    assert (code, err) == (0, "") and "repetition loop" in context_of(out)
    (log,) = (project / ".ctxward" / "sessions").glob("*.tools.jsonl")
    lines = [json.loads(x) for x in log.read_text(encoding="utf-8").splitlines()]
    assert [line["n"] for line in lines if "tool" in line] == [1, 2, 3]


def test_the_hot_path_leaves_other_pinned_events_alone(load_payload):
    raw = json.dumps(load_payload("PostToolUse.json")).encode()
    assert hookio._needs_no_answer(raw, "PreCompact") is False


# --- real processes --------------------------------------------------------------------------


def hook_command() -> list[str]:
    script = Path(sys.executable).with_name("ctxward-hook")
    if script.is_file():
        return [str(script)]
    return [sys.executable, "-c", "from ctxward.hookio import main; raise SystemExit(main())"]


def run_process(project: Path, command: list[str], data: dict[str, Any]) -> tuple[int, str, str]:
    env = {**os.environ, "CLAUDE_PROJECT_DIR": str(project)}
    done = subprocess.run(
        command, input=json.dumps(data).encode(), capture_output=True, timeout=30, env=env
    )
    return done.returncode, done.stdout.decode(), done.stderr.decode()


# The shim's variant (hooks/*.py) is a heavy one: the slow stage (CI) runs it.
@pytest.mark.parametrize(
    "command", [pytest.param("script", marks=pytest.mark.slow), "ctxward-hook"]
)
def test_real_entry_points(project, load_payload, command):
    argv = (
        [sys.executable, str(HOOKS / "post_tool_use_failure.py")]
        if command == "script"
        else hook_command()
    )
    answers = [run_process(project, argv, failure(load_payload, n)) for n in range(3)]
    assert answers[:2] == [(0, "", "")] * 2
    assert answers[2][0] == 0 and "repetition loop" in context_of(answers[2][1])
    assert run_process(project, [sys.executable, str(HOOKS / "post_tool_use.py")], {}) == (
        1,
        "",
        "ctxward: PostToolUse: payload has no 'hook_event_name'\n",
    )


_IMPORTS = f"""
import json, os, runpy, sys
target, report = sys.argv[1], sys.argv[2]
sys.argv = [target]
exit_now = os._exit
def exit_reporting(code):
    heavy = sorted(m for m in sys.modules if m.split(".")[0] in {set(HEAVY)!r})
    light = [m for m in ("dataclasses", "pathlib", "hashlib", "typing") if m in sys.modules]
    with open(report, "w") as handle:
        json.dump({{"code": code, "heavy": heavy, "light": light}}, handle)
    exit_now(code)
os._exit = exit_reporting
if target == "ctxward-hook":
    sys.path.insert(0, {str(LIB)!r})
    from ctxward.hookio import main
    main()
else:
    runpy.run_path(target, run_name="__main__")
"""


@pytest.mark.parametrize("target", ["ctxward-hook", str(HOOKS / "post_tool_use_failure.py")])
def test_the_quiet_path_imports_only_the_standard_library(project, tmp_path, load_payload, target):
    report = tmp_path / "imports.json"
    argv = [sys.executable, "-c", _IMPORTS, target, str(report)]
    found = []
    for n in range(3):
        assert run_process(project, argv, failure(load_payload, n))[0] == 0
        found.append(json.loads(report.read_text()))
    assert found[0]["code"] == found[1]["code"] == 0
    assert found[0]["heavy"] == found[1]["heavy"] == []
    if target == "ctxward-hook":  # (the script's own bootstrap imports pathlib, runpy typing)
        assert found[0]["light"] == found[1]["light"] == []
    assert "jinja2" in found[2]["heavy"]  # a report is rendered: only then
