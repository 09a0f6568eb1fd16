"""The memory bank's phase context reaches a real OpenCode 1.18.33 sub-agent (issue 16).

`ctxward bank promote --phase 1` runs in the project's sandbox (its trust record lands in the
HOME the plugin's hook sees); then the mock model calls `task` with a 3,000-byte prompt. The
plugin's `tool.execute.before` writes the changed prompt into `output.args` in place, and the
sub-agent's first user message starts with the provenance line and carries the ZZ artifact.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from e2e_harness import only  # loaded by tests/e2e/conftest.py

pytestmark = pytest.mark.e2e

TAG = "[ctxward bank: context of Phase 1 for Phase 2, from "


@pytest.fixture(scope="module")
def dispatched(oc_sandbox: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    project = oc_sandbox.make_project(tmp_path_factory.mktemp("oc-bank") / "project")
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
    done = oc_sandbox.run(["ctxward", "bank", "promote", str(source), "--phase", "1"], project)
    assert done.returncode == 0, done.stderr
    start = oc_sandbox.request_count()
    oc_sandbox.opencode("E2E_DISPATCH_BYTES=3000 delegate it", cwd=project).check()
    return project, oc_sandbox.requests(start)


def test_the_task_sub_agent_receives_the_previous_phase_context(dispatched):
    project, requests = dispatched
    replies = [r.reply for r in requests if r.path != "/v1/models"]
    assert "subagent" in replies, replies
    task = only(requests, "subagent").texts("user")[0]
    assert task.startswith(TAG), task[:500]
    assert "## Compressed Context (Phase 1 → Phase 2)" in task
    zz = project / ".ctxward" / "memory-bank" / ".tmp" / "ZZ-phase1-context.md"
    assert zz.read_text("utf-8").strip() in task
