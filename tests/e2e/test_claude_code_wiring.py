"""What `ctxward install claude` writes keeps the pinned Claude Code guarded off PATH, and blocks
(never waves through) a dispatch once ctxward is gone, without breaking anything else.

One scratch project, wired by the real `ctxward install claude` (default scope: local) run from
a copy of the venv's console scripts in a folder whose name has a space: the installed command
names that copy. Claude Code then always runs with a PATH of node and the real python only (no
ctxward anywhere on it, no ~/.local/bin):

1. before installing, one `claude -p` elsewhere, so that this HOME records a version: install
   finds 2.1.332 in the newest transcript (no `claude` on its PATH) and wires PostCompact;
2. a 240,000-byte Agent dispatch: denied by the baked ctxward-hook (PROMPT_EMERGENCY);
3. the copy is deleted (ctxward removed entirely): the same dispatch is blocked with the
   one-line reason, and no sub-agent runs;
4. an ordinary prompt, and a turn with a (failing) Bash call: both run, with no hook error
   anywhere in what the model is sent or in the session's transcript.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.e2e

DISPATCH = "E2E_DISPATCH_BYTES=240000"
HOOK_ERROR = "hook error"


@dataclass(frozen=True)
class Turn:
    result: dict[str, Any]
    requests: list[Any]  # this turn's requests to the mock, in order


@dataclass(frozen=True)
class Wiring:
    project: Path
    bin: Path
    installed: str  # what `ctxward install claude` printed
    turns: dict[str, Turn]


def run_turn(sandbox: Any, project: Path, prompt: str, path: str) -> Turn:
    before = len(sandbox.requests())
    done = sandbox.claude("-p", prompt, "--output-format", "json", cwd=project, path=path)
    return Turn(done.result(), sandbox.requests()[before:])


@pytest.fixture(scope="module")
def wiring(sandbox: Any, tmp_path_factory: pytest.TempPathFactory) -> Wiring:
    import e2e_harness as harness  # loaded by tests/e2e/conftest.py

    root = tmp_path_factory.mktemp("wiring")
    no_ctxward = os.pathsep.join(str(folder) for folder in harness.tool_dirs())
    elsewhere = harness.make_project(root / "elsewhere", None)
    sandbox.claude("-p", "hello", "--output-format", "json", cwd=elsewhere).result()
    installed = harness.removable_install(root / "ctxward install" / "bin")
    project = harness.make_project(root / "project", None)
    done = sandbox.run([str(installed / "ctxward"), "install", "claude"], cwd=project)
    assert done.returncode == 0, done.stdout + done.stderr
    turns = {"denied": run_turn(sandbox, project, DISPATCH, no_ctxward)}
    shutil.rmtree(installed)
    for name, prompt in (("blocked", DISPATCH), ("prompt", "hello"), ("tool", "E2E_REPEAT_BASH=1")):
        turns[name] = run_turn(sandbox, project, prompt, no_ctxward)
    return Wiring(project, installed, done.stdout, turns)


def tool_results(request: Any) -> list[dict[str, Any]]:
    last = [m for m in request.messages if m.get("role") == "user"][-1]
    content = last.get("content", [])
    return [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]


def result_text(block: dict[str, Any]) -> str:
    content = block.get("content", "")
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") for b in content if isinstance(b, dict))


def everything_sent(turn: Turn) -> str:
    return json.dumps([request.messages for request in turn.requests])


def transcript(sandbox: Any, project: Path) -> list[str]:
    """Every record of the transcripts Claude Code wrote for the project's sessions."""
    folders = (sandbox.home / ".claude" / "projects").glob("*")
    mine = [f for f in folders if f.name.endswith(project.name)]
    files = [path for folder in mine for path in sorted(folder.glob("*.jsonl"))]
    return [line for path in files for line in path.read_text(encoding="utf-8").splitlines()]


def test_install_found_the_recorded_version_and_wired_every_event(wiring):
    lines = wiring.installed.splitlines()
    assert lines[0] == "ctxward install claude --scope local: .claude/settings.local.json"
    assert lines[1].startswith("Claude Code 2.1.332 (recorded in "), lines[1]
    assert (
        lines[2]
        == f"hooks run {wiring.bin / 'ctxward-hook'} (else the one on PATH or in ~/.local/bin)"
    )
    assert "  added      PostCompact" in lines
    settings = json.loads((wiring.project / ".claude" / "settings.local.json").read_text())
    assert (
        str(wiring.bin / "ctxward-hook")
        in settings["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
    )
    assert not (
        wiring.project / ".claude" / "settings.json"
    ).exists()  # the repository's: untouched


def test_off_path_the_oversized_dispatch_is_still_denied(wiring):
    turn = wiring.turns["denied"]
    replies = [r.reply for r in turn.requests]
    assert replies == ["dispatch", "after_tool_result"], f"the sub-agent ran: {replies}"
    (block,) = tool_results(turn.requests[-1])
    assert block.get("is_error") is True, block
    text = result_text(block)
    assert "PROMPT_EMERGENCY: the ctxward dispatch guard denied" in text, text[:500]
    assert len(turn.result.get("permission_denials", [])) == 1, turn.result


def test_with_ctxward_gone_the_dispatch_is_blocked_with_the_one_line_reason(wiring):
    turn = wiring.turns["blocked"]
    replies = [r.reply for r in turn.requests]
    assert replies == ["dispatch", "after_tool_result"], f"the sub-agent ran: {replies}"
    (block,) = tool_results(turn.requests[-1])
    assert block.get("is_error") is True, block
    text = result_text(block)
    reason = (
        "ctxward blocked this sub-agent call: the dispatch guard cannot run, ctxward-hook is "
        f"missing (not at {wiring.bin / 'ctxward-hook'}, not on PATH, not in ~/.local/bin). "
        "Install ctxward (pipx install ctxward), then run: ctxward install claude (or remove "
        "the ctxward hooks from the Claude Code settings)."
    )
    assert text == f"PreToolUse:Agent hook error: {reason}", text[:1000]  # the one line only
    assert len(turn.result.get("permission_denials", [])) == 1, turn.result


@pytest.mark.parametrize("name", ["prompt", "tool"])
def test_with_ctxward_gone_ordinary_prompts_and_tools_still_run(wiring, name):
    turn = wiring.turns[name]
    assert turn.result.get("is_error") is False
    replies = [r.reply for r in turn.requests]
    expected = ["text"] if name == "prompt" else ["repeat_bash", "after_tool_result"]
    assert replies == expected, replies
    if name == "tool":
        (block,) = tool_results(turn.requests[-1])
        assert "missing-ctxward-e2e" in result_text(block)  # Bash ran: `ls` said so
    assert HOOK_ERROR not in everything_sent(turn).lower()


def test_with_ctxward_gone_no_hook_error_was_recorded(sandbox, wiring):
    """An older bare `ctxward-hook` wiring, run the same way, records a `hook_non_blocking_error`
    (`/bin/sh: 1: ctxward-hook: not found`, exit 127) for every hook and lets the dispatch
    through (seen with 2.1.332)."""
    attachments = [
        record.get("attachment") for record in map(json.loads, transcript(sandbox, wiring.project))
    ]
    kinds = [a.get("type", "") for a in attachments if isinstance(a, dict)]
    assert kinds, "no transcript records for the project"
    assert [kind for kind in kinds if "error" in kind] == []


# --- two wirings at once: the plugin form and the settings hooks --------------------------------


@dataclass(frozen=True)
class Doubled:
    project: Path
    rules: list[str]
    requests: list[Any]
    install: str  # what `ctxward install claude` printed


@pytest.fixture(scope="module")
def doubled(sandbox: Any, tmp_path_factory: pytest.TempPathFactory) -> Doubled:
    """`ctxward install claude` in a project whose settings enable the ctxward plugin, and
    Claude Code started with the repository as `--plugin-dir` too: every hook runs twice."""
    import e2e_harness as harness

    settings = {"enabledPlugins": {"ctxward@ctxward": True}}  # what install warns about
    project = harness.make_project(tmp_path_factory.mktemp("doubled") / "project", settings)
    activate = sandbox.run(["ctxward", "activate", "deep-review", "--slug", "twice"], cwd=project)
    assert activate.returncode == 0, activate.stderr
    done = sandbox.run(["ctxward", "install", "claude"], cwd=project)
    assert done.returncode == 0, done.stdout + done.stderr
    rules = harness.read_rules(project / "docs" / "plans" / "twice" / "invariants.md")
    sandbox.summary_file.write_text("nothing kept\n", encoding="utf-8")
    start = len(sandbox.requests())
    plugin = ["--plugin-dir", str(harness.REPO)]
    hello = sandbox.claude(*plugin, "-p", "hello", "--output-format", "json", cwd=project)
    session = hello.result()["session_id"]
    compact = sandbox.claude(
        *plugin, "--resume", session, "-p", "/compact", "--output-format", "json", cwd=project
    ).result()
    assert compact.get("local_command") == "compact", compact
    return Doubled(project, rules, sandbox.requests()[start:], done.stdout)


def test_install_warns_about_the_plugin(doubled):
    assert (
        "warning: ctxward's hooks also run from the ctxward@ctxward plugin (enabledPlugins in "
        ".claude/settings.json): every hook would run twice" in doubled.install
    )


def test_both_wirings_ran(sandbox, doubled):
    """The plugin's hooks ran beside the settings' (else the next test proves nothing): Claude
    Code records each SessionStart hook's command; PreCompact and PostCompact each claimed one
    run (ctxward.events.once), the second run of each found the claim and did nothing."""
    records = [json.loads(line) for line in transcript(sandbox, doubled.project)]
    commands = {
        record["attachment"].get("command", "")
        for record in records
        if isinstance(record.get("attachment"), dict)
        and record["attachment"].get("type") == "hook_success"
        and record["attachment"].get("hookEvent") == "SessionStart"
    }
    assert "python3 ${CLAUDE_PLUGIN_ROOT}/hooks/session_start.py" in commands, commands
    assert any(command.startswith("for p in ") for command in commands), commands
    claims = sorted((doubled.project / ".ctxward" / "runs").glob("*"))
    assert [p.name.split("-")[0] for p in claims] == ["PostCompact", "PreCompact"], claims


def test_one_compaction_gets_one_set_of_instructions_and_one_report(doubled):
    import e2e_harness as harness

    compaction = harness.only(doubled.requests, "compact_summary")
    prompt = compaction.texts("user")[-1]
    instructions = prompt[prompt.find("Additional Instructions:") :]
    assert instructions, prompt[-1500:]
    counts = {rule: instructions.count(rule) for rule in doubled.rules}
    assert set(counts.values()) == {1}, counts
    reports = list((doubled.project / ".ctxward" / "compactions").glob("*.json"))
    assert len(reports) == 1, [p.name for p in reports]
