"""Plan lifecycle: list active plans, complete one, clean those whose branch is gone."""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass

from ctxward.fsutil import locked, remove
from ctxward.invariants import (
    Plan,
    branch_exists,
    find_plan,
    load_plans,
    payloads_locked,
    readable_plans,
)
from ctxward.project import Project
from ctxward.trust import revoke, trusted_split


@dataclass(frozen=True, slots=True)
class PlanSummary:
    slug: str
    skills: list[str]
    rules: int
    branches: list[str]
    payload: str  # fresh | stale | missing
    path: str
    trusted: bool  # its current content is trusted on this machine (ctxward.trust)
    fingerprint: str  # of its set of rules (ctxward.fingerprint.of_rules): cosmetic edits keep it
    rule_fingerprints: list[str]  # each rule's, short, in order


def summarize(project: Project, plans: list[Plan]) -> list[PlanSummary]:
    from ctxward.fingerprint import fingerprint, of_rules, short

    trusted = {id(plan) for plan in trusted_split(plans)[0]}
    return [
        PlanSummary(
            slug=plan.slug,
            skills=[section.skill for section in plan.sections],
            rules=plan.rule_count,
            branches=sorted({section.branch for section in plan.sections if section.branch}),
            payload=plan.payload_state(),
            path=project.relative(plan.invariants_path),
            trusted=id(plan) in trusted,
            fingerprint=of_rules(r for section in plan.sections for r in section.rules),
            rule_fingerprints=[
                short(fingerprint(r)) for section in plan.sections for r in section.rules
            ],
        )
        for plan in plans
    ]


def list_plans(project: Project) -> list[PlanSummary]:
    """Every active plan; BadInput when one cannot be read (what `plan clean` needs)."""
    return summarize(project, load_plans(project))


def readable_summaries(project: Project) -> tuple[list[PlanSummary], list[str]]:
    """Every plan that can be read, and a one-line problem for each that cannot."""
    plans, unreadable = readable_plans(project)
    return summarize(project, plans), unreadable


def complete(project: Project, slug: str) -> list[str]:
    """Remove the plan's invariants.md and payload (other files stay) and the trust in it;
    return what was removed from the project."""
    plan = find_plan(project, slug)
    removed = []
    for path, lock in (
        (plan.payload_path, payloads_locked(project)),
        (plan.invariants_path, locked(plan.invariants_path, project.locks_dir)),
    ):
        with lock:
            if os.path.lexists(path):
                remove(path)  # a link in a file's place is removed, never followed
                removed.append(project.relative(path))
    revoke(plan.invariants_path)  # a plan of that name later is a new plan
    with contextlib.suppress(OSError):
        plan.folder.rmdir()  # only when nothing else is left in it
    return removed


def orphaned(project: Project) -> list[PlanSummary]:
    """Plans every one of whose recorded branches no longer exists (plans with none are kept)."""
    return [
        summary
        for summary in list_plans(project)
        if summary.branches
        and not any(branch_exists(project.root, branch) for branch in summary.branches)
    ]
