"""C7 size-based trim (seed 000 §18): LOW removed, MEDIUM cut to 0.5, archived first."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

from click.testing import CliRunner

from ctxward.bank import active, archive, trim
from ctxward.bank.active import ActiveContext, Phase, Row
from ctxward.bank.promote import promote
from ctxward.cli import cli
from ctxward.core.project import Project

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)


def row(key: str, band: str, score: float, mode: str) -> Row:
    agent = key.split("|")[2]
    return Row(
        key,
        f"h{key}",
        band,
        score,
        mode,
        agent,
        "complete",
        agent,
        f"src/{agent}.py",
        lines=[f"[{agent}] {band} line"] * (3 if band == "CRITICAL" else 1),
    )


def doc_with(rows: list[Row]) -> ActiveContext:
    doc = ActiveContext()
    for r in rows:
        doc.phases.setdefault(r.phase, Phase(r.phase, 12, 0)).rows.append(r)
    return doc


def test_low_entries_go_first_lowest_score_first_then_medium_is_cut() -> None:
    rows = [row(f"d|1|crit{i}", "CRITICAL", 0.9, "expanded") for i in range(3)]  # 9 lines
    rows += [row("d|1|high", "HIGH", 0.6, "expanded")]  # 2 lines
    rows += [
        row("d|1|low_b", "LOW", 0.20, "aggressive"),
        row("d|1|low_a", "LOW", 0.10, "aggressive"),
    ]
    rows += [
        row("d|2|med_b", "MEDIUM", 0.40, "standard"),
        row("d|2|med_a", "MEDIUM", 0.30, "standard"),
    ]
    doc = doc_with(rows)
    assert doc.used == 2 * 14  # 9 + 2 + 0.5 + 0.5 + 1 + 1
    store = archive.parse("2026-01", "")
    report = trim.c7(doc, 12, store, "2026-01-02")
    assert [r.key for r in report.removed] == ["d|1|low_a", "d|1|low_b"]
    assert [r.key for r in report.cut] == ["d|2|med_a", "d|2|med_b"]  # 13 → 12.5 → 12
    assert doc.used == 2 * 12 and report.after == doc.used
    cut = next(r for r in doc.rows() if r.key == "d|2|med_a")
    assert (cut.mode, cut.cost, cut.lines) == ("trimmed", 1, ["[med_a] — src/med_a.py"])
    assert {r.band for r in doc.rows() if r.band in ("CRITICAL", "HIGH")} == {"CRITICAL", "HIGH"}
    assert len([r for r in doc.rows() if r.band in ("CRITICAL", "HIGH")]) == 4  # never trimmed
    text = store.render()
    assert text.startswith("# Compressed entries — 2026-01\n")
    assert text.count('action="removed"') == 2 and text.count('action="cut"') == 2
    assert "- **MEDIUM 0.30** [med_a] MEDIUM line" in text  # as it stood before the cut
    assert trim.log_line(report) == (
        "C7 trim: removed 2 low-priority entries, archived to "
        "_notes/archive/2026-01-compressed-entries.md (2 medium entries cut to 0.5 lines)"
    )


def test_critical_and_high_are_never_trimmed_even_over_the_ceiling() -> None:
    doc = doc_with([row(f"d|1|c{i}", "CRITICAL", 0.9, "expanded") for i in range(5)])
    report = trim.c7(doc, 10, archive.parse("2026-01", ""), "2026-01-02")
    assert not report.trimmed and doc.used == 30


def test_the_archive_never_holds_an_entry_twice() -> None:
    store = archive.parse("2026-01", "")
    entry = row("d|1|low", "LOW", 0.1, "aggressive")
    assert store.add(entry, "removed", "2026-01-02") is True
    again = archive.parse("2026-01", store.render())
    assert again.add(entry, "removed", "2026-01-03") is False
    assert again.render() == store.render()


def entries(project: Path, name: str, items: list[tuple[str, str]], phase: str = "1") -> str:
    body = [
        {
            "agent": a,
            "phase": phase,
            "date": "2026-01-02",
            "summary": s,
            "status": "complete",
            "files_changed": [f"src/{a}.py"],
        }
        for a, s in items
    ]
    path = project / name
    path.write_text(json.dumps({"subtask_summary": body}), encoding="utf-8")
    return str(path)


def test_a_promotion_past_100_lines_trims_on_its_own(project: Path, snapshot) -> None:
    bank = Project(project)
    highs = [(f"h{i}", "Added auth endpoint") for i in range(40)]  # 80 lines at most
    lows = [(f"l{i}", f"Fixed typo {i} in README") for i in range(30)]  # 15 lines
    mediums = [(f"m{i}", f"Renamed helper module {i}") for i in range(12)]  # 12 lines
    first = promote(bank, [entries(project, "a.json", highs)], phase="1", phases=1, now=NOW)
    assert first.trim is None
    result = promote(bank, [entries(project, "b.json", lows + mediums, "2")], phase="2", now=NOW)
    assert result.trim is not None
    doc = active.parse((bank.bank_dir / active.FILE).read_text("utf-8"))
    trimmable = [
        r for r in doc.rows() if r.band == "LOW" or (r.mode == "standard" and r.band == "MEDIUM")
    ]
    assert doc.used <= 200 or not trimmable
    assert result.trim.removed and all(r.band == "LOW" for r in result.trim.removed)
    archived = bank.bank_dir / "_notes" / "archive" / "2026-01-compressed-entries.md"
    assert archived.is_file()
    assert archived.read_text("utf-8").count("<!-- ctxward:archived") == len(
        result.trim.removed
    ) + len(result.trim.cut)
    log = (bank.bank_dir / "02-progress-log.md").read_text("utf-8")
    assert all(f"Phase 2: {r.agent}\n" in log for r in result.trim.removed)  # still in the log
    before = snapshot(bank.bank_dir)
    again = promote(bank, [entries(project, "b.json", lows + mediums, "2")], phase="2", now=NOW)
    assert again.promoted == [] and snapshot(bank.bank_dir) == before


def test_bank_trim_prints_the_seed_line(project: Path) -> None:
    bank = Project(project)
    lows = [(f"l{i}", f"Fixed typo {i} in README") for i in range(12)]
    promote(bank, [entries(project, "a.json", lows)], phase="1", now=NOW)
    config = project / ".ctxward" / "config.yaml"
    config.write_text("bank:\n  total_budget: 10\n", encoding="utf-8")  # lowered: now over
    runner = CliRunner()
    result = runner.invoke(cli, ["-C", str(project), "bank", "trim"])
    assert result.exit_code == 0, result.output
    month = datetime.now(timezone.utc).strftime("%Y-%m")
    assert result.stdout == "C7 trim: nothing to trim (6 of 10 lines in Completed Phases)\n"
    config.write_text("bank:\n  total_budget: 10\n", encoding="utf-8")
    more = [(f"x{i}", f"Fixed typo {i} in the README") for i in range(12)]
    promote(bank, [entries(project, "b.json", more, "2")], phase="2", now=NOW, budget_lines=100)
    result = runner.invoke(cli, ["-C", str(project), "bank", "trim", "--json"])
    data = json.loads(result.stdout)
    assert data["removed"] == 4 and data["lines_after"] == "10"
    assert data["log"] == (
        "C7 trim: removed 4 low-priority entries, archived to "
        f"_notes/archive/{month}-compressed-entries.md"
    )
    assert runner.invoke(cli, ["-C", str(project), "bank", "trim"]).stdout.startswith(
        "C7 trim: nothing to trim (10 of 10 lines"
    )
