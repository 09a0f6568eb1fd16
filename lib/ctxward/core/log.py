"""Failures a run survives: the traceback goes to `.ctxward/log/`, the run goes on.

- `log_failure(project, label)`: write the current exception's traceback to
  `.ctxward/log/<UTC stamp>-<label>.log`; return that path (relative to the project), or why it
  was not saved. Never raises: logging must not mask the failure it records.
- `best_effort(project, label, reraise=...)`: a `with` block whose failure is logged and
  swallowed (except the `reraise` types): work that must never change a hook's answer.

`traceback`, `datetime` and the writer are imported on a failure only: the hooks that use this
run on every turn.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ctxward.core.project import Project


def log_failure(project: Project, label: str) -> str:
    """Write the current exception's traceback to .ctxward/log/; return its relative path."""
    try:
        import traceback
        from datetime import datetime, timezone

        from ctxward.core.fsutil import atomic_write

        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S.%fZ")
        path = project.log_dir / f"{stamp}-{label}.log"
        atomic_write(path, traceback.format_exc())
    except Exception:  # noqa: BLE001 - logging must not mask the original failure
        return "traceback not saved: the log folder is not writable"
    return project.relative(path)


@contextlib.contextmanager
def best_effort(
    project: Project, label: str, reraise: tuple[type[BaseException], ...] = ()
) -> Iterator[None]:
    """Run the body; on an `Exception` not in `reraise`, log it (`log_failure`) and go on."""
    try:
        yield
    except reraise:
        raise
    except Exception:  # noqa: BLE001 - the caller's answer must not depend on this work
        log_failure(project, label)
