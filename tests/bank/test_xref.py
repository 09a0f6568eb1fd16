"""Cross-references (seed 000 §7): detection, monotonic ids, dedup, reuse errors, blockers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxward.bank import xref
from ctxward.bank.promote import promote
from ctxward.core.project import Project


def names(found: list[xref.Found]) -> list[tuple[str, str, str]]:
    return [(f.kind, f.name, f.location) for f in found]


def test_endpoints_are_found_with_their_method_or_as_api_paths() -> None:
    text = "Added POST /auth/login and GET /auth/me/; the client calls /api/v1/users/{id}."
    files = ["backend/models/user.py", "backend/routers/auth.py"]
    assert names(xref.entities(text, files)) == [
        ("endpoint", "POST /auth/login", "backend/routers/auth.py"),
        ("endpoint", "GET /auth/me", "backend/routers/auth.py"),
        ("endpoint", "/api/v1/users/{id}", "backend/routers/auth.py"),
    ]


def test_tables_and_columns_need_a_migration_keyword() -> None:
    files = ["backend/migrations/0012_refresh_tokens.py"]
    text = (
        "Migration: CREATE TABLE refresh_tokens (…); ALTER TABLE users ADD COLUMN last_login; "
        "new column `avatar_url`."
    )
    assert names(xref.entities(text, files)) == [
        ("migration", "refresh_tokens table", files[0]),
        ("migration", "users.last_login column", files[0]),
        ("migration", "avatar_url column", files[0]),
    ]
    assert xref.entities("the refresh_tokens table is read", []) == []  # no migration keyword
    only_file = xref.entities("New migration for the audit log", files)
    assert names(only_file) == [("migration", "migration 0012_refresh_tokens", files[0])]


def test_components_from_names_and_files() -> None:
    found = xref.entities(
        "New LoginForm posts to the API; the UserAvatar component shows the picture.",
        ["frontend/src/LoginForm.tsx", "frontend/src/Header.vue"],
    )
    assert names(found) == [
        ("component", "LoginForm", "frontend/src/LoginForm.tsx"),
        ("component", "UserAvatar", "frontend/src/LoginForm.tsx"),
        ("component", "Header", "frontend/src/Header.vue"),
    ]


def test_decision_notes() -> None:
    note = xref.decision_note({}, "# Review\n\n## Decision\nUse rotation. Because.\n", "t")
    assert note == xref.DecisionNote("decision", "Use rotation.", "")
    adr = xref.decision_note({"summary": "see _notes/ADR-auth-strategy.md"}, "", "Auth review")
    assert adr == xref.DecisionNote("ADR", "Auth review", "_notes/ADR-auth-strategy.md")
    field = xref.decision_note({"decision": "Keep JWT"}, "", "t")
    assert field == xref.DecisionNote("decision", "Keep JWT", "")
    assert xref.decision_note({"summary": "looks fine"}, "no heading here", "t") is None


def test_ids_are_monotonic_and_an_entity_keeps_its_first_id() -> None:
    index = xref.Index()
    ids = xref.parse_ids(None, index)
    registry = xref.Registry(index, ids)
    assert registry.entity("endpoint", "POST /auth/login", "a.py", "1", "hermes") == "E0001"
    assert registry.entity("endpoint", "post  /AUTH/login", "b.py", "2", "x") == "E0001"
    assert registry.entity("endpoint", "GET /auth/me", "a.py", "1", "hermes") == "E0002"
    assert registry.entity("migration", "users table", "m.py", "1", "demeter") == "M0001"
    assert registry.decision("ADR", "Rotate tokens", "_notes/ADR-1.md", "1") == "D0001"
    assert registry.decision("ADR", "Rotate (reworded)", "_notes/ADR-1.md", "2") == "D0001"
    assert registry.added == 4
    assert ids.next == {"D": 2, "E": 3, "M": 2, "C": 1}
    # a row removed by hand does not bring its id back: the counter only goes up
    index.entities = [e for e in index.entities if e.id != "E0002"]
    again = xref.Registry(index, ids)
    assert again.entity("endpoint", "DELETE /x", "a.py", "3", "hermes") == "E0003"


def test_an_id_already_used_for_another_entity_is_an_error() -> None:
    index = xref.parse_index(
        "# Cross-Reference Index\n\n## By Entity\n\n"
        "| Entity ID | Type | Name | Location | Phase | Agent |\n|---|---|---|---|---|---|\n"
        "| E0001 | endpoint | POST /a | a.py | P1 | hermes |\n"
    )
    behind = xref.parse_ids('{"version": 1, "next": {"E": 1}}', index)
    registry = xref.Registry(index, behind)
    assert registry.entity("endpoint", "POST /a", "", "1", "") == "E0001"  # same entity: fine
    with pytest.raises(xref.XrefError, match=r"E0001, which _xref/index\.md already uses"):
        registry.entity("endpoint", "GET /b", "", "1", "")
    assert behind.next["E"] == 1  # nothing was handed out


def test_missing_counters_start_after_the_highest_id_and_bad_ones_are_refused() -> None:
    index = xref.Index(entities=[xref.Entity("E0007", "endpoint", "GET /x", "", "1", "")])
    assert xref.parse_ids(None, index).next == {"D": 1, "E": 8, "M": 1, "C": 1}
    with pytest.raises(xref.XrefError, match="not valid JSON"):
        xref.parse_ids("{", index)
    with pytest.raises(xref.XrefError, match=r"next\.E must be a whole number"):
        xref.parse_ids('{"next": {"E": 0}}', index)


def test_the_index_round_trips_and_escapes_pipes() -> None:
    index = xref.Index()
    registry = xref.Registry(index, xref.parse_ids(None, index))
    registry.entity("endpoint", "GET /a|b", "x.py", "1", "hermes")
    registry.feature("auth-jwt", "1", "Hermes", "HIGH", "JWT login", 0.7)
    registry.feature("auth-jwt", "2", "Aphrodite", "CRITICAL", "refresh UI", 0.8)
    registry.link("db down", "2026-01-02 — Phase 2: hermes", "unblocked", "2")
    registry.wait("2026-01-02 — Phase 3: demeter", "waiting on DBA", "3", "2026-01-02")
    extra = "\n## Notes\n\nkept as written\n"
    text = xref.render_index(index) + extra
    back = xref.parse_index(text)
    assert back.entities == index.entities
    assert back.entities[0].name == "GET /a|b"
    assert "GET /a\\|b" in text
    row = back.features["auth-jwt"]
    assert (row.phases, row.agents, row.priority, row.summary) == (
        ["1", "2"],
        ["Hermes", "Aphrodite"],
        "CRITICAL",
        "refresh UI",
    )
    assert back.links == index.links and back.waiting == index.waiting
    assert xref.render_index(back) == text.rstrip("\n") + "\n"


def entry_file(root: Path, name: str, body: str) -> str:
    path = root / name
    path.write_text(body, encoding="utf-8")
    return str(path)


def summary(agent: str, text: str, phase: str = "1", **extra: str) -> str:
    lines = [
        "subtask_summary:",
        f"  agent: {agent}",
        f"  phase: {phase}",
        "  date: 2026-01-02",
        f'  summary: "{text}"',
        "  files_changed: [backend/routers/auth.py, backend/migrations/0012_tokens.py]",
    ]
    lines += [f"  {key}: {value}" for key, value in extra.items()]
    lines.append(f"  status: {extra.pop('status', 'complete')}" if "status" not in extra else "")
    return "\n".join(lines) + "\n"


def test_promotion_adds_rows_for_critical_entries_only(project: Path) -> None:
    bank = Project(project)
    critical = entry_file(
        project,
        "a.yaml",
        summary("hermes", "New POST /api/v1/auth/login endpoint; migration adds new table tokens"),
    )
    high = entry_file(project, "b.yaml", summary("aphrodite", "Added auth endpoint GET /api/me"))
    result = promote(bank, [critical, high], phase="1")
    assert [p.band for p in result.promoted] == ["CRITICAL", "HIGH"]
    assert result.promoted[0].refs == ["E0001", "M0001"]
    assert result.xrefs_added == 2
    index = (bank.bank_dir / "_xref" / "index.md").read_text(encoding="utf-8")
    assert (
        "| E0001 | endpoint | POST /api/v1/auth/login | backend/routers/auth.py | P1 | hermes |"
        in index
    )
    assert "GET /api/me" not in index  # a HIGH entry makes no row
    counters = json.loads((bank.bank_dir / "_xref" / "_next_id.json").read_text(encoding="utf-8"))
    assert counters == {"version": 1, "next": {"C": 1, "D": 1, "E": 2, "M": 2}}
    # phase 2 mentions the same endpoint: same id, no new row
    again = entry_file(
        project,
        "c.yaml",
        summary("demeter", "Secured POST /api/v1/auth/login endpoint; new table sessions", "2"),
    )
    second = promote(bank, [again], phase="2")
    assert second.promoted[0].refs[0] == "E0001"
    index = (bank.bank_dir / "_xref" / "index.md").read_text(encoding="utf-8")
    assert index.count("POST /api/v1/auth/login") == 1


def test_a_review_with_a_decision_links_it(project: Path) -> None:
    review = entry_file(
        project,
        "REVIEW-phase1.md",
        "# Review\n\n```yaml\nsubtask_summary:\n  agent: themis\n  phase: 1\n  date: 2026-01-02\n"
        "  verdict: APPROVED\n  summary: Reviewed the auth work\n  status: complete\n```\n\n"
        "## Decision\nRotate refresh tokens on every use (ADR-0007).\n",
    )
    result = promote(Project(project), [review], phase="1")
    assert result.promoted[0].kind == "review" and result.promoted[0].refs == ["D0001"]
    index = (project / ".ctxward" / "memory-bank" / "_xref" / "index.md").read_text("utf-8")
    assert (
        "| D0001 | ADR | Rotate refresh tokens on every use (ADR-0007). | ADR-0007 | P1 |" in index
    )


def test_a_blocked_entry_that_completes_links_its_blocker(project: Path) -> None:
    bank = Project(project)
    blocked = entry_file(
        project,
        "a.yaml",
        summary("demeter", "Add index on users", status="blocked", blockers="DBA approval"),
    )
    first = promote(bank, [blocked], phase="1")
    assert first.promoted == [] and first.skipped[0].blocker == "DBA approval"
    index_path = bank.bank_dir / "_xref" / "index.md"
    assert "| 2026-01-02 — Phase 1: demeter | DBA approval | P1 | " in index_path.read_text("utf-8")
    done = entry_file(project, "b.yaml", summary("demeter", "Add index on users, done"))
    second = promote(bank, [done], phase="1")
    assert second.xrefs_added == 1
    text = index_path.read_text("utf-8")
    assert "## Waiting on Blockers" not in text
    assert "| DBA approval | 2026-01-02 — Phase 1: demeter | unblocked | P1 |" in text
    unblocks = entry_file(
        project, "c.yaml", summary("hermes", "Shipped the API gateway", unblocks="aphrodite UI")
    )
    promote(bank, [unblocks], phase="1")
    assert (
        "| 2026-01-02 — Phase 1: hermes | aphrodite UI | unblocks | P1 |"
        in index_path.read_text("utf-8")
    )


def test_a_counter_behind_the_index_stops_the_promotion(project: Path, snapshot) -> None:
    bank = Project(project)
    first = entry_file(
        project, "a.yaml", summary("hermes", "New POST /api/a endpoint; new table a in the schema")
    )
    promote(bank, [first], phase="1")
    ids = bank.bank_dir / "_xref" / "_next_id.json"
    ids.write_text('{"version": 1, "next": {"E": 1, "M": 1}}\n', encoding="utf-8")
    before = snapshot(bank.bank_dir)
    other = entry_file(
        project, "b.yaml", summary("demeter", "New POST /api/b endpoint; new table b in the schema")
    )
    with pytest.raises(xref.XrefError, match="an id is never reused"):
        promote(bank, [other], phase="1")
    assert snapshot(bank.bank_dir) == before
