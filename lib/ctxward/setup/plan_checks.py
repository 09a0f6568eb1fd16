"""Doctor's checks of the project's state: active plans, their branches, drift, the thresholds."""

from __future__ import annotations

from typing import Any

from ctxward.core.project import Project
from ctxward.errors import CtxwardError
from ctxward.setup.diagnosis import FAIL, INFO, OK, WARN, Check


def plan_checks(project: Project) -> list[Check]:
    from ctxward.subagents import watch

    reports: list[watch.Report] = []
    plans = watch.readable_plans(project, reports)
    checks = [
        Check(f"plan.{r.plan}.read", FAIL, f"plan {r.plan}: cannot be read", r.detail)
        for r in reports
    ]
    if not plans and not reports:
        return [Check("plans", INFO, "no active plans")]
    for plan in plans:
        drifts = watch.plan_drifts(project, plan)
        bad = [d for d in drifts if d.state not in ("same", "no-path")]
        if not bad:
            checks.append(
                Check(
                    f"plan.{plan.slug}.drift",
                    OK,
                    f"plan {plan.slug}: {len(drifts)} section(s) match their skills' frontmatter",
                )
            )
        for found in bad:
            checks.append(_drift_check(project, found))
        state = plan.payload_state()
        checks.append(
            Check(
                f"plan.{plan.slug}.payload",
                OK if state == "fresh" else WARN,
                f"plan {plan.slug}: payload {state}",
                "" if state == "fresh" else "PreCompact distills it again before a compaction",
                "" if state == "fresh" else "ctxward watch --once",
            )
        )
    checks.extend(_branch_checks(project, plans))
    return checks


def _branch_checks(project: Project, plans: list[Any]) -> list[Check]:
    """Issue 17 item 5: stale plans (every branch they name is gone) and plans of other branches,
    which the hooks do not inject here (`plans.scope`)."""
    from ctxward.invariants.plans import plan_branches, scope

    found = scope(project, plans)
    checks = [
        Check(
            f"plan.{plan.slug}.branch",
            WARN,
            f"plan {plan.slug}: stale, its branch {', '.join(sorted(plan_branches(plan)))} "
            "no longer exists",
            "not injected; the next compaction completes it (if trusted here)",
            f"ctxward plan complete {plan.slug} (or: ctxward plan clean)",
        )
        for plan in found.gone
    ]
    checks.extend(
        Check(
            f"plan.{plan.slug}.branch",
            INFO,
            f"plan {plan.slug}: scoped to {', '.join(sorted(plan_branches(plan)))}, not injected "
            f"on {found.branch}",
        )
        for plan in found.elsewhere
    )
    return checks


def _drift_check(project: Project, found: Any) -> Check:
    where = project.relative(found.skill_path) if found.skill_path else "?"
    ident = f"plan.{found.plan}.drift.{found.section}"
    if found.state == "changed":
        detail = f"{where}: +{len(found.added)} rule(s), -{len(found.removed)} rule(s)"
        return Check(
            ident,
            FAIL,
            f"plan {found.plan}: skill {found.section} changed since it was activated",
            detail,
            "ctxward watch --once (activates the skill again into the plan)",
        )
    return Check(
        ident,
        FAIL,
        f"plan {found.plan}: skill {found.section}: {found.state}",
        f"{where}: {found.problem}",
        f"restore {where}, or: ctxward activate SKILL --slug {found.plan}",
    )


def threshold_check(project: Project) -> tuple[Check, dict[str, Any]]:
    from ctxward.core.config import Config, load
    from ctxward.guard import thresholds

    settings: Config | None = None
    try:
        settings = load(project)
    except CtxwardError as exc:
        check = Check("config", FAIL, ".ctxward/config.yaml cannot be used", str(exc))
    else:
        where = settings.source or "defaults (no .ctxward/config.yaml)"
        check = Check("config", OK, f"config loads: {where}")
    capacity = thresholds.DEFAULT_CAPACITY_BYTES
    by_agent: dict[str, int] = {}
    source = None
    if settings is not None:
        capacity = settings.dispatch.capacity_bytes
        by_agent = dict(settings.dispatch.capacity_by_agent)
        source = settings.source
    return check, {
        "capacityBytes": capacity,
        "capacityByAgent": by_agent,
        "source": source,
        "tiers": thresholds.table(capacity),
    }
