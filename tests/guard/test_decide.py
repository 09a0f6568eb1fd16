"""guard: decide() for both layers, measure(), per-agent capacity, and the C9 offload plan."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctxward.guard import decide as guard
from ctxward.guard.decide import (
    OFFLOAD_MIN_BYTES,
    Unmeasurable,
    decide,
    measure,
    plan_offload,
    splice,
)
from ctxward.guard.thresholds import DEFAULT_CAPACITY_BYTES, TIERS

CAP = DEFAULT_CAPACITY_BYTES
LINES = {tier.name: tier.threshold(CAP) for tier in TIERS}
NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)

# --- decide ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("size", "tier", "allowed", "code", "warnings"),
    [
        (0, "ok", True, None, ()),
        (LINES["soft-warn"] - 1, "ok", True, None, ()),
        (LINES["soft-warn"], "soft-warn", True, None, ()),
        (LINES["near-limit"] - 1, "soft-warn", True, None, ()),
        (LINES["near-limit"], "near-limit", True, None, ("CONTEXT_NEAR_LIMIT",)),
        (LINES["hard-reject"] - 1, "near-limit", True, None, ("CONTEXT_NEAR_LIMIT",)),
        (LINES["hard-reject"], "hard-reject", False, "PROMPT_TOO_LARGE", ()),
        (LINES["emergency"] - 1, "hard-reject", False, "PROMPT_TOO_LARGE", ()),
        (LINES["emergency"], "emergency", False, "PROMPT_EMERGENCY", ()),
        (10**7, "emergency", False, "PROMPT_EMERGENCY", ()),
    ],
)
def test_decide_by_tier(size, tier, allowed, code, warnings):
    decision = decide(size, CAP)

    assert (decision.tier.name, decision.allowed, decision.code, decision.warnings) == (
        tier,
        allowed,
        code,
        warnings,
    )
    assert (decision.forced, decision.forced_at) == (False, None)


def test_force_lets_a_hard_reject_through_and_records_when():
    decision = decide(LINES["hard-reject"], CAP, force=True, now=NOW)

    assert decision.allowed and decision.forced
    assert decision.code is None
    assert decision.warnings == ("FORCED_OVER_THRESHOLD",)
    assert decision.forced_at == "2026-01-02T03:04:05Z"


def test_forced_at_is_utc_whatever_the_clock_zone():
    east = NOW.astimezone(timezone(timedelta(hours=8)))
    assert decide(LINES["hard-reject"], CAP, force=True, now=east).forced_at == (
        "2026-01-02T03:04:05Z"
    )
    stamp = decide(LINES["emergency"] - 1, CAP, force=True).forced_at
    assert stamp is not None
    assert datetime.fromisoformat(stamp.replace("Z", "+00:00")).tzinfo is not None


@pytest.mark.parametrize("size", [LINES["emergency"], LINES["emergency"] + 1, 10**9])
def test_force_never_passes_the_emergency_tier(size):
    decision = decide(size, CAP, force=True, now=NOW)

    assert not decision.allowed
    assert decision.code == "PROMPT_EMERGENCY"
    assert (decision.forced, decision.forced_at) == (False, None)


@pytest.mark.parametrize("size", [0, LINES["soft-warn"], LINES["near-limit"]])
def test_force_below_the_reject_line_changes_nothing(size):
    assert decide(size, CAP, force=True, now=NOW) == decide(size, CAP)


def test_envelope_has_exactly_the_contract_keys():
    envelope = decide(LINES["hard-reject"] + 5, CAP).envelope()

    assert envelope == {
        "ok": False,
        "tier": "hard-reject",
        "code": "PROMPT_TOO_LARGE",
        "warnings": [],
        "sizeBytes": LINES["hard-reject"] + 5,
        "capacityBytes": CAP,
        "thresholdBytes": LINES["hard-reject"],
        "forced": False,
        "forcedAt": None,
    }


def test_decision_facts():
    decision = decide(LINES["hard-reject"] + 10, CAP)
    assert decision.reject_at == LINES["hard-reject"]
    assert decision.over_by == 11  # one byte under the line is the goal
    assert decision.next_tier is not None and decision.next_tier.name == "emergency"
    assert decision.next_threshold == LINES["emergency"]
    assert decide(5, CAP).over_by == 0
    assert decide(LINES["emergency"], CAP).next_threshold is None


# --- measure -----------------------------------------------------------------------------------


def test_measure_counts_the_prompt_and_every_other_string():
    measured = measure(
        {
            "description": "Review",
            "prompt": "héllo",
            "subagent_type": "Explore",
            "run_in_background": False,
        }
    )
    assert (measured.prompt, measured.prompt_bytes) == ("héllo", 6)
    assert measured.other_bytes == len("Review") + len("Explore")
    assert measured.size == 6 + 13
    assert measured.agent_type == "Explore"


@pytest.mark.parametrize(
    "hidden",
    [
        {"text": "x" * 300_000},
        {"input": "x" * 300_000},
        {"command": "x" * 300_000},
        {"messages": [{"role": "user", "content": "x" * 300_000}]},
        {"nested": {"x" * 300_000: True}},
        {"description": "x" * 300_000},
    ],
    ids=["text", "input", "command", "nested", "nested-key", "description"],
)
def test_a_prompt_hidden_in_another_field_counts(hidden):
    # Top-level field names are the tool's parameter names and do not count; everything else does.
    measured = measure({"prompt": "hi", **hidden})
    assert measured.size >= 300_000
    assert not decide(measured.size, CAP).allowed


@pytest.mark.parametrize(
    "tool_input",
    [None, [], "prompt", 3, {}, {"prompt": None}, {"prompt": 1}, {"prompt": ["a"]}],
)
def test_measure_refuses_what_it_cannot_measure(tool_input):
    with pytest.raises(Unmeasurable):
        measure(tool_input)


@pytest.mark.parametrize(
    ("agent_type", "expected"),
    [
        ("Explore", 50_000),
        ("explore", 50_000),
        ("general-purpose", 100_000),
        ("General Purpose", 100_000),
        ("general_purpose", 100_000),
        (None, 100_000),  # omitted: Claude Code runs general-purpose
        ("Plan", 200_000),
    ],
)
def test_capacity_per_agent_type(agent_type, expected):
    by_agent = {"Explore": 50_000, "general-purpose": 100_000}
    assert guard.capacity_for(200_000, by_agent, agent_type) == expected


def test_an_agent_capacity_never_exceeds_the_global_one():
    assert guard.capacity_for(100_000, {"Explore": 150_000}, "Explore") == 100_000


# --- C9 offload planning -----------------------------------------------------------------------


def big(size: int, word: str = "data") -> str:
    """One paragraph of exactly `size` bytes (no blank line inside)."""
    line = (word + " ") * 15 + "\n"
    text = line * (size // len(line) + 1)
    return text[: size - 1].rstrip("\n") + "." if size > 1 else "."


def test_blocks_are_fences_and_paragraphs():
    prompt = "\n".join(
        [
            "Intro line one",
            "intro line two",
            "",
            "```python",
            "x = 1",
            "",
            "y = 2",
            "```",
            "after the fence",
            "~~~~",
            "~~~ not a close (shorter)",
            "~~~~~",
            "",
            "    ```indented four spaces: not a fence",
            "```inline `code` is not a fence",
            "",
            "```",
            "unclosed fence runs to the end",
        ]
    )
    found = [(b.kind, b.start, b.end) for b in guard.blocks(prompt)]

    assert found == [
        ("pasted", 0, 2),
        ("fenced", 3, 8),
        ("pasted", 8, 9),
        ("fenced", 9, 12),
        ("pasted", 13, 15),
        ("fenced", 16, 18),
    ]


def test_only_blocks_larger_than_2kb_move():
    exactly = big(OFFLOAD_MIN_BYTES)
    over = big(OFFLOAD_MIN_BYTES + 1)
    assert len(exactly.encode()) == OFFLOAD_MIN_BYTES
    plan = plan_offload(f"Do this.\n\n{exactly}\n\n{over}\n")

    assert [block.text for block in plan.movable] == [over]
    assert [block.text for block in plan.kept] == ["Do this.", exactly]
    assert plan.movable_bytes == OFFLOAD_MIN_BYTES + 1


def test_headline_skips_the_fence():
    assert guard.headline("```python\n\nimport os\n```", "fenced") == "import os"
    assert guard.headline("first\nsecond", "pasted") == "first"
    assert guard.headline("```\n```", "fenced") == ""


def test_splice_replaces_each_block_by_one_line():
    prompt = f"Task.\n\n{big(3000)}\n\nMore.\n\n```\n{big(2500)}\n```"
    plan = plan_offload(prompt)
    spliced = splice(prompt, [(block, f"<{i}>") for i, block in enumerate(plan.movable)])

    assert spliced == "Task.\n\n<0>\n\nMore.\n\n<1>"
    with pytest.raises(ValueError, match="one line"):
        splice(prompt, [(plan.movable[0], "two\nlines")])


def reassemble(spliced: str, stored: dict[str, str]) -> str:
    return "\n".join(stored.get(line, line) for line in spliced.split("\n"))


pieces = st.one_of(
    st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=40),
    st.builds(big, st.integers(min_value=1, max_value=5000)),
    st.builds(lambda n: f"```\n{big(n)}\n```", st.integers(min_value=1, max_value=5000)),
    st.builds(lambda n: f"~~~text\n{big(n)}", st.integers(min_value=1, max_value=3000)),
    st.sampled_from(["", "\n", "\r\n", "  ", "```", "~~~", "\n\n\n"]),
)


@given(st.lists(pieces, max_size=12))
def test_offload_round_trip_is_exact(parts):
    prompt = "\n".join(parts)
    plan = plan_offload(prompt)
    stored = {f"<pointer {i}>": block.text for i, block in enumerate(plan.movable)}
    spliced = splice(prompt, [(block, f"<pointer {i}>") for i, block in enumerate(plan.movable)])

    assert reassemble(spliced, stored) == prompt
    assert all(block.size > OFFLOAD_MIN_BYTES for block in plan.movable)
    assert all(block.size <= OFFLOAD_MIN_BYTES for block in plan.kept)


@given(
    st.lists(
        st.sampled_from(
            [
                *("```", "````", "~~~", "~~~~", " ```", "    ```", "``` x", "```py", "x", ""),
                *("~~~~~ \t", "a ``` b", "`` `", "````\r", "   ~~~~"),
            ]
        ),
        max_size=30,
    )
)
def test_a_fenced_block_ends_at_its_first_closing_line(lines):
    prompt = "\n".join(lines)
    for block in guard.blocks(prompt):
        if block.kind == "fenced":
            fence = guard._opens(lines[block.start])["fence"]
            closing = [
                i for i in range(block.start + 1, len(lines)) if guard._closes(lines[i], fence)
            ]
            assert block.end == (closing[0] + 1 if closing else len(lines))
