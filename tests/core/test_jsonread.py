"""`jsonread.loads` answers exactly as `json.loads` does: the same value or the same error."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxward.core import jsonread

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)


def _answer(function, text: str) -> tuple[str, str]:
    """What `function(text)` gives, comparable across NaN: its JSON, or the error's type, text."""
    try:
        value = function(text)
    except Exception as exc:  # noqa: BLE001 - the error is what is compared
        return type(exc).__name__, str(exc)
    return "value", json.dumps(value, sort_keys=True)


@settings(max_examples=400, deadline=None)
@given(JSON_VALUES, st.sampled_from([None, 0, 2]), st.booleans(), st.sampled_from(["", " \n\t\r "]))
def test_any_document_json_writes_reads_back_as_json_loads_reads_it(value, indent, ascii_only, pad):
    text = pad + json.dumps(value, indent=indent, ensure_ascii=ascii_only) + pad
    assert _answer(jsonread.loads, text) == _answer(json.loads, text)


@settings(max_examples=400, deadline=None)
@given(JSON_VALUES, st.integers(min_value=0, max_value=40), st.text(max_size=3))
def test_a_damaged_document_gets_json_loads_own_answer(value, cut, insert):
    text = json.dumps(value)
    damaged = text[:cut] + insert + text[cut + len(insert) :]
    assert _answer(jsonread.loads, damaged) == _answer(json.loads, damaged)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "\ufeff{}",  # a BOM: json refuses it with its own message
        '{"a": 1} {"b": 2}',  # extra data
        '{"a": 1}\n\n',  # trailing whitespace is fine
        "[1, 2,]",
        '{"a": NaN, "b": -Infinity}',
        '"\\ud800"',  # a lone surrogate escape: json accepts it
        "1" * 5000,  # past the integer conversion limit: json's ValueError
        "[" * 100_000 + "]" * 100_000,  # deeper than the scanner recurses: RecursionError
    ],
)
def test_the_edges_of_json_get_json_loads_own_answer(text):
    assert _answer(jsonread.loads, text) == _answer(json.loads, text)


def test_the_constants_are_json_own():
    value = jsonread.loads("[NaN, Infinity, -Infinity]")
    assert math.isnan(value[0]) and value[1:] == [math.inf, -math.inf]
