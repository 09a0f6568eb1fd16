"""`ctxward drift`: what fired in a session, from the hook log or from a transcript."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ctxward.cli import cli
from ctxward.drift import observe as drift_observe
from ctxward.transcript.reader import project_folder_name

TRANSCRIPTS = Path(__file__).resolve().parents[1] / "fixtures" / "claude_code" / "transcripts"
CAPTURED = "7de73c29-a9cd-4608-aa26-55358a7f7df9"  # a real 2.1.332 transcript (no drift)


def invoke(project: Path, *args: str, env: dict[str, str] | None = None) -> Any:
    return CliRunner().invoke(cli, ["-C", str(project), "drift", *args], env=env)


def observe(project: Path, session: str, commands: list[str], failed: bool = True) -> None:
    event = "PostToolUseFailure" if failed else "PostToolUse"
    for n, command in enumerate(commands):
        data = {
            "session_id": session,
            "hook_event_name": event,
            "tool_name": "Bash",
            "tool_input": {"command": command},
            "tool_use_id": f"toolu_{session}_{n}",
        }
        drift_observe.record(project, event, data)


def test_the_hook_log_of_a_session(project):
    observe(project, "s-1", ["make"] * 4)
    result = invoke(project, "s-1")
    assert result.exit_code == 0, result.output
    lines = re.sub(r"\(\d{4}-\d\d-\d\dT[\d:.]+Z\)", "(TIME)", result.output).splitlines()
    assert lines == [
        "ctxward drift: session s-1 (hook log: .ctxward/sessions/s-1.tools.jsonl)",
        "4 tool calls observed, 4 failed; 2 signature reports; holding now: repetition, "
        "failure_spiral",
        "  call 3 (TIME): repetition loop: `Bash` was called with the same arguments 3 times in "
        "a row",
        "  call 4 (TIME): failure spiral: the last 4 tool calls failed in a row (Bash ×4)",
    ]


def test_json(project):
    observe(project, "s-1", ["make"] * 3)
    data = json.loads(invoke(project, "s-1", "--json").stdout)
    assert data == {
        "session": "s-1",
        "source": "hook log",
        "path": ".ctxward/sessions/s-1.tools.jsonl",
        "calls": 3,
        "failures": 3,
        "firings": [
            {
                "signature": "repetition",
                "name": "repetition loop",
                "call": 3,
                "time": data["firings"][0]["time"],
                "evidence": {"tool": "Bash", "count": 3, "window": 3},
                "label": "",
            }
        ],
        "active": ["repetition"],
    }
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", data["firings"][0]["time"])


def test_no_drift(project):
    observe(project, "quiet", ["make a", "make b"], failed=False)
    result = invoke(project)
    assert result.exit_code == 0
    assert result.output.splitlines()[1:] == [
        "2 tool calls observed, 0 failed; 0 signature reports",
        "No drift: none of the signatures (repetition loop, failure spiral, tool cycling, rework "
        "churn, excessive searching, silence drift) fired.",
    ]


def test_without_a_session_the_current_then_the_newest(project):
    observe(project, "older", ["a"])
    observe(project, "newer", ["b"])
    older = project / ".ctxward" / "sessions" / "older.tools.jsonl"
    newer = older.with_name("newer.tools.jsonl")
    os.utime(newer, (1_000_000, 1_000_000))
    os.utime(older, (2_000_000, 2_000_000))
    assert json.loads(invoke(project, "--json").stdout)["session"] == "older"
    current = {"CLAUDE_CODE_SESSION_ID": "newer"}
    assert json.loads(invoke(project, "--json", env=current).stdout)["session"] == "newer"


def home_transcript(project: Path, session: str) -> Path:
    folder = Path.home() / ".claude" / "projects" / project_folder_name(project)
    folder.mkdir(parents=True, exist_ok=True)
    return Path(shutil.copy(TRANSCRIPTS / f"{CAPTURED}.jsonl", folder / f"{session}.jsonl"))


def test_a_session_that_ran_without_the_hook_is_read_from_its_transcript(project):
    home_transcript(project, CAPTURED)
    data = json.loads(invoke(project, CAPTURED, "--json").stdout)
    assert (data["source"], data["session"], data["firings"]) == ("transcript", CAPTURED, [])
    assert data["calls"] == 1  # the captured session dispatched one sub-agent
    assert json.loads(invoke(project, "--json").stdout)["source"] == "transcript"


def test_transcript_flag_skips_the_hook_log(project):
    home_transcript(project, CAPTURED)
    observe(project, CAPTURED, ["x"] * 3)
    assert json.loads(invoke(project, CAPTURED, "--json").stdout)["source"] == "hook log"
    forced = json.loads(invoke(project, CAPTURED, "--transcript", "--json").stdout)
    assert forced["source"] == "transcript"


def test_a_hook_log_by_path(project):
    observe(project, "s-1", ["y"])
    path = project / ".ctxward" / "sessions" / "s-1.tools.jsonl"
    assert json.loads(invoke(project, str(path), "--json").stdout)["calls"] == 1


@pytest.mark.parametrize(
    "args, message",
    [
        ((), "ctxward: error: no hook log under .ctxward/sessions/ and no Claude Code transcript"),
        (("nope",), "ctxward: error: no hook log (.ctxward/sessions/nope.tools.jsonl) and no "),
        (("/no/such/file.jsonl",), "ctxward: error: /no/such/file.jsonl: no such file"),
    ],
)
def test_nothing_to_read_is_one_line_and_exit_2(project, args, message):
    result = invoke(project, *args)
    assert result.exit_code == 2
    assert result.stderr.startswith(message) and result.stderr.count("\n") == 1
    assert not (project / ".ctxward").exists()
