"""Priority scoring (seed 000 §3), field masks (§5), variants (§4), safety preflight (§9–10)."""

from __future__ import annotations

import pytest

from ctxward.compress.scoring import (
    apply_mask,
    band_of,
    field_mask,
    find_keywords,
    load_tables,
    preflight,
    relevance,
    score_entry,
    variant,
)
from ctxward.core.config import ScoringConfig, parse
from ctxward.errors import BadInput

TABLES = load_tables()

# seed 000 §3, copied from the seed: the data file must say the same.
SEED_KEYWORDS = {
    "schema": (1.0, 1.0, 0.6, "schema/migration"),
    "migration": (1.0, 1.0, 0.4, "schema/migration"),
    "auth": (1.0, 1.0, 0.5, "auth/security"),
    "login": (1.0, 1.0, 0.4, "auth/security"),
    "permission": (0.8, 1.0, 0.5, "auth/security"),
    "role": (0.8, 0.8, 0.4, "auth/security"),
    "JWT": (0.8, 1.0, 0.4, "auth/security"),
    "OAuth": (0.8, 1.0, 0.5, "auth/security"),
    "password": (0.7, 1.0, 0.3, "auth/security"),
    "encrypt": (0.7, 1.0, 0.5, "auth/security"),
    "token": (0.7, 0.8, 0.3, "auth/security"),
    "security": (0.8, 1.0, 0.4, "auth/security"),
    "new table": (1.0, 0.8, 0.9, "schema/migration"),
    "new column": (0.7, 0.8, 0.6, "schema/migration"),
    "index": (0.5, 0.6, 0.3, "database"),
    "foreign key": (0.8, 0.9, 0.5, "database"),
    "constraint": (0.6, 0.7, 0.3, "database"),
    "endpoint": (0.9, 0.6, 0.5, "api"),
    "route": (0.8, 0.5, 0.4, "api"),
    "API": (0.8, 0.5, 0.4, "api"),
    "service": (0.7, 0.4, 0.4, "architecture"),
    "new file": (0.6, 0.3, 0.8, "structure"),
    "refactor": (0.5, 0.7, 0.6, "code-quality"),
    "rename": (0.4, 0.6, 0.3, "code-quality"),
    "delete": (0.5, 0.7, 0.2, "code-quality"),
    "deprecat": (0.4, 0.4, 0.3, "code-quality"),
    "config": (0.5, 0.6, 0.3, "infrastructure"),
    "Docker": (0.7, 0.6, 0.3, "infrastructure"),
    "deploy": (0.8, 0.8, 0.2, "infrastructure"),
    "CSS": (0.2, 0.1, 0.2, "style"),
    "style": (0.2, 0.1, 0.2, "style"),
    "typo": (0.0, 0.0, 0.0, "trivial"),
    "comment": (0.1, 0.0, 0.0, "trivial"),
    "README": (0.2, 0.0, 0.1, "documentation"),
    "docstring": (0.2, 0.0, 0.1, "documentation"),
}
AGENTS = ["hermes", "aphrodite", "demeter", "themis", "mnemosyne", "hephaestus", "prometheus"]
SEED_RELEVANCE = {
    "hermes": [1.0, 0.9, 0.8, 0.7, 0.3, 0.6, 0.5],
    "aphrodite": [0.9, 1.0, 0.3, 0.7, 0.3, 0.5, 0.3],
    "demeter": [0.9, 0.3, 1.0, 0.7, 0.3, 0.6, 0.6],
    "themis": [0.8, 0.8, 0.8, 1.0, 0.5, 0.8, 0.8],
    "hephaestus": [0.6, 0.5, 0.6, 0.7, 0.3, 1.0, 0.4],
    "prometheus": [0.6, 0.4, 0.6, 0.7, 0.3, 0.4, 1.0],
    "mnemosyne": [0.3, 0.3, 0.3, 0.5, 1.0, 0.3, 0.3],
}


def terms(text: str) -> list[str]:
    return [keyword.term for keyword in find_keywords(text, TABLES)]


# -- the seed's worked example ------------------------------------------------------------------


def test_seed_worked_example_scores_071_high() -> None:
    entry = {
        "summary": "Added JWT auth endpoint with refresh token rotation",
        "files_changed": ["backend/routers/auth.py", "backend/services/auth_service.py"],
        "status": "complete",
    }
    score = score_entry(entry, TABLES, sender="Hermes", receiver="Aphrodite")
    assert score.keywords == ("JWT", "endpoint", "token")
    assert score.dimensions == {
        "impact": 0.9,
        "risk": 1.0,
        "novelty": 0.5,
        "blockers": 0.0,
        "downstream": 0.9,
    }
    assert score.score == 0.71
    assert score.band == "HIGH"
    assert score.as_dict() == {
        "dimensions": dict(score.dimensions),
        "score": 0.71,
        "band": "HIGH",
        "keywords": ["JWT", "endpoint", "token"],
    }


# -- the tables are the seed's ------------------------------------------------------------------


def test_weights_and_bands_are_the_seeds() -> None:
    assert TABLES.weights == {
        "impact": 0.30,
        "risk": 0.25,
        "novelty": 0.20,
        "blockers": 0.15,
        "downstream": 0.10,
    }
    assert TABLES.bands == (("CRITICAL", 0.75), ("HIGH", 0.50), ("MEDIUM", 0.25), ("LOW", 0.0))


def test_keyword_map_is_the_seeds() -> None:
    shipped = {kw.term: (kw.impact, kw.risk, kw.novelty, kw.category) for kw in TABLES.keywords}
    assert shipped == SEED_KEYWORDS


@pytest.mark.parametrize("term", sorted(SEED_KEYWORDS))
def test_each_keyword_row_scores_its_dimensions(term: str) -> None:
    impact, risk, novelty, _ = SEED_KEYWORDS[term]
    score = score_entry({"summary": f"Touched the {term} here."}, TABLES)
    assert score.keywords == (term,)
    assert (score.dimensions["impact"], score.dimensions["risk"]) == (impact, risk)
    assert score.dimensions["novelty"] == novelty


@pytest.mark.parametrize("sender", AGENTS)
def test_relevance_table_is_the_seeds(sender: str) -> None:
    row = [relevance(sender, receiver, TABLES) for receiver in AGENTS]
    assert row == SEED_RELEVANCE[sender]


def test_unknown_agents_get_half_relevance() -> None:
    assert relevance("hermes", None, TABLES) == 0.5
    assert relevance("hermes", "athena", TABLES) == 0.5
    assert relevance(None, "aphrodite", TABLES) == 0.5
    assert relevance("HERMES", "Aphrodite", TABLES) == 0.9  # names are case-insensitive


@pytest.mark.parametrize(
    ("score", "band"),
    [
        (1.0, "CRITICAL"),
        (0.75, "CRITICAL"),
        (0.74, "HIGH"),
        (0.5, "HIGH"),
        (0.49, "MEDIUM"),
        (0.25, "MEDIUM"),
        (0.24, "LOW"),
        (0.0, "LOW"),
    ],
)
def test_bands(score: float, band: str) -> None:
    assert band_of(score, TABLES) == band


def test_no_keyword_scores_zero_except_downstream() -> None:
    score = score_entry({"summary": "Moved things around."}, TABLES)
    assert score.dimensions == {
        "impact": 0.0,
        "risk": 0.0,
        "novelty": 0.0,
        "blockers": 0.0,
        "downstream": 0.5,
    }
    assert score.score == 0.05
    assert score.band == "LOW"


def test_critical_example() -> None:
    entry = {"summary": "New table refresh_tokens with a foreign key to users; migration 0012."}
    score = score_entry(entry, TABLES, sender="demeter", receiver="hermes", blocker=True)
    assert score.band == "CRITICAL"
    assert score.score == round(0.3 * 1.0 + 0.25 * 1.0 + 0.2 * 0.9 + 0.15 + 0.1 * 0.9, 2)


# -- matching: whole words, stems, the substring traps -------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The author reviewed it", []),
        ("reindex the search", []),
        ("the controller changed", []),
        ("tokenizer swap", []),
        ("reduced token usage by 30%", []),
        ("max tokens raised; input tokens counted", []),
        ("updated index.ts exports", []),
        ("rapid prototyping", []),
        ("authored by the team", []),
        ("passwordless", []),
        ("deprecated the old flag", ["deprecat"]),
        ("deprecation warning added", ["deprecat"]),
        ("added authorization checks", ["auth"]),
        ("authentication flow", ["auth"]),
        ("auth_service split", ["auth", "service"]),
        ("Refactoring the APIs", ["refactor", "API"]),
        ("renamed two modules", ["rename"]),
        ("new_table helper", ["new table"]),
        ("Foreign-key from orders", ["foreign key"]),
        ("JWT auth endpoint", ["JWT", "endpoint"]),
        ("OAuth login page", ["OAuth"]),
        ("encrypted at rest with an index", ["encrypt", "index"]),
        ("DOCKERFILE and deployment", ["Docker", "deploy"]),
        ("a token and a TOKEN", ["token"]),
    ],
)
def test_keyword_matching(text: str, expected: list[str]) -> None:
    assert terms(text) == expected


def test_keywords_are_read_from_the_narrative_fields_only() -> None:
    entry = {"summary": "Fixed a typo", "files": ["backend/auth/schema.py"], "agent": "hermes"}
    assert score_entry(entry, TABLES).keywords == ("typo",)


# -- novelty by file count, blockers ------------------------------------------------------------


@pytest.mark.parametrize(
    ("count", "novelty"), [(0, 0.3), (5, 0.3), (6, 0.8), (10, 0.8), (11, 1.0), (40, 1.0)]
)
def test_file_count_raises_novelty(count: int, novelty: float) -> None:
    entry = {"summary": "Touched the config", "files_changed": [f"f{i}.py" for i in range(count)]}
    assert score_entry(entry, TABLES).dimensions["novelty"] == novelty


def test_file_count_as_a_number_and_as_a_comma_list() -> None:
    assert score_entry({"summary": "x", "files_changed": 12}, TABLES).dimensions["novelty"] == 1.0
    files = ", ".join(f"f{i}.py" for i in range(7))
    assert score_entry({"summary": "x", "files": files}, TABLES).dimensions["novelty"] == 0.8


def test_file_count_never_lowers_keyword_novelty() -> None:
    entry = {"summary": "Added a new table", "files_changed": [f"f{i}" for i in range(7)]}
    assert score_entry(entry, TABLES).dimensions["novelty"] == 0.9


@pytest.mark.parametrize(
    ("extra", "value"),
    [
        ({}, 0.0),
        ({"blockers": "none"}, 0.0),
        ({"blockers": []}, 0.0),
        ({"blockers": "n/a"}, 0.0),
        ({"blockers": "waited two days on DB credentials"}, 1.0),
        ({"blockers": ["CI runner down"]}, 1.0),
        ({"unblocks": ["aphrodite: login form"]}, 1.0),
        ({"summary": "Shipped the client; this unblocks Aphrodite"}, 1.0),
    ],
)
def test_blockers_dimension(extra: dict[str, object], value: float) -> None:
    entry = {"summary": "Shipped the client", "status": "complete", **extra}
    assert score_entry(entry, TABLES).dimensions["blockers"] == value


def test_blocker_flag() -> None:
    assert score_entry({"summary": "x"}, TABLES, blocker=True).dimensions["blockers"] == 1.0


# -- safety preflight ---------------------------------------------------------------------------


@pytest.mark.parametrize("status", ["in_progress", "in progress", "escalated", "blocked"])
def test_never_compress_unfinished_subtasks(status: str) -> None:
    check = preflight({"summary": "x", "status": status})
    assert not check.allowed
    assert "§10" in check.reason


@pytest.mark.parametrize("verdict", ["NEEDS_REVISION", "FAILED", "needs revision"])
def test_never_compress_failed_reviews(verdict: str) -> None:
    assert not preflight({"type": "REVIEW", "verdict": verdict}).allowed
    assert not preflight({"summary": "review", "verdict": verdict, "agent": "themis"}).allowed


def test_approved_review_is_compressed() -> None:
    assert preflight({"type": "REVIEW", "verdict": "APPROVED", "status": "complete"}).allowed


def test_never_compress_the_active_plan_or_adrs() -> None:
    assert not preflight({"type": "PLAN", "active": True}).allowed
    assert not preflight({"type": "PLAN", "status": "in_progress"}).allowed
    assert preflight({"type": "PLAN", "status": "complete", "active": False}).allowed
    assert not preflight({"type": "ADR", "summary": "Use rotation"}).allowed
    assert not preflight({"title": "ADR 12: token rotation", "status": "complete"}).allowed


def test_active_blockers_are_not_compressed() -> None:
    assert not preflight({"summary": "x", "blockers": "waiting on creds", "status": ""}).allowed
    assert preflight({"summary": "x", "blockers": "was waiting on creds", "status": "complete"})


def test_partial_is_compressed_flagged_and_medium_at_least() -> None:
    entry = {"summary": "Fixed a typo", "status": "partial"}
    check = preflight(entry)
    assert check.allowed and check.partial
    score = score_entry(entry, TABLES)
    assert score.band == "MEDIUM"
    assert score.adjustments
    assert score_entry({"summary": "Fixed a typo", "status": "complete"}, TABLES).band == "LOW"


def test_complete_and_free_text_are_allowed() -> None:
    assert preflight({"summary": "x", "status": "complete"}).allowed
    assert preflight({"summary": "x", "status": "done"}).allowed
    assert preflight({"summary": "free text"}).allowed


# -- field masks and variants --------------------------------------------------------------------

ENTRY = {
    "date": "2026-07-01",
    "agent": "hermes",
    "files": "a.py, b.py",
    "summary": "Added the refresh endpoint. It rotates tokens on every use and rejects reuse.",
    "summary_semantic": "Added POST /auth/refresh",
    "tests": "14 passed",
    "status": "complete",
    "coverage": "92%",
    "verdict": "APPROVED",
    "critical_issues": 0,
}


@pytest.mark.parametrize(
    ("sender", "receiver", "fields"),
    [
        ("hermes", "aphrodite", ["date", "agent", "files", "summary_semantic", "tests", "status"]),
        ("hermes", "demeter", ["date", "agent", "files", "summary_semantic", "tests", "status"]),
        ("demeter", "hermes", ["date", "agent", "files", "summary_semantic", "tests", "status"]),
        (
            "aphrodite",
            "prometheus",
            ["date", "agent", "files", "summary_semantic", "tests", "status"],
        ),
        ("themis", "hermes", ["date", "agent", "verdict", "critical_issues", "coverage", "files"]),
        ("hermes", "themis", ["date", "agent", "files", "summary", "tests", "status", "coverage"]),
        ("hephaestus", "hermes", ["date", "agent", "files", "summary_semantic", "tests", "status"]),
        ("prometheus", "hermes", ["date", "agent", "files", "summary_semantic", "tests", "status"]),
        ("hermes", "mnemosyne", ["date", "agent", "summary", "status"]),
        ("themis", "mnemosyne", ["date", "agent", "summary", "status"]),
        ("athena", "zeus", ["date", "agent", "files", "summary_semantic", "tests", "status"]),
    ],
)
def test_field_masks(sender: str, receiver: str, fields: list[str]) -> None:
    assert list(field_mask(sender, receiver, TABLES)[0]) == fields
    assert list(apply_mask(ENTRY, sender, receiver, TABLES)) == fields


def test_themis_gets_every_field_and_the_full_summary() -> None:
    masked = apply_mask(ENTRY, "hermes", "themis", TABLES)
    assert masked["summary"] == ENTRY["summary"]
    assert masked["coverage"] == "92%"


def test_mnemosyne_gets_the_minimum_and_60_characters() -> None:
    masked = apply_mask(ENTRY, "aphrodite", "mnemosyne", TABLES)
    assert set(masked) == {"date", "agent", "summary", "status"}
    assert len(masked["summary"]) <= 60
    assert masked["summary"].endswith("…")


@pytest.mark.parametrize(
    ("sender", "receiver", "include"),
    [
        ("hermes", "aphrodite", "endpoint path, request/response shape, status codes"),
        ("hermes", "demeter", "model/table names, relationships, foreign keys"),
        ("demeter", "hermes", "table/column names, migration version, data types"),
        ("demeter", "aphrodite", "new fields added, field types, defaults"),
        ("aphrodite", "hermes", "component name, data requirements, event handlers"),
        ("aphrodite", "demeter", "UI state shape, fields displayed"),
        ("themis", "hermes", "verdict, critical issues count, coverage delta"),
        ("hermes", "themis", "all fields (full context for review)"),
        ("demeter", "mnemosyne", "summary, status only (archive: minimal)"),
        ("hephaestus", "hermes", "pipeline inputs/outputs, model endpoints"),
        ("prometheus", "hermes", "deploy target, env vars, config changes"),
    ],
)
def test_variants(sender: str, receiver: str, include: str) -> None:
    assert variant(sender, receiver, TABLES)["include"] == include


# -- project extensions ---------------------------------------------------------------------------


def test_config_extends_the_tables() -> None:
    extra = ScoringConfig(
        keywords=(
            {
                "term": "GraphQL",
                "impact": 0.9,
                "risk": 0.7,
                "novelty": 0.6,
                "category": "api",
                "forms": ["graphql", "graph ql"],
            },
            {
                "term": "token",
                "impact": 0.1,
                "risk": 0.1,
                "novelty": 0.1,
                "category": "custom",
                "forms": ["token"],
            },
        ),
        ignore=("auth header",),
        relevance={"hermes": {"athena": 0.2}},
    )
    tables = load_tables(extra)
    assert [kw.term for kw in find_keywords("Graph-QL schema", tables)] == ["GraphQL", "schema"]
    assert score_entry({"summary": "token"}, tables).dimensions["impact"] == 0.1
    assert find_keywords("fixed the auth header", tables) == []
    assert relevance("hermes", "athena", tables) == 0.2
    assert relevance("hermes", "aphrodite", tables) == 0.9
    assert load_tables() is TABLES  # the shipped tables are untouched (and cached)


def test_config_parses_the_scoring_section() -> None:
    config = parse(
        {
            "scoring": {
                "keywords": [{"term": "graphql", "impact": 0.9, "risk": 0.5}],
                "ignore": ["token bucket"],
                "relevance": {"Hermes": {"Athena": 0.4}},
            }
        },
        "config.yaml",
    )
    assert config.scoring.keywords[0]["forms"] == ["graphql"]
    assert config.scoring.keywords[0]["novelty"] is None
    assert config.scoring.relevance == {"hermes": {"athena": 0.4}}


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ({"keywords": [{"term": "x", "impact": 2}]}, "keywords[0].impact"),
        ({"keywords": [{"impact": 0.5}]}, "keywords[0].term"),
        ({"keywords": [{"term": "x", "weight": 1}]}, "unknown key 'weight'"),
        ({"relevance": {"hermes": {"x": "high"}}}, "relevance.hermes.x"),
        ({"weights": {}}, "unknown key 'weights'"),
    ],
)
def test_config_scoring_errors_name_the_key(section: dict[str, object], message: str) -> None:
    with pytest.raises(BadInput, match=message.replace("[", r"\[").replace("]", r"\]")):
        parse({"scoring": section}, "config.yaml")


def test_the_tables_ship_inside_the_package() -> None:
    from pathlib import Path

    import ctxward
    from ctxward.compress import scoring

    package = Path(ctxward.__file__).resolve().parent
    assert package / "data" == scoring.DATA_DIR
    shipped = {path.name for path in scoring.DATA_DIR.glob("*.yaml")}
    assert shipped >= {"scoring.yaml", "compression.yaml"}
