"""180 rules (3 plans × 60) through real compactions in the pinned OpenCode 1.18.33 (issue 17).

The rule set, the plans and the lossy summary are test_claude_code_compaction.py's (through
tests/e2e/channels.py). Around one OpenCode compaction the model-visible channels are: the
summary (experimental.session.compacting puts ctxward's instructions, which list the rules that
fit in 9,000 characters, in the summarizer's prompt), the system prompt of every later request
(experimental.chat.system.transform: the rules the summary lacks, read from the session's
ledger, within 9,000 characters), and, in the next request only, the lost or altered rules the
system prompt has no room for (post-compact's `restate`). Each scenario is one `opencode run`
that auto-compacts after a dispatch (as in test_opencode.py), then `opencode run --session ID`
in a new process; the manual one runs in `opencode serve` (one process, as the TUI), whose
`POST /session/ID/summarize` is what /compact does (`opencode run` cannot compact by hand).
Checked in the requests the mock received:

- **faithful**: the summarizer copies the rules the instructions list (122): the system prompt
  states the other 58; 180/180 verbatim in the first request after the compaction and in the
  reopened session's, no rule twice except where the summary is the second copy.
- **manual**: the same faithful summarizer, a manual compaction, then two turns: 180/180 and
  none twice in both (the report says `manual`).
- **lossy**: the summary keeps 165, alters 5 (a qualifier appended), drops 10: the system prompt
  states exactly those 15, and the report grades them; 180/180, none twice.
- **empty**: the summary keeps no rule: the system prompt states the first ~110 and the one-time
  restatement the other ~70, none in both: 180/180 in the first request after the compaction.
  Later requests have the system prompt's share and its pointer to the full offload file only
  (OpenCode keeps no system text of an earlier request): what OpenCode allows.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from e2e_harness import message_text  # loaded by tests/e2e/conftest.py

from ctxward.core.fingerprint import fingerprint

pytestmark = pytest.mark.e2e


def _channels() -> Any:
    name = "e2e_channels"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            name, Path(__file__).parents[1] / "channels.py"
        )
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


channels = _channels()
scenario = channels.scenario  # test_claude_code_compaction.py: RULES, plans, lossy summary
RULES: list[str] = scenario.RULES
LOST: list[str] = scenario.LOST
ALTERED: list[str] = scenario.ALTERED
INSTRUCTIONS_MARKER = "COMPACTION RESILIENCE: this session has active invariants"
HEADER = "⚠️ COMPACTION RESILIENCE: The following invariants are ACTIVE"
RESTATE_PREFIX = "The compaction summary lost or altered"
POINTER = "Read that file before acting on the rules."
PROMPT = "E2E_DISPATCH_BYTES=3000 E2E_PROMPT_TOKENS=10000000 delegate the review"
EMPTY = "## Goal\nnothing of the rules kept\n"


@dataclass(frozen=True)
class Run:
    project: Path
    compaction: Any  # harness.Request: the summarizer's
    first: Any  # the first request after the compaction
    resumed: Any  # the reopened session's request

    def summary(self, request: Any) -> str:
        (text,) = [t for t in request.texts("assistant") if "MOCK-SUMMARY" in t]
        return text

    def instructions(self) -> str:
        prompt = self.compaction.texts("user")[-1]
        return prompt[prompt.find(INSTRUCTIONS_MARKER) :]


def ours(request: Any) -> str:
    """The plugin's system text: OpenCode 1.18.33 sends its own system prompt as the first
    system message and every later `output.system` string joined into the second."""
    systems = request.texts("system")
    return "\n".join(systems[1:])


def system_prompt(request: Any) -> str:
    """SessionStart's part of it (the rules the summary lacks), after any restatement."""
    text = ours(request)
    return text[text.find(HEADER) :] if HEADER in text else ""


def restatement(request: Any) -> str:
    """post-compact's one-time part (it is pushed first)."""
    text = ours(request)
    if not text.startswith(RESTATE_PREFIX):
        return ""
    return text.split(HEADER)[0]


def request_text(request: Any) -> str:
    return "\n".join(message_text(m) for m in request.messages)


def run(box: Any, root: Path, summary: str) -> Run:
    """Plans of 180 rules, one `opencode run` that auto-compacts, one `--session` reopening."""
    project = box.make_project(root)
    scenario.make_plans(box, project)
    box.summary_file.write_text(summary, encoding="utf-8")
    start = box.request_count()
    first = box.opencode(PROMPT, cwd=project).check()
    middle = box.request_count()
    box.opencode("--session", first.session_id, "carry on", cwd=project).check()
    requests = box.requests(start)
    replies = [r.reply for r in requests if r.n < middle and r.path != "/v1/models"]
    assert replies == ["title", "dispatch", "subagent", "compaction", "text"], replies
    (compaction,) = [r for r in requests if r.reply == "compaction"]
    (after,) = [r for r in requests if r.reply == "text" and r.n < middle]
    (resumed,) = [r for r in requests if r.reply == "text" and r.n >= middle]
    return Run(project, compaction, after, resumed)


def run_manual(box: Any, root: Path, summary: str) -> Run:
    """The same plans in one `opencode serve` (one process, as the TUI): a turn, a manual
    compaction (what /compact does), then two more turns attached to it."""
    project = box.make_project(root)
    scenario.make_plans(box, project)
    box.summary_file.write_text(summary, encoding="utf-8")
    start = box.request_count()
    with box.serve(project) as url:
        sid = box.opencode("--attach", url, "hello", cwd=project).check().session_id
        box.summarize(project, url, sid)
        box.opencode("--attach", url, "--session", sid, "after compact", cwd=project).check()
        box.opencode("--attach", url, "--session", sid, "again", cwd=project).check()
    requests = [r for r in box.requests(start) if r.path != "/v1/models"]
    assert [r.reply for r in requests] == ["title", "text", "compaction", "text", "text"], [
        r.reply for r in requests
    ]
    return Run(project, requests[2], requests[3], requests[4])


def assert_every_rule_once(request: Any, summary: str) -> None:
    text = request_text(request)
    absent = [r for r in RULES if r not in text]
    assert not absent, f"{len(absent)}/180 rules not in the request: {absent[:5]}"
    twice = [r for r in RULES if text.count(r) - summary.count(r) > 1]
    assert not twice, f"{len(twice)} rules more than once besides the summary: {twice[:5]}"


def listed(text: str) -> set[str]:
    return {r for r in RULES if f"- {r}\n" in text}


@pytest.fixture(scope="module")
def faithful(oc_sandbox: Any, tmp_path_factory: pytest.TempPathFactory) -> Run:
    return run(oc_sandbox, tmp_path_factory.mktemp("oc-faithful") / "p", scenario.FAITHFUL)


@pytest.fixture(scope="module")
def manual(oc_sandbox: Any, tmp_path_factory: pytest.TempPathFactory) -> Run:
    return run_manual(oc_sandbox, tmp_path_factory.mktemp("oc-manual") / "p", scenario.FAITHFUL)


@pytest.fixture(scope="module")
def lossy(oc_sandbox: Any, tmp_path_factory: pytest.TempPathFactory) -> Run:
    return run(oc_sandbox, tmp_path_factory.mktemp("oc-lossy") / "p", scenario.lossy_summary())


@pytest.fixture(scope="module")
def empty(oc_sandbox: Any, tmp_path_factory: pytest.TempPathFactory) -> Run:
    return run(oc_sandbox, tmp_path_factory.mktemp("oc-empty") / "p", EMPTY)


def test_faithful_summary_and_system_prompt_split_the_rules(faithful: Run) -> None:
    asked = listed(faithful.instructions() + "\n")
    kept = listed(faithful.summary(faithful.first) + "\n")
    stated = listed(system_prompt(faithful.first))
    assert 0 < len(asked) < 180, "the instructions list what fits in 9,000 characters"
    assert kept == asked
    assert stated == set(RULES) - kept
    assert not restatement(faithful.first), "the system prompt had room for every lost rule"


def test_faithful_first_request_after_compaction_has_all_180_rules_once(faithful: Run) -> None:
    assert_every_rule_once(faithful.first, faithful.summary(faithful.first))


def test_faithful_reopened_session_has_all_180_rules_once(faithful: Run) -> None:
    assert_every_rule_once(faithful.resumed, faithful.summary(faithful.resumed))


def test_manual_compaction_first_request_has_all_180_rules_once(manual: Run) -> None:
    kept = listed(manual.summary(manual.first) + "\n")
    assert 0 < len(kept) < 180
    assert listed(system_prompt(manual.first)) == set(RULES) - kept
    assert "after compact" in manual.first.texts("user")[-1]
    assert_every_rule_once(manual.first, manual.summary(manual.first))


def test_manual_compaction_next_turn_adds_no_copy(manual: Run) -> None:
    assert "again" in manual.resumed.texts("user")[-1]
    assert_every_rule_once(manual.resumed, manual.summary(manual.resumed))
    (path,) = sorted((manual.project / ".ctxward" / "compactions").glob("*.json"))
    assert json.loads(path.read_text(encoding="utf-8"))["trigger"] == "manual"


def test_lossy_summary_gets_exactly_its_lost_and_altered_rules_stated(lossy: Run) -> None:
    assert listed(system_prompt(lossy.first)) == set(LOST + ALTERED)
    assert not restatement(lossy.first)
    assert_every_rule_once(lossy.first, lossy.summary(lossy.first))
    assert_every_rule_once(lossy.resumed, lossy.summary(lossy.resumed))


def test_lossy_summary_report_grades_each_rule(lossy: Run) -> None:
    (path,) = sorted((lossy.project / ".ctxward" / "compactions").glob("*.json"))
    report = json.loads(path.read_text(encoding="utf-8"))
    verdicts = {row["rule"]: row for row in report["verdicts"]}
    assert {r for r, row in verdicts.items() if row["verdict"] == "lost"} == set(LOST)
    assert {r for r, row in verdicts.items() if row["verdict"] == "altered"} == set(ALTERED)
    assert all(row["fingerprint"] == fingerprint(r)[:12] for r, row in verdicts.items())


def test_empty_summary_system_prompt_and_restatement_carry_all_180_once(empty: Run) -> None:
    stated = listed(system_prompt(empty.first))
    restated = listed(restatement(empty.first))
    assert stated and restated and not stated & restated
    assert stated | restated == set(RULES)
    assert_every_rule_once(empty.first, empty.summary(empty.first))


def test_empty_summary_restatement_is_made_once(empty: Run) -> None:
    assert not restatement(empty.resumed)
    assert listed(system_prompt(empty.resumed)) == listed(system_prompt(empty.first))
    assert POINTER in system_prompt(empty.resumed), "later requests name the full file"
    assert not (empty.project / ".ctxward" / "pending").exists()
