"""Seed 000's remaining memory-bank rules (issue 16), each test citing its section."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

from click.testing import CliRunner

from ctxward.bank import active, learnings, progress, xref
from ctxward.bank.promote import promote
from ctxward.bank.sprint import close_sprint
from ctxward.cli import cli
from ctxward.core.project import Project

NOW = datetime(2026, 7, 1, 9, 0, tzinfo=timezone.utc)


def entry(agent: str, summary: str, **extra: object) -> dict[str, object]:
    return {
        "agent": agent,
        "phase": "2",
        "date": "2026-07-01",
        "summary": summary,
        "status": "complete",
        **extra,
    }


def write(root: Path, name: str, *entries: dict[str, object]) -> str:
    path = root / "in" / name
    path.parent.mkdir(exist_ok=True)
    body = entries[0] if len(entries) == 1 else list(entries)
    path.write_text(json.dumps({"subtask_summary": body}), encoding="utf-8")
    return str(path)


def invoke(root: Path, *args: str):
    return CliRunner().invoke(cli, ["-C", str(root), *args])


# -- §9: entries with active blockers are skipped ------------------------------------------------


def test_section_9_a_complete_entry_with_active_blockers_is_skipped_with_a_line(
    project: Path,
) -> None:
    path = write(
        project,
        "p.json",
        entry("hermes", "Added auth endpoint", blockers="waiting on DBA approval"),
        entry("demeter", "Renamed helper module"),
    )
    result = invoke(project, "bank", "promote", path, "--phase", "2")
    assert result.exit_code == 0, result.output
    assert (
        "  - in/p.json [hermes]: status complete but blockers still active (waiting on DBA "
        "approval): skipped until they are resolved (seed 000 §9)\n" in result.stdout
    )
    bank = Project(project).bank_dir
    rows = list(active.parse((bank / active.FILE).read_text("utf-8")).rows())
    assert [r.agent for r in rows] == ["demeter"]
    index = xref.parse_index((bank / "_xref" / "index.md").read_text("utf-8"))
    assert index.links == []  # never linked as "unblocked"
    assert [w.blocker for w in index.waiting] == ["waiting on DBA approval"]


def test_section_9_blockers_that_say_they_are_over_do_not_stop_a_promotion(
    project: Path,
) -> None:
    resolved = [
        "was waiting on creds",
        "none",
        ["CI runner down (resolved)"],
        [{"what": "DB credentials", "resolved": True}],
    ]
    paths = [
        write(project, f"{i}.json", entry(f"agent{i}", f"Renamed helper {i}", blockers=value))
        for i, value in enumerate(resolved)
    ]
    done = promote(Project(project), paths, phase="2", now=NOW)
    assert len(done.promoted) == len(resolved) and done.skipped == []


# -- §10: DISC with DISCARD is deleted, not archived --------------------------------------------


def test_section_10_a_discarded_discussion_is_removed_from_tmp_and_never_archived(
    project: Path,
) -> None:
    bank = Project(project)
    tmp = bank.bank_dir / ".tmp"
    tmp.mkdir(parents=True)
    disc = tmp / "DISC-auth-storage.md"
    disc.write_text(
        "# DISC\n\n```yaml\nsubtask_summary:\n  type: DISC\n  agent: athena\n  phase: 2\n"
        "  date: 2026-07-01\n  verdict: DISCARD\n  summary: Store tokens in localStorage\n```\n",
        encoding="utf-8",
    )
    kept = tmp / "DISC-open.md"
    kept.write_text(
        "# DISC\n\n```yaml\nsubtask_summary:\n  type: DISC\n  agent: athena\n  phase: 2\n"
        "  verdict: REQUEST CHANGES\n  summary: Cookie scope\n```\n",
        encoding="utf-8",
    )
    result = invoke(project, "bank", "promote", "--phase", "2")
    assert result.exit_code == 0, result.output
    assert "discarded, not archived (seed 000 §10: DISC with DISCARD)" in result.stdout
    assert "  - .ctxward/memory-bank/.tmp/DISC-auth-storage.md [athena]\n" in result.stdout
    assert not disc.exists() and kept.exists()  # REQUEST CHANGES: flagged, left in place
    log = bank.bank_dir / progress.FILE
    assert not log.exists() or "localStorage" not in log.read_text("utf-8")


# -- §17: a progress-log heading is never appended twice ----------------------------------------


def test_section_17_an_existing_heading_receives_the_entries_and_is_kept(project: Path) -> None:
    bank = Project(project)
    log = bank.bank_dir / progress.FILE
    log.parent.mkdir(parents=True)
    by_hand = "# Progress Log\n\n### 2026-07-01 — Phase 2: hermes\nnotes written by hand\n"
    log.write_text(by_hand, encoding="utf-8")
    promote(bank, [write(project, "a.json", entry("hermes", "Added a", title="A"))], phase="2")
    first = log.read_text("utf-8")
    assert first.startswith(by_hand.rstrip("\n"))  # what was there is kept, the item follows
    promote(bank, [write(project, "b.json", entry("hermes", "Added b", title="B"))], phase="2")
    text = log.read_text("utf-8")
    assert text.count("### 2026-07-01 — Phase 2: hermes") == 1
    assert text.startswith(first.rstrip("\n"))  # appended to, never rewritten
    assert "Added a" in text and "Added b" in text


# -- §15: learnings promoted, then removed, at sprint close -------------------------------------


def test_section_15_learnings_are_promoted_as_facts_then_deleted_at_sprint_close(
    project: Path,
) -> None:
    bank = Project(project)
    promote(bank, [write(project, "a.json", entry("hermes", "Added a"))], phase="2", now=NOW)
    folder = bank.bank_dir.parent / "learnings" / "auth-jwt"
    folder.mkdir(parents=True)
    source = folder / "learnings.md"
    source.write_text(
        "# Learnings\n\n- Refresh tokens rotate on every use.\n"
        "- Tests need the fake clock\n  for expiry.\n\nHashed tokens cannot be read back.\n",
        encoding="utf-8",
    )
    dry = close_sprint(bank, now=NOW, dry_run=True)
    assert dry.learnings[0]["promoted"] == 3 and source.exists()
    result = invoke(project, "bank", "close-sprint")
    assert result.exit_code == 0, result.output
    assert (
        "learnings .ctxward/learnings/auth-jwt/learnings.md: 3 facts promoted to "
        "03-learnings.md, deleted (seed 000 §15)" in result.stdout
    )
    assert not source.exists()
    facts = (bank.bank_dir / learnings.FILE).read_text("utf-8")
    for fact in (
        "- Refresh tokens rotate on every use.",
        "- Tests need the fake clock for expiry.",
        "- Hashed tokens cannot be read back.",
    ):
        assert fact in facts
    # a fact the bank holds already is not promoted twice
    source.write_text("- refresh tokens  rotate on every use.\n- New fact.\n", encoding="utf-8")
    again = close_sprint(bank, now=NOW)
    assert again.learnings == [
        {
            "feature": "auth-jwt",
            "file": ".ctxward/learnings/auth-jwt/learnings.md",
            "promoted": 1,
            "known": 1,
        }
    ]
    text = (bank.bank_dir / learnings.FILE).read_text("utf-8")
    assert text.startswith(facts.rstrip("\n")) and text.count("rotate on every use") == 1
    assert not source.exists()


# -- seed 004 G9: forcedAt is recorded in the bank log ------------------------------------------


def test_g9_forced_at_is_recorded_in_the_bank_log(project: Path) -> None:
    from ctxward.guard.thresholds import HARD_REJECT

    size = HARD_REJECT.threshold(262_144) + 10
    prompt = project / "prompt.md"
    prompt.write_text("x" * size, encoding="utf-8")
    bank = Project(project)
    promote(bank, [write(project, "a.json", entry("hermes", "Added a"))], phase="2", now=NOW)
    log = bank.bank_dir / progress.FILE
    before = log.read_text("utf-8")
    runs = [
        invoke(project, "dispatch", "check", str(prompt), "--force", "--json") for _ in range(2)
    ]
    stamps = [json.loads(r.stdout)["forcedAt"] for r in runs]
    assert all(
        json.loads(r.stdout)["recordedIn"] == ".ctxward/memory-bank/02-progress-log.md"
        for r in runs
    )
    text = log.read_text("utf-8")
    assert text.startswith(before.rstrip("\n"))
    assert text.count("## Forced Dispatches") == 1
    for stamp in stamps:
        assert f"| {stamp} | {size} | hard-reject | 262144 | general-purpose |" in text
    assert text.count("| hard-reject |") == 2
    assert "xxxxxxxx" not in text  # the prompt's hash, never its text
    # the log still parses, and a later promotion keeps the section
    progress.parse(text)
    promote(bank, [write(project, "b.json", entry("hermes", "Added b"))], phase="2", now=NOW)
    assert log.read_text("utf-8").count("| hard-reject |") == 2
