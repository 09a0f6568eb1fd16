"""Drift detection on the real Claude Code CLI: a model stuck repeating a failing Bash call is
told so, as a fact, in its next request (seed 002).

One run, `claude -p "E2E_REPEAT_BASH=5"`, in a scratch project wired with settings.example.json
(PostToolUse and PostToolUseFailure run `ctxward-hook`). The mock answers every turn with the
same `ls missing-ctxward-e2e` until five calls were made. `ls` is read-only and the path is
inside the project, so the default permission mode runs it under -p without asking (a command
that is not read-only gets "This command requires approval", and a path outside the project is
blocked: neither fires PostToolUse or PostToolUseFailure); it exits 2, so every call ends in
PostToolUseFailure.

What the pinned CLI (2.1.332) does with the hook's additionalContext: it adds a `role: system`
message right after the tool result, "PostToolUseFailure:Bash hook additional context: <text>",
and keeps it in the conversation. A second handler, next to ctxward's, saves the payloads the
CLI sends, so the test also checks their shape.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.e2e

CALLS = 5
COMMAND = "ls missing-ctxward-e2e"
CONTEXT_PREFIX = "PostToolUseFailure:Bash hook additional context: "
HELP = (
    "what usually helps is to re-read the plan and the active invariants, change the approach, "
    "or ask the user."
)
CAPTURE = (
    "import os, sys; "
    "open(os.path.join(os.environ['CLAUDE_PROJECT_DIR'], 'captured.jsonl'), 'a')"
    ".write(sys.stdin.read().strip() + chr(10))"
)


@dataclass(frozen=True)
class Run:
    project: Path
    result: dict[str, Any]
    requests: list[Any]  # harness.Request, in arrival order
    payloads: list[dict[str, Any]]  # what the CLI gave the PostToolUse(Failure) hooks


@pytest.fixture(scope="module")
def hook_settings() -> dict[str, Any]:
    """settings.example.json, plus a handler that saves the tool-result payloads."""
    harness = sys.modules["e2e_harness"]
    settings: dict[str, Any] = harness.load_settings_example()
    capture = {"type": "command", "command": f'{sys.executable} -c "{CAPTURE}"', "timeout": 10}
    for event in ("PostToolUse", "PostToolUseFailure"):
        settings["hooks"][event][0]["hooks"].append(capture)
    return settings


@pytest.fixture(scope="module")
def run(sandbox: Any, project: Path) -> Run:
    before = len(sandbox.requests())
    done = sandbox.claude("-p", f"E2E_REPEAT_BASH={CALLS}", "--output-format", "json", cwd=project)
    captured = project / "captured.jsonl"
    lines = captured.read_text(encoding="utf-8").splitlines() if captured.exists() else []
    return Run(project, done.result(), sandbox.requests()[before:], [json.loads(x) for x in lines])


def context_after(request: Any) -> list[str]:
    """The ctxward facts among the request's system messages, in order."""
    return [t for t in request.texts("system") if t.startswith(CONTEXT_PREFIX)]


def test_the_mock_model_repeated_the_failing_call(run):
    replies = [r.reply for r in run.requests]
    assert replies == ["repeat_bash"] * CALLS + ["after_tool_result"], replies
    assert run.result.get("permission_denials") == [], "Bash was not run: no hook would fire"


def test_every_call_reached_ctxward_as_a_failure(run):
    assert [p["hook_event_name"] for p in run.payloads] == ["PostToolUseFailure"] * CALLS
    first = run.payloads[0]
    assert first["tool_name"] == "Bash"
    assert first["tool_input"]["command"] == COMMAND
    assert first["tool_use_id"].startswith("toolu_mock")
    assert "No such file or directory" in first["error"]
    log = next((run.project / ".ctxward" / "sessions").glob("*.tools.jsonl"))
    lines = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    calls = [line for line in lines if "tool" in line]
    assert [(c["n"], c["tool"], c["ok"]) for c in calls] == [
        (n, "Bash", False) for n in (1, 2, 3, 4, 5)
    ]
    assert [line["drift"] for line in lines if "drift" in line] == [
        "repetition",
        "failure_spiral",
        "excessive_searching",
    ]


def test_the_model_gets_the_repetition_fact_in_its_next_request(run):
    # Request k (0-based) is the model's turn after call k; the third call completes the loop.
    assert [context_after(r) for r in run.requests[:3]] == [[], [], []]
    facts = context_after(run.requests[3])
    assert facts == [
        CONTEXT_PREFIX + "ctxward drift check: repetition loop — `Bash` was called with the "
        f"same arguments 3 times in a row (`{COMMAND}`); " + HELP
    ], run.requests[3].texts("system")


def test_later_facts_arrive_once_each(run):
    last = context_after(run.requests[-1])  # the conversation keeps every earlier fact
    assert len(last) == 3, last
    assert last[1] == (
        CONTEXT_PREFIX + "ctxward drift check: failure spiral — the last 4 tool calls failed in "
        f"a row (Bash ×4), the latest `{COMMAND}`; " + HELP
    )
    assert last[2].startswith(
        CONTEXT_PREFIX + "ctxward drift check: excessive searching — 5 searches (Bash ×5) came "
        "since the last edit;"
    )
    assert all(text.count("ctxward drift check") == 1 for text in last)


def test_ctxward_drift_reports_the_session(run, sandbox):
    session = run.result["session_id"]
    command = [str(Path(sys.executable).with_name("ctxward")), "drift", session, "--json"]
    done = sandbox.run(command, cwd=run.project)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert (report["source"], report["calls"], report["failures"]) == ("hook log", CALLS, CALLS)
    assert [(f["signature"], f["call"]) for f in report["firings"]] == [
        ("repetition", 3),
        ("failure_spiral", 4),
        ("excessive_searching", 5),
    ]
    from_transcript = sandbox.run([*command, "--transcript"], cwd=run.project)
    assert from_transcript.returncode == 0, from_transcript.stderr
    replayed = json.loads(from_transcript.stdout)
    assert replayed["source"] == "transcript"
    assert [(f["signature"], f["call"]) for f in replayed["firings"]] == [
        ("repetition", 3),
        ("failure_spiral", 4),
        ("excessive_searching", 5),
    ]
