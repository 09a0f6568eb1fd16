"""ctxward.core.limits: every hook's time budget, and the sizes a hook reads from a repository.

The budgets are checked against the timeouts the hosts are actually given (settings.example.json
and hooks/hooks.json); each size limit is checked at the place that reads the file: a config or
a plan past it is refused in one line naming it, the rest of the project is read as usual.
"""

from __future__ import annotations

import json
import random
import re
import time
from pathlib import Path

import pytest

from ctxward.core import limits
from ctxward.core.config import load
from ctxward.core.project import Project
from ctxward.errors import BadInput
from ctxward.events import HANDLERS
from ctxward.invariants.read import load_plan, readable_plans
from ctxward.invariants.summary import _without_analysis, summary_text

REPO = Path(__file__).resolve().parents[2]
WIRINGS = ("settings.example.json", "hooks/hooks.json")


def wired_timeouts(relative: str) -> dict[str, float]:
    config = json.loads((REPO / relative).read_text(encoding="utf-8"))
    return {
        event: hook["timeout"]
        for event, groups in config["hooks"].items()
        for group in groups
        for hook in group["hooks"]
    }


# -- time budgets ----------------------------------------------------------------------------


@pytest.mark.parametrize("wiring", WIRINGS)
def test_the_host_timeouts_are_the_ones_wired(wiring):
    wired = wired_timeouts(wiring)
    assert wired == {event: limits.HOST_TIMEOUT_SECONDS[event] for event in wired}


def test_every_handled_event_has_a_budget_well_under_its_host_timeout():
    assert set(limits.BUDGET_SECONDS) == set(HANDLERS) == set(limits.HOST_TIMEOUT_SECONDS)
    for event, budget in limits.BUDGET_SECONDS.items():
        assert 0 < budget <= limits.HOST_TIMEOUT_SECONDS[event] / 2, event


def test_the_documented_wiring_of_session_end_gives_the_timeout_its_budget_assumes():
    page = (REPO / "docs" / "sessions.md").read_text(encoding="utf-8")
    (wired,) = re.findall(r'"SessionEnd": \[\{"hooks": \[\{.*"timeout": (\d+)\}\]\}\]', page)
    assert int(wired) == limits.HOST_TIMEOUT_SECONDS["SessionEnd"]


# -- the config --------------------------------------------------------------------------------


def test_a_config_past_the_limit_is_refused_unread_in_one_line(project):
    path = project / ".ctxward" / "config.yaml"
    path.parent.mkdir()
    path.write_text("# a comment line of a committed config\n" * 120_000)  # 4.8 MB

    with pytest.raises(BadInput) as refused:
        load(Project(project))

    assert str(refused.value) == (
        ".ctxward/config.yaml: refused: larger than 65,536 bytes (a config is a few lines)"
    )


def test_a_config_at_the_limit_is_read(project):
    path = project / ".ctxward" / "config.yaml"
    path.parent.mkdir()
    line = "# padding\n"
    body = "injection: {limit_chars: 5000}\n"
    body += line * ((limits.MAX_CONFIG_BYTES - len(body)) // len(line))
    path.write_text(body + "#" * (limits.MAX_CONFIG_BYTES - len(body) - 1) + "\n")
    assert path.stat().st_size == limits.MAX_CONFIG_BYTES

    assert load(Project(project)).injection.limit_chars == 5000


# -- plans -------------------------------------------------------------------------------------


def write_plan(root: Path, slug: str, rules: int, rule: str = "rule {i} holds") -> Path:
    folder = root / "docs" / "plans" / slug
    folder.mkdir(parents=True)
    lines = "".join(f"- {rule.format(i=i)}\n" for i in range(rules))
    (folder / "invariants.md").write_text(f"# Plan\n\n## a-skill\n\n### Rules\n\n{lines}")
    return folder


def test_a_plan_past_the_byte_limit_costs_only_itself(project):
    write_plan(project, "good", 3)
    write_plan(project, "huge", 200_000)  # 4 MB

    plans, unreadable = readable_plans(Project(project))

    assert [plan.slug for plan in plans] == ["good"]
    assert unreadable == ["docs/plans/huge/invariants.md: cannot read: larger than 262,144 bytes"]


def test_a_plan_past_the_rule_limit_costs_only_itself(project):
    write_plan(project, "good", 3)
    folder = write_plan(project, "many", limits.MAX_PLAN_RULES + 1, rule="r{i}")
    assert (folder / "invariants.md").stat().st_size < limits.MAX_PLAN_BYTES

    plans, unreadable = readable_plans(Project(project))

    assert [plan.slug for plan in plans] == ["good"]
    assert unreadable == [
        "docs/plans/many/invariants.md: cannot read: 2,001 rules, more than 2,000"
    ]
    assert limits.MAX_PLAN_RULES == 2_000


def test_a_plan_at_the_rule_limit_is_read(project):
    folder = write_plan(project, "full", limits.MAX_PLAN_RULES)
    assert load_plan(folder).rule_count == limits.MAX_PLAN_RULES


def test_a_committed_payload_far_larger_than_its_plan_is_distilled_again(project):
    from ctxward.invariants.distill import distill_all

    folder = write_plan(project, "good", 3)
    plan = load_plan(folder)
    source = "docs/plans/good/invariants.md"
    head = f"<!-- ctxward: distilled from {source} sha256={plan.source_sha256} -->"
    forged = head + "\n## a-skill\n\n### Rules\n\n" + "- r\n" * 200_000
    (folder / ".compaction-payload.md").write_text(forged)

    assert plan.fresh_payload() is None  # not read whole: past its limit it is no payload of ours
    written, unwritten = distill_all(Project(project), [plan])
    assert (written, unwritten) == ([folder / ".compaction-payload.md"], [])
    assert plan.fresh_payload() is not None  # distilled again from the plan: its 3 rules
    assert (folder / ".compaction-payload.md").stat().st_size < 2_000


# -- what the compaction hooks read of the session -------------------------------------------


def test_analysis_blocks_are_cut_as_the_regex_did():
    pattern = re.compile(r"<analysis>.*?</analysis>", re.DOTALL)
    pieces = ["<analysis>", "</analysis>", "x", "<", ">", "</analysis", "\n", "<summary>"]
    rng = random.Random(20)
    for _ in range(20_000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 14)))
        assert _without_analysis(text) == pattern.sub("", text), text


def test_unclosed_analysis_tags_cost_linear_time():
    """The regex scanned to the end from each unclosed tag: 100 KB of them took 9 s."""

    def cost(n: int) -> float:
        text = "<analysis>" * n + "<summary>rule</summary>"
        start = time.process_time()
        assert summary_text(text) == "rule"
        return time.process_time() - start

    small, large = min(cost(10_000) for _ in range(3)), cost(100_000)
    assert large <= 30 * max(small, 1e-3), (small, large)


def test_a_session_summary_reads_whole_lines_within_the_limits(tmp_path):
    from ctxward.sessions.extract import _Extractor

    walker = _Extractor()
    long = "word " * 40_000 + "\n" + "tail\n"  # 200 KB on one line, then a short one
    assert walker._scanned("short\ntext") == "short\ntext"
    assert walker._scanned(long) == ""  # the first line alone is past the limit
    lines = ("a line of text\n" * 10_000)[: limits.MAX_SCANNED_MESSAGE_CHARS + 100]
    kept = walker._scanned(lines)
    assert kept.endswith("\n") and len(kept) <= limits.MAX_SCANNED_MESSAGE_CHARS
    assert lines.startswith(kept)
    walker.scanned = limits.MAX_SCANNED_TRANSCRIPT_CHARS - 5
    assert walker._scanned("one\ntwo\nthree\n") == "one\n"
    assert walker._scanned("more\n") == ""
