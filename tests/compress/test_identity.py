"""Issue 16: a memory-bank entry is never silently replaced (bank.identity).

An entry is the same entry only when its own identity says so (an explicit id or subtask title,
else its content hash); seed 000 §17's (date, phase, agent) key alone made three subtasks of one
agent in one phase on one day replace each other.
"""

from __future__ import annotations

import json
import os
import time
import traceback
from datetime import datetime, timezone
from pathlib import Path

import pytest
from click.testing import CliRunner

from ctxward.bank import active, archive, progress
from ctxward.bank.promote import promote
from ctxward.cli import cli
from ctxward.compress import identity
from ctxward.core.project import Project

NOW = datetime(2026, 7, 1, 9, 0, tzinfo=timezone.utc)
SUBTASKS = [
    ("Auth endpoint", "Added POST /auth/login endpoint with JWT rotation"),
    ("Refresh table", "Created new table refresh_tokens in a schema migration"),
    ("Login form", "Renamed helper module for the login form"),
]


def entry(title: str | None, summary: str, agent: str = "hermes", **extra: str) -> str:
    fields: dict[str, object] = {
        "agent": agent,
        "phase": "2",
        "date": "2026-07-01",
        "summary": summary,
        "files_changed": [f"src/{agent.lower()}.py"],
        "status": "complete",
        **extra,
    }
    if title is not None:
        fields["title"] = title
    return json.dumps({"subtask_summary": fields})


def write(root: Path, name: str, text: str) -> str:
    path = root / "in" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return str(path)


def rows(bank: Project) -> list[active.Row]:
    return list(active.parse((bank.bank_dir / active.FILE).read_text("utf-8")).rows())


def log_text(bank: Project) -> str:
    return (bank.bank_dir / progress.FILE).read_text("utf-8")


def snapshot(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != "compress.lock"
    }


def test_three_subtasks_of_one_agent_promoted_one_per_call_are_all_kept(project: Path) -> None:
    bank = Project(project)
    for i, (title, summary) in enumerate(SUBTASKS):
        done = promote(bank, [write(project, f"{i}.json", entry(title, summary))], phase="2")
        assert [p.action for p in done.promoted] == ["added"]
    kept = rows(bank)
    assert sorted(r.title for r in kept) == sorted(t for t, _ in SUBTASKS)
    assert {identity.split(r.key)[:3] for r in kept} == {("2026-07-01", "2", "hermes")}
    log = log_text(bank)
    assert log.count("### 2026-07-01 — Phase 2: hermes\n") == 1  # seed 000 §17: one heading
    assert log.count('kind="summary"') == 3
    for _, summary in SUBTASKS:
        assert summary in log
    zz = (bank.bank_dir / ".tmp" / "ZZ-phase2-context.md").read_text("utf-8")
    assert all(title in zz for title, _ in SUBTASKS)


def test_three_untitled_texts_of_one_agent_are_three_entries(project: Path) -> None:
    bank = Project(project)
    for i, (_, summary) in enumerate(SUBTASKS):
        promote(bank, [write(project, f"{i}.json", entry(None, summary))], phase="2")
    assert len(rows(bank)) == 3
    assert all(r.key.split("|")[3].startswith("h:") for r in rows(bank))


@pytest.mark.slow  # a heavy variant: the slow stage (CI) runs it
def test_twelve_concurrent_promotions_of_one_agent_keep_twelve_entries(project: Path) -> None:
    paths = [
        write(project, f"e{i}.json", entry(f"Subtask {i}", f"Renamed helper module {i}"))
        for i in range(12)
    ]
    go = project / "go"
    pids = []
    for path in paths:
        pid = os.fork()
        if pid == 0:
            try:
                while not go.exists():
                    time.sleep(0.001)
                promote(Project(project), [path], phase="2", now=NOW)
            except BaseException:  # noqa: BLE001
                (project / f"error-{os.getpid()}.txt").write_text(traceback.format_exc(), "utf-8")
                os._exit(1)
            os._exit(0)
        pids.append(pid)
    go.write_text("go", encoding="utf-8")
    for pid in pids:
        _, status = os.waitpid(pid, 0)
        errors = [p.read_text() for p in project.glob("error-*.txt")]
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, errors
    bank = Project(project)
    assert sorted(r.title for r in rows(bank)) == sorted(f"Subtask {i}" for i in range(12))
    log = log_text(bank)
    assert log.count("### 2026-07-01 — Phase 2: hermes\n") == 1
    assert log.count('kind="summary"') == 12
    assert not (bank.bank_dir / ".txn").exists()


def test_the_same_entry_promoted_twice_changes_no_byte(project: Path) -> None:
    bank = Project(project)
    path = write(project, "a.json", entry("Auth endpoint", SUBTASKS[0][1]))
    promote(bank, [path], phase="2", now=NOW)
    before = snapshot(bank.bank_dir)
    again = promote(bank, [path], phase="2", now=datetime(2026, 8, 1, tzinfo=timezone.utc))
    assert again.promoted == [] and again.unchanged == 1 and again.written == []
    assert snapshot(bank.bank_dir) == before


def test_an_update_of_the_same_subtask_archives_the_old_version(project: Path) -> None:
    bank = Project(project)
    first = promote(
        bank, [write(project, "a.json", entry("Auth endpoint", "Added auth endpoint"))], phase="2"
    )
    old_hash = first.promoted[0].hash
    old_row = rows(bank)[0]
    result = CliRunner().invoke(
        cli,
        [
            "-C",
            str(project),
            "bank",
            "promote",
            write(project, "b.json", entry("Auth endpoint", SUBTASKS[0][1])),
            "--phase",
            "2",
        ],
    )
    assert result.exit_code == 0, result.output
    new_hash = rows(bank)[0].hash
    assert new_hash != old_hash
    line = next(x for x in result.stdout.splitlines() if x.startswith("  updated "))
    assert f"(was {old_hash}, now {new_hash}; the earlier version is archived)" in line
    assert "summary 2026-07-01|2|hermes|t:auth endpoint" in line
    kept = rows(bank)
    assert [(r.title, r.hash) for r in kept] == [("Auth endpoint", new_hash)]
    month = datetime.now(timezone.utc).strftime("%Y-%m")
    stored = (bank.bank_dir / archive.relpath(month)).read_text("utf-8")
    assert f'hash="{old_hash}"' in stored and 'action="updated"' in stored
    assert all(line in stored for line in old_row.lines)
    log = log_text(bank)
    assert "Added auth endpoint" in log and SUBTASKS[0][1] in log  # both versions
    assert f'updates="{old_hash}"' in log
    assert log.count("### 2026-07-01 — Phase 2: hermes\n") == 1


def test_an_explicit_id_is_the_identity_before_the_title(project: Path) -> None:
    bank = Project(project)
    promote(bank, [write(project, "a.json", entry("One", "Added a", id="T-7"))], phase="2")
    done = promote(bank, [write(project, "b.json", entry("Two", "Added b", id="T-7"))], phase="2")
    assert [p.action for p in done.promoted] == ["updated"]
    assert [r.key.split("|")[3] for r in rows(bank)] == ["id:t-7"]


def test_agent_case_is_kept_and_folded_only_for_a_known_agent(project: Path) -> None:
    bank = Project(project)
    promote(bank, [write(project, "a.json", entry("Task", "Added a", agent="Hermes"))], phase="2")
    same = promote(
        bank, [write(project, "b.json", entry("Task", "Added b", agent="hermes"))], phase="2"
    )
    assert [p.action for p in same.promoted] == ["updated"]  # Hermes is a known agent
    promote(bank, [write(project, "c.json", entry("Task", "Added c", agent="Zork"))], phase="2")
    other = promote(
        bank, [write(project, "d.json", entry("Task", "Added d", agent="zork"))], phase="2"
    )
    assert [p.action for p in other.promoted] == ["added"]  # two spellings of an unknown name
    assert sorted(r.agent for r in rows(bank)) == ["Zork", "hermes", "zork"]


def test_a_bank_written_before_identities_keeps_its_entries(project: Path) -> None:
    """A row keyed `date|phase|agent` (before issue 16) with the same hash is unchanged."""
    bank = Project(project)
    path = write(project, "a.json", entry(None, SUBTASKS[2][1]))
    promote(bank, [path], phase="2", now=NOW)
    target = bank.bank_dir / active.FILE
    text = target.read_text("utf-8")
    (row,) = rows(bank)
    target.write_text(text.replace(row.key, "2026-07-01|2|hermes"), encoding="utf-8")
    again = promote(bank, [path], phase="2", now=NOW)
    assert again.promoted == [] and again.unchanged == 1


def test_status_and_context_show_entries_per_phase_and_which_were_updated(project: Path) -> None:
    bank = Project(project)
    for i, (title, summary) in enumerate(SUBTASKS[:2]):
        promote(bank, [write(project, f"{i}.json", entry(title, summary))], phase="2")
    old = next(r for r in rows(bank) if r.title == "Auth endpoint").hash
    promote(
        bank, [write(project, "u.json", entry("Auth endpoint", "Added auth endpoint"))], phase="2"
    )
    new = next(r for r in rows(bank) if r.title == "Auth endpoint").hash

    def run(*args: str):
        return CliRunner().invoke(cli, ["-C", str(project), "bank", *args])

    status = json.loads(run("status", "--json").stdout)
    (phase,) = status["phases"]
    assert phase["entries"] == 2 and status["updated"] == 1
    assert phase["updated"] == [
        {"title": "Auth endpoint", "agent": "hermes", "hash": new, "previous": old}
    ]
    text = run("status").stdout
    assert (
        f"  updated in phase 2: Auth endpoint [hermes] (was {old}, now {new}; "
        "the earlier version is in _notes/archive/)" in text
    )
    data = json.loads(run("context", "--phase", "2", "--json").stdout)
    assert data["entries"] == {"2": 2}
    assert [(u["title"], u["previous"], u["hash"]) for u in data["updated"]] == [
        ("Auth endpoint", old, new)
    ]
    shown = run("context", "--phase", "2")
    assert shown.stdout.startswith("## Compressed Context (Phase 2 → Phase 3)")
    assert (
        f"- Entries: 2 (1 updated: Auth endpoint [hermes] was {old}, now {new})\n" in shown.stdout
    )
