"""The dispatch guard in the real Gemini CLI 0.61.0: BeforeTool on `invoke_agent`.

Each turn is one `gemini --yolo -p "E2E_DISPATCH_BYTES=n"`: the mock answers with an
`invoke_agent` call (agent `generalist`) whose prompt is exactly n bytes. A sub-agent that
starts sends its own request (the mock's `subagent` reply); the model reads the tool's result
in the request after it (`after_tool_result`). The project is wired by `ctxward install gemini`
(the portable project file: `ctxward` from PATH, else ~/.local/bin).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from e2e_gemini_harness import make_project, tool_dirs  # tests/e2e/gemini/conftest.py

pytestmark = pytest.mark.e2e

DENIED = "PROMPT_EMERGENCY: the ctxward dispatch guard denied"
MISSING = "ctxward blocked this sub-agent call: the dispatch guard cannot run"


@pytest.fixture(scope="module")
def wired(gm_sandbox: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    project = make_project(tmp_path_factory.mktemp("gm-guard") / "project")
    gm_sandbox.trust(project)
    install = gm_sandbox.run(["ctxward", "install", "gemini"], project)
    assert install.returncode == 0, install.stderr
    return project


def turn(
    sandbox: Any, project: Path, size: int, path: str | None = None, shape: str = "BYTES"
) -> list[Any]:
    """The mock's requests of one dispatch turn."""
    before = len(sandbox.requests())
    prompt = f"E2E_DISPATCH_{shape}={size}"
    run = sandbox.gemini("--yolo", "-p", prompt, cwd=project, path=path).check()
    assert "Traceback" not in run.stderr + run.stdout
    log = project / ".ctxward" / "log"
    assert not log.exists() or not any(log.iterdir())
    requests = sandbox.requests()[before:]
    assert any(r.reply == "dispatch" for r in requests), [r.reply for r in requests]
    return requests


def tool_result(requests: list[Any]) -> str:
    """What the model read as invoke_agent's result."""
    after = [r for r in requests if r.reply == "after_tool_result"]
    assert len(after) == 1, [r.reply for r in requests]
    last = after[0].body["contents"][-1]["parts"]
    responses = [p["functionResponse"] for p in last if "functionResponse" in p]
    assert responses and responses[-1]["name"] == "invoke_agent", last
    return json.dumps(responses[-1]["response"])


def test_an_oversized_dispatch_is_denied_and_no_sub_agent_starts(
    gm_sandbox: Any, wired: Path
) -> None:
    requests = turn(gm_sandbox, wired, 240_000)
    assert not [r for r in requests if r.reply == "subagent"]
    assert DENIED in tool_result(requests)


def test_a_small_dispatch_runs_its_sub_agent(gm_sandbox: Any, wired: Path) -> None:
    requests = turn(gm_sandbox, wired, 3_000)
    assert [r for r in requests if r.reply == "subagent"]
    assert "ctxward" not in tool_result(requests)


def test_a_pasted_block_is_offloaded_and_the_sub_agent_gets_the_pointer(
    gm_sandbox: Any, wired: Path
) -> None:
    requests = turn(gm_sandbox, wired, 220_000, shape="PASTE")
    sub = [r for r in requests if r.reply == "subagent"]
    assert sub, [r.reply for r in requests]
    first = sub[0].text
    assert "[ctxward C9:" in first and "x" * 1000 not in first  # the block is in a file
    (stored,) = (wired / ".ctxward" / "offload").iterdir()
    assert stored.read_text().startswith("x" * 1000)


def test_without_ctxward_the_guard_fails_closed(gm_sandbox: Any, wired: Path) -> None:
    # PATH without the venv's bin, and no ~/.local/bin/ctxward: the hook command finds nothing.
    path = os.pathsep.join(str(d) for d in tool_dirs())
    requests = turn(gm_sandbox, wired, 3_000, path=path)
    assert not [r for r in requests if r.reply == "subagent"]
    assert MISSING in tool_result(requests)


def test_doctor_runs_every_gemini_hook_and_sees_the_folder_trusted(
    gm_sandbox: Any, wired: Path
) -> None:
    done = gm_sandbox.run(["ctxward", "doctor", "--json"], wired)
    checks = {c["id"]: c for c in json.loads(done.stdout)["checks"]}
    gemini = {i: c["status"] for i, c in checks.items() if "gemini" in i}
    assert gemini["gemini.project.wired"] == "ok", checks["gemini.project.wired"]
    assert gemini["gemini.trust"] == "ok", checks["gemini.trust"]
    ran = [i for i in gemini if i.startswith("hook.gemini.")]
    assert len(ran) == 6, gemini
    assert all(gemini[i] == "ok" for i in ran), {i: checks[i] for i in ran}


def test_a_model_repeating_one_call_is_told_so_in_the_tool_result(
    gm_sandbox: Any, wired: Path
) -> None:
    # Four identical reads (Gemini's own loop detection steps in at the fifth): ctxward's drift
    # observer (AfterTool) sees a repetition at the third and its fact is appended to that
    # tool result. (A failed call's result is an error Gemini does not append context to.)
    (wired / "notes.txt").write_text("notes\n")
    before = len(gm_sandbox.requests())
    run = gm_sandbox.gemini("--yolo", "-p", "E2E_REPEAT_READ=4:notes.txt", cwd=wired).check()
    assert "Traceback" not in run.stderr + run.stdout
    requests = gm_sandbox.requests()[before:]
    assert [r.reply for r in requests].count("repeat_read") == 4, [r.reply for r in requests]
    results = [
        json.dumps(p["functionResponse"]["response"])
        for r in requests
        for p in r.body["contents"][-1]["parts"]
        if "functionResponse" in p
    ]
    told = [i for i, text in enumerate(results) if "<hook_context>" in text]
    assert told == [2], results  # the third result, once
    assert "read_file" in results[2] and "ctxward" in results[2].lower(), results[2]
