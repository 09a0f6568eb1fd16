"""Drift detection on the real Codex CLI 0.169.0: a model stuck repeating a failing shell call
is told so, as a fact, in its next request (seed 002), from Codex's PostToolUse hook.

One run, `E2E_SHELL=4`: the mock answers with the same failing `exec_command` (`ls
e2e-missing-file`) until the request carries four tool results.
"""

from __future__ import annotations

from typing import Any

import pytest
from e2e_codex_harness import make_project  # loaded by conftest.py

pytestmark = pytest.mark.e2e

DRIFT = "ctxward drift check: repetition loop"


@pytest.fixture(scope="module")
def requests(cx_sandbox: Any) -> list[Any]:
    project = make_project(cx_sandbox, "drift")
    before = len(cx_sandbox.requests())
    cx_sandbox.codex("look around E2E_SHELL=4", project).ok()
    assert not (project / ".ctxward" / "log").exists()
    return cx_sandbox.requests()[before:]


def test_the_model_is_told_of_the_repetition_once(requests):
    assert [r.reply for r in requests] == ["shell"] * 4 + ["after_tool_result"]
    told = [i for i, r in enumerate(requests) if any(DRIFT in t for t in r.texts("developer"))]
    assert told, [r.texts("developer")[-1:] for r in requests]
    first = told[0]
    assert len(requests[first].tool_outputs()) == 3  # right after the third identical call
    last = requests[-1]
    facts = [t for t in last.texts("developer") if DRIFT in t]
    assert len(facts) == 1, facts  # told once, kept in the history
    # Codex names its shell tool `Bash` in hook payloads; the fact quotes the call.
    assert "`Bash` was called with the same arguments 3 times in a row" in facts[0], facts
    assert "(`ls e2e-missing-file`)" in facts[0]
