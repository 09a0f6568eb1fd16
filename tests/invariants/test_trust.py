"""Trust (invariants.trust): which plans may reach the model here, `ctxward trust`, what it shows.

A plan a test writes by hand stands for one that came with a cloned repository: untrusted until
`ctxward trust` (or the `trust` fixture, which calls the same API). `activate` trusts what it
writes. The records live under the user's state folder (HOME is a scratch folder per test).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from ctxward.cli import cli
from ctxward.core.project import Project
from ctxward.core.userstate import state_dir
from ctxward.invariants import trust as trust_module
from ctxward.invariants.read import load_plans

RULES = ["review: never push to main", "review: cite file:line"]
CLONED = "## cloned-skill\n\n### Rules (non-negotiable)\n\n- obey the repository\n- and this\n"


@pytest.fixture
def invoke(project):
    def run(*args: str):
        return CliRunner().invoke(cli, ["-C", str(project), *args])

    return run


@pytest.fixture
def cloned(project) -> Path:
    """A plan committed to the repository by someone else: `docs/plans/cloned/invariants.md`."""
    path = project / "docs" / "plans" / "cloned" / "invariants.md"
    path.parent.mkdir(parents=True)
    path.write_text(CLONED, encoding="utf-8")
    return path


def trusted_slugs(project: Path) -> list[str]:
    plans = load_plans(Project(project))
    return [plan.slug for plan in trust_module.trusted_split(plans)[0]]


# --- the record ---------------------------------------------------------------------------------


def test_activate_trusts_what_it_writes_and_the_record_is_outside_the_project(
    project, make_skill, activate_skill, tmp_path
):
    make_skill("review", RULES)
    path = activate_skill("review", "fix")

    assert trusted_slugs(project) == ["fix"]
    records = list(trust_module.records_dir().iterdir())
    assert len(records) == 1
    assert trust_module.records_dir() == state_dir() / "trusted"
    assert str(state_dir()).startswith(str(tmp_path / "home"))
    assert not str(records[0]).startswith(str(project))
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    assert records[0].name == trust_module.record_name(path, digest)
    body = json.loads(records[0].read_text(encoding="utf-8"))
    assert body | {"trusted_at": "-"} == {
        "path": str(path),
        "sha256": digest,
        "slug": "fix",
        "rules": 2,
        "trusted_at": "-",
        "by": "activate",
    }
    assert (records[0].parent.stat().st_mode & 0o777) == 0o700


def test_a_hand_written_plan_is_untrusted_until_trusted(project, cloned, trust):
    assert trusted_slugs(project) == []
    assert trust("cloned") == ["cloned"]
    assert trusted_slugs(project) == ["cloned"]


def test_any_change_to_the_bytes_makes_a_plan_untrusted_again(project, cloned, trust):
    trust("cloned")
    cloned.write_text(CLONED + "- one more rule\n", encoding="utf-8")
    assert trusted_slugs(project) == []
    cloned.write_text(CLONED, encoding="utf-8")  # back to what was trusted (a checkout)
    assert trusted_slugs(project) == ["cloned"]


def test_the_same_content_at_another_path_is_not_trusted(project, cloned, trust):
    trust("cloned")
    other = project / "docs" / "plans" / "copy" / "invariants.md"
    other.parent.mkdir()
    other.write_bytes(cloned.read_bytes())
    assert trusted_slugs(project) == ["cloned"]


def test_a_folder_in_the_record_s_place_is_no_record(project, cloned):
    plan = load_plans(Project(project))[0]
    folder = trust_module.records_dir() / trust_module.record_name(
        plan.invariants_path, plan.source_sha256
    )
    folder.mkdir(parents=True)
    assert trusted_slugs(project) == []


def test_an_unwritable_state_folder_is_one_clear_error(project, cloned, monkeypatch, tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    monkeypatch.setenv("XDG_STATE_HOME", str(blocker))
    result = CliRunner().invoke(cli, ["-C", str(project), "trust"])
    assert result.exit_code == 1
    assert result.stderr.startswith("ctxward: error: ")
    assert result.stderr.count("\n") == 1
    assert "Traceback" not in result.output


# --- activate into a plan that arrived untrusted --------------------------------------------------


def test_activating_into_an_untrusted_plan_leaves_it_untrusted(project, cloned, make_skill, invoke):
    make_skill("review", RULES)

    result = invoke("activate", "review", "--slug", "cloned")

    assert result.exit_code == 0
    assert result.stdout.splitlines() == [
        "added review (2 rules) in docs/plans/cloned/invariants.md on branch main",
        "docs/plans/cloned/invariants.md was not trusted here before, and its other sections "
        "still are not: ctxward gives none of its rules to the model until you read it and "
        "run: ctxward trust cloned",
    ]
    assert trusted_slugs(project) == []
    as_json = json.loads(invoke("activate", "review", "--slug", "cloned", "--json").stdout)
    assert as_json["trusted"] is False


def test_activating_into_a_trusted_plan_keeps_it_trusted(project, cloned, make_skill, trust):
    make_skill("review", RULES)
    trust("cloned")
    result = CliRunner().invoke(cli, ["-C", str(project), "activate", "review", "--slug", "cloned"])
    assert result.exit_code == 0
    assert result.stdout.count("\n") == 1
    assert trusted_slugs(project) == ["cloned"]


def test_activating_into_a_plan_without_sections_trusts_it(project, make_skill, invoke):
    path = project / "docs" / "plans" / "empty" / "invariants.md"
    path.parent.mkdir(parents=True)
    path.write_text("# Active Invariants\n\nnothing yet\n", encoding="utf-8")
    make_skill("review", RULES)
    assert invoke("activate", "review", "--slug", "empty").exit_code == 0
    assert trusted_slugs(project) == ["empty"]


# --- ctxward trust --------------------------------------------------------------------------------


def test_trust_with_no_slug_trusts_every_untrusted_plan_and_says_what(
    project, cloned, make_skill, activate_skill, invoke
):
    make_skill("review", RULES)
    activate_skill("review", "mine")

    result = invoke("trust")

    assert result.exit_code == 0
    assert result.stdout == "trusted cloned (2 rules): docs/plans/cloned/invariants.md\n"
    assert trusted_slugs(project) == ["cloned", "mine"]
    assert invoke("trust").stdout == (
        "every plan here is trusted already (ctxward plan list shows them)\n"
    )


def test_trust_a_named_plan_and_json(project, cloned, make_skill, activate_skill, invoke):
    make_skill("review", RULES)
    activate_skill("review", "mine")

    result = invoke("trust", "mine", "cloned", "--json")

    assert result.exit_code == 0
    digest = hashlib.sha256(cloned.read_bytes()).hexdigest()
    listed = json.loads(result.stdout)
    assert [(p["slug"], p["rules"], p["already"]) for p in listed] == [
        ("mine", 2, True),
        ("cloned", 2, False),
    ]
    assert listed[1] == {
        "slug": "cloned",
        "rules": 2,
        "path": "docs/plans/cloned/invariants.md",
        "sha256": digest,
        "already": False,
    }


def test_trust_of_an_unknown_or_unreadable_plan_is_bad_input(project, invoke):
    assert invoke("trust", "nope").exit_code == 2
    broken = project / "docs" / "plans" / "broken" / "invariants.md"
    broken.parent.mkdir(parents=True)
    broken.write_bytes(b"## x\n\xff\n")
    result = invoke("trust", "broken")
    assert result.exit_code == 2
    assert result.stderr == (
        "ctxward: error: docs/plans/broken/invariants.md: not UTF-8 (byte 5)\n"
    )
    every = invoke("trust")  # with no slug the broken plan is only warned about
    assert every.exit_code == 0
    assert every.stderr == (
        "ctxward: warning: docs/plans/broken/invariants.md: not UTF-8 (byte 5); not trusted "
        "(`ctxward doctor` checks every plan)\n"
    )


def test_revoke_takes_the_trust_back(project, cloned, trust, invoke):
    trust("cloned")
    cloned.write_text(CLONED + "- v2\n", encoding="utf-8")
    trust("cloned")  # two contents trusted at that path now

    result = invoke("trust", "--revoke", "cloned")

    assert result.exit_code == 0
    assert result.stdout == (
        "revoked cloned: ctxward gives its rules to the model no more "
        "(docs/plans/cloned/invariants.md; trust it again with: ctxward trust cloned)\n"
    )
    assert trusted_slugs(project) == []
    cloned.write_text(CLONED, encoding="utf-8")
    assert trusted_slugs(project) == []  # every content of the path, not only the current one
    again = invoke("trust", "--revoke", "cloned", "--json")
    assert json.loads(again.stdout) == [
        {"slug": "cloned", "path": "docs/plans/cloned/invariants.md", "removed": 0}
    ]
    assert invoke("trust", "--revoke").exit_code == 2  # which plans? it does not guess


def test_plan_complete_revokes_the_trust(project, make_skill, activate_skill, invoke):
    make_skill("review", RULES)
    path = activate_skill("review", "fix")
    text = path.read_bytes()
    assert invoke("plan", "complete", "fix").exit_code == 0
    assert list(trust_module.records_dir().iterdir()) == []
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text)  # the same bytes again, by hand: a new, untrusted plan
    assert trusted_slugs(project) == []


def test_trust_help_has_an_example(invoke):
    result = invoke("trust", "--help")
    assert result.exit_code == 0
    assert "Example:" in result.stdout
    assert "ctxward trust --revoke" in result.stdout


# --- plan list ------------------------------------------------------------------------------------


def test_plan_list_shows_what_is_trusted(project, cloned, make_skill, activate_skill, invoke):
    make_skill("review", RULES)
    activate_skill("review", "mine")

    result = invoke("plan", "list")
    as_json = json.loads(invoke("plan", "list", "--json").stdout)

    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert [line.split()[0] for line in lines[1:3]] == ["cloned", "mine"]
    assert [line.split()[-1] for line in lines[1:3]] == ["no", "yes"]
    assert lines[3] == (
        "1 not trusted here: ctxward never gives its rules to the model "
        "(read it, then: ctxward trust cloned)"
    )
    assert [(p["slug"], p["trusted"]) for p in as_json] == [("cloned", False), ("mine", True)]


# --- the one line ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "count, line",
    [
        (1, "ctxward: 1 plan in this repository is not trusted here: run ctxward trust"),
        (3, "ctxward: 3 plans in this repository are not trusted here: run ctxward trust"),
    ],
)
def test_the_untrusted_notice_is_one_line(project, cloned, count, line):
    plan = load_plans(Project(project))[0]
    assert trust_module.untrusted_notice([plan] * count) == line
    assert trust_module.untrusted_notice([]) == ""


# --- seals ----------------------------------------------------------------------------------------


def test_a_seal_is_keyed_by_this_user(monkeypatch, tmp_path):
    sealed = trust_module.seal(b"data")
    assert trust_module.is_sealed(b"data", sealed)
    assert not trust_module.is_sealed(b"data!", sealed)
    assert not trust_module.is_sealed(b"data", None)
    monkeypatch.setenv("HOME", str(tmp_path / "another-user"))
    os.makedirs(tmp_path / "another-user")
    assert not trust_module.is_sealed(b"data", sealed)
