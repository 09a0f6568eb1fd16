"""The repository as a Claude Code plugin and marketplace, checked by the pinned CLI itself.

- `claude plugin validate --strict` (and the plugin directory's own checks, `--profile
  directory`) passes with no error, no warning and no finding, for the marketplace at the
  repository root and for the plugin manifest;
- `claude plugin marketplace add ./` then `claude plugin install ctxward@ctxward`, in the
  sandbox's scratch HOME and network namespace (loopback only: no host is reached), installs the
  plugin from a copy of what a clone holds; `claude plugin details` lists its eight hooks;
- in a project with no hooks of its own, the installed plugin's dispatch guard denies a
  240,000-byte Agent call.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from e2e_harness import CLAUDE, make_project  # loaded by tests/e2e/conftest.py

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parent.parent.parent
PLUGIN_JSON = REPO / ".claude-plugin" / "plugin.json"
HOOK_EVENTS = list(json.loads((REPO / "hooks" / "hooks.json").read_text("utf-8"))["hooks"])
NOT_IN_A_CLONE = shutil.ignore_patterns(".git", ".venv", "node_modules", "__pycache__", "out")


def checked(done: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert done.returncode == 0, f"{done.args}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


def clone_like_copy(dest: Path) -> Path:
    """Copy the files a clone of this checkout would hold (tracked or new, never ignored ones)."""
    listed = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True,
        check=False,
    )
    if listed.returncode != 0:  # not a git checkout (an unpacked sdist): copy what it has
        shutil.copytree(REPO, dest, ignore=NOT_IN_A_CLONE)
        return dest
    for name in filter(None, listed.stdout.decode().split("\0")):
        source = REPO / name
        if source.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
    return dest


def plugin(sandbox: Any, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`claude plugin ARGS` in the sandbox (scratch HOME, loopback-only network)."""
    return sandbox.run([str(CLAUDE), "plugin", *args], cwd)


def validate(sandbox: Any, target: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    return plugin(sandbox, REPO, "validate", *flags, str(target))


@pytest.mark.parametrize("target", [REPO, PLUGIN_JSON], ids=["marketplace", "plugin.json"])
def test_validate_strict_reports_nothing(sandbox, target):
    report = json.loads(
        checked(validate(sandbox, target, "--strict", "--profile", "directory", "--json")).stdout
    )
    assert report["success"] is True and report["strict"] is True
    manifest = report["manifest"]
    assert (manifest["errors"], manifest["warnings"]) == ([], []), manifest
    directory = report["directory"]
    assert (directory["findings"], directory["undecided"]) == ([], []), directory
    assert directory["failure"] is None and directory["incomplete"] is False, directory
    assert [hook["event"] for hook in report["provides"]["hooks"]] == HOOK_EVENTS
    # network.hosts is declared (an empty list: the hooks reach no host)
    assert report["hosts"]["named"] == [] and report["hosts"]["declared"]["plugin"] is True

    text = checked(validate(sandbox, target, "--strict")).stdout
    assert "✔ Validation passed\n" in text and "warning" not in text.lower(), text


def test_the_validator_sees_the_icon(sandbox, tmp_path):
    """The icon is what keeps the directory's check quiet: without it, ICON_MISSING."""
    copy = clone_like_copy(tmp_path / "ctxward")
    (copy / ".claude-plugin" / "icon.png").unlink()
    done = validate(sandbox, copy, "--strict", "--profile", "directory", "--json")
    findings = json.loads(done.stdout)["directory"]["findings"]
    assert done.returncode == 1 and [f["code"] for f in findings] == ["ICON_MISSING"], done.stdout


@pytest.fixture(scope="module")
def installed(sandbox: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The marketplace added from a clone-like copy and the plugin installed, user scope."""
    market = clone_like_copy(tmp_path_factory.mktemp("marketplace") / "ctxward")
    added = checked(plugin(sandbox, market, "marketplace", "add", "./")).stdout
    assert "Successfully added marketplace: ctxward" in added, added
    done = checked(plugin(sandbox, market, "install", "ctxward@ctxward")).stdout
    assert "Successfully installed plugin: ctxward@ctxward" in done, done
    return market


def test_the_installed_plugin_lists_its_hooks(sandbox, installed):
    details = checked(plugin(sandbox, installed, "details", "ctxward@ctxward"))
    (hooks_line,) = [line for line in details.stdout.splitlines() if "Hooks (" in line]
    assert f"Hooks ({len(HOOK_EVENTS)})" in hooks_line, details.stdout
    assert [e for e in HOOK_EVENTS if e not in hooks_line] == [], hooks_line

    record = json.loads((sandbox.home / ".claude/plugins/installed_plugins.json").read_text())
    (entry,) = record["plugins"]["ctxward@ctxward"]
    assert entry["version"] == json.loads(PLUGIN_JSON.read_text("utf-8"))["version"]
    copied = Path(entry["installPath"])
    assert (copied / "hooks/hooks.json").read_bytes() == (REPO / "hooks/hooks.json").read_bytes()


def test_the_installed_plugin_denies_an_emergency_dispatch(sandbox, installed, tmp_path):
    project = make_project(tmp_path / "project", {})  # no hooks here: only the plugin's
    result = sandbox.claude(
        "-p", "E2E_DISPATCH_BYTES=240000", "--output-format", "json", cwd=project
    ).result()
    denials = result.get("permission_denials", [])
    assert len(denials) == 1, result
    assert len(denials[0]["tool_input"]["prompt"].encode()) == 240_000
