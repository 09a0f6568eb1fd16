"""The dispatch guard blocks, warns and offloads real Agent calls of the pinned Claude Code CLI.

Three turns in one scratch project wired with settings.example.json; the mock model dispatches
a sub-agent whose prompt has a given size and shape (see mock_anthropic.dispatch_prompt):

- 240,000 bytes of short paragraphs (tier emergency; nothing to offload): denied, and the
  model's next request carries the deny reason as an error tool_result;
- 150,000 bytes (tier soft-warn): the sub-agent runs, and the model is told the tier;
- 240,000 bytes that are one pasted chunk: C9 moves it to .ctxward/offload/, the sub-agent runs
  with a one-line pointer instead, and the file holds every moved byte.

And two cloned repositories that switched the guard off by making it slow: Claude Code gives the
hook 10 s, and a hook that takes longer does not block, so before the time bounds both of these
dispatches ran. A committed 4 MB `.ctxward/config.yaml` (15 s to load on every call) is now
refused unread, and the dispatch denied with that reason; a 1.3 MB prompt of `eyJ` repeated (the
JWT rule backtracked through the chunk C9 moves: 15 s a MB) is measured, and denied, in time.
"""

from __future__ import annotations

import hashlib
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.e2e

DENY_PREFIX = "PreToolUse:Agent hook error: "
CONTEXT_PREFIX = "PreToolUse:Agent hook additional context: "


@dataclass(frozen=True)
class Turn:
    result: dict[str, Any]
    requests: list[Any]  # this turn's requests to the mock, in order


def run_turn(sandbox: Any, project: Path, prompt: str) -> Turn:
    before = len(sandbox.requests())
    result = sandbox.claude("-p", prompt, "--output-format", "json", cwd=project).result()
    return Turn(result, sandbox.requests()[before:])


def tool_results(request: Any) -> list[dict[str, Any]]:
    """The tool_result blocks of the request's last user message."""
    last = [m for m in request.messages if m.get("role") == "user"][-1]
    content = last.get("content", [])
    return [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]


def result_text(block: dict[str, Any]) -> str:
    content = block.get("content", "")
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") for b in content if isinstance(b, dict))


@pytest.fixture(scope="module")
def turns(sandbox: Any, project: Path) -> dict[str, Turn]:
    return {
        "deny": run_turn(sandbox, project, "E2E_DISPATCH_BYTES=240000"),
        "allow": run_turn(sandbox, project, "E2E_DISPATCH_BYTES=150000"),
        "offload": run_turn(sandbox, project, "E2E_DISPATCH_BYTES=240000 E2E_DISPATCH_SHAPE=paste"),
    }


def test_an_emergency_sized_prompt_is_denied_and_the_model_reads_why(turns):
    turn = turns["deny"]
    replies = [r.reply for r in turn.requests]
    assert replies == ["dispatch", "after_tool_result"], f"the sub-agent ran: {replies}"
    (block,) = tool_results(turn.requests[-1])
    text = result_text(block)
    assert block.get("is_error") is True, block
    assert text.startswith(DENY_PREFIX + "PROMPT_EMERGENCY: the ctxward dispatch guard denied"), (
        text
    )
    assert "(prompt 240,000 + other fields" in text, text
    assert "no override" in text.lower(), text
    denials = turn.result.get("permission_denials", [])
    assert len(denials) == 1, turn.result
    assert len(denials[0]["tool_input"]["prompt"].encode()) == 240_000


def test_a_soft_warn_sized_prompt_runs_the_sub_agent(turns):
    turn = turns["allow"]
    replies = [r.reply for r in turn.requests]
    assert "subagent" in replies, f"the sub-agent never ran: {replies}"
    answered = [r for r in turn.requests if r.reply == "after_tool_result"]
    assert answered, f"the model never got the sub-agent's result: {replies}"
    (block,) = tool_results(answered[-1])
    assert not block.get("is_error"), result_text(block)[:500]
    # The soft-warn fact reaches the model: Claude Code puts PreToolUse additionalContext in a
    # system message right after the tool result.
    context = [t for t in answered[-1].texts("system") if t.startswith(CONTEXT_PREFIX)]
    assert context, answered[-1].texts("system")
    assert "150,027 bytes" in context[-1] and "tier soft-warn" in context[-1], context[-1]
    assert turn.result.get("permission_denials", []) == []


def test_a_pasted_chunk_is_offloaded_and_the_sub_agent_gets_a_pointer(turns, project):
    turn = turns["offload"]
    replies = [r.reply for r in turn.requests]
    assert "subagent" in replies, f"the sub-agent never ran: {replies}"
    subagent = next(r for r in turn.requests if r.reply == "subagent")
    first_user = subagent.texts("user")[0]
    assert "[ctxward C9:" in first_user, first_user[:1000]
    assert len(first_user.encode()) < 20_000, "the sub-agent still received the whole chunk"
    stored = sorted((project / ".ctxward" / "offload").glob("*"))
    chunks = [p for p in stored if set(p.read_text(encoding="utf-8").strip()) == {"x"}]
    assert len(chunks) == 1, [p.name for p in stored]
    data = chunks[0].read_bytes()
    assert hashlib.sha256(data).hexdigest() == chunks[0].name.split(".")[0]
    assert len(data.strip()) == 240_000 - len("E2E_SUBAGENT_TASK: reply DONE.\n\n")
    assert chunks[0].name.split(".")[0] in first_user


def test_the_model_is_told_what_was_offloaded(turns):
    turn = turns["offload"]
    answered = [r for r in turn.requests if r.reply == "after_tool_result"]
    assert answered, [r.reply for r in turn.requests]
    context = [t for t in answered[-1].texts("system") if t.startswith(CONTEXT_PREFIX)]
    assert context, answered[-1].texts("system")
    assert "moved 1 block(s) larger than 2 KB" in context[-1], context[-1]
    assert ".ctxward/offload/" in context[-1], context[-1]


# --- a repository that makes the guard slow -------------------------------------------------


def big_config(size: int) -> str:
    """`size` bytes of the YAML slowest to load per byte (tests/hardening/test_hostile_timing's
    worst committed config): a flow list of one-item lists, 15 s to load at 4 MB."""
    items = (size - 30) // 5
    return "scoring:\n  ignore: [" + ", ".join(["[0]"] * items) + "]\n"


@pytest.fixture(scope="module")
def slow_repositories(
    sandbox: Any, hook_settings: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Turn]:
    harness = sys.modules["e2e_harness"]
    folder = tmp_path_factory.mktemp("slow")
    configured = harness.make_project(folder / "config", hook_settings)
    (configured / ".ctxward").mkdir()
    (configured / ".ctxward" / "config.yaml").write_text(big_config(4 * 1024 * 1024))
    eyj = harness.make_project(folder / "eyj", hook_settings)
    return {
        "config": run_turn(sandbox, configured, "E2E_DISPATCH_BYTES=240000"),
        "eyj": run_turn(sandbox, eyj, "E2E_DISPATCH_BYTES=1300000 E2E_DISPATCH_SHAPE=eyj"),
    }


def denied(turn: Turn) -> str:
    """The deny reason the model read; fails when the sub-agent ran."""
    replies = [r.reply for r in turn.requests]
    assert replies == ["dispatch", "after_tool_result"], f"the sub-agent ran: {replies}"
    (block,) = tool_results(turn.requests[-1])
    assert block.get("is_error") is True, block
    assert len(turn.result.get("permission_denials", [])) == 1, turn.result
    return result_text(block)


def test_a_committed_4mb_config_no_longer_lets_a_dispatch_through(slow_repositories):
    text = denied(slow_repositories["config"])
    assert text.startswith(DENY_PREFIX + "ctxward dispatch guard: this sub-agent call was denied")
    assert ".ctxward/config.yaml: refused: larger than 65,536 bytes" in text, text


def test_an_eyj_prompt_no_longer_lets_a_dispatch_through(slow_repositories):
    turn = slow_repositories["eyj"]
    text = denied(turn)
    assert text.startswith(DENY_PREFIX + "PROMPT_EMERGENCY: the ctxward dispatch guard denied"), (
        text
    )
    assert "(prompt 1,300,000 + other fields" in text, text
    assert "moved 1 block(s) larger than 2 KB" in text, text  # the chunk was scrubbed and stored
    (denial,) = turn.result["permission_denials"]
    assert len(denial["tool_input"]["prompt"].encode()) == 1_300_000
