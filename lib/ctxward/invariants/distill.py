"""Distillation: each trusted plan's `.compaction-payload.md`, written under one lock."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path

from ctxward.core.fsutil import (
    atomic_write,
    atomic_write_many,
    locked,
)
from ctxward.core.project import PLANS_RELDIR, Project
from ctxward.errors import CtxwardError
from ctxward.invariants.model import PAYLOAD_FILE, Plan, RuleRef


def render_payload(project: Project, plan: Plan) -> str:
    from ctxward.core.render import render
    from ctxward.core.scrub import redact

    return redact(
        render(
            "invariants/compaction_payload.md.j2",
            plan=plan,
            source=project.relative(plan.invariants_path),
        )
    )


def distill(project: Project, plan: Plan) -> bool:
    """Write the plan's .compaction-payload.md; False when it was already identical.

    CtxwardError naming the payload when it cannot be written.
    """
    written, problems = distill_all(project, [plan])
    if problems:
        raise CtxwardError(problems[0])
    return bool(written)


def distill_all(project: Project, plans: Sequence[Plan]) -> tuple[list[Path], list[str]]:
    """Write every plan's .compaction-payload.md; return the payloads that changed, and one
    line for each that could not be written.

    One bad payload costs only itself: a payload path that is a link, a folder or a FIFO is
    named and left alone, and a write that fails (a full disk, a read-only folder) is named
    while the others are still written. One lock covers every payload of the project:
    PreCompact distills them all at once (the host may fire it several times for one
    compaction), and a lock per file cost as much as the write.
    """
    if not plans:
        return [], []  # no lock either: a project without plans gets no .ctxward/
    problems: list[str] = []
    texts: list[tuple[Path, str | bytes]] = []
    for plan in plans:
        refused = _unwritable_payload(plan.payload_path)
        if refused:
            problems.append(f"{project.relative(plan.payload_path)}: {refused}")
        else:
            texts.append((plan.payload_path, render_payload(project, plan)))
    try:
        with payloads_locked(project):
            try:
                return atomic_write_many(texts), problems
            except (CtxwardError, OSError):
                pass  # which one? each on its own, below (the batch's written ones are equal)
            written = []
            for path, text in texts:
                try:
                    if atomic_write(path, text):
                        written.append(path)
                except (CtxwardError, OSError) as exc:
                    problems.append(f"{project.relative(path)}: not written: {_why(exc)}")
            return written, problems
    except (CtxwardError, OSError) as exc:  # the lock itself: .ctxward/locks/ cannot be used
        return [], [*problems, f"{_PAYLOADS_GLOB}: none written: {_why(exc)}"]


_PAYLOADS_GLOB = f"{PLANS_RELDIR.as_posix()}/*/{PAYLOAD_FILE}"


def _unwritable_payload(path: Path) -> str:
    """Why ctxward will not replace the payload at `path` ('' when it may): one lstat."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return ""
    except OSError as exc:
        return f"not written: {_why(exc)}"
    if stat.S_ISLNK(mode):
        return "a symbolic link; not written through"
    if not stat.S_ISREG(mode):
        return "not a regular file (a folder, a FIFO?); not replaced"
    return ""


def _why(exc: Exception) -> str:
    return (exc.strerror if isinstance(exc, OSError) and exc.strerror else None) or str(exc)


def payloads_locked(project: Project) -> AbstractContextManager[None]:
    """The lock every writer (and remover) of a plan's payload holds."""
    return locked(project.plans_dir / PAYLOAD_FILE, project.locks_dir)


def all_rules(plans: Iterable[Plan]) -> list[RuleRef]:
    return [
        RuleRef(plan.slug, section.skill, rule)
        for plan in plans
        for section in plan.sections
        for rule in section.rules
    ]
