"""Which rules get a channel's room first (issue 17 item 1): priority, then round-robin."""

from __future__ import annotations

import json
import re

import pytest

from ctxward.core.project import Project
from ctxward.errors import BadInput
from ctxward.invariants.read import load_plans
from ctxward.invariants.rulesets import in_order, unique
from ctxward.invariants.skills import load_skill


def skill_text(name: str, rules: list[str], priority: int | None = None) -> str:
    bullets = "".join(f"  - {json.dumps(rule)}\n" for rule in rules)
    extra = f"priority: {priority}\n" if priority is not None else ""
    return f"---\nname: {name}\n{extra}invariants:\n{bullets}---\n\nbody\n"


def test_round_robin_across_plans_so_none_is_starved(project, make_skill, activate_skill):
    make_skill("big", rules=[f"big {n}" for n in range(5)])
    make_skill("small", rules=["small 0", "small 1"])
    activate_skill("big", "a-big")
    activate_skill("small", "b-small")
    order = [ref.rule for ref in in_order(load_plans(Project(project)))]
    assert order == ["big 0", "small 0", "big 1", "small 1", "big 2", "big 3", "big 4"]


def test_a_higher_priority_skill_comes_first(project, make_skill, activate_skill):
    make_skill("plain", text=skill_text("plain", ["plain 0", "plain 1"]))
    make_skill("urgent", text=skill_text("urgent", ["urgent 0", "urgent 1"], priority=5))
    activate_skill("plain", "a-plain")
    activate_skill("urgent", "b-urgent")
    invariants = (project / "docs/plans/b-urgent/invariants.md").read_text(encoding="utf-8")
    assert "**Priority:** 5\n" in invariants  # recorded in the plan, read back by the hooks
    order = [ref.rule for ref in in_order(load_plans(Project(project)))]
    assert order == ["urgent 0", "urgent 1", "plain 0", "plain 1"]


@pytest.mark.parametrize("value", ["high", "1.5", "true"])
def test_a_priority_that_is_no_whole_number_is_refused(project, make_skill, value):
    path = make_skill(
        "odd",
        text=skill_text("odd", ["x"]).replace("invariants:", f"priority: {value}\ninvariants:"),
    )
    with pytest.raises(BadInput, match="'priority' must be a whole number"):
        load_skill(path)


def test_a_cut_preview_keeps_the_priority_rules(
    project, make_skill, activate_skill, run_hook, load_payload
):
    filler = [f"filler rule {n:03d} " + "y" * 80 for n in range(200)]
    make_skill("filler", rules=filler)
    make_skill("key", text=skill_text("key", ["KEY RULE: never push to main"], priority=1))
    activate_skill("filler", "a-filler")
    activate_skill("key", "z-key")
    out = run_hook(load_payload("SessionStart.compact.json"))[1]
    context = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    assert "[ctxward: this text was cut" in context
    assert "- KEY RULE: never push to main\n" in context


def test_a_rule_two_skills_declare_is_kept_once(project, make_skill, activate_skill):
    make_skill("one", rules=["Never push to main.", "own rule"])
    make_skill("two", rules=["never push to MAIN", "other rule"])
    activate_skill("one", "p")
    activate_skill("two", "p")
    rules = [ref.rule for ref in in_order(unique(load_plans(Project(project))))]
    assert rules == ["Never push to main.", "own rule", "other rule"]
    assert not re.search("MAIN", " ".join(rules))
