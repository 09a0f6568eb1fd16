"""One run per compaction however many wirings run the hook (events.once), and its markers'
housekeeping."""

from __future__ import annotations

from ctxward.core.project import Project
from ctxward.events.once import KEEP_SECONDS, first_run
from ctxward.hooktypes import HookEvent


def _event(project: Project, prompt_id: str) -> HookEvent:
    data = {"session_id": "s1", "prompt_id": prompt_id, "trigger": "auto"}
    return HookEvent(name="PreCompact", data=data, project=project)


def test_the_second_run_of_one_compaction_does_nothing_and_the_next_compaction_runs(project):
    bank = Project(project)
    assert first_run(_event(bank, "p1"))
    assert not first_run(_event(bank, "p1"))  # the other wiring, ~100 ms later
    assert first_run(_event(bank, "p2"))


def test_old_markers_go_when_housekeeping_is_due_and_nothing_else_does(project, aged_file):
    bank = Project(project)
    runs = bank.state_dir / "runs"
    old = aged_file(runs / "PreCompact-old", KEEP_SECONDS + 60)
    young = aged_file(runs / "PreCompact-young", KEEP_SECONDS - 60)
    foreign = aged_file(runs / "notes.txt.bak-x-y", KEEP_SECONDS + 60)  # not a marker's name
    swept = aged_file(bank.locks_dir / "swept", 0)  # a sweep just ran: not due
    assert first_run(_event(bank, "p1"))
    assert old.exists()

    aged_file(swept, 3600)  # due again
    assert first_run(_event(bank, "p2"))
    assert not old.exists()
    assert young.exists() and foreign.exists()
