"""The canonical G9 table: its numbers, every boundary at -1/0/+1 byte, and the README copy."""

from __future__ import annotations

import itertools
import re
from fractions import Fraction
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from ctxward.cli import cli
from ctxward.core import config
from ctxward.errors import BadInput
from ctxward.guard import thresholds
from ctxward.guard.thresholds import (
    DEFAULT_CAPACITY_BYTES,
    EMERGENCY,
    HARD_REJECT,
    NEAR_LIMIT,
    OK,
    SOFT_WARN,
    TIERS,
    tier_for,
)

README = Path(__file__).resolve().parents[2] / "docs" / "guard.md"  # the G9 table


def test_the_table_is_the_seeds():
    assert DEFAULT_CAPACITY_BYTES == 256 * 1024
    assert [(t.name, t.percent, t.code, t.warning) for t in TIERS] == [
        ("ok", 0, None, None),
        ("soft-warn", 50, None, None),
        ("near-limit", 75, None, "CONTEXT_NEAR_LIMIT"),
        ("hard-reject", 80, "PROMPT_TOO_LARGE", None),
        ("emergency", 90, "PROMPT_EMERGENCY", None),
    ]
    # The seed's 128KB / 192KB / 204KB / 230KB, exactly: 80% and 90% are not whole bytes.
    assert [t.threshold(DEFAULT_CAPACITY_BYTES) for t in TIERS] == [
        0,
        131_072,
        196_608,
        209_716,  # ceil(209,715.2)
        235_930,  # ceil(235,929.6)
    ]
    assert [t.rejects for t in TIERS] == [False, False, False, True, True]
    assert [t.force_passes for t in TIERS] == [False, False, False, True, False]


def test_the_tiers_are_ordered():
    percents = [tier.percent for tier in TIERS]
    assert percents == sorted(percents)
    assert thresholds.next_tier(OK) is SOFT_WARN
    assert thresholds.next_tier(HARD_REJECT) is EMERGENCY
    assert thresholds.next_tier(EMERGENCY) is None
    assert thresholds.BY_NAME["near-limit"] is NEAR_LIMIT


CAPACITIES = [DEFAULT_CAPACITY_BYTES, 262_143, 200_000, 131_071, 100_003, 1024]
BOUNDARIES = [
    (below, tier, capacity) for capacity in CAPACITIES for below, tier in itertools.pairwise(TIERS)
]


@pytest.mark.parametrize(
    ("below", "tier", "capacity"),
    BOUNDARIES,
    ids=[f"{tier.name}@{capacity}" for _, tier, capacity in BOUNDARIES],
)
def test_every_boundary_at_minus_one_zero_plus_one_byte(below, tier, capacity):
    line = tier.threshold(capacity)

    assert tier_for(line - 1, capacity) is below
    assert tier_for(line, capacity) is tier
    assert tier_for(line + 1, capacity) is tier
    # The rule is size * 100 >= percent * capacity, in integers.
    assert (line - 1) * 100 < tier.percent * capacity <= line * 100


def test_the_extremes():
    assert tier_for(0) is OK
    assert tier_for(10**12) is EMERGENCY
    assert tier_for(DEFAULT_CAPACITY_BYTES) is EMERGENCY


@pytest.mark.parametrize(("size", "capacity"), [(-1, 100), (0, 0), (5, -3)])
def test_nonsense_sizes_and_capacities_are_errors(size, capacity):
    with pytest.raises(ValueError, match="must"):
        tier_for(size, capacity)


@given(
    size=st.integers(min_value=0, max_value=10**9),
    capacity=st.integers(min_value=1, max_value=10**9),
)
def test_tier_matches_exact_fractions(size, capacity):
    expected = OK
    for tier in TIERS:
        if Fraction(size, capacity) >= Fraction(tier.percent, 100):
            expected = tier
    assert tier_for(size, capacity) is expected


@given(capacity=st.integers(min_value=1024, max_value=DEFAULT_CAPACITY_BYTES))
def test_no_allowed_capacity_lifts_the_emergency_line(capacity):
    assert EMERGENCY.threshold(capacity) <= EMERGENCY.threshold(DEFAULT_CAPACITY_BYTES)
    assert HARD_REJECT.threshold(capacity) <= HARD_REJECT.threshold(DEFAULT_CAPACITY_BYTES)


# --- configuration: the capacity may be lowered, the table may not be touched -----------------


def test_config_lowers_the_capacity_globally_and_per_agent():
    parsed = config.parse(
        {"dispatch": {"capacity_bytes": 100_000, "capacity_by_agent": {"Explore": 50_000}}},
        "config.yaml",
    )
    assert parsed.dispatch.capacity_bytes == 100_000
    assert parsed.dispatch.capacity_by_agent == {"Explore": 50_000}


@pytest.mark.parametrize(
    ("dispatch", "message"),
    [
        ({"capacity_bytes": DEFAULT_CAPACITY_BYTES + 1}, "outside"),
        ({"capacity_bytes": 10**9}, "outside"),
        ({"capacity_by_agent": {"Explore": DEFAULT_CAPACITY_BYTES + 1}}, "outside"),
        ({"capacity_bytes": 100_000, "capacity_by_agent": {"Explore": 100_001}}, "outside"),
        ({"capacity_bytes": 0}, "outside"),
        ({"capacity_bytes": True}, "whole number"),
        ({"percent": 95}, "unknown key"),
        ({"emergency_percent": 99}, "unknown key"),
        ({"tiers": []}, "unknown key"),
        ({"force": True}, "unknown key"),
        ({"enabled": False}, "unknown key"),
        ({"hook": False}, "unknown key"),
        ({"offload": "yes"}, "true or false"),
    ],
)
def test_config_cannot_lift_the_capacity_or_change_the_table(dispatch, message):
    with pytest.raises(BadInput, match=message):
        config.parse({"dispatch": dispatch}, "config.yaml")


def test_config_has_no_key_that_disables_the_guard():
    for top in ("guard", "hooks", "pre_tool_use", "g9"):
        with pytest.raises(BadInput, match="unknown key"):
            config.parse({top: False}, "config.yaml")


# --- what is measured ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool_input", "problem"),
    [
        ([], "tool_input is a JSON array, not an object"),
        ("text", "tool_input is a JSON str, not an object"),
        (None, "tool_input is a JSON null, not an object"),
        (7, "tool_input is a JSON number, not an object"),
        ({}, "tool_input has no 'prompt'"),
        ({"prompt": None}, "tool_input.prompt is a JSON null, not a string"),
        ({"prompt": 12}, "tool_input.prompt is a JSON number, not a string"),
        ({"prompt": True}, "tool_input.prompt is a JSON boolean, not a string"),
        ({"prompt": ["a"]}, "tool_input.prompt is a JSON array, not a string"),
        ({"prompt": {"text": "a"}}, "tool_input.prompt is a JSON object, not a string"),
        ({"prompt": "a", "description": 3}, "tool_input.description is a JSON number"),
        ({"prompt": "a", "subagent_type": ["x"]}, "tool_input.subagent_type is a JSON array"),
    ],
)
def test_input_problems(tool_input, problem):
    found = thresholds.input_problem(tool_input)
    assert found is not None
    assert found.startswith(problem)


def test_measurable_inputs():
    assert thresholds.input_problem({"prompt": ""}) is None
    assert thresholds.input_problem({"prompt": "a", "description": None}) is None


def test_size_is_utf8_bytes_of_every_string():
    assert thresholds.input_bytes({"prompt": "é€😀"}) == (2 + 3 + 4, 0)
    assert thresholds.input_bytes(
        {"prompt": "p", "description": "dd", "n": 5, "nested": {"kk": ["vvv", {"x": "y"}]}}
    ) == (1, 2 + 2 + 3 + 1 + 1)
    assert thresholds.text_bytes("\ud800") == 3  # a lone surrogate (JSON allows it) still counts


# --- the README table is generated, and the test fails when they drift ---------------------------


def test_readme_table_is_the_generated_one(project):
    result = CliRunner().invoke(cli, ["-C", str(project), "thresholds", "--markdown"])
    assert result.exit_code == 0, result.output
    readme = README.read_text(encoding="utf-8")
    found = re.search(
        r"<!-- thresholds:begin .*?-->\n(.*?)<!-- thresholds:end -->", readme, flags=re.S
    )
    assert found, "docs/guard.md has no <!-- thresholds:begin --> ... <!-- thresholds:end --> block"
    assert found.group(1) == result.output, (
        "docs/guard.md's G9 table drifted from guard/thresholds.py: paste the output of "
        "`ctxward thresholds --markdown` (run in a project without .ctxward/config.yaml)"
    )
