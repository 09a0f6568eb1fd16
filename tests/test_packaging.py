"""The wheel carries templates/ and invariants/: build it, install it in a fresh venv, use it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "claude_code"
NOT_SHIPPED = shutil.ignore_patterns(
    ".git",
    ".venv",
    "node_modules",
    "__pycache__",
    ".mypy_cache",
    ".ruff_cache",
    ".pytest_cache",
    ".hypothesis",
    "build",
    "dist",
    "*.egg-info",
)
PACKS = [
    "compaction-resilience",
    "context-governance",
    "deep-auto",
    "deep-execute",
    "deep-plan",
    "deep-review",
]


def run(*argv: str | Path, **kwargs) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [str(arg) for arg in argv], capture_output=True, text=True, timeout=180, **kwargs
    )
    assert result.returncode == 0, f"{argv}\n{result.stdout}\n{result.stderr}"
    return result


@pytest.mark.slow
def test_wheel_installs_and_runs_outside_the_checkout(tmp_path):
    source = tmp_path / "source"
    shutil.copytree(REPO, source, ignore=NOT_SHIPPED)
    dist = tmp_path / "dist"
    run(sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", dist, f"{source}/")
    (wheel,) = dist.glob("ctxward-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "ctxward/templates/session_start_context.md.j2" in names
    assert {f"ctxward/invariants/{pack}/SKILL.md" for pack in PACKS} <= names

    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", venv)
    bin_dir = venv / "bin"
    run(bin_dir / "python", "-m", "pip", "install", "-q", wheel)
    shutil.rmtree(source)  # nothing may come from the checkout any more
    elsewhere = tmp_path / "elsewhere"
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}

    version = run(bin_dir / "ctxward", "--version", cwd=elsewhere, env=env).stdout
    assert version.startswith("ctxward, version ")
    packs = run(bin_dir / "ctxward", "packs", cwd=elsewhere, env=env).stdout
    assert [line.split()[0] for line in packs.splitlines()] == PACKS
    assert str(venv) in packs  # read from the installed package, not a checkout
    demo = run(bin_dir / "ctxward", "demo", cwd=elsewhere, env=env).stdout
    assert "== 4. PostCompact" in demo

    project = tmp_path / "project"
    project.mkdir()
    run("git", "init", "-q", "-b", "main", project)
    run(bin_dir / "ctxward", "-C", project, "activate", "deep-review", "--slug", "fix", env=env)
    payload = json.loads((FIXTURES / "SessionStart.compact.json").read_text(encoding="utf-8"))
    payload["cwd"] = str(project)
    hook = run(
        bin_dir / "ctxward-hook",
        input=json.dumps(payload),
        cwd=project,
        env={**env, "CLAUDE_PROJECT_DIR": str(project)},
    )
    context = json.loads(hook.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "- 0 test failures for PASS — no out-of-scope dismissals for test failures\n" in context
    # From the trusted invariants.md (activate trusted it): SessionStart writes no payload.
    assert not (project / "docs" / "plans" / "fix" / ".compaction-payload.md").exists()
