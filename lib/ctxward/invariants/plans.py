"""Plan lifecycle: list active plans, complete one, clean those whose branch is gone; and which
plans apply on the branch checked out now (`scope`, issue 17 item 5).

Seed 003: plans clean themselves up. A plan's sections record the branch each was activated on
(`**Branch:**`). On another branch the plan does not apply and is not injected; on a branch
created from one of its branches (`gitrefs.Repository.derives_from`) it does; once every
branch it names is gone, PreCompact completes it (`complete_branch_gone`) and says so in one
line. No git is run: `.git` is read directly and boundedly (`ctxward.core.gitrefs`), once per hook,
whatever the number of plans; whatever cannot be told keeps the plan.

Values, not dataclasses: the compaction hooks import this module.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence

from ctxward.core.fsutil import locked, remove
from ctxward.core.project import Project
from ctxward.core.values import Value
from ctxward.invariants.activate import branch_exists
from ctxward.invariants.distill import payloads_locked
from ctxward.invariants.model import Plan
from ctxward.invariants.read import find_plan, load_plans, readable_plans
from ctxward.invariants.trust import revoke, trusted_split


class PlanSummary(Value):
    slug: str
    skills: list[str]
    rules: int
    branches: list[str]
    payload: str  # fresh | stale | missing
    path: str
    trusted: bool  # its current content is trusted on this machine (ctxward.invariants.trust)
    fingerprint: (
        str  # of its set of rules (ctxward.core.fingerprint.of_rules): cosmetic edits keep it
    )
    rule_fingerprints: list[str]  # each rule's, short, in order


def summarize(project: Project, plans: list[Plan]) -> list[PlanSummary]:
    from ctxward.core.fingerprint import fingerprint, of_rules, short

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


# --- which plans apply here (issue 17 item 5) --------------------------------------------------


class Scope(Value):
    """The plans split by the branch checked out now: `applies` (no branch recorded, this
    branch, a branch derived from one of theirs, or a branch that cannot be told), `elsewhere`
    (other branches that still exist), `gone` (every branch they name is known to be gone)."""

    applies: tuple[Plan, ...]
    elsewhere: tuple[Plan, ...] = ()
    gone: tuple[Plan, ...] = ()
    branch: str | None = None  # checked out now; None: detached, or no git here


def plan_branches(plan: Plan) -> frozenset[str]:
    """The branches a plan is scoped to; empty when a section recorded none (it applies
    everywhere: activated outside git, or on a detached HEAD)."""
    if any(not section.branch for section in plan.sections):
        return frozenset()
    return frozenset(section.branch for section in plan.sections)


def scope(project: Project, plans: Sequence[Plan]) -> Scope:
    """Split `plans` by the branch checked out in `project` (see `Scope`): the one filter of
    which plans apply, called from `invariants.plans_for_the_model`."""
    from ctxward.core.gitrefs import MAX_DERIVATION, Repository

    if not plans:
        return Scope(())
    repo = Repository(project.root)
    if not repo.found:
        return Scope(tuple(plans))
    head = repo.head_branch()
    lineage: set[str] = set()
    current = head
    for _ in range(MAX_DERIVATION + 1):  # this branch, and the branches it was made from
        if current is None or current in lineage:
            break
        lineage.add(current)
        current = repo.parent(current)
    applies: list[Plan] = []
    elsewhere: list[Plan] = []
    gone: list[Plan] = []
    for plan in plans:
        branches = plan_branches(plan)
        if not branches or branches & lineage:
            applies.append(plan)
        elif all(repo.exists(branch) is False for branch in branches):
            gone.append(plan)
        elif head is None:  # detached (a rebase, a bisect): which branch is unknown
            applies.append(plan)
        else:
            elsewhere.append(plan)
    return Scope(tuple(applies), tuple(elsewhere), tuple(gone), head)


def complete_branch_gone(project: Project, plans: Sequence[Plan]) -> str:
    """Complete each plan (its branches are gone) and return one line per plan saying so
    ('' for none). A plan that cannot be completed now is left for the next compaction."""
    if not plans:
        return ""
    from ctxward.core.render import render
    from ctxward.errors import CtxwardError

    done = []
    for plan in plans:
        try:
            complete(project, plan.slug)
        except (CtxwardError, OSError):
            continue
        done.append(plan)
    if not done:
        return ""
    return render(
        "invariants/plan_branch_gone.txt.j2",
        plans=[(plan.slug, sorted(plan_branches(plan))) for plan in done],
    )
