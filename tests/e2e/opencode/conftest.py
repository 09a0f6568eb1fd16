"""Fixtures for the OpenCode tests (see README.md in this folder).

Without the pinned CLI (``npm ci`` here) the real-client tests skip, unless
CTXWARD_E2E_REQUIRED=1 (what ``make e2e`` sets), which turns the skip into a failure. The plugin
contract tests (test_plugin.py) need only ``node``.

Fixture names carry an ``oc_`` prefix: the Claude Code conftest one folder up defines
``project``, ``sandbox`` and ``isolation`` for its own CLI.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# --import-mode=importlib puts no test folder on sys.path: load the harness by its path.
_spec = importlib.util.spec_from_file_location(
    "e2e_opencode_harness", Path(__file__).with_name("harness.py")
)
assert _spec is not None and _spec.loader is not None
harness = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = harness
_spec.loader.exec_module(harness)

_isolation_used: list[str] = []


def _missing(reason: str) -> None:
    if os.environ.get("CTXWARD_E2E_REQUIRED") == "1":
        pytest.fail(f"{reason} (CTXWARD_E2E_REQUIRED=1)", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def opencode_cli(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The pinned CLI; skips (or fails, when CTXWARD_E2E_REQUIRED=1) when it is not installed."""
    binary = harness.opencode_binary()
    if binary is None:
        _missing("pinned OpenCode CLI not installed: run `make e2e`")
    assert binary is not None
    home = tmp_path_factory.mktemp("oc-version-home")  # even --version writes under HOME
    version = subprocess.run(
        [str(binary), "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={"HOME": str(home), "PATH": os.environ.get("PATH", "")},
    ).stdout.strip()
    assert version == harness.VERSION, f"{binary} is OpenCode {version!r}, not {harness.VERSION}"
    return binary


@pytest.fixture(scope="session")
def oc_isolation(opencode_cli: Path) -> Any:
    """How the mock is cut off from the network; reported at the end of the run."""
    found = harness.detect_isolation()
    _isolation_used.append(found.description)
    return found


@pytest.fixture(scope="module")
def oc_sandbox(
    oc_isolation: Any, opencode_cli: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    """One running mock per test module and the clean environment to reach it."""
    box = harness.Sandbox(tmp_path_factory.mktemp("oc-sandbox"), oc_isolation, opencode_cli)
    try:
        box.start()
        yield box
    finally:
        box.stop()


@pytest.fixture(scope="session")
def node() -> str:
    """The `node` that runs the plugin contract tests."""
    found = shutil.which("node")
    if found is None:
        _missing("node not found: the OpenCode plugin tests run it")
    assert found is not None
    return found


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if _isolation_used:
        terminalreporter.write_line(f"e2e (OpenCode) network isolation: {_isolation_used[0]}")
