"""The dispatch guard on Codex's `spawn_agent`, in the real Codex CLI 0.169.0.

The mock answers `E2E_DISPATCH_BYTES=<n>` with one `spawn_agent` call whose `message` is n bytes
of short paragraphs (nothing C9 can move to a file).
"""

from __future__ import annotations

from typing import Any

import pytest
from e2e_codex_harness import make_project  # loaded by conftest.py

pytestmark = pytest.mark.e2e

BLOCKED = "Tool call blocked by PreToolUse hook: PROMPT_EMERGENCY: the ctxward dispatch guard "
BLOCKED += "denied this spawn_agent call."


@pytest.fixture(scope="module")
def project(cx_sandbox: Any) -> Any:
    return make_project(cx_sandbox, "guard")


def run_dispatch(box: Any, project: Any, size: int) -> tuple[Any, list[Any]]:
    """The run, and the main thread's requests (a sub-agent's own may come in between)."""
    before = len(box.requests())
    run = box.codex(f"delegate E2E_DISPATCH_BYTES={size}", project).ok()
    return run, [r for r in box.requests()[before:] if r.reply != "subagent"]


def test_an_oversized_spawn_agent_is_denied(cx_sandbox, project):
    run, requests = run_dispatch(cx_sandbox, project, 240_000)
    assert [r.reply for r in requests] == ["dispatch", "after_tool_result"]
    outputs = requests[1].tool_outputs()
    assert len(outputs) == 1 and outputs[0].startswith(BLOCKED), outputs
    assert "240,000 bytes" in outputs[0]
    # No agent started: Codex reports no spawn, and the mock saw no sub-agent request.
    assert [i for i in run.items("collab_tool_call") if i.get("receiver_thread_ids")] == []
    assert not (project / ".ctxward" / "log").exists()


def test_a_small_spawn_agent_runs(cx_sandbox, project):
    run, requests = run_dispatch(cx_sandbox, project, 2_000)
    assert requests[0].reply == "dispatch"
    spawned = [i for i in run.items("collab_tool_call") if i.get("receiver_thread_ids")]
    assert len(spawned) == 1
    assert spawned[0]["prompt"].startswith("E2E_SUBAGENT_TASK")
    assert "blocked" not in " ".join(requests[1].tool_outputs())


def test_a_pasted_block_is_offloaded_and_the_agent_gets_the_pointer(cx_sandbox, project):
    """C9: the guard rewrites `message` through updatedInput, which Codex applies."""
    before = len(cx_sandbox.requests())
    run = cx_sandbox.codex("delegate E2E_DISPATCH_PASTE=240000", project).ok()
    requests = cx_sandbox.requests()[before:]
    spawned = [i for i in run.items("collab_tool_call") if i.get("receiver_thread_ids")]
    assert len(spawned) == 1
    assert "[ctxward C9: pasted block of " in spawned[0]["prompt"]
    assert len(spawned[0]["prompt"]) < 2_000
    stored = list((project / ".ctxward" / "offload").iterdir())
    assert len(stored) == 1 and stored[0].stat().st_size > 200_000
    # The sub-agent may not reach the mock before `codex exec` ends: when it does, its first
    # message is the pointer; no request ever carries the block.
    for agent in [r for r in requests if r.reply == "subagent"]:
        assert any("[ctxward C9: pasted block of " in t for t in agent.texts("user"))
    assert not any("x" * 10_000 in t for r in requests for t in r.texts("user"))


def test_an_oversized_send_input_to_a_running_agent_is_denied(cx_sandbox, project):
    """`send_input` carries text to an agent that is already running: guarded the same way."""
    before = len(cx_sandbox.requests())
    cx_sandbox.codex("delegate E2E_SEND_BYTES=240000", project).ok()
    requests = [r for r in cx_sandbox.requests()[before:] if r.reply != "subagent"]
    assert [r.reply for r in requests][:2] == ["send_spawn", "send_input"]
    # The next request carries both results (and, at times, Codex's sub-agent notification).
    outputs = requests[2].tool_outputs()
    assert "blocked" not in outputs[0]  # the small spawn ran
    assert outputs[1].startswith(
        "Tool call blocked by PreToolUse hook: PROMPT_EMERGENCY: the ctxward dispatch guard "
        "denied this multi_agent_v1send_input call."
    ), outputs
