"""What `ctxward install codex` writes, trusted the way Codex records trust, in the real Codex
CLI 0.169.0, and `ctxward doctor`'s trust check against it; the guard with ctxward gone.

No run here passes --dangerously-bypass-hook-trust except the last one.
"""

from __future__ import annotations

import json
import shutil
from typing import Any

import pytest
from e2e_codex_harness import VENV_BIN, base, hooks_of, make_project  # loaded by conftest.py

from ctxward.hosts.codex_trust import trusted_state_toml

pytestmark = pytest.mark.e2e

SLUG = "e2e-plan"


def doctor_trust(box: Any, project: Any) -> dict[str, Any]:
    done = box.ctxward("doctor", "--json", cwd=project)
    checks = {c["id"]: c for c in json.loads(done.stdout)["checks"]}
    return checks["codex.project.trust"]


@pytest.fixture(scope="module")
def project(cx_sandbox: Any) -> Any:
    root = make_project(cx_sandbox, "wiring")
    done = cx_sandbox.ctxward("activate", "deep-review", "--slug", SLUG, cwd=root)
    assert done.returncode == 0, done.stderr
    return root


def test_untrusted_hooks_do_not_run_and_doctor_says_so(cx_sandbox, project):
    check = doctor_trust(cx_sandbox, project)
    assert check["status"] == "fail"
    assert "untrusted" in check["detail"] and "/hooks" in check["fix"]
    first = cx_sandbox.codex("hello", project, bypass=False).ok()
    before = len(cx_sandbox.requests())
    cx_sandbox.codex("again", project, resume=first.thread_id, bypass=False).ok()
    resumed = cx_sandbox.requests()[before:]
    assert resumed and not any("deep-review" in json.dumps(r.body) for r in resumed)


def test_trusted_hooks_run_without_the_bypass_flag_and_doctor_agrees(cx_sandbox, project):
    cx_sandbox.extra_config = trusted_state_toml(
        (project / ".codex" / "hooks.json").resolve(), hooks_of(project)
    )
    cx_sandbox.write_config()
    check = doctor_trust(cx_sandbox, project)
    assert check["status"] == "ok", check
    first = cx_sandbox.codex("hello", project, bypass=False).ok()
    before = len(cx_sandbox.requests())
    cx_sandbox.codex("again", project, resume=first.thread_id, bypass=False).ok()
    resumed = cx_sandbox.requests()[before:]
    rules = base.read_rules(project / "docs" / "plans" / SLUG / "invariants.md")
    developer = "\n".join(resumed[-1].texts("developer"))
    assert [rule for rule in rules if rule not in developer] == []  # SessionStart(resume) ran


def test_a_changed_hook_is_modified_for_doctor(cx_sandbox, project, tmp_path):
    path = project / ".codex" / "hooks.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["hooks"]["PreCompact"][0]["hooks"][0]["timeout"] = 31
    original = path.read_text(encoding="utf-8")
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    try:
        check = doctor_trust(cx_sandbox, project)
        assert check["status"] == "fail" and "modified: PreCompact" in check["detail"]
    finally:
        path.write_text(original, encoding="utf-8")


def test_with_ctxward_gone_an_oversized_spawn_is_still_blocked(cx_sandbox, tmp_path):
    """`--scope user` bakes this machine's ctxward-hook; it is then deleted."""
    folder = base.removable_install(tmp_path / "ctxward bin")
    root = cx_sandbox.root / "gone"
    root.mkdir()
    base.subprocess.run(["git", "init", "-q", str(root)], check=True)
    done = base.subprocess.run(
        [str(folder / "ctxward"), "install", "codex", "--scope", "user"],
        cwd=root,
        env={**cx_sandbox.env, "PATH": str(VENV_BIN.parent / "nothing")},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    cx_sandbox.trusted_projects.append(root)
    cx_sandbox.write_config()
    shutil.rmtree(folder)
    path = ":".join(str(d) for d in base.tool_dirs())  # no ctxward anywhere
    before = len(cx_sandbox.requests())
    try:
        run = cx_sandbox.codex("delegate E2E_DISPATCH_BYTES=240000", root, path=path).ok()
    finally:
        (cx_sandbox.codex_home / "hooks.json").unlink()
    requests = cx_sandbox.requests()[before:]
    outputs = requests[-1].tool_outputs()
    assert len(outputs) == 1
    assert outputs[0].startswith(
        "Tool call blocked by PreToolUse hook: ctxward blocked this sub-agent call: the dispatch "
        "guard cannot run, ctxward-hook is missing"
    ), outputs
    assert [i for i in run.items("collab_tool_call") if i.get("receiver_thread_ids")] == []
