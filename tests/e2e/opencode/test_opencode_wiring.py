"""What `ctxward install opencode` writes keeps the real OpenCode 1.18.33 guarded off PATH, and
blocks (never waves through) a `task` once ctxward is gone, without breaking anything else.

One scratch project, its plugin written by the real `ctxward install opencode` run from a copy of
the venv's console scripts in a folder whose name has a space (the plugin's INSTALLED_BIN names
that copy). Every `opencode run` has a PATH of node, git and the real python only:

1. a 220,000-byte `task` dispatch: denied by the baked ctxward;
2. the copy is deleted (ctxward removed entirely): the same dispatch is blocked with the one
   line, no sub-agent runs;
3. an ordinary prompt, and a turn with a `read` tool call: both run; OpenCode's log has the one
   notice of the missing ctxward and no other ctxward error.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.e2e

DENY_PREFIX = "PROMPT_TOO_LARGE: the ctxward dispatch guard denied this Task call."
DISPATCH = "E2E_DISPATCH_BYTES=220000 delegate it"


@dataclass(frozen=True)
class Turn:
    run: Any  # harness.Run
    requests: list[Any]  # harness.Request of this run, /v1/models left out


@dataclass(frozen=True)
class Wiring:
    project: Path
    bin: Path
    installed: str
    turns: dict[str, Turn]


@pytest.fixture(scope="module")
def wiring(oc_sandbox: Any, tmp_path_factory: pytest.TempPathFactory) -> Wiring:
    import e2e_opencode_harness as harness  # loaded by tests/e2e/opencode/conftest.py

    root = tmp_path_factory.mktemp("oc-wiring")
    project = oc_sandbox.make_project(root / "project", plugin=False)
    installed = harness.removable_install(root / "ctxward install" / "bin")
    done = oc_sandbox.run([str(installed / "ctxward"), "install", "opencode"], project)
    assert done.returncode == 0, done.stdout + done.stderr
    no_ctxward = os.pathsep.join(str(folder) for folder in harness.tool_dirs())

    def turn(prompt: str) -> Turn:
        start = oc_sandbox.request_count()
        run = oc_sandbox.opencode(prompt, cwd=project, path=no_ctxward).check()
        requests = [r for r in oc_sandbox.requests(start) if r.path != "/v1/models"]
        return Turn(run, requests)

    turns = {"denied": turn(DISPATCH)}
    shutil.rmtree(installed)
    turns["blocked"] = turn(DISPATCH)
    turns["prompt"] = turn("hello")
    turns["tool"] = turn(f"E2E_READ={project / 'opencode.json'} read it")
    return Wiring(project, installed, done.stdout, turns)


def tool_results(request: Any) -> list[str]:
    return list(request.texts("tool"))


def ctxward_log_lines(run: Any) -> list[str]:
    return [line for line in run.stderr.splitlines() if 'message="ctxward' in line]


def test_install_wrote_the_plugin_with_this_machines_ctxward(wiring):
    plugin = (wiring.project / ".opencode" / "plugin" / "ctxward.js").read_text(encoding="utf-8")
    assert f'const INSTALLED_BIN = "{wiring.bin / "ctxward"}"' in plugin
    assert wiring.installed.startswith(
        "ctxward install opencode --scope project: .opencode/plugin/ctxward.js"
    )


def test_off_path_the_oversized_task_is_still_denied(wiring):
    turn = wiring.turns["denied"]
    assert [r.reply for r in turn.requests] == ["title", "dispatch", "after_tool_result"]
    (result,) = tool_results(turn.requests[-1])
    assert result.startswith(DENY_PREFIX), result[:500]


def test_with_ctxward_gone_the_task_is_blocked_with_the_one_line(wiring):
    turn = wiring.turns["blocked"]
    replies = [r.reply for r in turn.requests]
    assert replies == ["title", "dispatch", "after_tool_result"], f"a sub-agent ran: {replies}"
    (result,) = tool_results(turn.requests[-1])
    plugin = wiring.project / ".opencode" / "plugin" / "ctxward.js"
    line = (
        "ctxward blocked this task call: the dispatch guard cannot run, ctxward is missing (not "
        f"at {wiring.bin / 'ctxward'}, not on PATH, not in ~/.local/bin). Install ctxward (pipx "
        f"install ctxward), then run: ctxward install opencode (or remove {plugin})."
    )
    assert line in result, result[:1000]
    assert result.count("ctxward blocked this task call") == 1


@pytest.mark.parametrize("name", ["prompt", "tool"])
def test_with_ctxward_gone_ordinary_prompts_and_tools_still_run(wiring, name):
    turn = wiring.turns[name]
    replies = [r.reply for r in turn.requests]
    expected = ["text"] if name == "prompt" else ["read", "after_tool_result"]
    assert [r for r in replies if r != "title"] == expected, replies
    if name == "tool":
        (result,) = tool_results(turn.requests[-1])
        assert "enabled_providers" in result, result[:500]  # opencode.json, read by the tool
    lines = ctxward_log_lines(turn.run)
    assert len(lines) == 1, lines  # the one notice, for every hook of the run
    assert "ctxward is missing (not at " in lines[0]
    assert "its hooks do nothing in this session and task calls are blocked" in lines[0]
