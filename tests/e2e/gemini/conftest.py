"""Fixtures for the Gemini CLI tests (see README.md in this folder).

Without the pinned CLI (``npm ci`` here) the tests skip, unless CTXWARD_E2E_REQUIRED=1 (what
``make e2e`` sets), which turns the skip into a failure. Fixture names carry a ``gm_`` prefix:
the Claude Code conftest one folder up defines ``project``, ``sandbox`` and ``isolation``.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# --import-mode=importlib puts no test folder on sys.path: load the harness by its path.
_spec = importlib.util.spec_from_file_location(
    "e2e_gemini_harness", Path(__file__).with_name("harness.py")
)
assert _spec is not None and _spec.loader is not None
harness = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = harness
_spec.loader.exec_module(harness)

_isolation_used: list[str] = []


@pytest.fixture(scope="session")
def gemini_cli(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The pinned CLI; skips (or fails, when CTXWARD_E2E_REQUIRED=1) when it is not installed."""
    binary = harness.GEMINI
    if not binary.exists():
        reason = "pinned Gemini CLI not installed: run `make e2e`"
        if os.environ.get("CTXWARD_E2E_REQUIRED") == "1":
            pytest.fail(f"{reason} (CTXWARD_E2E_REQUIRED=1)", pytrace=False)
        pytest.skip(reason)
    home = tmp_path_factory.mktemp("gm-version-home")
    version = subprocess.run(
        [str(binary), "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={"HOME": str(home), "PATH": os.environ.get("PATH", "")},
    ).stdout.strip()
    assert version == harness.VERSION, f"{binary} is Gemini CLI {version!r}, not {harness.VERSION}"
    return binary


@pytest.fixture(scope="session")
def gm_isolation(gemini_cli: Path) -> Any:
    """How the mock is cut off from the network; reported at the end of the run."""
    found = harness.detect_isolation()
    _isolation_used.append(found.description)
    return found


@pytest.fixture(scope="module")
def gm_sandbox(
    gm_isolation: Any, gemini_cli: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    """One running mock per test module and the clean environment to reach it."""
    box = harness.Sandbox(tmp_path_factory.mktemp("gm-sandbox"), gm_isolation, gemini_cli)
    try:
        box.start()
        yield box
    finally:
        box.stop()


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if _isolation_used:
        terminalreporter.write_line(f"e2e (Gemini CLI) network isolation: {_isolation_used[0]}")
