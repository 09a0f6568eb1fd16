"""ctxward's hooks in the real Codex CLI 0.169.0, against the mock, with only loopback reachable.

One mock for the module, one scratch project wired by the real `ctxward install codex`, hooks
run with `--dangerously-bypass-hook-trust` (test_codex_wiring.py runs them trusted instead).

`ctxward activate deep-review --slug e2e-plan`, then turn 1 (the mock reports 500,000 input
tokens, over the 100,000-token auto-compact limit), turn 2 (`codex exec resume`: Codex compacts
first; the mock's summary repeats every other rule), then three more resumes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from e2e_codex_harness import BIG_INPUT, make_project, read_rules  # loaded by conftest.py

pytestmark = pytest.mark.e2e

SLUG = "e2e-plan"
LOST_MARKER = "The compaction summary lost or altered these"
# What Codex itself prints as `error` items in every run of this suite (not ctxward's).
CODEX_WARNINGS = ("--dangerously-bypass-hook-trust", "Model metadata for `mock-model`")


@dataclass(frozen=True)
class Scenario:
    project: Path
    rules: list[str]
    kept: list[str]
    dropped: list[str]
    turns: list[list[Any]]  # the mock's requests of each turn, in order
    runs: list[Any]


@pytest.fixture(scope="module")
def scenario(cx_sandbox: Any) -> Scenario:
    project = make_project(cx_sandbox, "compaction")
    done = cx_sandbox.ctxward("activate", "deep-review", "--slug", SLUG, cwd=project)
    assert done.returncode == 0, done.stderr
    rules = read_rules(project / "docs" / "plans" / SLUG / "invariants.md")
    assert len(rules) >= 4
    kept, dropped = rules[::2], rules[1::2]
    cx_sandbox.summary_file.write_text("\n".join(kept) + "\n", encoding="utf-8")
    prompts = [f"hello {BIG_INPUT}", "after compact", "resume one", "resume two", "resume three"]
    runs, turns, thread = [], [], None
    for prompt in prompts:
        before = len(cx_sandbox.requests())
        run = cx_sandbox.codex(prompt, project, resume=thread).ok()
        thread = thread or run.thread_id
        runs.append(run)
        turns.append(cx_sandbox.requests()[before:])
    return Scenario(project, rules, kept, dropped, turns, runs)


def developer(request: Any) -> str:
    return "\n".join(request.texts("developer"))


def copies(request: Any, rule: str) -> int:
    return sum(text.count(rule) for text in request.texts("developer"))


def test_turn_two_compacts_first(scenario):
    assert [r.reply for r in scenario.turns[0]] == ["text"]
    assert [r.reply for r in scenario.turns[1]] == ["compaction", "text"]


def test_no_request_before_the_compaction_carries_the_rules(scenario):
    first = scenario.turns[0][0]
    assert not [rule for rule in scenario.rules if rule in json.dumps(first.body)]


def test_the_rules_are_back_in_the_first_request_after_the_compaction(scenario):
    after = scenario.turns[1][1]
    assert [rule for rule in scenario.rules if rule not in developer(after)] == []


def test_a_survival_report_from_the_compacted_history(scenario):
    reports = sorted((scenario.project / ".ctxward" / "compactions").glob("*.json"))
    assert len(reports) == 1
    report = json.loads(reports[0].read_text(encoding="utf-8"))
    assert report["trigger"] == "auto"
    assert [e["rule"] for e in report["survived"]] == scenario.kept, report
    assert [e["rule"] for e in report["missing"]] == scenario.dropped, report


def test_the_lost_rules_are_restated_once(scenario):
    after = scenario.turns[1][1]
    restated = [t for t in after.texts("developer") if LOST_MARKER in t]
    assert len(restated) == 1
    assert f"lost or altered these {len(scenario.dropped)} rules" in restated[0]
    assert [rule for rule in scenario.dropped if rule not in restated[0]] == []
    assert [rule for rule in scenario.kept if rule in restated[0]] == []
    last = scenario.turns[4][-1]  # the history keeps it; no second restatement was added
    assert sum(LOST_MARKER in t for t in last.texts("developer")) == 1
    assert not list((scenario.project / ".ctxward" / "pending").glob("*"))


def test_no_stacking_across_three_resumes(scenario):
    rule = scenario.kept[0]
    counts = [copies(turn[-1], rule) for turn in scenario.turns[1:]]
    assert counts == [1, 1, 1, 1], f"copies of one rule per request after each turn: {counts}"


def test_no_traceback_and_no_log_file(scenario):
    assert not (scenario.project / ".ctxward" / "log").exists()
    for run in scenario.runs:
        assert "Traceback" not in run.stderr
        assert "ctxward" not in run.stderr
        errors = [i["message"] for i in run.items("error")]
        assert [m for m in errors if not any(w in m for w in CODEX_WARNINGS)] == []
