"""180 rules (3 plans × 60) through real compactions in the pinned Claude Code CLI (issue 17).

Each rule is about 80 characters: 180 of them are ~15 KB of rules, more than any one channel
carries (the host cuts each hook output at 10,000 characters; ctxward keeps to 9,000). Around
one compaction the channels are: the summary (PreCompact's instructions ask for the rules they
list), the `/compact` record (Claude Code shows the model PreCompact's stdout after a manual
compaction), SessionStart(compact) (the rules the summary and that record lack), and the next
prompt (the rest). Checked in the requests the mock received:

- **manual**: `/compact` with a faithful summarizer (it copies the rules the instructions list),
  then two resumed turns: the first request after the compaction has all 180 rules verbatim, and
  no rule twice except where the summary is the second copy; the resumed turn after it adds none.
- **auto, lossy**: the CLI compacts by itself at the start of a turn, and the summary keeps 165
  rules, alters 5 (a qualifier appended) and drops 10: SessionStart(compact) states exactly those
  15, once; the first request after the compaction has all 180 verbatim; the next turn adds none.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ctxward.core.fingerprint import fingerprint

pytestmark = pytest.mark.e2e

PLANS = ("p1", "p2", "p3")
WORDS = [
    "alpha",
    "bravo",
    "charlie",
    "delta",
    "echo",
    "foxtrot",
    "golf",
    "hotel",
    "india",
    "juliet",
    "kilo",
    "lima",
]
SESSION_CONTEXT = "SessionStart hook additional context: "
PROMPT_CONTEXT = "UserPromptSubmit hook additional context: "
QUALIFIER = " unless the reviewer waives it"
COMPACT_LINE = "(ctxward re-injected them after this compaction"


def rule(plan: str, number: int) -> str:
    word = WORDS[number % len(WORDS)]
    return f"{plan}-r{number:02d}: keep the {word} contract number {number} of {plan} intact always"


RULES = [rule(plan, number) for plan in PLANS for number in range(60)]


@dataclass(frozen=True)
class Run:
    project: Path
    requests: list[Any]  # harness.Request after the compaction, in order
    summary: str  # the <summary> the model kept


def request_text(request: Any) -> str:
    system = request.body.get("system", "")
    parts = [system if isinstance(system, str) else json.dumps(system)]
    parts += [harness_text(m) for m in request.messages]
    return "\n".join(parts)


def harness_text(message: dict[str, Any]) -> str:
    content = message.get("content", "")
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") for b in content if b.get("type") == "text")


def contexts(request: Any, marker: str) -> list[str]:
    """The hook contexts in a request's messages, each cut where the CLI's own text follows
    (2.1.332 puts them in one system message with its skill list and environment)."""
    found = []
    for message in request.messages:
        text = harness_text(message)
        for chunk in text.split(marker)[1:]:
            chunk = chunk.split(SESSION_CONTEXT)[0].split(PROMPT_CONTEXT)[0]
            paragraphs = chunk.split("\n\n")
            ours = [paragraphs[0]]
            for paragraph in paragraphs[1:]:
                if not paragraph.startswith(OURS):
                    break
                ours.append(paragraph)
            found.append("\n\n".join(ours).rstrip("\n") + "\n")
    return found


# How ctxward's paragraphs start (templates/invariants/session_start_context.md.j2,
# sessions/*.md.j2).
OURS = ("# Plan: ", "## ", "- ", "(ctxward", "ctxward ", "[ctxward", "Session recovery", "Full ")


def make_plans(sandbox: Any, project: Path) -> None:
    for index, plan in enumerate(PLANS):
        skill = project / ".claude" / "skills" / f"s{index}" / "SKILL.md"
        skill.parent.mkdir(parents=True)
        lines = "".join(f"  - {json.dumps(r)}\n" for r in RULES if r.startswith(f"{plan}-"))
        skill.write_text(f"---\nname: s{index}\ninvariants:\n{lines}---\nbody\n", "utf-8")
        done = sandbox.run(["ctxward", "activate", f"s{index}", "--slug", plan], cwd=project)
        assert done.returncode == 0, done.stderr


def after(requests: list[Any]) -> list[Any]:
    (compaction,) = [r for r in requests if r.reply == "compact_summary"]
    return [r for r in requests if r.n > compaction.n and r.path != "/"]


def summary_of(request: Any) -> str:
    """The summary's own text block (the /compact record is another block of that message)."""
    content = request.messages[0].get("content", "")
    blocks = [content] if isinstance(content, str) else [b.get("text", "") for b in content]
    found = [b for b in blocks if "MOCK_SUMMARY" in b]
    assert len(found) == 1, f"not the request after the compaction:\n{blocks!r:.800}"
    text = found[0].split("MOCK_SUMMARY", 1)[1]
    assert "PreCompact [" not in text, "the /compact record is not a block of its own"
    return text


def copies(text: str, summary: str) -> dict[str, tuple[int, int]]:
    """Each rule: (copies in the request, copies in the summary)."""
    return {r: (text.count(r), summary.count(r)) for r in RULES}


def assert_every_rule_once(request: Any, summary: str) -> None:
    counted = copies(request_text(request), summary)
    absent = [r for r, (seen, _) in counted.items() if seen == 0]
    assert not absent, f"{len(absent)}/180 rules not in the request: {absent[:5]}"
    twice = [(r, n) for r, n in counted.items() if n[0] - n[1] > 1]
    assert not twice, f"{len(twice)} rules more than once besides the summary: {twice[:5]}"


MANUAL = ("/compact", "after compact", "again")
AUTO = ("big E2E_INPUT_TOKENS=990000", "next turn", "again")  # compacts as "next turn" starts
FAITHFUL = "Active invariants:\nE2E_COPY_RULES\n"  # the mock copies what the instructions list


def lossy_summary() -> str:
    kept = [r for r in RULES if r not in LOST + ALTERED]
    lines = [f"- {r}" for r in kept] + [f"- {r}{QUALIFIER}." for r in ALTERED]
    return "Active invariants:\n" + "\n".join(lines) + "\n"


def run(sandbox: Any, project: Path, summary: str, prompts: tuple[str, ...]) -> Run:
    """`claude -p hello`, then each prompt as a resumed turn; the requests after the compaction."""
    make_plans(sandbox, project)
    sandbox.summary_file.write_text(summary, encoding="utf-8")
    before = len(sandbox.requests())
    sid = sandbox.claude("-p", "hello", "--output-format", "json", cwd=project).result()
    for prompt in prompts:
        sandbox.claude("--resume", sid["session_id"], "-p", prompt, cwd=project)
    requests = after(sandbox.requests()[before:])
    return Run(project, requests, summary_of(requests[0]))


@pytest.fixture(scope="module")
def manual(sandbox: Any, tmp_path_factory: pytest.TempPathFactory) -> Run:
    import e2e_harness as harness

    project = harness.make_project(tmp_path_factory.mktemp("m") / "p", load_settings())
    return run(sandbox, project, FAITHFUL, MANUAL)


@pytest.fixture(scope="module")
def auto(sandbox: Any, tmp_path_factory: pytest.TempPathFactory) -> Run:
    import e2e_harness as harness

    project = harness.make_project(tmp_path_factory.mktemp("a") / "p", load_settings())
    return run(sandbox, project, lossy_summary(), AUTO)


LOST = [RULES[n] for n in (3, 17, 40, 61, 75, 99, 120, 133, 150, 179)]
ALTERED = [RULES[n] for n in (8, 66, 101, 142, 170)]


def load_settings() -> dict[str, Any]:
    import e2e_harness as harness

    settings: dict[str, Any] = harness.load_settings_example()
    return settings


def test_manual_compaction_first_request_has_all_180_rules_once(manual: Run) -> None:
    assert len(manual.requests) >= 2, "the turns after /compact never reached the mock"
    assert_every_rule_once(manual.requests[0], manual.summary)


def test_manual_compaction_then_resume_adds_no_copy(manual: Run) -> None:
    assert_every_rule_once(manual.requests[-1], manual.summary)
    assert "again" in harness_text(manual.requests[-1].messages[-1])


def test_auto_compaction_first_request_has_all_180_rules_once(auto: Run) -> None:
    assert auto.requests, "no request after the auto compaction"
    assert_every_rule_once(auto.requests[0], auto.summary)


def test_auto_compaction_restates_exactly_the_lost_and_altered_rules(auto: Run) -> None:
    found = contexts(auto.requests[0], SESSION_CONTEXT)
    (context,) = [c for c in found if COMPACT_LINE in c]
    stated = {r for r in RULES if f"- {r}\n" in context}
    # The turn's own SessionStart(resume) ran before the compaction and reached no model yet:
    # 2.1.332 puts it after the summary, so what it stated is not stated again.
    carried = {r for c in found if COMPACT_LINE not in c for r in RULES if f"- {r}\n" in c}
    assert stated <= set(LOST + ALTERED), "a rule the summary kept was restated"
    assert stated | (carried & set(LOST + ALTERED)) == set(LOST + ALTERED)
    assert not stated & carried, "restated twice"
    for request in auto.requests:
        assert not contexts(request, PROMPT_CONTEXT), "restated again by the next prompt"


def test_auto_compaction_report_grades_each_rule(auto: Run) -> None:
    (path,) = sorted((auto.project / ".ctxward" / "compactions").glob("*.json"))
    report = json.loads(path.read_text(encoding="utf-8"))
    verdicts = {row["rule"]: row for row in report["verdicts"]}
    assert {r for r, row in verdicts.items() if row["verdict"] == "lost"} == set(LOST)
    assert {r for r, row in verdicts.items() if row["verdict"] == "altered"} == set(ALTERED)
    assert all(row["fingerprint"] == fingerprint(r)[:12] for r, row in verdicts.items())


def test_auto_compaction_then_resume_adds_no_copy(auto: Run) -> None:
    assert_every_rule_once(auto.requests[-1], auto.summary)
