"""Fixtures for the real-Codex tests (see README.md in this folder).

Without the pinned CLI (``npm ci`` here) the tests skip, unless CTXWARD_E2E_REQUIRED=1 (what
``make e2e`` sets), which turns the skip into a failure. Fixture names carry a ``cx_`` prefix:
the Claude Code conftest one folder up defines its own ``sandbox`` and ``project``.
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
    "e2e_codex_harness", Path(__file__).with_name("harness.py")
)
assert _spec is not None and _spec.loader is not None
harness = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = harness
_spec.loader.exec_module(harness)


def _missing(reason: str) -> None:
    if os.environ.get("CTXWARD_E2E_REQUIRED") == "1":
        pytest.fail(f"{reason} (CTXWARD_E2E_REQUIRED=1)", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def codex_cli(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The pinned CLI; skips (or fails, when CTXWARD_E2E_REQUIRED=1) when it is not installed."""
    binary = harness.codex_binary()
    if binary is None:
        _missing("pinned Codex CLI not installed: run `make e2e`")
    assert binary is not None
    home = tmp_path_factory.mktemp("cx-version-home")
    version = subprocess.run(
        [str(binary), "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={"HOME": str(home), "CODEX_HOME": str(home), "PATH": os.environ.get("PATH", "")},
    ).stdout.strip()
    assert version == f"codex-cli {harness.VERSION}", f"{binary} is {version!r}"
    return binary


@pytest.fixture(scope="module")
def cx_sandbox(codex_cli: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One running mock per test module and the clean environment to reach it."""
    box = harness.Sandbox(
        tmp_path_factory.mktemp("cx-sandbox"), harness.detect_isolation(), codex_cli
    )
    try:
        box.start()
        yield box
    finally:
        box.stop()
