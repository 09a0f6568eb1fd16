"""L1 inline compression: parsing, Layer 1, band templates, masks, offload, staging, handoff."""

from __future__ import annotations

import hashlib
import json
import random
import string
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxward.compress.engine import compress_text, score_text, stats
from ctxward.compress.handoff import handoff
from ctxward.compress.lines import structural, summarize_tests
from ctxward.compress.parse import parse_entries
from ctxward.compress.scoring import load_tables
from ctxward.compress.staging import entry_hash, read_staged, stage, stage_dir
from ctxward.core.project import Project

TABLES = load_tables()
SEED_SUMMARY = "Added JWT auth endpoint with refresh token rotation"
SEED_FILES = ["backend/routers/auth.py", "backend/services/auth_service.py"]


def yaml_block(**fields: object) -> str:
    lines = ["```yaml", "subtask_summary:"]
    for key, value in fields.items():
        lines.append(f"  {key}: {json.dumps(value)}")
    return "\n".join([*lines, "```", ""])


def only(text: str, **options: object):
    run = compress_text(text, TABLES, **options)  # type: ignore[arg-type]
    (result,) = run.results
    return result


# -- parsing -------------------------------------------------------------------------------------


def test_fenced_yaml_block_in_a_message() -> None:
    text = "Done, here is my report.\n\n" + yaml_block(
        agent="hermes", summary=SEED_SUMMARY, files_changed=SEED_FILES, status="complete"
    )
    (entry,) = parse_entries(text, TABLES)
    assert entry.structured
    assert entry.fields["summary"] == SEED_SUMMARY
    assert entry.fields["files_changed"] == SEED_FILES


def test_bare_mapping_yaml_and_json() -> None:
    as_yaml = f"subtask_summary:\n  summary: {SEED_SUMMARY}\n  status: complete\n"
    as_json = json.dumps({"subtask_summary": {"summary": SEED_SUMMARY, "status": "complete"}})
    inner = json.dumps({"summary": SEED_SUMMARY, "agent": "hermes"})
    for text in (as_yaml, as_json, inner):
        (entry,) = parse_entries(text, TABLES)
        assert entry.structured
        assert entry.fields["summary"] == SEED_SUMMARY


def test_unfenced_block_inside_prose() -> None:
    text = (
        "All good.\n\nsubtask_summary:\n  agent: demeter\n  summary: Added a new table\n"
        "  status: complete\n\nThanks!"
    )
    (entry,) = parse_entries(text, TABLES)
    assert entry.fields == {
        "agent": "demeter",
        "summary": "Added a new table",
        "status": "complete",
    }


def test_lists_give_one_entry_each() -> None:
    batch = [
        {"type": "subtask", "phase": "2a", "agent": "hermes", "to": "aphrodite", "summary": "A"},
        {"type": "subtask", "phase": "2b", "agent": "aphrodite", "to": "hermes", "summary": "B"},
    ]
    assert [e.fields["phase"] for e in parse_entries(json.dumps(batch), TABLES)] == ["2a", "2b"]
    nested = {"subtask_summary": batch}
    assert len(parse_entries(json.dumps(nested), TABLES)) == 2
    two_blocks = yaml_block(summary="A") + "\ntext\n" + yaml_block(summary="B")
    assert [e.fields["summary"] for e in parse_entries(two_blocks, TABLES)] == ["A", "B"]


def test_free_text() -> None:
    (entry,) = parse_entries("Renamed the config loader.\nNothing else.", TABLES)
    assert not entry.structured
    assert entry.fields == {"summary": "Renamed the config loader.\nNothing else."}
    assert parse_entries("  \n", TABLES) == []


# -- Layer 1 -------------------------------------------------------------------------------------


def test_layer1_drops_raw_output_fields() -> None:
    raw = {
        "summary": "Fixed the login bug",
        "status": "complete",
        "stdout": "lots of output",
        "stderr": "warnings",
        "traceback": "Traceback ...",
        "env": {"HOME": "/root"},
        "test_output": "....F",
        "Files": ["a.py"],
    }
    assert structural(raw, TABLES) == {
        "summary": "Fixed the login bug",
        "status": "complete",
        "files": ["a.py"],
    }


def test_layer1_strips_pasted_output_from_prose() -> None:
    summary = (
        "Fixed the crash in login.\n```\n$ pytest\n....F\n```\n"
        'Traceback (most recent call last):\n  File "app.py", line 3, in <module>\n'
        "    main()\nKeyError: 'token'\nNow it passes."
    )
    cleaned = structural({"summary": summary}, TABLES)["summary"]
    assert "pytest" not in cleaned and 'File "app.py"' not in cleaned
    assert "KeyError" not in cleaned
    assert cleaned.startswith("Fixed the crash in login.")
    assert cleaned.endswith("Now it passes.")
    assert "(raw output omitted)" in cleaned


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("14 passed", "14 passed"),
        (
            "===== 3 failed, 120 passed, 2 skipped in 4.2s =====\n" + "x" * 200,
            "3 failed, 120 passed, 2 skipped",
        ),
        ({"passed": 12, "failed": 0}, "12 passed, 0 failed"),
        (17, "17"),
    ],
)
def test_tests_field_keeps_counts_only(value: object, expected: str) -> None:
    assert summarize_tests(value) == expected


# -- templates per band --------------------------------------------------------------------------


def test_high_is_two_lines_what_and_next() -> None:
    text = yaml_block(
        agent="hermes",
        summary=SEED_SUMMARY + ". POST /auth/refresh returns 200, or 401 when a token is reused.",
        files_changed=SEED_FILES,
        status="complete",
        tests="14 passed",
    )
    result = only(text, receiver="aphrodite")
    assert result.score.band == "HIGH"
    lines = result.text.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("[hermes] What changed: Added JWT auth endpoint")
    assert "(POST /auth/refresh)" in lines[0]
    assert "backend/routers/auth.py" in lines[0]
    assert "tests: 14 passed" in lines[0]
    assert lines[1] == (
        "To Aphrodite (endpoint path, request/response shape, status codes): "
        "POST /auth/refresh; 200; 401."
    )


def test_critical_is_three_lines_with_a_gotcha() -> None:
    text = yaml_block(
        agent="demeter",
        to="hermes",
        summary="Created the `refresh_tokens` table with a foreign key to users. "
        "Tokens are stored hashed, so there is no raw token access after issue.",
        files_changed=["backend/migrations/0012_refresh_tokens.py"],
        status="complete",
        blockers="none",
        unblocks=["hermes: token service"],
    )
    result = only(text)
    assert result.score.band == "CRITICAL"
    what, nxt, gotcha = result.text.splitlines()
    assert what.startswith("[demeter] What changed: Created the `refresh_tokens` table")
    assert nxt.startswith("To Hermes (table/column names, migration version, data types): ")
    assert "refresh_tokens" in nxt and "0012_refresh_tokens.py" in nxt
    assert gotcha == (
        "Gotcha: Tokens are stored hashed, so there is no raw token access after issue."
    )


def test_critical_gotcha_from_a_field_or_the_risk() -> None:
    base = {"agent": "demeter", "summary": "Added a new table for sessions", "status": "complete"}
    with_field = only(
        yaml_block(**base, gotcha="Two-phase rollout: read old, write new."), blocker=True
    )
    assert with_field.text.splitlines()[2] == "Gotcha: Two-phase rollout: read old, write new."
    derived = only(yaml_block(**base), blocker=True, sender="demeter", receiver="hermes")
    assert derived.score.band == "CRITICAL"
    assert derived.text.splitlines()[2] == (
        "Gotcha: highest risk is schema/migration (new table); verify it before building on it."
    )


def test_medium_is_one_line_with_the_first_sentence_and_files() -> None:
    summary = (
        "Reworked the settings page config so that every toggle persists immediately and shows "
        "a saved indicator for two seconds. Also cleaned up styles."
    )
    result = only(
        yaml_block(
            agent="aphrodite", summary=summary, files=["web/Settings.tsx"], status="complete"
        ),
        receiver="hermes",
    )
    assert result.score.band == "MEDIUM"
    (line,) = result.text.splitlines()
    head, sentence, files = line.split(" — ")
    assert head == "[aphrodite]"
    assert len(sentence) <= 80 and sentence.endswith("…")
    assert summary.startswith(sentence[:-1])
    assert files == "web/Settings.tsx"


def test_low_is_the_files_only() -> None:
    result = only(
        yaml_block(agent="hermes", summary="Fixed a typo in the README", files=["README.md"])
    )
    assert result.score.band == "LOW"
    assert result.text == "[hermes] — README.md\n"
    no_files = only("Fixed a typo", sender="hermes")
    assert no_files.text == "[hermes] — no files\n"


def test_many_files_are_shortened() -> None:
    files = [f"src/module_{i}.py" for i in range(6)]
    result = only(yaml_block(agent="hermes", summary="Fixed a typo", files=files))
    assert result.text == "[hermes] — src/module_0.py, src/module_1.py, src/module_2.py (+3)\n"


def test_partial_is_marked_and_medium_at_least() -> None:
    result = only(
        yaml_block(agent="hermes", summary="Fixed a typo", files=["a.md"], status="partial")
    )
    assert result.compressed
    assert result.score.band == "MEDIUM"
    assert result.text == "[hermes] ⚠️ partial — Fixed a typo — a.md\n"


@pytest.mark.parametrize(
    "fields",
    [
        {"status": "in_progress"},
        {"status": "escalated"},
        {"status": "blocked"},
        {"verdict": "NEEDS_REVISION", "agent": "themis"},
        {"verdict": "FAILED", "agent": "themis"},
        {"type": "ADR"},
        {"type": "PLAN", "active": True},
    ],
)
def test_preflight_refusals_render_nothing(fields: dict[str, object]) -> None:
    result = only(yaml_block(summary="Added the schema migration", **fields))
    assert not result.compressed
    assert result.text == ""
    assert result.preflight.reason


# -- masks in the rendered entry ---------------------------------------------------------------

RICH = yaml_block(
    date="2026-07-01",
    agent="hermes",
    summary=SEED_SUMMARY + ". The refresh token rotates on every use.",
    files_changed=SEED_FILES,
    tests="14 passed",
    status="complete",
    coverage="92%",
)


def test_to_mnemosyne_keeps_the_minimum() -> None:
    result = only(RICH, receiver="mnemosyne")
    first = result.text.splitlines()[0]
    assert "backend/" not in result.text and "tests:" not in result.text
    assert "date: 2026-07-01 · status: complete" in first
    summary_part = first.split("What changed: ")[1].split(" (date")[0]
    assert len(summary_part) <= 60


def test_to_themis_keeps_everything() -> None:
    result = only(RICH, receiver="themis")
    first = result.text.splitlines()[0]
    assert "The refresh token rotates on every use" in first
    assert "coverage: 92%" in first and "tests: 14 passed" in first
    assert "backend/routers/auth.py" in first


def test_from_themis_shows_the_verdict() -> None:
    review = yaml_block(
        agent="themis",
        summary="Reviewed the JWT auth endpoint and its migration",
        verdict="APPROVED",
        critical_issues=0,
        coverage="+3%",
        files=SEED_FILES,
        status="complete",
    )
    result = only(review, receiver="hermes")
    assert result.score.band in ("CRITICAL", "HIGH")
    first, second = result.text.splitlines()[:2]
    assert "verdict: APPROVED · critical issues: 0" in first
    assert "tests:" not in first
    assert second.startswith("To Hermes (verdict, critical issues count, coverage delta): ")
    assert "verdict APPROVED" in second


# -- scrub first, non-destructive, offload ------------------------------------------------------


def fake_token() -> str:
    rng = random.Random(5)
    return (
        "gh" + "p_" + "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(36))
    )


def test_secrets_are_scrubbed_before_anything_else(project: Path) -> None:
    token = fake_token()
    text = yaml_block(
        agent="hermes",
        summary=f"Rotated the deploy token {token} in the CI config",
        status="complete",
    )
    run = compress_text(text, TABLES, project=Project(project))
    (result,) = run.results
    assert run.redactions == 1
    assert token not in result.text
    stored = project / result.offload_path  # type: ignore[operator]
    assert token not in stored.read_text(encoding="utf-8")
    assert "[REDACTED:github_token]" in stored.read_text(encoding="utf-8")


def test_source_untouched_and_original_offloaded(project: Path) -> None:
    source = project / "summary.yaml"
    source.write_text(RICH, encoding="utf-8")
    before = source.read_bytes()
    result = only(
        source.read_text(encoding="utf-8"), project=Project(project), receiver="aphrodite"
    )
    assert source.read_bytes() == before
    stored = project / result.offload_path  # type: ignore[operator]
    assert stored.parent == project / ".ctxward" / "offload"
    assert stored.read_text(encoding="utf-8") == RICH
    assert result.sha256 == hashlib.sha256(RICH.encode()).hexdigest() == stored.stem
    again = only(RICH, project=Project(project), receiver="aphrodite")
    assert again.offload_path == result.offload_path


def test_score_text_writes_nothing(project: Path) -> None:
    ((_, score),) = score_text(SEED_SUMMARY, TABLES, sender="hermes", receiver="aphrodite")
    assert (score.score, score.band) == (0.71, "HIGH")
    assert not (project / ".ctxward").exists()


def test_stats() -> None:
    runs = [compress_text(RICH, TABLES), compress_text("Fixed a typo", TABLES, sender="hermes")]
    summary = stats(runs)
    before = len(RICH.encode()) + len(b"Fixed a typo")
    after = sum(len(r.text.encode()) for run in runs for r in run.results)
    assert summary["bytes_before"] == before
    assert summary["bytes_after"] == after
    assert summary["tokens_before"] == -(-before // 4)
    assert summary["tokens_after"] == -(-after // 4)
    assert summary["ratio"] == round(after / before, 3)
    assert summary["bands"] == {"CRITICAL": 0, "HIGH": 1, "MEDIUM": 0, "LOW": 1}
    assert summary["entries"] == 2


# -- determinism (property) ---------------------------------------------------------------------

words = st.sampled_from(
    str.split(
        "added fixed the auth endpoint schema migration new table token config typo README "
        "service refactor deploy index route role login POST /api/v1/users returns 401 status"
    )
)
entries = st.fixed_dictionaries(
    {
        "agent": st.sampled_from(["hermes", "aphrodite", "demeter", "themis", "prometheus"]),
        "summary": st.lists(words, min_size=1, max_size=25).map(" ".join),
        "files": st.lists(
            st.from_regex(r"[a-z]{1,8}/[a-z_]{1,10}\.py", fullmatch=True), max_size=12
        ),
        "status": st.sampled_from(["complete", "partial", "in_progress"]),
    }
)


@pytest.mark.slow  # a heavy variant: the slow stage (CI) runs it
@settings(max_examples=150, deadline=None)
@given(
    entry=entries,
    receiver=st.sampled_from([None, "hermes", "aphrodite", "themis", "mnemosyne", "zeus"]),
)
def test_compress_is_deterministic(entry: dict[str, object], receiver: str | None) -> None:
    text = json.dumps({"subtask_summary": entry})
    first = compress_text(text, TABLES, receiver=receiver)
    second = compress_text(text, TABLES, receiver=receiver)
    assert [r.as_dict() for r in first.results] == [r.as_dict() for r in second.results]
    (result,) = first.results
    if result.compressed:
        expected_lines = {"CRITICAL": 3, "HIGH": 2, "MEDIUM": 1, "LOW": 1}[result.score.band]
        assert len(result.text.splitlines()) == expected_lines


# -- staging (C8) and handoff (C11) -------------------------------------------------------------


def staged_entry(project: Project, **fields: object):
    base = {"date": "2026-07-01", "phase": "2", "agent": "hermes", "status": "complete"}
    run = compress_text(
        json.dumps({"subtask_summary": {**base, **fields}}), TABLES, project=project
    )
    return run.results[0]


def test_entry_hash_is_the_seeds() -> None:
    canonical = "2026-07-01|2|hermes|Added a thing"
    assert (
        entry_hash("2026-07-01", "2", "hermes", "Added a thing")
        == (hashlib.sha256(canonical.encode()).hexdigest()[:16])
    )


def test_stage_is_idempotent_and_keeps_every_entry(project: Path) -> None:
    # Issue 16: staging used to keep one file per (date, phase, agent), so a second text of the
    # same agent overwrote the first (this test asserted that). Now one file per entry.
    bank = Project(project)
    result = staged_entry(bank, summary=SEED_SUMMARY)
    first = stage(bank, result)
    assert first.written
    assert first.path == stage_dir(bank) / f"L1-2026-07-01-phase-2-hermes-{first.hash[:12]}.md"
    assert first.path.parent == project / ".ctxward" / "memory-bank" / ".tmp"
    content = first.path.read_text(encoding="utf-8")
    assert content.startswith("# L1 entry: hermes, phase 2, 2026-07-01\n")
    assert result.text in content
    assert not stage(bank, result).written
    other = stage(bank, staged_entry(bank, summary=SEED_SUMMARY + " and a test"))
    assert other.written and other.path != first.path and other.hash != first.hash
    assert other.replaced == ""
    assert first.path.read_text(encoding="utf-8") == content  # the first is still there
    assert len(list(stage_dir(bank).glob("L1-*.md"))) == 2


def test_stage_three_subtasks_of_one_agent_are_three_files(project: Path) -> None:
    """Issue 16: three SubagentStop summaries of one agent in one phase leave three files."""
    bank = Project(project)
    done = [
        stage(bank, staged_entry(bank, title=f"Subtask {i}", summary=f"{SEED_SUMMARY} part {i}"))
        for i in range(3)
    ]
    assert all(d.written for d in done) and len({d.path for d in done}) == 3
    assert len(list(stage_dir(bank).glob("L1-*.md"))) == 3


def test_stage_an_update_of_the_same_subtask_replaces_its_file_and_says_so(project: Path) -> None:
    bank = Project(project)
    first = stage(bank, staged_entry(bank, title="Auth endpoint", summary=SEED_SUMMARY))
    assert first.path.name.startswith("L1-2026-07-01-phase-2-hermes-auth-endpoint-")
    update = stage(bank, staged_entry(bank, title="Auth endpoint", summary=SEED_SUMMARY + "!"))
    assert update.written and update.path == first.path
    assert update.replaced == first.hash and update.hash != first.hash
    assert len(list(stage_dir(bank).glob("L1-*.md"))) == 1


def test_pantheon_preset_stages_in_its_bank(project: Path) -> None:
    (project / ".ctxward").mkdir()
    (project / ".ctxward" / "config.yaml").write_text("preset: pantheon\n", encoding="utf-8")
    bank = Project(project)
    done = stage(bank, staged_entry(bank, summary="x"))
    assert done.path.parent == project / ".pantheon" / "memory-bank" / ".tmp"


def test_handoff_compresses_pending_and_lists_everything(project: Path) -> None:
    bank = Project(project)
    stage(bank, staged_entry(bank, summary=SEED_SUMMARY, to="aphrodite"))
    low = staged_entry(bank, agent="aphrodite", summary="Fixed a typo", files=["README.md"])
    low_path = stage(bank, low, state="pending").path
    assert low_path.name.startswith("L1-2026-07-01-phase-2-aphrodite-")
    assert read_staged(low_path).state == "pending"
    folder = stage_dir(bank)
    impl = folder / "IMPL-phase3.md"
    impl.write_text(
        "# IMPL phase 3\n\n"
        + yaml_block(
            date="2026-07-02",
            phase="3",
            agent="demeter",
            summary="Added an index",
            status="complete",
        )
        + "\n"
        + yaml_block(
            date="2026-07-02", phase="3", agent="prometheus", summary="Deploy", status="in_progress"
        ),
        encoding="utf-8",
    )
    impl_before = impl.read_bytes()
    (folder / "notes.md").write_text("# scratch\nnothing structured\n", encoding="utf-8")

    report = handoff(bank, TABLES)
    assert sorted(s.agent for s in report.compressed) == ["aphrodite", "demeter"]
    assert [s.agent for s in report.already] == ["hermes"]
    assert report.skipped == (
        (
            ".ctxward/memory-bank/.tmp/IMPL-phase3.md [prometheus]",
            "status in progress: not compressed (seed 000 §10)",
        ),
    )
    assert report.unrecognized == (".ctxward/memory-bank/.tmp/notes.md",)
    assert impl.read_bytes() == impl_before
    compressed = read_staged(low_path)
    assert compressed is not None and compressed.state == "compressed"
    assert compressed.attrs["original"] == low.offload_path
    assert "[aphrodite] — README.md" in low_path.read_text()

    again = handoff(bank, TABLES)
    assert again.compressed == ()
    assert len(again.already) == 3


def test_handoff_by_phase(project: Path) -> None:
    bank = Project(project)
    two = stage(bank, staged_entry(bank, summary="Fixed a typo"), state="pending")
    stage(bank, staged_entry(bank, phase="3", summary="Fixed a typo"), state="pending")
    report = handoff(bank, TABLES, phase="3")
    assert [s.phase for s in report.compressed] == ["3"]
    assert read_staged(two.path).state == "pending"


def test_handoff_without_a_bank(project: Path) -> None:
    report = handoff(Project(project), TABLES)
    assert report == type(report)((), (), (), ())
    assert not (project / ".ctxward").exists()


def test_pending_entry_keeps_its_staging_date(project: Path, monkeypatch) -> None:
    from ctxward.compress import staging

    bank = Project(project)
    run = compress_text(
        json.dumps({"subtask_summary": {"agent": "hermes", "summary": "Fixed a typo"}}),
        TABLES,
        project=bank,
    )
    monkeypatch.setattr(staging, "_today", lambda: "2026-07-01")
    first = stage(bank, run.results[0], state="pending")
    monkeypatch.setattr(staging, "_today", lambda: "2026-07-09")
    report = handoff(bank, TABLES)
    assert [s.path for s in report.compressed] == [first.path]
    assert [p.name for p in stage_dir(bank).iterdir()] == [first.path.name]
