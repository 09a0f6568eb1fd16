"""core.log: a failure a run survives leaves its traceback in .ctxward/log/, and nothing else."""

from __future__ import annotations

import pytest

from ctxward.core.log import best_effort, log_failure
from ctxward.core.project import Project


def test_log_failure_writes_the_traceback_and_returns_its_path(tmp_path):
    project = Project(tmp_path)
    try:
        raise KeyError("x")
    except KeyError:
        where = log_failure(project, "pre_compact-c11")

    assert where.startswith(".ctxward/log/") and where.endswith("-pre_compact-c11.log")
    text = (tmp_path / where).read_text(encoding="utf-8")
    assert "Traceback" in text and "KeyError: 'x'" in text


def test_log_failure_never_raises(tmp_path):
    (tmp_path / ".ctxward").write_text("a file where the folder should be", encoding="utf-8")
    try:
        raise ValueError("y")
    except ValueError:
        where = log_failure(Project(tmp_path), "x")

    assert where == "traceback not saved: the log folder is not writable"


def test_best_effort_logs_and_goes_on_but_lets_reraise_types_through(tmp_path):
    project = Project(tmp_path)
    with best_effort(project, "work"):
        raise RuntimeError("boom")
    assert len(list((tmp_path / ".ctxward" / "log").glob("*-work.log"))) == 1

    with pytest.raises(TimeoutError), best_effort(project, "late", reraise=(TimeoutError,)):
        raise TimeoutError
    assert not list((tmp_path / ".ctxward" / "log").glob("*-late.log"))
