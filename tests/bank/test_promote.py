"""`bank promote`: the files it writes, idempotency (seed 000 §17), staged entries, safety."""

from __future__ import annotations

import json
import os
import random
import string
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest
from click.testing import CliRunner

from ctxward.bank import active, progress
from ctxward.bank.promote import promote
from ctxward.cli import cli
from ctxward.compress import engine as compress
from ctxward.compress import scoring, staging
from ctxward.core.project import Project

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
CRITICAL = "Created new table refresh_tokens in a schema migration"
HIGH = "Added auth endpoint"
MEDIUM = "Renamed helper module"
LOW = "Fixed typo in README"


def entry(agent: str, summary: str, phase: str = "1", **extra: str) -> str:
    fields = {
        "agent": agent,
        "phase": phase,
        "date": "2026-01-02",
        "summary": summary,
        "files_changed": [f"src/{agent}.py"],
        "status": "complete",
        **extra,
    }
    return json.dumps({"subtask_summary": fields})


@pytest.fixture
def write(project: Path):
    def make(name: str, *entries: str) -> str:
        path = project / "in" / name
        path.parent.mkdir(exist_ok=True)
        if len(entries) == 1:
            path.write_text(entries[0], encoding="utf-8")
        else:
            items = [json.loads(e)["subtask_summary"] for e in entries]
            path.write_text(json.dumps({"subtask_summary": items}), encoding="utf-8")
        return str(path)

    return make


@pytest.fixture
def invoke(project: Path):
    def run(*args: str):
        return CliRunner().invoke(cli, ["-C", str(project), *args])

    return run


def bank_files(project: Path) -> dict[str, bytes]:
    bank = project / ".ctxward" / "memory-bank"
    return {
        p.relative_to(bank).as_posix(): p.read_bytes()
        for p in sorted(bank.rglob("*"))
        if p.is_file() and p.name != "compress.lock"
    }


def fake_token(seed: int = 7) -> str:
    rng = random.Random(seed)
    return (
        "gh" + "p_" + "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(36))
    )


def test_one_promotion_writes_every_file_and_prints_the_seed_line(write, invoke, project) -> None:
    path = write(
        "phase1.json",
        entry("hermes", CRITICAL),
        entry("aphrodite", HIGH),
        entry("demeter", MEDIUM),
        entry("prometheus", LOW),
    )
    result = invoke("bank", "promote", path, "--phase", "1", "--to", "demeter")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert (
        lines[0]
        == "Compression complete: 4 entries compressed (1 CRITICAL, 1 HIGH), 1 cross-ref added"
    )
    assert lines[1].startswith(
        "  added CRITICAL 0.81 summary 2026-01-02|1|hermes (expanded, 3 lines)"
    )
    assert lines[-1] == "next phase's context: .ctxward/memory-bank/.tmp/ZZ-phase1-context.md"
    files = bank_files(project)
    assert set(files) == {
        "01-active-context.md",
        "02-progress-log.md",
        ".tmp/ZZ-phase1-context.md",
        "_xref/index.md",
        "_xref/_next_id.json",
    }
    context = files["01-active-context.md"].decode()
    assert context.startswith("# Active Context\n\n## Completed Phases\n")
    doc = active.parse(context)
    rows = list(doc.rows())
    assert [(r.agent, r.band, r.mode, len(r.lines)) for r in rows] == [
        ("hermes", "CRITICAL", "expanded", 3),
        ("aphrodite", "HIGH", "expanded", 2),
        ("demeter", "MEDIUM", "standard", 1),
        ("prometheus", "LOW", "aggressive", 1),
    ]
    assert rows[3].lines == ["[prometheus] — src/prometheus.py"]
    assert "- **CRITICAL 0.81** [hermes] What changed: Created new table refresh_tokens" in context
    log = files["02-progress-log.md"].decode()
    assert log.startswith("# Progress Log\n\n### 2026-01-02 — Phase 1: hermes\n")
    assert log.count("### 2026-01-02 — Phase 1: ") == 4
    zz = files[".tmp/ZZ-phase1-context.md"].decode()
    for heading in (
        "# Phase 1 → Phase 2 Context",
        "**From:** @hermes, @aphrodite, @demeter, @prometheus (Phase 1)",
        "**To:** @demeter (Phase 2)",
        "## Budget\n- Allocated: 12 lines\n- Used: 6.5 lines",
        "### CRITICAL (expanded)\n\n"
        "**Entry:** Created new table refresh_tokens in a schema migration\n",
        "**Agent:** hermes | **Score:** 0.81\n**What changed:** Created new table",
        "**Gotcha:** ",
        "### HIGH (2-line)",
        "### STANDARD (1-line)\n\n| Date | Agent | Summary | Status |",
        "| 2026-01-02 | demeter | Renamed helper module | complete |",
        "## Cross-References\n\n| ID | Type | Name | File |",
        "| M0001 | migration | refresh_tokens table | src/hermes.py |",
    ):
        assert heading in zz, heading


def test_rerunning_the_same_promotion_changes_no_byte(write, project, snapshot) -> None:
    path = write("p.json", entry("hermes", CRITICAL), entry("demeter", MEDIUM))
    bank = Project(project)
    promote(bank, [path], phase="1", now=NOW)
    before = snapshot(bank.bank_dir)
    later = datetime(2026, 3, 4, tzinfo=timezone.utc)
    again = promote(bank, [path], phase="1", now=later)
    assert again.promoted == [] and again.unchanged == 2 and again.written == []
    assert again.confirmation() == (
        "Compression complete: 0 entries compressed (0 CRITICAL, 0 HIGH), 0 cross-refs added"
    )
    assert snapshot(bank.bank_dir) == before  # same bytes, same inodes, same mtimes


def test_same_agent_phase_and_day_with_new_content_is_another_entry(write, project) -> None:
    # Issue 16: this test used to assert that the second text replaced the first in place
    # (seed 000 §17's "same key, different hash → overwrite"); that silently lost a subtask.
    # Without an id or a title of its own, an entry is its content: both are kept.
    bank = Project(project)
    promote(bank, [write("a.json", entry("hermes", MEDIUM))], phase="1", now=NOW)
    result = promote(bank, [write("b.json", entry("hermes", CRITICAL))], phase="1", now=NOW)
    assert [(p.action, p.band) for p in result.promoted] == [("added", "CRITICAL")]
    doc = active.parse((bank.bank_dir / active.FILE).read_text("utf-8"))
    assert sorted(r.band for r in doc.rows()) == ["CRITICAL", "MEDIUM"]
    log = (bank.bank_dir / progress.FILE).read_text("utf-8")
    assert log.count("### 2026-01-02 — Phase 1: hermes") == 1
    assert log.count('kind="summary"') == 2 and "Created new table" in log
    assert "Renamed helper" in log
    zz = (bank.bank_dir / ".tmp" / "ZZ-phase1-context.md").read_text("utf-8")
    assert "CRITICAL (expanded)" in zz and "Renamed" in zz


def test_review_lines_and_headings_are_never_duplicated(write, project) -> None:
    bank = Project(project)
    log_path = bank.bank_dir / progress.FILE
    log_path.parent.mkdir(parents=True)
    log_path.write_text(
        "# Progress Log\n\nNotes by hand.\n\n### 2026-01-02 — Phase 1: themis\nwritten by hand\n",
        encoding="utf-8",
    )
    review = entry("themis", "Reviewed auth", type="REVIEW", verdict="APPROVED", coverage="85%")
    impl = entry("hermes", HIGH, type="IMPL")
    for _ in range(2):
        promote(bank, [write("r.json", review), write("i.json", impl)], phase="1", now=NOW)
    text = log_path.read_text("utf-8")
    assert text.count("### 2026-01-02 — Phase 1: themis") == 1
    assert text.count("**Review:**") == 1
    assert "**Review:** APPROVED (themis) · status: complete · coverage: 85%" in text
    assert "Notes by hand.\n" in text and "written by hand\n" in text
    assert text.count("### 2026-01-02 — Phase 1: hermes") == 1 and "- IMPL · HIGH" in text
    # IMPL and REVIEW go to the log only, not to Completed Phases
    assert list(active.parse((bank.bank_dir / active.FILE).read_text("utf-8")).rows()) == []
    # seed 000 §17: a **Review:** line in the section already → skip (it was replaced in place
    # before issue 16); the skip is said, and the line is still there once
    changed = entry("themis", "Reviewed auth again", type="REVIEW", verdict="APPROVED")
    result = promote(bank, [write("r.json", changed)], phase="1", now=NOW)
    assert result.promoted == []
    assert [s.reason for s in result.skipped] == [
        "2026-01-02 — Phase 1: themis holds a **Review:** line already "
        "(seed 000 §17: skip if the line exists); left as it is"
    ]
    assert log_path.read_text("utf-8") == text


def test_zz_files_are_last_write_wins_per_phase(write, project) -> None:
    bank = Project(project)
    first = write("a.json", entry("hermes", HIGH, phase="2"))
    promote(bank, [first], phase="2", now=NOW, receiver="themis")
    promote(bank, [write("b.json", entry("demeter", MEDIUM, phase="2"))], phase="2", now=NOW)
    zz = (bank.bank_dir / ".tmp" / "ZZ-phase2-context.md").read_text("utf-8")
    assert zz.startswith("# Phase 2 → Phase 3 Context\n")
    assert "@hermes" in zz and "@demeter" in zz  # the whole phase, not only the last call
    assert "**To:** the next agent (Phase 3)" in zz


def test_staged_entries_are_promoted_and_consumed(project) -> None:
    bank = Project(project)
    tables = scoring.load_tables()
    for agent, text in (("hermes", CRITICAL), ("demeter", MEDIUM)):
        run = compress.compress_text(entry(agent, text), tables, project=bank)
        staging.stage(bank, run.results[0])
    other = compress.compress_text(entry("zeus", HIGH, phase="3"), tables, project=bank)
    staging.stage(bank, other.results[0])
    tmp = bank.bank_dir / ".tmp"
    (tmp / "notes.txt").write_text("mine\n", encoding="utf-8")
    blocked = json.dumps(
        {
            "subtask_summary": {
                "agent": "aphrodite",
                "phase": 1,
                "summary": "UI",
                "status": "blocked",
            }
        }
    )
    (tmp / "IMPL-phase1-aphrodite.md").write_text(f"# IMPL\n\n```json\n{blocked}\n```\n", "utf-8")
    staged = sorted(p.name for p in tmp.iterdir())
    result = promote(bank, phase="1", now=NOW)
    assert sorted(p.label for p in result.promoted) == [
        "2026-01-02|1|demeter",
        "2026-01-02|1|hermes",
    ]
    assert result.unrecognized == [".ctxward/memory-bank/.tmp/notes.txt"]
    assert result.other_phases == 1
    assert [s.reason for s in result.skipped] == ["status blocked: not compressed (seed 000 §10)"]
    left = sorted(p.name for p in tmp.iterdir())
    assert "notes.txt" in left and "IMPL-phase1-aphrodite.md" in left
    assert any(name.startswith("L1-2026-01-02-phase-3-zeus-") for name in left)
    consumed = sorted(set(staged) - set(left))
    assert [name.rsplit("-", 1)[0] for name in consumed] == [
        "L1-2026-01-02-phase-1-demeter",
        "L1-2026-01-02-phase-1-hermes",
    ]
    log = (bank.bank_dir / progress.FILE).read_text("utf-8")
    assert "- Full text: .ctxward/offload/" in log  # the original is on disk in full
    index = (bank.bank_dir / "_xref" / "index.md").read_text("utf-8")
    assert "| 2026-01-02 — Phase 1: aphrodite | status blocked | P1 |" in index
    again = promote(bank, phase="1", now=NOW)
    assert again.promoted == [] and again.written == []


def test_a_staged_entry_named_through_dot_dot_is_consumed(project) -> None:
    """`bank promote ../.ctxward/memory-bank/.tmp/x.json` from a subfolder: the entry is
    promoted and removed from .tmp/ (it was a traceback: the `..` path is not a bank name)."""
    bank = Project(project).bank_dir
    (bank / ".tmp").mkdir(parents=True)
    (bank / ".tmp" / "phase1.json").write_text(entry("hermes", MEDIUM), encoding="utf-8")
    (project / "sub").mkdir()
    spelled = project / "sub" / ".." / ".ctxward" / "memory-bank" / ".tmp" / "phase1.json"
    result = promote(Project(project), [str(spelled)], phase="1", now=NOW)
    assert [p.label for p in result.promoted] == ["2026-01-02|1|hermes"]
    assert ".tmp/phase1.json" in result.written
    assert not (bank / ".tmp" / "phase1.json").exists()


def test_the_preflight_refuses_and_partial_is_flagged(write, project) -> None:
    bank = Project(project)
    entries = [
        entry("hermes", HIGH, status="in_progress"),
        entry("themis", "Review", type="REVIEW", verdict="NEEDS_REVISION"),
        entry("zeus", "Auth strategy", type="ADR"),
        entry("demeter", LOW, status="partial"),
    ]
    result = promote(bank, [write("p.json", *entries)], phase="1", now=NOW)
    reasons = sorted(s.reason.split(":")[0] for s in result.skipped)
    assert reasons == ["ADRs are permanent", "review verdict NEEDS_REVISION", "status in progress"]
    assert [(p.label, p.band) for p in result.promoted] == [("2026-01-02|1|demeter", "MEDIUM")]
    context = (bank.bank_dir / active.FILE).read_text("utf-8")
    assert "[demeter] ⚠️ partial" in context and 'partial="yes"' in context


def test_everything_written_is_scrubbed(write, project) -> None:
    token = fake_token()
    bank = Project(project)
    secret = entry("hermes", f"Rotated the deploy token {token} for auth; new table keys in schema")
    review = (
        "# Review\n\n```yaml\nsubtask_summary:\n  type: REVIEW\n  agent: themis\n  phase: 1\n"
        "  verdict: APPROVED\n  summary: ok\n  status: complete\n```\n\n## Decision\n"
        f"Keep api_key={token} out of the repo\n"
    )
    promote(bank, [write("s.json", secret), write("REVIEW.md", review)], phase="1", now=NOW)
    for root in (bank.bank_dir, project / ".ctxward" / "offload"):
        for path in root.rglob("*"):
            if path.is_file():
                assert token not in path.read_text("utf-8"), path
    assert "[REDACTED:" in (bank.bank_dir / progress.FILE).read_text("utf-8")


def test_adrs_in_notes_are_never_touched(write, invoke, project, snapshot) -> None:
    notes = project / ".ctxward" / "memory-bank" / "_notes"
    notes.mkdir(parents=True)
    (notes / "ADR-auth-strategy.md").write_text("# ADR\n\nRotate tokens.\n", encoding="utf-8")
    (notes / "old.tmp").write_text("an ADR draft\n", encoding="utf-8")
    os.utime(notes / "old.tmp", (time.time() - 3600, time.time() - 3600))
    before = snapshot(notes)
    config = project / ".ctxward" / "config.yaml"
    config.write_text("bank:\n  total_budget: 10\n", encoding="utf-8")
    many = [entry(f"a{i}", LOW) for i in range(30)]
    assert invoke("bank", "promote", write("p.json", *many), "--phase", "1").exit_code == 0
    assert invoke("bank", "trim").exit_code == 0
    assert invoke("bank", "close-sprint").exit_code == 0
    after = snapshot(notes)
    archive = {k: v for k, v in after.items() if k.startswith("archive/")}
    assert archive, "the C7 trim archived to _notes/archive/"
    assert {k: v for k, v in after.items() if not k.startswith("archive/")} == before


def test_sections_written_by_hand_are_kept(write, project) -> None:
    bank = Project(project)
    path = bank.bank_dir / active.FILE
    path.parent.mkdir(parents=True)
    path.write_text(
        "# Active Context\n\n## Current Focus\n\nShip auth.\n\n## Completed Phases\n\n"
        "A note by hand.\n",
        encoding="utf-8",
    )
    promote(bank, [write("p.json", entry("hermes", HIGH))], phase="1", now=NOW)
    text = path.read_text("utf-8")
    assert text.startswith("# Active Context\n\n## Current Focus\n\nShip auth.\n\n## Completed")
    assert "A note by hand.\n" in text
    doc = active.parse(text)
    assert active.render(doc, 100) == text  # reading back and writing gives the same bytes


def test_the_pantheon_preset_moves_the_bank(write, project) -> None:
    (project / ".ctxward").mkdir()
    (project / ".ctxward" / "config.yaml").write_text("preset: pantheon\n", encoding="utf-8")
    promote(Project(project), [write("p.json", entry("hermes", HIGH))], phase="1", now=NOW)
    assert (project / ".pantheon" / "memory-bank" / "01-active-context.md").is_file()
    assert not (project / ".ctxward" / "memory-bank").exists()


def test_stale_temporary_files_are_cleaned_at_start_up(write, project) -> None:
    bank = Project(project).bank_dir
    (bank / "_xref").mkdir(parents=True)
    old = [bank / ".01-active-context.md.ctxward-tmp-1-ab", bank / "_xref" / "index.md.tmp"]
    fresh = bank / "02-progress-log.md.tmp"
    for path in [*old, fresh]:
        path.write_text("x", encoding="utf-8")
    for path in old:
        os.utime(path, (time.time() - 301, time.time() - 301))
    promote(Project(project), [write("p.json", entry("hermes", HIGH))], phase="1", now=NOW)
    assert not any(path.exists() for path in old)
    assert fresh.exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["missing.json", "--phase", "1"], "missing.json: no such file"),
        (["--phase", "1;rm"], "--phase '1;rm': expected a label such as 2, 2a or 3.1"),
        (["--phase", "1", "--date", "2026-02-30"], "not a calendar date"),
        (["--phase", "1", "--phases", "0"], "--phases 0: expected 1..100"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(invoke, args, message) -> None:
    result = invoke("bank", "promote", *args)
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("ctxward: error: ") and message in result.stderr
    assert result.stderr.count("\n") == 1


def test_a_file_that_is_not_utf8_is_refused(invoke, project) -> None:
    path = project / "bad.yaml"
    path.write_bytes(b"subtask_summary:\n  summary: \xff\xfe\n")
    result = invoke("bank", "promote", str(path), "--phase", "1")
    assert result.exit_code == 2
    assert "not UTF-8 (byte 28)" in result.stderr


def test_nothing_promotable_in_explicit_files_exits_1(write, invoke) -> None:
    path = write("p.json", entry("hermes", HIGH, status="blocked"))
    result = invoke("bank", "promote", path, "--phase", "1")
    assert result.exit_code == 1
    assert "not promoted, left in place (1):" in result.stdout


def test_json_output(write, invoke) -> None:
    result = invoke(
        "bank", "promote", write("p.json", entry("hermes", HIGH)), "--phase", "1", "--json"
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["confirmation"].startswith(
        "Compression complete: 1 entry compressed (0 CRITICAL, 1 HIGH)"
    )
    assert data["promoted"][0]["mode"] == "expanded" and data["promoted"][0]["lines"] == "2"
    assert data["budget"]["allocated"] == 12 and data["zz"] == ".tmp/ZZ-phase1-context.md"


def test_entries_of_another_phase_are_refused_by_an_explicit_gate(write, project) -> None:
    result = promote(
        Project(project), [write("p.json", entry("hermes", HIGH, phase="4"))], phase="2"
    )
    assert [s.reason for s in result.skipped] == ["phase 4, not 2"]
    sub = promote(Project(project), [write("q.json", entry("hermes", HIGH, phase="2b"))], phase="2")
    assert [p.label for p in sub.promoted] == ["2026-01-02|2b|hermes"]


def test_a_completed_plan_gets_one_row_in_plans(write, project) -> None:
    bank = Project(project)
    done = entry("zeus", "Auth JWT plan", type="PLAN", feature="auth-jwt")
    active_plan = entry("zeus", "Billing plan", phase="1", type="PLAN", status="active")
    for _ in range(2):
        result = promote(bank, [write("PLAN.json", done, active_plan)], phase="1", now=NOW)
    assert [s.reason for s in result.skipped] == [
        "the active plan is archived only at feature completion"
    ]
    text = (bank.bank_dir / active.FILE).read_text("utf-8")
    assert text.count("| 2026-01-02 | auth-jwt | in/PLAN.json | complete |") == 1
    assert "## Plans\n\n| Date | Feature | Plan | Status |\n|---|---|---|---|\n" in text


@pytest.mark.parametrize(
    ("name", "data", "message"),
    [
        ("_xref/_next_id.json", b"{not json", "_next_id.json: not valid JSON"),
        ("01-active-context.md", b"# Active\n\xff\n", "01-active-context.md: not UTF-8"),
    ],
)
def test_a_damaged_bank_file_is_one_line_not_a_traceback(
    write, invoke, project, name, data, message
) -> None:
    path = project / ".ctxward" / "memory-bank" / name
    path.parent.mkdir(parents=True)
    path.write_bytes(data)
    result = invoke("bank", "promote", write("p.json", entry("hermes", HIGH)), "--phase", "1")
    assert result.exit_code in (1, 2)
    assert result.stderr.startswith("ctxward: error: ") and message in result.stderr
    assert "Traceback" not in result.output and result.stderr.count("\n") == 1
    assert path.read_bytes() == data
