"""ctxward's plugin in the real OpenCode 1.18.33, against the mock, with only loopback reachable.

One mock for the module; each scenario has its own scratch project with
hooks/opencode/ctxward.js copied into `.opencode/plugin/` and the venv's `ctxward` on PATH.

- compaction: `ctxward activate deep-review --slug e2e-plan`, then one `opencode run` whose
  dispatch reply reports 10M prompt tokens, so OpenCode auto-compacts after the sub-agent
  returns (title -> dispatch -> sub-agent -> compaction -> continue). The mock's summary repeats
  every other rule. A second `opencode run --session ID` reopens the session in a new process.
- guard: a `task` call of 220,000 bytes in short paragraphs (nothing to offload) is denied.
- offload: a `task` call of 220,000 bytes in one pasted block is offloaded by C9.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from e2e_harness import message_text, missing_from, only, read_rules  # tests/e2e/conftest.py

pytestmark = pytest.mark.e2e

SLUG = "e2e-plan"
INSTRUCTIONS_MARKER = "COMPACTION RESILIENCE: this session has active invariants"
SYSTEM_MARKER = "invariants are ACTIVE and NON-NEGOTIABLE"
COMPACT_MARKER = "ctxward re-injected them after this compaction"
RESUME_MARKER = "ctxward restored them for this resumed session"
RESTATE_PREFIX = "The compaction summary lost or altered these"
DENY_PREFIX = "PROMPT_TOO_LARGE: the ctxward dispatch guard denied this Task call."
POINTER_PREFIX = "[ctxward C9: pasted block of "
NOTE_PREFIX = "ctxward dispatch guard: this Task call's input was "
DISPATCH_BYTES = 220_000  # over the hard-reject line (209,716 of the default 262,144 bytes)


def ctxward_systems(request: Any) -> list[str]:
    return [text for text in request.texts("system") if SYSTEM_MARKER in text]


def tool_results(request: Any) -> list[str]:
    return request.texts("tool")


@dataclass(frozen=True)
class Compaction:
    project: Path
    rules: list[str]
    kept: list[str]
    dropped: list[str]
    session_id: str
    first: list[Any]  # harness.Request of the first run, in order
    resumed: list[Any]  # ... of the `--session` run


@pytest.fixture(scope="module")
def compaction(oc_sandbox: Any, tmp_path_factory: pytest.TempPathFactory) -> Compaction:
    project = oc_sandbox.make_project(tmp_path_factory.mktemp("oc-compaction") / "project")
    activate = oc_sandbox.run(["ctxward", "activate", "deep-review", "--slug", SLUG], project)
    assert activate.returncode == 0, f"ctxward activate failed:\n{activate.stderr}"
    rules = read_rules(project / "docs" / "plans" / SLUG / "invariants.md")
    assert len(rules) >= 2, f"deep-review pack gave {rules!r}; the test needs two rules or more"
    kept, dropped = rules[::2], rules[1::2]
    restated = "\n".join(f"- {rule}" for rule in kept)
    oc_sandbox.summary_file.write_text(f"## Constraints\n{restated}\n", encoding="utf-8")

    start = oc_sandbox.request_count()
    prompt = "E2E_DISPATCH_BYTES=3000 E2E_PROMPT_TOKENS=10000000 delegate the review"
    first = oc_sandbox.opencode(prompt, cwd=project).check()
    middle = oc_sandbox.request_count()
    session_id = first.session_id
    oc_sandbox.opencode("--session", session_id, "carry on", cwd=project).check()
    requests = oc_sandbox.requests(start)
    return Compaction(
        project,
        rules,
        kept,
        dropped,
        session_id,
        [r for r in requests if r.n < middle],
        [r for r in requests if r.n >= middle],
    )


def test_run_went_through_dispatch_subagent_compaction_and_continue(compaction):
    replies = [r.reply for r in compaction.first if r.path != "/v1/models"]
    assert replies == ["title", "dispatch", "subagent", "compaction", "text"], replies


def test_compaction_request_carries_every_rule(compaction):
    """experimental.session.compacting -> output.context reaches the summarizer's prompt."""
    prompt = only(compaction.first, "compaction").texts("user")[-1]
    at = prompt.find(INSTRUCTIONS_MARKER)
    assert at >= 0, f"no ctxward instructions in the compaction prompt:\n{prompt[-2000:]}"
    assert at > prompt.find("<template>") >= 0, "the instructions come after OpenCode's template"
    instructions = prompt[at:]
    missing = missing_from(instructions, compaction.rules)
    assert not missing, f"rules not in the compaction prompt: {missing}\n{instructions[:3000]}"


def test_first_request_after_compaction_has_every_rule_once(compaction):
    """The summary keeps every other rule; experimental.chat.system.transform states the others
    (what the summary lacks, read from the session's ledger), so each rule is there once."""
    after = only(compaction.first, "text")
    assert "Continue if you have next steps" in after.texts("user")[-1]
    assert "MOCK-SUMMARY" in after.texts("assistant")[-1]
    systems = ctxward_systems(after)
    assert len(systems) == 1, f"system messages: {[t[:200] for t in after.texts('system')]}"
    assert COMPACT_MARKER in systems[0]
    assert not missing_from(systems[0], compaction.dropped), systems[0]
    assert [rule for rule in compaction.kept if rule in systems[0]] == [], "the summary has them"
    assert_each_rule_once(after, compaction.rules)


def assert_each_rule_once(request: Any, rules: list[str]) -> None:
    text = "\n".join(message_text(m) for m in request.messages)
    counts = {rule: text.count(rule) for rule in rules}
    assert all(n == 1 for n in counts.values()), counts


def test_requests_before_compaction_carry_no_injection(compaction):
    """A fresh session, and its sub-agent, already have the skill in context: nothing added."""
    for reply in ("title", "dispatch", "subagent", "compaction"):
        request = only(compaction.first, reply)
        assert not ctxward_systems(request), f"the {reply} request carries ctxward's rules"


def test_reopened_session_carries_every_rule_once(compaction):
    """`opencode run --session ID` in a new process (source resume): the summary is still in
    the conversation, and the system prompt states again what it lacks."""
    (request,) = [r for r in compaction.resumed if r.reply == "text"]
    systems = ctxward_systems(request)
    assert len(systems) == 1, f"system messages: {[t[:200] for t in request.texts('system')]}"
    assert RESUME_MARKER in systems[0]
    assert not missing_from(systems[0], compaction.dropped)
    assert_each_rule_once(request, compaction.rules)


def test_survival_report_names_kept_and_dropped_rules(compaction):
    """session.compacted: the plugin reads the summary back; ctxward writes the report."""
    folder = compaction.project / ".ctxward" / "compactions"
    reports = sorted(folder.glob("*.json")) if folder.is_dir() else []
    assert len(reports) == 1, f"expected one survival report, found {[p.name for p in reports]}"
    report = json.loads(reports[0].read_text(encoding="utf-8"))
    assert report["session_id"] == compaction.session_id
    assert report["trigger"] == "auto"
    assert [e["rule"] for e in report["survived"]] == compaction.kept, report
    assert [e["rule"] for e in report["missing"]] == compaction.dropped, report


def test_the_rules_the_summary_lost_are_stated_once_in_each_request(compaction):
    """Issue 17: the lost rules are in the system prompt, which has room for them, so there is
    no one-time restatement besides (it would be their second copy); no pending file is left."""
    for request in [only(compaction.first, "text")] + [
        r for r in compaction.resumed if r.reply == "text"
    ]:
        system = "\n".join(request.texts("system"))
        assert RESTATE_PREFIX not in system, system[:3000]
        assert all(system.count(rule) == 1 for rule in compaction.dropped), system[:3000]
    assert not (compaction.project / ".ctxward" / "pending").exists(), "a pending file was left"


def test_small_dispatch_reaches_the_subagent_untouched(compaction):
    dispatch = only(compaction.first, "dispatch")
    subagent = only(compaction.first, "subagent")
    assert len(subagent.texts("user")[0].encode()) == 3000
    assert dispatch.n < subagent.n


# --- the dispatch guard --------------------------------------------------------------------------


@dataclass(frozen=True)
class Dispatch:
    project: Path
    requests: list[Any]


def dispatch_run(oc_sandbox: Any, root: Path, marker: str) -> Dispatch:
    project = oc_sandbox.make_project(root / "project")
    start = oc_sandbox.request_count()
    oc_sandbox.opencode(f"{marker}={DISPATCH_BYTES} delegate it", cwd=project).check()
    return Dispatch(project, oc_sandbox.requests(start))


@pytest.fixture(scope="module")
def guarded(oc_sandbox: Any, tmp_path_factory: pytest.TempPathFactory) -> Dispatch:
    return dispatch_run(oc_sandbox, tmp_path_factory.mktemp("oc-guard"), "E2E_DISPATCH_BYTES")


@pytest.fixture(scope="module")
def offloaded(oc_sandbox: Any, tmp_path_factory: pytest.TempPathFactory) -> Dispatch:
    return dispatch_run(oc_sandbox, tmp_path_factory.mktemp("oc-offload"), "E2E_DISPATCH_PASTE")


def test_large_dispatch_is_blocked_and_the_model_reads_why(guarded):
    """tool.execute.before throws the deny reason; OpenCode makes it the tool result."""
    replies = [r.reply for r in guarded.requests if r.path != "/v1/models"]
    assert replies == ["title", "dispatch", "after_tool_result"], replies
    dispatch = only(guarded.requests, "dispatch")
    after = only(guarded.requests, "after_tool_result")
    (result,) = tool_results(after)
    assert result.startswith(DENY_PREFIX), result[:500]
    assert f"{DISPATCH_BYTES + len('e2e dispatch') + len('general'):,} bytes" in result
    call_id = dispatch_call_id(after)
    assert [m.get("tool_call_id") for m in after.messages if m.get("role") == "tool"] == [call_id]
    assert dispatch.n < after.n


def test_large_pasted_dispatch_is_offloaded_in_place(offloaded):
    """A C9 offload rewrites output.args.prompt; the sub-agent gets the pointer, not the block."""
    replies = [r.reply for r in offloaded.requests if r.path != "/v1/models"]
    assert replies == ["title", "dispatch", "subagent", "after_tool_result"], replies
    task = only(offloaded.requests, "subagent").texts("user")[0]
    assert task.startswith(POINTER_PREFIX), task[:500]
    assert len(task.encode()) < 2000
    (stored,) = (offloaded.project / ".ctxward" / "offload").glob("*.txt")
    assert len(stored.read_bytes()) == DISPATCH_BYTES
    assert str(stored) in task


def test_offload_note_reaches_the_model_with_the_result(offloaded):
    """The guard's context for the model rides on the task's result (tool.execute.after)."""
    (result,) = tool_results(only(offloaded.requests, "after_tool_result"))
    assert "<task_result>\nDONE\n</task_result>" in result
    assert NOTE_PREFIX in result, result[-1500:]


def dispatch_call_id(request: Any) -> str:
    calls = [c for m in request.messages for c in m.get("tool_calls") or []]
    assert [c["function"]["name"] for c in calls] == ["task"]
    return str(calls[0]["id"])
