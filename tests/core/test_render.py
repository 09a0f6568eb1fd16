"""Templates: every one compiles; the texts the model and the summarizer read are golden files."""

from __future__ import annotations

import json

import jinja2
import pytest

from ctxward.core.paths import data_dir
from ctxward.core.project import Project
from ctxward.core.render import environment, render, template_names

RULES_A = ["Never push to main — open a PR", "Tag releases as vX.Y.Z"]
RULES_B = ["Cite file:line for every finding", "{{ braces }} and `code` stay verbatim"]


@pytest.mark.parametrize("name", template_names())
def test_every_template_compiles(name):
    assert environment().get_template(name) is not None


def test_the_templates_the_compaction_path_needs_are_shipped():
    assert {
        "invariants/invariants_file.md.j2",
        "invariants/invariants_section.md.j2",
        "invariants/compaction_payload.md.j2",
        "invariants/precompact_instructions.md.j2",
        "invariants/session_start_context.md.j2",
        "invariants/offload_preview.md.j2",
    } <= set(template_names())
    assert all((data_dir("templates") / name).is_file() for name in template_names())


def test_undefined_variables_are_errors_not_blanks():
    with pytest.raises(jinja2.UndefinedError):
        render("invariants/plan_complete.txt.j2")


def test_no_html_escaping():
    out = render("invariants/plan_complete.txt.j2", slug="<a & b>", removed=[])
    assert out == "completed <a & b>: removed nothing\n"


@pytest.fixture
def two_plans(project, make_skill, activate_skill):
    """Plan `release` (skills alpha, beta) and plan `hotfix` (beta), activated at a fixed time."""
    make_skill("alpha", RULES_A)
    make_skill("beta", RULES_B, where=".opencode/skill")
    activate_skill("alpha", "release")
    activate_skill("beta", "release")
    activate_skill("beta", "hotfix")
    return project / "docs" / "plans"


def test_golden_invariants_file(two_plans, golden):
    golden("invariants.md", (two_plans / "release" / "invariants.md").read_text(encoding="utf-8"))


def test_golden_compaction_payload_and_precompact_instructions(
    two_plans, load_payload, run_hook, golden
):
    code, out, _ = run_hook(load_payload("PreCompact.json"))

    assert code == 0
    golden("precompact_instructions.txt", out)
    golden(
        "compaction-payload.md",
        (two_plans / "release" / ".compaction-payload.md").read_text(encoding="utf-8"),
    )


def test_golden_session_start_context(two_plans, load_payload, run_hook, golden):
    code, out, _ = run_hook(load_payload("SessionStart.compact.json"))

    assert code == 0
    golden("session_start_context.md", json.loads(out)["hookSpecificOutput"]["additionalContext"])


def test_golden_offload_preview(
    project, make_skill, activate_skill, load_payload, run_hook, golden
):
    make_skill("big", [f"rule {i:02d}: keep this wording exactly as written" for i in range(40)])
    activate_skill("big", "big")
    (project / ".ctxward").mkdir(exist_ok=True)
    (project / ".ctxward" / "config.yaml").write_text("injection: {limit_chars: 1000}\n")

    code, out, _ = run_hook(load_payload("SessionStart.compact.json"))

    assert code == 0
    golden("session_start_offloaded.md", json.loads(out)["hookSpecificOutput"]["additionalContext"])


def test_rendered_files_are_relative_to_the_project(two_plans, project):
    text = (two_plans / "hotfix" / "invariants.md").read_text(encoding="utf-8")
    assert str(project) not in text
    assert Project(project).relative(two_plans) == "docs/plans"
