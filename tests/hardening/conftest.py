"""The hardening suites: fuzzed input, crash and concurrency safety, secrets, no guard bypass.

Their helpers live in support.py, loaded here by path as the module `ctxward_hardening`
(--import-mode=importlib puts no test folder on sys.path). Each suite counts what it ran
(fuzz cases, SIGKILLs, concurrent processes, ...); the counts are printed at the end of the run.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

_spec = importlib.util.spec_from_file_location(
    "ctxward_hardening", Path(__file__).with_name("support.py")
)
assert _spec is not None and _spec.loader is not None
support = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = support
_spec.loader.exec_module(support)


def pytest_collection_modifyitems(items: list[Any]) -> None:
    """Every hardening suite is a heavy variant (real processes, hostile inputs, storms): they
    run in the slow stage (`pytest -m slow`, CI after `make test`), not in the default run."""
    import pytest

    here = Path(__file__).parent
    for item in items:
        if here in Path(item.path).parents:
            item.add_marker(pytest.mark.slow)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    for line in support.summary():
        terminalreporter.write_line(line)
