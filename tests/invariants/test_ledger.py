"""Exactly one ctxward copy of each rule per context segment (issue 17 item 2, invariants.ledger).

The hooks run in Claude Code's order (tests/e2e, 2.1.332): SessionStart(resume) → PreCompact →
SubagentStop(agent_type "", the summary) → SessionStart(compact) → PostCompact → the next
UserPromptSubmit; every later turn starts with SessionStart(resume).
"""

from __future__ import annotations

import io
import itertools
import json
import re

import pytest

from ctxward import hookio
from ctxward.core.project import Project
from ctxward.invariants import ledger

SESSION = "7de73c29-a9cd-4608-aa26-55358a7f7df9"  # the captured payloads' session
RULES = [f"rule {n:02d}: keep invariant number {n} intact" for n in range(6)]


@pytest.fixture
def plan(project, make_skill, activate_skill):
    make_skill("review", RULES)
    activate_skill("review", "fix")
    return project / "docs" / "plans" / "fix"


def rules_in(text: str) -> list[str]:
    return re.findall(r"rule \d\d: keep invariant number \d+ intact", text)


def context(out: str) -> str:
    return json.loads(out)["hookSpecificOutput"]["additionalContext"] if out else ""


def session_start(run_hook, load_payload, source: str, **fields: object) -> str:
    name = "SessionStart.compact.json" if source == "compact" else "SessionStart.resume.json"
    code, out, err = run_hook(load_payload(name, **fields))
    assert (code, err) == (0, "")
    return context(out)


def summary(*rules: str) -> str:
    kept = "\n".join(f"- {rule}" for rule in rules)
    return f"<analysis>x</analysis>\n<summary>Active invariants:\n{kept}\n</summary>"


COMPACTIONS = itertools.count()


def compaction(run_hook, load_payload, kept: list[str], trigger: str = "auto") -> tuple[str, str]:
    """PreCompact → SubagentStop → SessionStart(compact) → PostCompact → the next prompt.

    Each compaction has its own prompt_id (the same payload twice is one doubled run, once.py).
    """
    prompt_id = f"prompt-{next(COMPACTIONS)}"
    pre = load_payload("PreCompact.json", trigger=trigger, prompt_id=prompt_id)
    assert run_hook(pre)[0] == 0
    stop = load_payload("SubagentStop.compaction.json", last_assistant_message=summary(*kept))
    assert run_hook(stop) == (0, "", "")
    compact = session_start(run_hook, load_payload, "compact")
    post = load_payload(
        "PostCompact.json", trigger=trigger, compact_summary=summary(*kept), prompt_id=prompt_id
    )
    assert run_hook(post) == (0, "", "")
    prompt = context(run_hook(load_payload("UserPromptSubmit.json", prompt="go on"))[1])
    return compact, prompt


def test_resumes_never_stack_copies(plan, run_hook, load_payload):
    """Codex keeps every SessionStart text in its history: each resume added a full copy."""
    first = session_start(run_hook, load_payload, "resume")
    assert rules_in(first) == RULES
    for _ in range(3):
        assert session_start(run_hook, load_payload, "resume") == ""


def test_a_changed_plan_adds_only_its_changed_rules(plan, run_hook, load_payload, make_skill):
    session_start(run_hook, load_payload, "resume")
    make_skill("extra", ["rule 99: keep invariant number 99 intact"])
    from ctxward.invariants.activate import activate

    activate(Project(plan.parent.parent.parent), "extra", "more")
    added = session_start(run_hook, load_payload, "resume")
    assert rules_in(added) == ["rule 99: keep invariant number 99 intact"]
    assert "6 other active rules are already in this conversation" in added


def test_auto_compaction_states_exactly_what_the_summary_lacks(plan, run_hook, load_payload):
    session_start(run_hook, load_payload, "resume")  # said before: summarised away since
    compact, prompt = compaction(run_hook, load_payload, kept=RULES[:4])

    assert rules_in(compact) == RULES[4:]  # the summary carries the others
    assert "4 other active rules are already in this conversation" in compact
    assert prompt == ""  # nothing left to restate: SessionStart(compact) said it
    assert session_start(run_hook, load_payload, "resume") == ""  # the next turn adds nothing


def test_manual_compaction_counts_the_echoed_instructions(plan, run_hook, load_payload):
    """Claude Code shows the model PreCompact's stdout in the /compact record (2.1.332)."""
    compact, prompt = compaction(run_hook, load_payload, kept=[], trigger="manual")
    assert (compact, prompt) == ("", "")
    assert session_start(run_hook, load_payload, "resume") == ""


def test_a_summary_that_alters_a_rule_gets_it_restated_once(plan, run_hook, load_payload):
    altered = RULES[1].replace("intact", "intact unless the reviewer waives it")
    compact, prompt = compaction(run_hook, load_payload, kept=[RULES[0], altered, *RULES[2:]])
    assert rules_in(compact) == [RULES[1]]
    assert prompt == ""


def test_every_rule_again_after_the_next_compaction(plan, run_hook, load_payload):
    compaction(run_hook, load_payload, kept=[])
    compact, _ = compaction(run_hook, load_payload, kept=[])
    assert rules_in(compact) == RULES


def test_codex_manual_compaction_shows_no_instructions(plan, load_payload):
    """Codex ignores PreCompact's stdout: its manual compaction leaves every rule to say."""
    payload = load_payload("PreCompact.json", turn_id="t1")
    out, err = io.StringIO(), io.StringIO()
    raw = json.dumps(payload).encode("utf-8")
    env = {}
    assert hookio.run(stdin=io.BytesIO(raw), stdout=out, stderr=err, env=env, host="codex") == 0
    start = load_payload("SessionStart.compact.json")
    out = io.StringIO()
    raw = json.dumps(start).encode("utf-8")
    assert hookio.run(stdin=io.BytesIO(raw), stdout=out, stderr=err, env=env, host="codex") == 0
    assert rules_in(context(out.getvalue())) == RULES


def test_a_ledger_not_sealed_here_hides_nothing(plan, project, run_hook, load_payload):
    from ctxward.core.fingerprint import fingerprint

    path = project / ".ctxward" / "injected" / f"{SESSION}.json"
    path.parent.mkdir(parents=True)
    forged = {"session_id": SESSION, "shown": [fingerprint(r) for r in RULES], "kept": []}
    path.write_text(json.dumps({**forged, "seal": "0" * 64}), encoding="utf-8")
    assert rules_in(session_start(run_hook, load_payload, "resume")) == RULES


def test_no_session_id_no_ledger(plan, project, run_hook, load_payload):
    for _ in range(2):
        assert rules_in(session_start(run_hook, load_payload, "resume", session_id="")) == RULES
    assert not (project / ".ctxward" / "injected").exists()


def test_the_ledger_reads_back_what_it_recorded(project):
    where = Project(project)
    ledger.record(where, "s1", ["a", "b"])
    ledger.summary_kept(where, "s1", ["c"])
    said = ledger.read(where, "s1")
    assert (said.shown, said.kept, said.known) == ({"a", "b"}, {"c"}, {"a", "b", "c"})
    ledger.begin(where, "s1", ["z"])
    said = ledger.read(where, "s1")
    assert (said.shown, said.kept) == ({"z"}, set())
    assert ledger.read(where, "s2").known == set()


def test_what_one_channel_cannot_carry_goes_to_the_next(
    project, make_skill, activate_skill, run_hook, load_payload
):
    """SessionStart(compact) carries what fits, the next prompt the rest (issue 17 item 1)."""
    many = [f"rule {n:03d}: keep invariant number {n} intact " + "x" * 60 for n in range(200)]
    make_skill("big", many)
    activate_skill("big", "big")
    pre = load_payload("PreCompact.json", trigger="auto", prompt_id="big-1")
    assert run_hook(pre)[0] == 0
    compact = session_start(run_hook, load_payload, "compact")
    post = load_payload(
        "PostCompact.json", trigger="auto", compact_summary=summary(), prompt_id="big-1"
    )
    assert run_hook(post) == (0, "", "")
    prompt = context(run_hook(load_payload("UserPromptSubmit.json", prompt="go on"))[1])

    first = re.findall(r"rule \d{3}: keep invariant number \d+ intact x+", compact)
    rest = re.findall(r"rule \d{3}: keep invariant number \d+ intact x+", prompt)
    assert first and rest, "both channels carry rules"
    assert not set(first) & set(rest), "no rule in both"
    assert len(compact) < 10_000 and len(prompt) < 10_000
    assert "Read that file before acting on the rules." in prompt  # the pointer, with its sha256
    assert re.search(r"sha256 [0-9a-f]{64}", prompt)
    later = session_start(run_hook, load_payload, "resume")  # the rest of the rest, next turn
    again = re.findall(r"rule \d{3}: keep invariant number \d+ intact x+", later)
    assert not (set(first) | set(rest)) & set(again)


@pytest.mark.parametrize("kind", ["folder", "fifo", "link"])
def test_a_ledger_path_that_is_no_file_costs_only_repetition(
    plan, project, run_hook, load_payload, tmp_path, kind
):
    import os

    path = project / ".ctxward" / "injected" / f"{SESSION}.json"
    path.parent.mkdir(parents=True)
    if kind == "folder":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        (tmp_path / "elsewhere.json").write_text("{}", encoding="utf-8")
        path.symlink_to(tmp_path / "elsewhere.json")
    for _ in range(2):  # nothing recorded: every rule, every time, and no error
        assert rules_in(session_start(run_hook, load_payload, "resume")) == RULES
    if kind == "link":
        assert (tmp_path / "elsewhere.json").read_text(encoding="utf-8") == "{}"  # not followed


def test_a_ledger_no_hook_touched_for_two_days_goes_when_housekeeping_is_due(project, aged_file):
    """Pruned with the leftover sweep's rhythm (`fsutil.housekeeping_due`), not on every write:
    a compaction does not scan every session's ledger each time."""
    bank = Project(project)
    day = 86_400
    old = aged_file(ledger.path_of(bank, "old-session"), (ledger.STALE_DAYS + 0.1) * day)
    recent = aged_file(ledger.path_of(bank, "recent-session"), (ledger.STALE_DAYS - 0.1) * day)
    swept = aged_file(bank.locks_dir / "swept", 0)  # a sweep just ran: not due
    ledger.begin(bank, SESSION)
    assert old.exists() and recent.exists()

    aged_file(swept, day)  # due again
    ledger.begin(bank, SESSION)
    assert not old.exists() and recent.exists()
    assert ledger.path_of(bank, SESSION).exists()
