"""The memory bank's phase context reaches a real sub-agent (seed 000 §8/§15, issue 16).

One scratch project wired with settings.example.json. `ctxward bank promote --phase 1` (run in
the sandbox, so its trust record is in the HOME the hooks see) writes the ZZ artifact; then the
mock model dispatches an `Agent` call with a small prompt. The PreToolUse hook answers with
`updatedInput` (and no `permissionDecision`): the pinned Claude Code 2.1.332 runs the sub-agent
with the changed prompt, so the sub-agent's first user message starts with the provenance line
and carries "## Compressed Context (Phase 1 → Phase 2)" with the ZZ artifact, and then the
orchestrator's own prompt. With `bank.inject_context: false` the sub-agent gets the prompt as
the model wrote it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.e2e

TAG = "[ctxward bank: context of Phase 1 for Phase 2, from "
MARKER = "E2E_SUBAGENT_TASK"


def subagent_prompt(sandbox: Any, project: Path) -> str:
    """Run one turn that dispatches a 2,000-byte Agent prompt; the sub-agent's prompt: the text
    block of its first user message that holds the task (Claude Code puts a system-reminder
    block with the git status before it)."""
    before = len(sandbox.requests())
    run = sandbox.claude("-p", "E2E_DISPATCH_BYTES=2000", "--output-format", "json", cwd=project)
    result = run.result()
    requests = sandbox.requests()[before:]
    replies = [r.reply for r in requests]
    assert "subagent" in replies, f"the sub-agent never ran: {replies} {result}"
    assert result.get("permission_denials", []) == [], result
    first = next(r for r in requests if r.reply == "subagent").messages[0]
    assert first.get("role") == "user", first
    content = first.get("content")
    blocks = [content] if isinstance(content, str) else [b.get("text", "") for b in content]
    (prompt,) = [b for b in blocks if MARKER in b]
    return str(prompt)


@pytest.fixture(scope="module")
def promoted(sandbox: Any, project: Path) -> Path:
    entry = {
        "agent": "hermes",
        "phase": "1",
        "date": "2026-07-01",
        "title": "Auth endpoint",
        "summary": "Added POST /auth/login endpoint with JWT rotation",
        "status": "complete",
    }
    source = project / "entries.json"
    source.write_text(json.dumps({"subtask_summary": entry}), encoding="utf-8")
    done = sandbox.run(["ctxward", "bank", "promote", str(source), "--phase", "1"], cwd=project)
    assert done.returncode == 0, done.stderr
    zz = project / ".ctxward" / "memory-bank" / ".tmp" / "ZZ-phase1-context.md"
    assert zz.is_file()
    return zz


def test_the_sub_agent_receives_the_previous_phase_context(sandbox, project, promoted):
    first = subagent_prompt(sandbox, project)
    assert first.startswith(TAG), first[:500]
    assert "## Compressed Context (Phase 1 → Phase 2)" in first
    assert promoted.read_text("utf-8").strip() in first
    assert "Apply these learnings and context to your implementation." in first
    # the orchestrator's own prompt follows, whole
    assert first.index(MARKER) > first.index("## Compressed Context")


def test_the_switch_off_leaves_the_prompt_as_the_model_wrote_it(sandbox, project, promoted):
    config = project / ".ctxward" / "config.yaml"
    config.write_text("bank:\n  inject_context: false\n", encoding="utf-8")
    try:
        first = subagent_prompt(sandbox, project)
    finally:
        config.unlink()
    assert first.startswith(MARKER), first[:300]
    assert "[ctxward bank: " not in first
