"""`ctxward watch`: the handler decides, the callback acts; one real observer test (slow)."""

from __future__ import annotations

import gc
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from watchdog.events import (
    DirCreatedEvent,
    DirModifiedEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileOpenedEvent,
)

from ctxward.cli import cli
from ctxward.core.project import Project
from ctxward.invariants.read import load_plan
from ctxward.subagents import watch

RULES = ["alpha: never push to main", "alpha: cite file:line"]


@pytest.fixture(autouse=True)
def _no_thread_leaks():
    """Fail on a thread left running (watchdog's own test suite does the same)."""
    before = threading.active_count()
    yield
    gc.collect()
    assert threading.active_count() == before


@pytest.fixture
def skill(make_skill) -> Path:
    return make_skill("alpha", RULES)


@pytest.fixture
def plan(skill, activate_skill) -> Path:
    return activate_skill(skill, "feat").parent


def rewrite_skill(path: Path, rules: list[str], name: str = "alpha") -> None:
    bullets = "".join(f"  - {json.dumps(rule)}\n" for rule in rules)
    path.write_text(f"---\nname: {name}\ninvariants:\n{bullets}---\n\nbody\n", encoding="utf-8")


def rules_of(plan: Path) -> tuple[str, ...]:
    (section,) = load_plan(plan).sections
    return section.rules


def artifact(project: Path, name: str = "003-rd-001.md", text: str = "# RD doc\nbody\n") -> Path:
    path = project / ".ctxward" / "sub_agents" / "s1" / "artifacts" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# --- the handler decides ---------------------------------------------------------------------


@pytest.fixture
def seen(project):
    changes: list[watch.Change] = []
    layout = watch.Layout.of(Project(project))
    return changes, watch.ChangeFilter(lambda: layout, changes.append)


def test_an_atomic_write_of_invariants_is_a_plan_change(project, seen):
    changes, handler = seen
    folder = project / "docs" / "plans" / "feat"
    tmp = folder / ".invariants.md.ctxward-tmp-1-ab"
    handler.dispatch(FileCreatedEvent(str(tmp)))
    handler.dispatch(FileMovedEvent(str(tmp), str(folder / "invariants.md")))
    assert changes == [watch.Change("plan", folder / "invariants.md")]


def test_what_matters_and_what_does_not(project, seen, plan, skill):
    changes, _ = seen
    layout = watch.Layout.of(Project(project))  # now it knows the plan's skill file
    handler = watch.ChangeFilter(lambda: layout, changes.append)
    arts = project / ".ctxward" / "sub_agents" / "s1" / "artifacts"
    handler.dispatch(FileModifiedEvent(str(skill)))
    handler.dispatch(FileClosedEvent(str(arts / "003-rd-001.md")))
    handler.dispatch(FileCreatedEvent(str(arts / "003-rd-001.meta.json")))  # ctxward's own record
    handler.dispatch(FileModifiedEvent(str(plan / ".compaction-payload.md")))  # ctxward's output
    handler.dispatch(FileModifiedEvent(str(project / "README.md")))
    handler.dispatch(FileOpenedEvent(str(skill)))
    handler.dispatch(DirModifiedEvent(str(plan)))  # fires for every file written in it
    handler.dispatch(DirCreatedEvent(str(project / "docs" / "plans" / "next")))
    handler.dispatch(FileDeletedEvent(str(plan / "invariants.md").encode()))  # bytes paths too
    assert changes == [
        watch.Change("skill", skill),
        watch.Change("artifact", arts / "003-rd-001.md"),
        watch.Change("layout", project / "docs" / "plans" / "next"),
        watch.Change("plan", plan / "invariants.md"),
    ]


def test_a_skill_outside_the_skill_folders_is_watched_through_its_plan(project, activate_skill):
    outside = project / "docs" / "rules.md"
    outside.parent.mkdir(parents=True, exist_ok=True)
    rewrite_skill(outside, RULES)
    activate_skill(outside, "feat")
    layout = watch.Layout.of(Project(project))
    assert layout.classify(outside, False) == "skill"
    assert layout.watch_roots()[outside.parent] is False


# --- the callback acts -----------------------------------------------------------------------


def test_reconcile_distills_a_missing_payload_once(project, plan):
    reports = watch.reconcile(Project(project))
    assert [(r.action, r.plan, r.detail) for r in reports] == [("distilled", "feat", "missing")]
    assert (plan / ".compaction-payload.md").is_file()
    assert watch.reconcile(Project(project)) == []


def test_reconcile_reactivates_a_skill_whose_frontmatter_changed(project, plan, skill):
    watch.reconcile(Project(project))
    rewrite_skill(skill, [RULES[0], "alpha: sign the tag"])
    reports = watch.reconcile(Project(project))
    assert [(r.action, r.plan, r.skill) for r in reports] == [
        ("reactivated", "feat", "alpha"),
        ("distilled", "feat", ""),
    ]
    assert reports[0].added == ("alpha: sign the tag",)
    assert reports[0].removed == (RULES[1],)
    assert reports[0].path == ".claude/skills/alpha/SKILL.md"
    assert rules_of(plan) == (RULES[0], "alpha: sign the tag")
    assert load_plan(plan).payload_state() == "fresh"


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (lambda path: path.unlink(), "no such file"),
        (lambda path: path.write_text("---\nname: [\n---\n", encoding="utf-8"), "YAML"),
        (lambda path: rewrite_skill(path, RULES, name="beta"), "name is now 'beta'"),
    ],
)
def test_a_skill_that_cannot_be_used_is_a_problem_and_the_plan_keeps_its_rules(
    project, plan, skill, change, problem
):
    watch.reconcile(Project(project))
    before = (plan / "invariants.md").read_bytes()
    change(skill)
    reports = watch.reconcile(Project(project))
    assert [r.action for r in reports] == ["problem"]
    assert problem in reports[0].detail
    assert (plan / "invariants.md").read_bytes() == before


def test_reconcile_records_new_artifacts_only(project):
    path = artifact(project)
    artifact(project, "notes.txt")  # not <rid>-<role>-<idx>: not an artifact
    (reports,) = [watch.reconcile(Project(project))]
    assert [(r.action, r.path) for r in reports] == [("recorded", Project(project).relative(path))]
    meta = json.loads((path.parent / "003-rd-001.meta.json").read_text(encoding="utf-8"))
    assert (meta["rid"], meta["role"], meta["idx"], meta["status"]) == ("003", "rd", 1, "created")
    assert (meta["summary"], meta["batch"], meta["size"]) == ("RD doc", "003", 14)
    assert watch.reconcile(Project(project)) == []  # recorded once


def test_a_role_with_dashes_is_read_after_the_rid(project):
    path = artifact(project, "a85995de1c25d0350-general-purpose-002.md")
    (report,) = watch.reconcile(Project(project))
    meta = json.loads((path.parent / f"{path.stem}.meta.json").read_text(encoding="utf-8"))
    assert (report.action, meta["rid"], meta["role"], meta["idx"]) == (
        "recorded",
        "a85995de1c25d0350",
        "general-purpose",
        2,
    )


def test_apply_survives_files_that_vanished(project, plan, skill):
    watcher = watch.Watcher(Project(project))
    gone_artifact = project / ".ctxward" / "sub_agents" / "s1" / "artifacts" / "003-rd-009.md"
    gone_plan = project / "docs" / "plans" / "gone" / "invariants.md"
    reports = watcher.apply(
        [watch.Change("artifact", gone_artifact), watch.Change("plan", gone_plan)]
    )
    assert reports == []


def test_apply_a_skill_change(project, plan, skill):
    watcher = watch.Watcher(Project(project))
    watch.reconcile(Project(project))
    rewrite_skill(skill, [*RULES, "alpha: one more"])
    reports = watcher.apply([watch.Change("skill", skill)])
    assert [r.action for r in reports] == ["reactivated", "distilled"]
    assert rules_of(plan)[-1] == "alpha: one more"


def test_pump_debounces_a_burst_into_one_batch(project, plan):
    watcher = watch.Watcher(Project(project), quiet=0.05)
    path = plan / "invariants.md"
    for _ in range(5):
        watcher.handler.dispatch(FileModifiedEvent(str(path)))
    started = time.monotonic()
    reports = watcher.pump(timeout=1)
    assert [r.action for r in reports] == ["distilled"]
    assert time.monotonic() - started < 1
    assert watcher.pump(timeout=0.01) == []


# --- a real observer -------------------------------------------------------------------------


def wait_for(watcher: watch.Watcher, action: str, seconds: float = 5.0) -> list[watch.Report]:
    """Pump until a report with `action` arrives; every report seen so far comes back."""
    seen: list[watch.Report] = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        seen += watcher.pump(timeout=0.1)
        if any(report.action == action for report in seen):
            return seen
    pytest.fail(f"no {action!r} report within {seconds} s; got {seen}")


@pytest.mark.slow
def test_real_file_events(project, plan, skill):
    watcher = watch.Watcher(Project(project), quiet=0.05)
    try:
        assert [r.action for r in watcher.start()] == ["distilled"]
        assert plan.parent in watcher.watched  # docs/plans

        rewrite_skill(skill, [RULES[0], "alpha: watched"])
        reports = wait_for(watcher, "reactivated")
        assert rules_of(plan) == (RULES[0], "alpha: watched")
        assert load_plan(plan).payload_state() == "fresh"
        assert reports[0].added == ("alpha: watched",)

        # .ctxward/sub_agents does not exist yet: its parent is watched until it appears.
        path = artifact(project)
        wait_for(watcher, "recorded")
        assert (path.parent / "003-rd-001.meta.json").is_file()

        # A file that vanishes before the batch is applied is skipped, and watching goes on.
        gone = artifact(project, "003-qa-001.md")
        gone.unlink()
        with (plan / "invariants.md").open("a", encoding="utf-8") as handle:
            handle.write("- by hand\n")
        reports = wait_for(watcher, "distilled")
        assert all(report.action != "problem" for report in reports)
    finally:
        watcher.stop()


@pytest.mark.slow
def test_cli_watch_stops_cleanly_on_ctrl_c(project, plan):
    program = Path(sys.executable).parent / "ctxward"
    if not program.exists():
        pytest.skip("no ctxward console script next to this interpreter")
    child = subprocess.Popen(
        [str(program), "-C", str(project), "watch", "--debounce", "50"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # Ctrl-C as a terminal delivers it: a suite started in the background (`.ci/run &`)
        # hands its children SIGINT ignored, and Python then leaves it ignored.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    lines: list[str] = []
    try:
        assert child.stdout is not None
        deadline = time.monotonic() + 10
        while not any("distilled" in line for line in lines) and time.monotonic() < deadline:
            ready, _, _ = select.select([child.stdout], [], [], 0.1)
            if ready:
                lines.append(child.stdout.readline())
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=10)
    finally:
        if child.poll() is None:
            os.kill(child.pid, signal.SIGKILL)
            child.wait(timeout=5)
    out = "".join(lines) + out
    assert (child.returncode, err) == (0, "")
    assert out.startswith(f"ctxward watch: {project} (Ctrl-C to stop)\n")
    assert "feat: payload was missing; distilled from invariants.md" in out
    assert out.endswith("ctxward watch: stopped\n")


# --- the CLI ---------------------------------------------------------------------------------


def test_cli_watch_once(project, plan, skill):
    runner = CliRunner()
    first = runner.invoke(cli, ["-C", str(project), "watch", "--once"])
    assert first.exit_code == 0, first.output
    assert first.output == (
        "feat: payload was missing; distilled from invariants.md: "
        "docs/plans/feat/.compaction-payload.md\n"
        "ctxward watch --once: 1 change made, 0 problems left\n"
    )
    again = runner.invoke(cli, ["-C", str(project), "watch", "--once"])
    assert again.output == f"ctxward watch --once: everything is up to date in {project}\n"
    rewrite_skill(skill, [RULES[0]])
    changed = runner.invoke(cli, ["-C", str(project), "watch", "--once"])
    assert changed.output.splitlines()[:2] == [
        "alpha activated again into plan feat: the rules in .claude/skills/alpha/SKILL.md "
        "differ from the plan's (+0 rules, -1 rule)",
        f"    - {RULES[1]}",
    ]


def test_cli_watch_once_json_and_exit_1_on_a_problem(project, plan, skill):
    skill.unlink()
    result = CliRunner().invoke(cli, ["-C", str(project), "watch", "--once", "--json"])
    assert result.exit_code == 1
    reports = json.loads(result.stdout)
    assert [r["action"] for r in reports] == ["problem", "distilled"]
    assert reports[0]["plan"] == "feat" and "no such file" in reports[0]["detail"]
