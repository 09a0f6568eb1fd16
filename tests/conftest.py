"""Shared fixtures: an isolated HOME, a git project in tmp, real payloads, golden files."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from ctxward.core.project import Project
from ctxward.hookio import run_in_memory
from ctxward.invariants.activate import activate
from ctxward.invariants.trust import trust_plans

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
FIXTURES = TESTS / "fixtures" / "claude_code"
GOLDEN = TESTS / "golden"
NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        help="rewrite tests/golden/ from the current output (then review the diff)",
    )


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test sees the real HOME, an inherited project dir, or the repository as its cwd."""
    home = tmp_path / "home"
    home.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.delenv("CLAUDE_PROJECT_DIR", raising=False)
    monkeypatch.delenv("CLAUDE_PLUGIN_ROOT", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)  # jinja2's bytecode cache: under HOME
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)  # ctxward.core.userstate: under HOME
    monkeypatch.chdir(elsewhere)


def git(root: Path, *args: str) -> str:
    """Run git in `root` with a throwaway identity; return its stdout."""
    result = subprocess.run(
        ["git", "-c", "user.email=a@b", "-c", "user.name=t", "-C", str(root), *args],
        capture_output=True,
        text=True,
        check=True,
        timeout=20,
    )
    return result.stdout


@pytest.fixture(name="git")
def git_fixture() -> Callable[..., str]:
    return git


@pytest.fixture(scope="session")
def _empty_repository(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One `git init` per test run (on branch main, no sample hooks), copied for each test."""
    root = tmp_path_factory.mktemp("template") / "project"
    root.mkdir()
    git(root, "init", "-q", "-b", "main", "--template=")
    return root


@pytest.fixture
def project(tmp_path: Path, _empty_repository: Path) -> Path:
    """An empty project folder: a git repository on branch main, no commits yet.

    A copy of one `git init` (a git process per test cost more than most tests).
    """
    root = tmp_path / "project"
    shutil.copytree(_empty_repository, root, symlinks=True)
    return root.resolve()


@pytest.fixture
def load_payload(project: Path) -> Callable[..., dict[str, Any]]:
    """`load_payload("PreCompact.json", trigger="auto")`: a captured payload, cwd = the project."""

    def load(name: str, **overrides: Any) -> dict[str, Any]:
        data: dict[str, Any] = json.loads((FIXTURES / name).read_text(encoding="utf-8"))
        data["cwd"] = str(project)
        data.update(overrides)
        return data

    return load


@pytest.fixture
def make_skill(project: Path) -> Callable[..., Path]:
    """Write a skill file (by default .claude/skills/<name>/SKILL.md) and return its path."""

    def make(
        name: str,
        rules: Iterable[str] | None = None,
        *,
        where: str = ".claude/skills",
        text: str | None = None,
    ) -> Path:
        path = project / where / name / "SKILL.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        if text is None:
            listed = rules if rules is not None else [f"{name} rule one", f"{name} rule two"]
            bullets = "".join(f"  - {json.dumps(rule, ensure_ascii=False)}\n" for rule in listed)
            text = f"---\nname: {name}\ninvariants:\n{bullets}---\n\n# {name}\n\nThe long text.\n"
        path.write_text(text, encoding="utf-8")
        return path

    return make


@pytest.fixture
def activate_skill(project: Path) -> Callable[..., Path]:
    """Activate SKILL (a name or path) into SLUG at the fixed NOW; return invariants.md."""

    def run(spec: str | Path, slug: str = "plan-a") -> Path:
        return activate(Project(project), str(spec), slug, now=NOW).path

    return run


@pytest.fixture
def trust(project: Path) -> Callable[..., list[str]]:
    """`trust("slug", ...)`: trust plans written by hand, as `ctxward trust SLUG ...` does.

    `activate` trusts what it writes; a plan a test writes itself is untrusted, like one that
    came with a cloned repository, and its rules reach no summarizer or model until trusted.
    """

    def run(*slugs: str) -> list[str]:
        return [result.slug for result in trust_plans(Project(project), slugs)[0]]

    return run


@pytest.fixture
def run_hook(project: Path) -> Callable[..., tuple[int, str, str]]:
    """Run a payload through hookio in-process, as `ctxward-hook` would: (code, stdout, stderr)."""

    def run(payload: dict[str, Any] | bytes, handler: Any = None) -> tuple[int, str, str]:
        raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode("utf-8")
        return run_in_memory(raw, {"CLAUDE_PROJECT_DIR": str(project)}, handler)

    return run


@pytest.fixture
def golden(request: pytest.FixtureRequest) -> Callable[[str, str], None]:
    """`golden("name.md", actual)` compares with tests/golden/name.md (`--update-golden` writes)."""

    def check(name: str, actual: str) -> None:
        path = GOLDEN / name
        if request.config.getoption("--update-golden"):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(actual.encode("utf-8"))
        assert path.is_file(), f"no golden file {path}: run pytest --update-golden, then review it"
        expected = path.read_bytes().decode("utf-8")
        assert actual == expected, f"pytest --update-golden, then review {path}"

    return check


def snapshot(folder: Path) -> dict[str, tuple[bytes, int, int]]:
    """Every file under `folder` with its bytes, inode and mtime (to prove nothing was touched)."""
    if not folder.exists():
        return {}
    return {
        path.relative_to(folder).as_posix(): (
            path.read_bytes(),
            path.stat().st_ino,
            path.stat().st_mtime_ns,
        )
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


@pytest.fixture(name="snapshot")
def snapshot_fixture() -> Callable[[Path], dict[str, tuple[bytes, int, int]]]:
    return snapshot


@pytest.fixture
def now() -> datetime:
    """The fixed activation time of every golden file: 2026-01-02T03:04:05Z."""
    return NOW


@pytest.fixture
def aged_file() -> Callable[[Path, float], Path]:
    """`aged_file(path, seconds)`: a small file at `path` (folders made) last modified `seconds`
    ago, for the housekeeping that removes old state files."""

    def make(path: Path, seconds: float) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{}\n")
        then = time.time() - seconds
        os.utime(path, (then, then))
        return path

    return make
