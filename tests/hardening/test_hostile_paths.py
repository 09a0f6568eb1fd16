"""A cloned repository plants symbolic links where ctxward keeps its state.

`.ctxward`, `.ctxward/offload`, `sessions`, `compactions`, `sub_agents`, `locks`, `report-cap`,
`pending`, `memory-bank`, `log`, `docs/plans`, `docs` and single state files are each replaced by
a link to a folder (or file) outside the project, as a hostile clone would commit them. Every
hook and every writing command then runs, and the suite asserts:

- nothing outside the project is created, changed or removed (the victim folder and HOME);
- nothing read through a link reaches the model or the summarizer (a marker rule planted in the
  victim's plan never appears in any answer);
- every run keeps its contract (a documented exit code, one clear line, no traceback);
- an oversized dispatch is still denied.

Also: a folder that no marker names as a project gets no `.ctxward/` (hooks and commands).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import ctxward_hardening as support
import pytest

from ctxward.core.project import Project
from ctxward.hookio import run_in_memory
from ctxward.invariants.activate import activate

SLUG = "victim-plan"
MARKER = "NEVER-SHOWN-RULE-7f3a"  # a rule of the victim's plan, outside the project
SESSION = "s-hostile"

# (the link's path in the project, what it points at: "folder" or "file")
LINKS = [
    (".ctxward", "folder"),
    (".ctxward/offload", "folder"),
    (".ctxward/sessions", "folder"),
    (".ctxward/compactions", "folder"),
    (".ctxward/sub_agents", "folder"),
    (".ctxward/locks", "folder"),
    (".ctxward/report-cap", "folder"),
    (".ctxward/pending", "folder"),
    (".ctxward/memory-bank", "folder"),
    (".ctxward/log", "folder"),
    ("docs", "folder"),
    ("docs/plans", "folder"),
    (f"docs/plans/{SLUG}", "folder"),
    (f"docs/plans/{SLUG}/.compaction-payload.md", "file"),
    (".ctxward/config.yaml", "file"),
]


def _victim(tmp_path: Path) -> Path:
    """A folder outside the project with files a link could expose or overwrite."""
    victim = tmp_path / "victim"
    plan = victim / SLUG
    plan.mkdir(parents=True)
    (victim / ".bashrc").write_text("# the victim's own\n", encoding="utf-8")
    (plan / "invariants.md").write_text(
        f"# Invariants\n\n## evil\n\n- {MARKER}\n", encoding="utf-8"
    )
    (victim / "keys").write_text("not for a repository\n", encoding="utf-8")
    return victim


def _project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True, timeout=20)
    activate(Project(root.resolve()), "deep-review", SLUG)
    shutil.copy(support.FIXTURES / "transcripts" / _TRANSCRIPT, root / "transcript.jsonl")
    return root.resolve()


_TRANSCRIPT = "7de73c29-a9cd-4608-aa26-55358a7f7df9.jsonl"


def _plant(root: Path, rel: str, kind: str, victim: Path) -> None:
    """Replace `rel` by a link to the victim (a file link points at the victim's .bashrc)."""
    place = root / rel
    if place.is_dir() and not place.is_symlink():
        shutil.rmtree(place)
    elif place.exists() or place.is_symlink():
        place.unlink()
    place.parent.mkdir(parents=True, exist_ok=True)
    place.symlink_to(victim / ".bashrc" if kind == "file" else victim)


def _payloads(root: Path) -> list[dict[str, Any]]:
    big = "x" * 300_000  # past the hard-reject line: the guard offloads or denies
    return [
        support.captured("PreCompact.json", root, session_id=SESSION),
        support.captured("SessionStart.compact.json", root, session_id=SESSION),
        support.captured("SessionStart.resume.json", root, session_id=SESSION),
        support.captured(
            "PostCompact.json", root, session_id=SESSION, compact_summary=f"kept {MARKER}?"
        ),
        support.captured("UserPromptSubmit.json", root, session_id=SESSION),
        support.captured(
            "PreToolUse.json",
            root,
            session_id=SESSION,
            tool_input={"description": "d", "prompt": big, "subagent_type": "general-purpose"},
        ),
        support.captured("PostToolUse.json", root, session_id=SESSION),
        support.captured("PostToolUseFailure.json", root, session_id=SESSION),
        support.captured(
            "SubagentStop.json",
            root,
            session_id=SESSION,
            last_assistant_message="report " * 20_000,
        ),
        support.captured("SessionEnd.json", root, session_id=SESSION),
    ]


def _commands(root: Path) -> list[list[str]]:
    note = root.parent / "note.md"
    note.write_text("## Subtask: parser\nstatus: complete\nsummary: done\n", encoding="utf-8")
    return [
        ["activate", "deep-review", "--slug", "another"],
        ["plan", "list"],
        ["plan", "complete", SLUG],
        ["compactions"],
        ["bank", "promote", str(note), "--phase", "1"],
        ["bank", "status"],
        ["session", "summarize", str(root / "transcript.jsonl")],
        ["artifact", "record", str(note), "--role", "r", "--rid", "1", "--idx", "1"],
        ["share", "--batch", "b", "--key", "k", "--value", "1"],
        ["heartbeat", "--batch", "b", "--role", "r", "--status", "done"],
        ["inline", "compress", "--file", str(note)],
        ["handoff", "--phase", "1"],
        ["dispatch", "check", str(note)],
    ]


def _run_everything(root: Path) -> list[str]:
    """Every hook and command on `root`; returns every answer (stdout and stderr) given."""
    env = {"CLAUDE_PROJECT_DIR": str(root), "HOME": str(root.parent / "home")}
    answers = []
    for data in _payloads(root):
        event = data["hook_event_name"]
        with support.deadline(60, event):
            code, out, err = run_in_memory(json.dumps(data).encode(), env)
        problem = support.hook_problem(code, out, err, event)
        assert problem is None, f"{event}: {problem}"
        if event == "PreToolUse":  # the oversized dispatch: denied, or offloaded inside
            decision = json.loads(out)["hookSpecificOutput"]["permissionDecision"] if out else ""
            assert decision in ("deny", "allow"), out[:300]
        answers += [out, err]
    for argv in _commands(root):
        code, out, err = support.invoke_cli(root, argv, counter="hostile-path commands")
        problem = support.cli_problem(code, out, err)
        assert problem is None, f"ctxward {argv}: {problem}"
        answers += [out, err]
    return answers


@pytest.mark.parametrize(("rel", "kind"), LINKS, ids=[rel for rel, _ in LINKS])
def test_a_planted_link_is_never_followed(tmp_path: Path, rel: str, kind: str) -> None:
    victim = _victim(tmp_path)
    root = _project(tmp_path)
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    _plant(root, rel, kind, victim)
    with support.untouched(victim), support.untouched(home, allowed=support.OWN_USER_FOLDERS):
        answers = _run_everything(root)
    shown = "".join(answers)
    assert MARKER not in shown.replace(f"kept {MARKER}?", "")
    support.count("planted links")


def test_the_guard_still_denies_through_a_planted_state_folder(tmp_path: Path) -> None:
    """`.ctxward` is a link: the offload cannot be written, so the dispatch is denied."""
    victim = _victim(tmp_path)
    root = _project(tmp_path)
    _plant(root, ".ctxward", "folder", victim)
    data = support.captured(
        "PreToolUse.json",
        root,
        tool_input={"description": "d", "prompt": "y" * 300_000, "subagent_type": "x"},
    )
    with support.untouched(victim):
        code, out, _ = run_in_memory(json.dumps(data).encode(), {"CLAUDE_PROJECT_DIR": str(root)})
    assert code == 0
    assert json.loads(out)["hookSpecificOutput"]["permissionDecision"] == "deny"


def test_no_state_is_made_in_a_folder_that_is_no_project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cwd under no .git or .ctxward, no $CLAUDE_PROJECT_DIR: hooks and commands make nothing."""
    loose = tmp_path / "downloads"
    loose.mkdir()
    monkeypatch.chdir(loose)
    (loose / "a.txt").write_text("a\n", encoding="utf-8")
    env = {"HOME": str(tmp_path / "home")}
    with support.untouched(loose):
        for name in support.EVENT_FIXTURES.values():
            data = support.captured(name, loose)
            code, out, err = run_in_memory(json.dumps(data).encode(), env)
            assert support.hook_problem(code, out, err, data["hook_event_name"]) is None
    from click.testing import CliRunner

    from ctxward.cli import cli

    for argv in (["activate", "deep-review", "--slug", "x"], ["plan", "complete", "x"]):
        with support.untouched(loose):
            result = CliRunner().invoke(cli, argv, env=env)
        assert result.exit_code == 2, (argv, result.output)
        assert "is not a project" in result.stderr
        assert result.stderr.count("\n") == 1
