"""Fixtures for the real-client end-to-end tests (see README.md in this folder).

Without the pinned CLI (``node_modules/.bin/claude``) every test here skips, unless
CTXWARD_E2E_REQUIRED=1 (what ``make e2e`` sets), which turns the skip into a failure.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# --import-mode=importlib puts no test folder on sys.path: load the harness by its path.
_spec = importlib.util.spec_from_file_location(
    "e2e_harness", Path(__file__).with_name("harness.py")
)
assert _spec is not None and _spec.loader is not None
harness = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = harness
_spec.loader.exec_module(harness)

_isolation_used: list[str] = []


@pytest.fixture(scope="session")
def claude_cli() -> Path:
    """The pinned CLI; skips (or fails, when CTXWARD_E2E_REQUIRED=1) when it is not installed."""
    if not harness.CLAUDE.exists():
        reason = "pinned Claude Code CLI not installed: run `make e2e`"
        if os.environ.get("CTXWARD_E2E_REQUIRED") == "1":
            pytest.fail(f"{reason} (CTXWARD_E2E_REQUIRED=1)", pytrace=False)
        pytest.skip(reason)
    return harness.CLAUDE


@pytest.fixture(scope="session")
def isolation(claude_cli: Path) -> Any:
    """How the mock is cut off from the network; reported at the end of the run."""
    found = harness.detect_isolation()
    _isolation_used.append(found.description)
    return found


@pytest.fixture(scope="module")
def sandbox(isolation: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A running mock server (one per test module) and the clean environment to reach it."""
    box = harness.Sandbox(tmp_path_factory.mktemp("sandbox"), isolation)
    try:
        box.start()
        yield box
    finally:
        box.stop()


@pytest.fixture(scope="module")
def hook_settings() -> dict[str, Any]:
    """The `.claude/settings.json` of the scratch project: the repo's settings.example.json."""
    return harness.load_settings_example()


@pytest.fixture(scope="module")
def project(
    claude_cli: Path, hook_settings: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """A git-initialised scratch project wired to the hooks (one per test module)."""
    return harness.make_project(tmp_path_factory.mktemp("scratch") / "project", hook_settings)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if _isolation_used:
        terminalreporter.write_line(f"e2e network isolation: {_isolation_used[0]}")
