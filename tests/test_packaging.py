"""What a release is: the wheel and sdist scripts/release_check.py builds, checks and installs.

The slow tests run that script for real on a copy of the checkout tagged as a release: build,
`twine check`, a fresh venv installing the wheel (its dependencies from the package index), the
smoke test; then use the installed commands outside any checkout. The fast ones check what the
release depends on: one written version, the plugin icon, the release workflow.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import zipfile
from pathlib import Path
from types import ModuleType

import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "claude_code"
RELEASE_CHECK = REPO / "scripts" / "release_check.py"
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
GIT_USER = ["-c", "user.name=release check", "-c", "user.email=release-check@invalid"]


def run(*argv: str | Path, **kwargs) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [str(arg) for arg in argv], capture_output=True, text=True, timeout=600, **kwargs
    )
    assert result.returncode == 0, f"{argv}\n{result.stdout}\n{result.stderr}"
    return result


def plugin_version() -> str:
    return json.loads((REPO / ".claude-plugin" / "plugin.json").read_text("utf-8"))["version"]


def source_copy(dest: Path, *, tag: str | None = None, git: bool = True) -> Path:
    """A copy of the checkout: its own one-commit git repository (tagged if asked), or no git."""
    shutil.copytree(REPO, dest, ignore=NOT_SHIPPED)
    if git:
        run("git", "init", "-q", "-b", "main", dest)
        run("git", "-C", dest, "add", "-A")
        run("git", "-C", dest, *GIT_USER, "commit", "-q", "-m", "release candidate")
        if tag is not None:
            run("git", "-C", dest, *GIT_USER, "tag", "-a", tag, "-m", tag)
    return dest


def release_check(source: Path, workdir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, RELEASE_CHECK, "--source", source, "--workdir", workdir, *args]
    return subprocess.run(
        [str(arg) for arg in argv], capture_output=True, text=True, timeout=900, check=False
    )


def sdist_version(source: Path, dist: Path) -> str:
    run(sys.executable, "-m", "build", "--sdist", "--outdir", dist, source)
    (sdist,) = dist.glob("ctxward-*.tar.gz")
    return sdist.name.removeprefix("ctxward-").removesuffix(".tar.gz")


@pytest.mark.slow
def test_a_tagged_release_builds_installs_and_runs_outside_the_checkout(tmp_path):
    version = plugin_version()
    source = source_copy(tmp_path / "source", tag=f"v{version}")
    work = tmp_path / "work"
    done = release_check(source, work, "--expect-version", f"v{version}")
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    wheel = work / "dist" / f"ctxward-{version}-py3-none-any.whl"
    assert done.stdout.endswith(f"release check passed: {wheel.name}\n"), done.stdout
    assert (work / "dist" / f"ctxward-{version}.tar.gz").is_file()

    names = set(zipfile.ZipFile(wheel).namelist())
    assert "ctxward/data/templates/invariants/session_start_context.md.j2" in names
    assert {f"ctxward/data/invariants/{pack}/SKILL.md" for pack in PACKS} <= names
    assert f"ctxward-{version}.dist-info/licenses/LICENSE" in names

    bin_dir = work / "venv" / "bin"
    shutil.rmtree(source)  # nothing may come from the checkout any more
    elsewhere = tmp_path / "elsewhere"  # the cwd, and HOME is tmp_path/home (tests/conftest.py)
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}

    shown = run(bin_dir / "ctxward", "--version", cwd=elsewhere, env=env).stdout
    assert shown == f"ctxward, version {version}\n"
    packs = run(bin_dir / "ctxward", "packs", cwd=elsewhere, env=env).stdout
    assert [line.split()[0] for line in packs.splitlines()] == PACKS
    assert str(work / "venv") in packs  # read from the installed package, not a checkout
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


@pytest.mark.slow
def test_a_tag_that_plugin_json_does_not_carry_is_refused(tmp_path):
    version = plugin_version()
    other = ".".join([*version.split(".")[:-1], str(int(version.split(".")[-1]) + 1)])
    source = source_copy(tmp_path / "source", tag=f"v{other}")
    done = release_check(source, tmp_path / "work", "--expect-version", f"v{other}")
    assert done.returncode == 1, f"{done.stdout}\n{done.stderr}"
    assert done.stderr == (
        f"release check failed: versions: the release is {other} but"
        f" .claude-plugin/plugin.json says {version!r}; set it to {other!r} and tag again\n"
    )
    assert not (tmp_path / "work" / "venv").exists()  # refused before anything was installed


@pytest.mark.slow
def test_the_version_comes_from_git_and_never_from_a_written_copy(tmp_path):
    untagged = source_copy(tmp_path / "untagged")
    sha = run("git", "-C", untagged, "rev-parse", "--short=7", "HEAD").stdout.strip()
    assert re.fullmatch(rf"0\.1\.dev1\+g{sha}[0-9a-f]*", sdist_version(untagged, tmp_path / "a"))
    # no git metadata at all (an unpacked archive): the fallback, which no release carries
    bare = source_copy(tmp_path / "bare", git=False)
    assert sdist_version(bare, tmp_path / "b") == "0.0"


def test_pyproject_writes_no_version():
    pyproject = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    assert 'dynamic = ["version"]' in pyproject
    assert not re.search(r"^version\s*=", pyproject, re.MULTILINE)
    assert re.search(r'^source = "vcs"$', pyproject, re.MULTILINE)


def test_the_marketplace_lists_this_repository_as_the_plugin():
    manifest = json.loads((REPO / ".claude-plugin" / "plugin.json").read_text("utf-8"))
    market = json.loads((REPO / ".claude-plugin" / "marketplace.json").read_text("utf-8"))
    (entry,) = market["plugins"]
    assert (entry["name"], entry["source"]) == (manifest["name"], "./")
    assert "version" not in entry  # plugin.json's is the one Claude Code reads
    assert manifest["network"] == {"hosts": []}  # the hooks reach no host


def load_icon_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_icon", REPO / "scripts" / "make_icon.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_icon_is_a_square_png_the_script_draws():
    icon = (REPO / ".claude-plugin" / "icon.png").read_bytes()
    assert icon[:8] == b"\x89PNG\r\n\x1a\n" and icon[12:16] == b"IHDR"
    width, height = struct.unpack(">II", icon[16:24])
    assert width == height and 512 <= width <= 2048  # what the plugin directory accepts
    assert len(icon) < 2 * 1024 * 1024
    assert load_icon_script().render() == icon, "run python3 scripts/make_icon.py and commit"


def test_the_release_workflow_runs_the_release_check_on_a_tag():
    workflow = yaml.safe_load((REPO / ".github" / "workflows" / "release.yml").read_text("utf-8"))
    triggers = workflow[True]  # YAML 1.1 reads the key `on` as true
    assert triggers == {"push": {"tags": ["v*"]}}
    build, publish = workflow["jobs"]["build"], workflow["jobs"]["publish"]
    checkout = next(s for s in build["steps"] if s.get("uses", "").startswith("actions/checkout"))
    assert checkout["with"]["fetch-depth"] == 0  # hatch-vcs needs the tag
    commands = "\n".join(step.get("run", "") for step in build["steps"])
    assert 'scripts/release_check.py --workdir "$RUNNER_TEMP/release"' in commands
    assert '--expect-version "$GITHUB_REF_NAME"' in commands
    assert "plugin validate --strict" in commands
    assert publish["needs"] == "build"
    assert publish["permissions"] == {"id-token": "write"}  # trusted publishing: no token
    assert publish["steps"][-1]["uses"].startswith("pypa/gh-action-pypi-publish@")
