"""The context checks on the real Claude Code CLI: silence drift (seed 002: no text response, 15+
iterations), a large tool output (seed 004 G0: over 2 KB) and a context-pressure stage (seed 002
ACC: 70, 80%) each reach the model, as facts, in the request after the tool call.

One run, `claude -p "E2E_SILENT_READ=18:<big file> E2E_INPUT_TOKENS=138000
E2E_TOKENS_PER_CALL=1600"`, in a scratch project wired with settings.example.json. The mock
answers 18 turns with a Read and no text: first the whole 40 KB file, then one line at a time;
each reply reports 1,600 input tokens more than the last (138,000, 139,600, ... of the default
200,000-token window). The transcript records that usage; the hook reads it from there.

The CLI appends the transcript as it goes: the line with the newest usage often lands just after
the hook of the call it asked for has run, so a stage is often told one call late (with the
previous request's count), now and then two, and silence one. In 40 runs of this module alone on
an idle machine (2026-12-05): the 80% stage at call 15 4 times, at 16 34 times, at 17 twice;
silence at 15 36 times, at 16 4 times. The tests allow three calls (`LATE`), and the run has
three calls past the 80% line so that a late stage still arrives.

What the pinned CLI (2.1.332) does with the hook's additionalContext: a `role: system` message
right after the tool result, "PostToolUse:Read hook additional context: <text>", kept in the
conversation.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.e2e

READS = 18
LATE = 3  # how many calls late a fact may come (module docstring)
SILENCE = 15  # seed 002: 15 calls without a text response
BASE, PER_CALL = 138_000, 1_600
PREFIX = "PostToolUse:Read hook additional context: "
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
    payloads: list[dict[str, Any]]


@pytest.fixture(scope="module")
def hook_settings() -> dict[str, Any]:
    """settings.example.json, plus a handler that saves the PostToolUse payloads."""
    harness = sys.modules["e2e_harness"]
    settings: dict[str, Any] = harness.load_settings_example()
    capture = {"type": "command", "command": f'{sys.executable} -c "{CAPTURE}"', "timeout": 10}
    settings["hooks"]["PostToolUse"][0]["hooks"].append(capture)
    return settings


@pytest.fixture(scope="module")
def run(sandbox: Any, project: Path) -> Run:
    big = project / "big.txt"
    big.write_text("".join(f"line {n:04d}: " + "x" * 68 + "\n" for n in range(500)))
    before = len(sandbox.requests())
    prompt = f"E2E_SILENT_READ={READS}:{big} E2E_INPUT_TOKENS={BASE} E2E_TOKENS_PER_CALL={PER_CALL}"
    done = sandbox.claude("-p", prompt, "--output-format", "json", cwd=project)
    captured = project / "captured.jsonl"
    lines = captured.read_text(encoding="utf-8").splitlines() if captured.exists() else []
    # The model's turns only: the CLI also asks /v1/messages/count_tokens (here after the 40 KB
    # Read), which the mock does not serve.
    turns = [r for r in sandbox.requests()[before:] if r.path.startswith("/v1/messages?")]
    return Run(project, done.result(), turns, [json.loads(x) for x in lines])


def facts(request: Any) -> list[str]:
    """The ctxward facts among the request's system messages, in order: one per line of a hook
    context (the CLI may append its own reminder to it, after a blank line)."""
    found = []
    for text in request.texts("system"):
        if text.startswith(PREFIX):
            found += [
                line for line in text[len(PREFIX) :].split("\n") if line.startswith("ctxward")
            ]
    return found


def new_facts(run: Run, k: int) -> list[str]:
    """The facts that arrived with call k (1-based): in request k, not in request k-1."""
    return facts(run.requests[k])[len(facts(run.requests[k - 1])) :]


def test_the_mock_model_read_silently(run):
    assert [r.reply for r in run.requests] == ["silent_read"] * READS + ["after_tool_result"]
    assert [p["tool_name"] for p in run.payloads] == ["Read"] * READS
    assert run.result.get("permission_denials") == []


def test_a_large_output_is_told_once_with_what_to_do_instead(run):
    first = new_facts(run, 1)
    size = len((run.project / "big.txt").read_bytes())
    (fact,) = [f for f in first if "output was" in f]
    assert fact.startswith("ctxward context check: the `Read` output was ")
    told = int(fact.split("output was ", 1)[1].split(" bytes", 1)[0].replace(",", ""))
    assert size <= told  # what Claude Code's Read returned: the file's text
    assert "over the 2,048 bytes a tool output should bring into the context" in fact
    assert "summary flag" in fact and "Read with offset and limit" in fact
    assert all("output was" not in f for k in range(2, READS + 1) for f in new_facts(run, k))


def test_the_pressure_stages_arrive_once_each_from_the_recorded_usage(run):
    stages = {
        k: [f for f in new_facts(run, k) if "context holds" in f] for k in range(1, READS + 1)
    }
    # Call k's hook sees the usage of the request that asked for it, BASE + PER_CALL * (k - 1):
    # 70% is crossed at call 3 (141,200), 80% at call 15 (160,400); LATE calls late at most.
    told = {k: found[0] for k, found in stages.items() if found}
    assert all(len(found) <= 1 for found in stages.values()), stages
    (at_70, at_80) = told
    assert 3 <= at_70 <= 3 + LATE and 15 <= at_80 <= 15 + LATE, stages
    for k, stage in ((at_70, 70), (at_80, 80)):
        tokens = next(
            BASE + PER_CALL * n
            for n in range(k - 1, k - 2 - LATE, -1)
            if f"holds {BASE + PER_CALL * n:,} " in told[k]
        )
        assert tokens * 100 // 200_000 >= stage, told[k]
        assert f"{tokens * 100 // 200_000}% of the 200,000-token window" in told[k]
    assert told[at_70].endswith(
        "of the 200,000-token window (the last request's usage in the transcript): stage 70% "
        "(warning). What usually helps is to keep new tool outputs small (summary flags, "
        "slices, filters)."
    )
    assert "stage 80% (observation masking)" in told[at_80]


def test_silence_drift_is_told_live_after_the_15th_call_without_text(run):
    silence = {
        k: [f for f in new_facts(run, k) if "silence drift" in f] for k in range(1, READS + 1)
    }
    told = [k for k, found in silence.items() if found]
    assert len(told) == 1 and SILENCE <= told[0] <= SILENCE + LATE, silence  # (docstring)
    (at,) = told
    calls = re.fullmatch(r"ctxward drift check: silence drift — (\d+) tool calls.*", silence[at][0])
    assert calls is not None and SILENCE <= int(calls[1]) <= at, silence[at]
    assert silence[at] == [
        f"ctxward drift check: silence drift — {calls[1]} tool calls came since the last text to "
        "the user; what usually helps is to re-read the plan and the active invariants, change "
        "the approach, or ask the user."
    ]
    last = facts(run.requests[-1])
    assert sum("silence drift" in f for f in last) == 1  # once, kept in the conversation
