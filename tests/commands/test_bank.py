"""`ctxward bank status|context|close-sprint` through CliRunner (and promote's --help)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ctxward.cli import cli
from ctxward.compress import engine as compress
from ctxward.compress import scoring, staging
from ctxward.core.project import Project


@pytest.fixture
def invoke(project: Path):
    def run(*args: str):
        return CliRunner().invoke(cli, ["-C", str(project), *args])

    return run


def write(project: Path, name: str, *entries: dict[str, object]) -> str:
    path = project / name
    path.write_text(json.dumps({"subtask_summary": list(entries)}), encoding="utf-8")
    return str(path)


def item(agent: str, summary: str, phase: str = "1", **extra: object) -> dict[str, object]:
    return {
        "agent": agent,
        "phase": phase,
        "date": "2026-01-02",
        "summary": summary,
        "files_changed": [f"src/{agent}.py"],
        "status": "complete",
        **extra,
    }


def test_status_without_a_bank(invoke) -> None:
    result = invoke("bank", "status")
    assert result.exit_code == 0
    assert result.stdout == (
        "no memory bank yet at .ctxward/memory-bank/ "
        "(`ctxward bank promote --phase N` creates it)\n"
    )


def test_status_shows_budgets_bands_and_the_last_promotion(invoke, project) -> None:
    one = write(
        project,
        "a.json",
        item("hermes", "Created new table t in a schema migration"),
        item("demeter", "Renamed helper module"),
    )
    two = write(
        project,
        "b.json",
        item("aphrodite", "Added auth endpoint", "2"),
        item("zeus", "Fixed typo in README", "2", status="partial"),
    )
    assert invoke("bank", "promote", one, "--phase", "1", "--feature", "auth").exit_code == 0
    assert invoke("bank", "promote", two, "--phase", "2").exit_code == 0
    result = invoke("bank", "status")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == "memory bank .ctxward/memory-bank/ (feature auth)"
    assert lines[1] == "Completed Phases: 7 of 100 lines used, 93 left"
    assert lines[2] == (
        "budget: 12 lines per phase (100 / 8 phases); cumulative 7 of 24; next phase carries in 2"
    )
    assert lines[3] == "entries: 4 (CRITICAL 1, HIGH 1, MEDIUM 2, LOW 0)"
    assert (
        "  phase  budget  used  left  carry  entries  updated  CRITICAL  HIGH  MEDIUM  LOW" in lines
    )
    assert (
        "  1          12     4     8      1        2        0         1     0       1    0" in lines
    )
    assert (
        "  2        12+1     3    10      2        2        0         0     1       1    0" in lines
    )
    assert lines[-1].startswith("last promotion: ") and lines[-1].endswith(", phase 2, 2 entries")
    data = json.loads(invoke("bank", "status", "--json").stdout)
    assert data["phases"][1]["bands"] == {"CRITICAL": 0, "HIGH": 1, "MEDIUM": 1, "LOW": 0}
    assert data["cumulative"] == {"used": "7", "budget": 24, "allocated": 25}
    assert data["xref"]["next"] == {"C": 1, "D": 1, "E": 1, "M": 2}


def test_context_prints_learnings_and_the_zz_artifact(invoke, project) -> None:
    path = write(project, "a.json", item("hermes", "Added auth endpoint POST /api/login"))
    assert (
        invoke(
            "bank", "promote", path, "--phase", "1", "--to", "aphrodite", "--feature", "auth-jwt"
        ).exit_code
        == 0
    )
    learnings = project / ".ctxward" / "learnings" / "auth-jwt" / "learnings.md"
    learnings.parent.mkdir(parents=True)
    learnings.write_text("- Mock the clock in token tests.\n", encoding="utf-8")
    result = invoke("bank", "context", "--phase", "1")
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert text.startswith(
        "## Previous Wave Learnings\n- Mock the clock in token tests.\n\n"
        "## Compressed Context (Phase 1 → Phase 2)\n# Phase 1 → Phase 2 Context\n"
    )
    assert text.endswith("\n\nApply these learnings and context to your implementation.\n")
    zz = (project / ".ctxward" / "memory-bank" / ".tmp" / "ZZ-phase1-context.md").read_text()
    assert zz.strip() in text
    data = json.loads(invoke("bank", "context", "--phase", "1", "--json").stdout)
    assert data["learnings"] == ".ctxward/learnings/auth-jwt/learnings.md"
    other = invoke("bank", "context", "--phase", "1", "--feature", "none-such").stdout
    assert other.startswith("## Compressed Context (Phase 1 → Phase 2)\n")


def test_context_without_a_zz_artifact_is_one_line(invoke, project) -> None:
    path = write(project, "a.json", item("hermes", "Added auth endpoint"))
    invoke("bank", "promote", path, "--phase", "1")
    result = invoke("bank", "context", "--phase", "2")
    assert result.exit_code == 1
    assert result.stderr == (
        "ctxward: error: .ctxward/memory-bank/.tmp/ZZ-phase2-context.md: no ZZ artifact for "
        "phase 2; run `ctxward bank promote --phase 2` first\n"
    )
    bad = invoke("bank", "context", "--phase", "1", "--feature", "../x")
    assert bad.exit_code == 2 and "a feature name, not a path" in bad.stderr


def test_close_sprint_cleans_what_was_promoted_and_lists_the_rest(invoke, project) -> None:
    bank = Project(project)
    tables = scoring.load_tables()
    for agent, text, status in (
        ("hermes", "Added auth endpoint", "complete"),
        ("demeter", "Renamed helper module", "complete"),
    ):
        run = compress.compress_text(
            json.dumps({"subtask_summary": item(agent, text, status=status)}), tables, project=bank
        )
        staging.stage(bank, run.results[0])
    assert invoke("bank", "promote", "--phase", "1", "--keep").exit_code == 0
    later = compress.compress_text(
        json.dumps({"subtask_summary": item("zeus", "Added auth endpoint", "2")}),
        tables,
        project=bank,
    )
    staging.stage(bank, later.results[0])
    tmp = bank.bank_dir / ".tmp"
    (tmp / "REVIEW-phase1.md").write_text(
        "```yaml\nsubtask_summary:\n  type: REVIEW\n  agent: themis\n  phase: 1\n"
        "  verdict: NEEDS_REVISION\n  summary: fix it\n```\n",
        encoding="utf-8",
    )
    (tmp / "scratch.bin").write_bytes(b"\x00")
    partial = write(project, "p.json", item("aphrodite", "Renamed helper", status="partial"))
    invoke("bank", "promote", partial, "--phase", "1")
    dry = invoke("bank", "close-sprint", "--dry-run")
    assert dry.exit_code == 0, dry.output
    assert dry.stdout.startswith("sprint close (dry run: nothing changed): .ctxward/memory-bank/\n")
    (hermes,) = tmp.glob("L1-2026-01-02-phase-1-hermes-*.md")
    (demeter,) = tmp.glob("L1-2026-01-02-phase-1-demeter-*.md")
    result = invoke("bank", "close-sprint")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "removed from .tmp/ (3):\n" in out
    for name in (demeter.name, hermes.name, "ZZ-phase1-context.md"):
        assert f"  - .ctxward/memory-bank/.tmp/{name}\n" in out
        assert not (tmp / name).exists()
    assert "unresolved (3):\n" in out
    assert "review verdict NEEDS_REVISION: left in place (seed 000 §10)" in out
    assert "staged, not promoted yet" in out and "partial ⚠️" in out
    assert (
        "unrecognized in .tmp/, left in place (1):\n  - .ctxward/memory-bank/.tmp/scratch.bin\n"
        in out
    )
    assert (tmp / "REVIEW-phase1.md").is_file() and (tmp / "scratch.bin").is_file()
    assert len(list(tmp.glob("L1-2026-01-02-phase-2-zeus-*.md"))) == 1
    archived = bank.bank_dir / "_xref" / "archive"
    assert [p.name for p in archived.iterdir()] and (bank.bank_dir / "_xref" / "index.md").is_file()


def test_every_bank_command_has_help_with_an_example() -> None:
    for name in ("promote", "status", "trim", "close-sprint", "context"):
        result = CliRunner().invoke(cli, ["bank", name, "--help"])
        assert result.exit_code == 0 and "Example:" in result.output, name
