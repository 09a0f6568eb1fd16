"""Budget allocation (seed 000 §6, §18): the seed's worked examples, guardrails, carryover."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from ctxward.bank import budget
from ctxward.bank.budget import Candidate
from ctxward.bank.promote import promote
from ctxward.bank.view import status
from ctxward.cli import cli
from ctxward.core.project import Project
from ctxward.errors import EXIT_ESCALATED, Escalated

# Texts whose keyword scores land in each band (unknown next agent: relevance 0.5).
CRITICAL = "Created new table refresh_tokens in a schema migration"  # 0.78
HIGH = "Added auth endpoint"  # 0.70
MEDIUM = "Renamed helper module"  # 0.38
LOW = "Fixed typo in README"  # 0.13


def write_entries(root: Path, name: str, entries: list[tuple[str, str]], phase: str) -> str:
    lines = ["subtask_summary:"]
    for agent, summary in entries:
        lines += [
            f"  - agent: {agent}",
            f"    phase: {phase}",
            "    date: 2026-01-02",
            f'    summary: "{summary}"',
            f"    files_changed: [src/{agent}.py]",
            "    status: complete",
        ]
    path = root / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


def test_per_phase_budget_is_total_over_phases_with_a_floor_of_5() -> None:
    assert budget.per_phase(100, 8) == 12  # the seed's default: 8 phases when unknown
    assert budget.per_phase(100, 3) == 33
    assert budget.per_phase(100, 30) == 5  # floor(100/30) = 3 → the floor, 5
    assert budget.per_phase(100, 1) == 100
    with pytest.raises(ValueError, match="at least 1"):
        budget.per_phase(100, 0)


def test_carryover_is_20_percent_of_the_unused_rounded_down() -> None:
    # §18: "Phase 1 had 12-line budget, used 4 lines. Remaining = 8 lines. Carryover = 1."
    assert budget.carryover(8 * 2) == 1
    assert 12 + budget.carryover(8 * 2) == 13
    assert budget.carryover(9) == 0  # 4.5 lines → floor(0.9)
    assert budget.carryover(20) == 2
    assert budget.carryover(0) == 0
    assert budget.carryover(-6) == 0  # an overspent phase carries nothing


def test_the_seed_section_6_example_allocates_as_the_seed_says() -> None:
    phase1 = [Candidate("A", "CRITICAL", 0.82), Candidate("B", "MEDIUM", 0.45)]
    modes = budget.allocate(phase1, 12 * 2, 100 * 2)
    assert modes == ["expanded", "standard"]
    used1 = sum(budget.cost(c.band, m) for c, m in zip(phase1, modes, strict=True))
    assert budget.lines(used1) == "4"  # "Total: 4 lines (of 12 budget)"
    assert budget.lines(12 * 2 - used1) == "8"  # "8 lines" left unused …
    phase2_budget = 12 + budget.carryover(12 * 2 - used1)  # … of which 20% carries: 13
    assert phase2_budget == 13
    phase2 = [
        Candidate("E", "LOW", 0.21),
        Candidate("D", "HIGH", 0.67),
        Candidate("C", "CRITICAL", 0.91),
    ]
    modes2 = budget.allocate(phase2, phase2_budget * 2, 100 * 2 - used1)
    assert modes2 == ["aggressive", "expanded", "expanded"]  # D: HIGH, budget left → EXPANDED
    used2 = sum(budget.cost(c.band, m) for c, m in zip(phase2, modes2, strict=True))
    assert budget.lines(used2) == "5.5"  # "Total: 5.5 lines"
    assert budget.lines(used1 + used2) == "9.5"  # "Cumulative 9.5 of 24 budget"


def test_critical_is_always_expanded_and_high_falls_back_to_standard() -> None:
    items = [
        Candidate("c1", "CRITICAL", 0.9),
        Candidate("c2", "CRITICAL", 0.8),
        Candidate("h", "HIGH", 0.7),
    ]
    assert budget.allocate(items, 0, 0) == ["expanded", "expanded", "standard"]
    # 7 lines: both CRITICAL (6) leave 1: the HIGH entry is standard
    assert budget.allocate(items, 7 * 2, None) == ["expanded", "expanded", "standard"]
    assert budget.allocate(items, 8 * 2, None) == ["expanded", "expanded", "expanded"]
    # the section limit counts too
    assert budget.allocate(items, 8 * 2, 7 * 2) == ["expanded", "expanded", "standard"]


def test_allocation_is_priority_greedy_whatever_the_input_order() -> None:
    low_first = [Candidate("b", "HIGH", 0.55), Candidate("a", "HIGH", 0.72)]
    assert budget.allocate(low_first, 3 * 2) == ["standard", "expanded"]
    assert budget.allocate(low_first[::-1], 3 * 2) == ["expanded", "standard"]
    bands = [Candidate("m", "MEDIUM", 0.4), Candidate("l", "LOW", 0.1)]
    assert budget.allocate(bands, 0) == ["standard", "aggressive"]
    assert budget.cost("LOW", "aggressive") == 1  # half-lines: 0.5 lines


def test_critical_alone_over_the_total_escalates_with_the_seeds_options() -> None:
    budget.check_critical(33 * 6, 100)  # 99 lines: fine
    with pytest.raises(Escalated) as caught:
        budget.check_critical(34 * 6, 100)
    message = str(caught.value)
    assert message.startswith("CRITICAL entries require 102 lines but budget is 100. Options:")
    assert "(1) increase budget" in message
    assert "(2) increase TOTAL_BUDGET permanently" in message
    assert "(3) split phase" in message
    assert caught.value.exit_code == EXIT_ESCALATED == 4


def test_more_than_five_critical_in_a_phase_is_flagged() -> None:
    assert budget.overflow("3", 5) is None
    assert budget.overflow("3", 6) == "Phase 3 has 6 > 5 CRITICAL entries. Budget risk."


def test_the_section_6_example_end_to_end(project: Path) -> None:
    bank = Project(project)
    one = write_entries(project, "p1.yaml", [("hermes", CRITICAL), ("demeter", MEDIUM)], "1")
    two = write_entries(
        project, "p2.yaml", [("aphrodite", LOW), ("hermes", HIGH), ("demeter", CRITICAL)], "2"
    )
    first = promote(bank, [one], phase="1", phases=8)
    assert first.budget["allocated"] == 12 and first.budget["used"] == "4"
    assert first.budget["unused"] == "8" and first.budget["carryover"] == 1
    second = promote(bank, [two], phase="2")
    assert second.budget["allocated"] == 13  # 12 + floor(8 × 0.2)
    assert second.budget["used"] == "5.5"
    modes = {p.key.split("|")[2]: (p.band, p.mode) for p in second.promoted}
    assert modes == {
        "demeter": ("CRITICAL", "expanded"),
        "hermes": ("HIGH", "expanded"),
        "aphrodite": ("LOW", "aggressive"),
    }
    report = status(bank)
    assert report["cumulative"] == {"used": "9.5", "budget": 24, "allocated": 25}
    assert [(p["phase"], p["allocated"], p["carried_in"]) for p in report["phases"]] == [
        ("1", 12, 0),
        ("2", 13, 1),
    ]


def test_a_phase_without_budget_left_gets_high_entries_in_one_line(project: Path) -> None:
    bank = Project(project)
    path = write_entries(
        project,
        "p.yaml",
        [("a1", CRITICAL), ("a2", CRITICAL), ("a3", CRITICAL), ("h1", HIGH), ("h2", HIGH)],
        "1",
    )
    result = promote(bank, [path], phase="1", phases=20)  # 100 / 20 = 5 lines per phase
    modes = {p.key.split("|")[2]: p.mode for p in result.promoted}
    assert modes["h1"] == modes["h2"] == "standard"
    assert result.budget["allocated"] == 5 and result.budget["used"] == "11"


def test_the_cli_escalates_with_exit_4_and_writes_nothing(project: Path, snapshot) -> None:
    config = project / ".ctxward" / "config.yaml"
    config.parent.mkdir()
    config.write_text("bank:\n  total_budget: 10\n", encoding="utf-8")
    four = [(f"agent{i}", CRITICAL) for i in range(4)]  # 12 lines > 10
    path = write_entries(project, "p.yaml", four, "1")
    before = snapshot(project / ".ctxward" / "memory-bank")
    result = CliRunner().invoke(cli, ["-C", str(project), "bank", "promote", path, "--phase", "1"])
    assert result.exit_code == 4, result.output
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert "CRITICAL entries require 12 lines but budget is 10" in result.stderr
    after = snapshot(project / ".ctxward" / "memory-bank")
    assert {k: v for k, v in after.items() if not k.endswith("compress.lock")} == before
    # option (1): a larger budget for this promotion
    again = CliRunner().invoke(
        cli, ["-C", str(project), "bank", "promote", path, "--phase", "1", "--budget", "12"]
    )
    assert again.exit_code == 0, again.output
    assert again.stdout.startswith(
        "Compression complete: 4 entries compressed (4 CRITICAL, 0 HIGH), 1 cross-ref added"
    )


def test_overflow_is_printed_on_stderr(project: Path) -> None:
    six = [(f"agent{i}", CRITICAL) for i in range(6)]
    path = write_entries(project, "p.yaml", six, "3")
    result = CliRunner().invoke(cli, ["-C", str(project), "bank", "promote", path, "--phase", "3"])
    assert result.exit_code == 0, result.output
    assert result.stderr == "ctxward: warning: Phase 3 has 6 > 5 CRITICAL entries. Budget risk.\n"
