"""ctxward in the real Gemini CLI 0.61.0, against the mock, with only loopback reachable.

One scratch project wired by the real `ctxward install gemini`, `ctxward activate deep-review`,
and `model.compressionThreshold: 0.002` in its settings (so a resumed history of ~10 KB is over
the line). Four headless runs: `gemini -p FIRST` (10 KB of text), then three
`gemini --resume latest -p "resume N"`. Gemini compresses once, in the turn of resume 1 (after
its BeforeAgent); the mock's summary repeats every other rule and leaves the rest out.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from e2e_gemini_harness import make_project, set_project_setting  # tests/e2e/gemini/conftest.py
from e2e_harness import missing_from, read_rules  # loaded by tests/e2e/conftest.py

pytestmark = pytest.mark.e2e

SLUG = "e2e-plan"
MARKER = "[ctxward: the rules in force, restated after this session's compression]"
FIRST = "first turn. " + "Some long notes about the importer. " * 300
RESUMES = ("resume 1", "resume 2", "resume 3")


@dataclass(frozen=True)
class Scenario:
    project: Path
    rules: list[str]
    kept: list[str]
    dropped: list[str]
    runs: list[Any]  # harness.Run, in order
    firsts: list[Any]  # per run: its first agent request (streamGenerateContent)
    compressions: list[tuple[int, Any]]  # (run index, request) of the summarizer's requests


@pytest.fixture(scope="module")
def scenario(gm_sandbox: Any, tmp_path_factory: pytest.TempPathFactory) -> Scenario:
    project = make_project(tmp_path_factory.mktemp("gm-scratch") / "project")
    gm_sandbox.trust(project)
    activate = gm_sandbox.run(["ctxward", "activate", "deep-review", "--slug", SLUG], project)
    assert activate.returncode == 0, activate.stderr
    install = gm_sandbox.run(["ctxward", "install", "gemini"], project)
    assert install.returncode == 0, install.stderr
    set_project_setting(project, "model", {"compressionThreshold": 0.002})
    rules = read_rules(project / "docs" / "plans" / SLUG / "invariants.md")
    assert len(rules) >= 2, rules
    kept, dropped = rules[::2], rules[1::2]
    restated = "\n".join(f"- {rule}" for rule in kept)
    gm_sandbox.summary_file.write_text(f"Rules restated:\n{restated}\n", encoding="utf-8")
    runs, firsts, compressions = [], [], []
    for index, args in enumerate(
        [("-p", FIRST), *(("--resume", "latest", "-p", r) for r in RESUMES)]
    ):
        before = len(gm_sandbox.requests())
        runs.append(gm_sandbox.gemini(*args, cwd=project).check())
        new = gm_sandbox.requests()[before:]
        agent = [r for r in new if ":streamGenerateContent" in r.path]
        assert agent, f"run {index} sent no agent request: {[r.reply for r in new]}"
        firsts.append(agent[0])
        compressions += [(index, r) for r in new if r.reply == "compression"]
    return Scenario(project, rules, kept, dropped, runs, firsts, compressions)


def test_gemini_compressed_once_in_the_first_resumed_turn(scenario: Scenario) -> None:
    # The summarizer and its verification pass: two requests, both in the run of resume 1.
    assert [index for index, _ in scenario.compressions] == [1, 1]
    assert MARKER not in scenario.firsts[0].text  # no compression yet: nothing added


def test_rules_are_back_in_the_first_request_after_the_compression(scenario: Scenario) -> None:
    first_after = scenario.firsts[1]  # sent right after the summarizer's requests
    assert first_after.n > max(r.n for _, r in scenario.compressions)
    assert "MOCK-SUMMARY" in first_after.text  # the compressed history
    assert MARKER in first_after.text
    assert missing_from(first_after.text, scenario.rules) == []


def test_the_rules_the_summary_lost_are_restated(scenario: Scenario) -> None:
    summary = next(r for _, r in scenario.compressions)
    assert summary is not None
    first_after = scenario.firsts[1]
    snapshot = first_after.text.split("</state_snapshot>", 1)[0]
    assert missing_from(snapshot, scenario.dropped) == scenario.dropped  # the summary lost them
    assert missing_from(first_after.text, scenario.dropped) == []


def copies(text: str, rule: str) -> int:
    """How often `rule` is in `text`, also in the form Gemini gives a hook's additionalContext
    (it replaces < and > with &lt; and &gt;; a BeforeModel request override it leaves as is)."""
    escaped = rule.replace("<", "&lt;").replace(">", "&gt;")
    return text.count(rule) + (text.count(escaped) if escaped != rule else 0)


def test_no_stacking_across_three_resumes(scenario: Scenario) -> None:
    counts = [request.text.count(MARKER) for request in scenario.firsts[1:]]
    assert counts == [1, 1, 1], counts
    for request in scenario.firsts[1:]:
        assert [copies(request.text, rule) for rule in scenario.dropped] == [1] * len(
            scenario.dropped
        )


def test_the_users_prompts_stay_in_the_resumed_history(scenario: Scenario) -> None:
    # Gemini drops, on resume, a recorded user turn that starts with <hook_context> (where
    # SessionStart's context goes): ctxward adds nothing there, so every prompt survives.
    last = scenario.firsts[3].text
    assert all(prompt in last for prompt in RESUMES), last[-2000:]


def test_no_traceback_and_no_log_file(scenario: Scenario) -> None:
    for run in scenario.runs:
        assert "Traceback" not in run.stderr + run.stdout
        assert "ctxward:" not in run.stderr, run.stderr[-2000:]
    log = scenario.project / ".ctxward" / "log"
    assert not log.exists() or not any(log.iterdir()), sorted(p.name for p in log.iterdir())


def test_install_wrote_millisecond_timeouts(scenario: Scenario) -> None:
    settings = json.loads((scenario.project / ".gemini" / "settings.json").read_text())
    timeouts = {
        event: groups[0]["hooks"][0]["timeout"] for event, groups in settings["hooks"].items()
    }
    assert timeouts["BeforeTool"] == 10_000 and timeouts["PreCompress"] == 30_000
    assert settings["hooks"]["BeforeTool"][0]["matcher"] == "invoke_agent"
