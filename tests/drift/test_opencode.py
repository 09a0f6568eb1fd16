"""The drift observer for OpenCode: the plugin's tool.execute.after / errored tool part payloads
translated into PostToolUse(Failure), and the drift facts answered as the plugin's `note`."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from ctxward import hookio
from ctxward.errors import HookInputError
from ctxward.hosts import opencode


def after(project: Path, n: int, tool: str = "bash", **plugin: Any) -> dict[str, Any]:
    return {
        "hook": "tool.execute.after",
        "input": {
            "tool": tool,
            "sessionID": "ses_1",
            "callID": f"call_{n}",
            "args": {"command": "bun test", "description": "tests"},
        },
        "directory": str(project),
        "worktree": str(project),
        "plugin": plugin,
    }


def errored(project: Path, n: int, **plugin: Any) -> dict[str, Any]:
    part = {
        "tool": "read",
        "sessionID": "ses_1",
        "callID": f"call_{n}",
        "state": {"status": "error", "input": {"filePath": str(project / "missing.ts")}},
    }
    return {
        "hook": "event",
        "input": {"event": {"type": "message.part.updated", "properties": {"part": part}}},
        "directory": str(project),
        "plugin": plugin,
    }


def run(payload: dict[str, Any], event: str | None = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = hookio.run(
        event_name=event,
        stdin=io.BytesIO(json.dumps(payload).encode()),
        stdout=out,
        stderr=err,
        env={},
        host="opencode",
    )
    return code, out.getvalue(), err.getvalue()


def test_tool_execute_after_is_a_post_tool_use(project):
    event = opencode.to_event(after(project, 1, quiet=3))
    assert event.name == "PostToolUse"
    assert dict(event.data) == {
        "hook_event_name": "PostToolUse",
        "cwd": str(project),
        "session_id": "ses_1",
        "tool_name": "bash",
        "tool_input": {"command": "bun test", "description": "tests"},
        "tool_use_id": "call_1",
        "calls_since_text": 3,
    }


def test_a_failed_run_and_an_errored_part_are_failures(project):
    assert opencode.to_event(after(project, 1, failed=True)).name == "PostToolUseFailure"
    event = opencode.to_event(errored(project, 2, quiet=1))
    assert event.name == "PostToolUseFailure"
    assert event.data["tool_name"] == "read"
    assert event.data["tool_input"] == {"filePath": str(project / "missing.ts")}
    assert event.data["tool_use_id"] == "call_2"


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda p: p["plugin"].update(quiet=-1), "plugin field 'quiet' is not a count"),
        (lambda p: p["plugin"].update(quiet=True), "plugin field 'quiet' is not a count"),
        (lambda p: p["input"].pop("tool"), "'tool' should be a non-empty string"),
        (lambda p: p["input"].update(args=[1]), "'args' should be an object"),
    ],
)
def test_bad_after_payloads(project, change, message):
    payload = after(project, 1)
    change(payload)
    with pytest.raises(HookInputError, match=message):
        opencode.to_event(payload)


def test_a_part_that_did_not_error_is_refused(project):
    payload = errored(project, 1)
    payload["input"]["event"]["properties"]["part"]["state"]["status"] = "completed"
    with pytest.raises(HookInputError, match="the tool part's state is not an error"):
        opencode.to_event(payload)


def test_the_facts_are_the_plugins_note(project):
    answers = [run(after(project, n, failed=True), "PostToolUseFailure") for n in range(3)]
    assert answers[:2] == [(0, "", "")] * 2
    code, out, err = answers[2]
    assert (code, err) == (0, "")
    note = json.loads(out)["note"]
    assert note.startswith("ctxward drift check: repetition loop — `bash` was called with the same")
    assert "(`bun test`)" in note


def test_silence_counted_by_the_plugin(project):
    calls = [run(after(project, n, tool=f"tool{n}", quiet=n + 1)) for n in range(15)]
    assert [c[1] for c in calls[:14]] == [""] * 14
    assert json.loads(calls[14][1])["note"].startswith(
        "ctxward drift check: silence drift — 15 tool calls came since the last text to the user;"
    )


def test_errored_parts_feed_the_failure_spiral(project):
    for n in range(3):
        run(errored(project, n), "PostToolUseFailure")
    code, out, _ = run(errored(project, 3), "PostToolUseFailure")
    assert code == 0
    assert (
        "failure spiral — the last 4 tool calls failed in a row (read ×4)"
        in json.loads(out)["note"]
    )
    log = project / ".ctxward" / "sessions" / "ses_1.tools.jsonl"
    files = {json.loads(line).get("file") for line in log.read_text().splitlines()}
    assert "missing.ts" in files  # relative to the project
