"""`hotjson` answers exactly as `json` does: the same value or text, or the same error."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxward.core import hotjson

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4)
        | st.tuples(children, children)
        | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)
# What json.dumps also takes: keys that are not strings, objects only `default` can write.
ODD_VALUES = st.recursive(
    JSON_VALUES | st.builds(object) | st.just({1: "int key", None: "None key", 2.5: "float"}),
    lambda children: st.lists(children, max_size=3),
    max_leaves=6,
)


def _answer(function, *args, **kwargs) -> tuple[str, str]:
    """What `function` gives, comparable across NaN: its JSON, or the error's type and text."""
    try:
        value = function(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - the error is what is compared
        return type(exc).__name__, str(exc)
    return "value", value if isinstance(value, str) else json.dumps(value, sort_keys=True)


@settings(max_examples=150, deadline=None)
@given(JSON_VALUES, st.sampled_from([None, 0, 2]), st.booleans(), st.sampled_from(["", " \n\t\r "]))
def test_any_document_json_writes_reads_back_as_json_loads_reads_it(value, indent, ascii_only, pad):
    text = pad + json.dumps(value, indent=indent, ensure_ascii=ascii_only) + pad
    assert _answer(hotjson.loads, text) == _answer(json.loads, text)
    data = text.encode("utf-8", "surrogatepass")
    assert _answer(hotjson.loads, data) == _answer(json.loads, data)


@settings(max_examples=150, deadline=None)
@given(JSON_VALUES, st.integers(min_value=0, max_value=40), st.text(max_size=3))
def test_a_damaged_document_gets_json_loads_own_answer(value, cut, insert):
    text = json.dumps(value)
    damaged = text[:cut] + insert + text[cut + len(insert) :]
    assert _answer(hotjson.loads, damaged) == _answer(json.loads, damaged)
    data = damaged.encode("utf-8", "surrogatepass")
    assert _answer(hotjson.loads, data) == _answer(json.loads, data)


@pytest.mark.parametrize(
    "data",
    [
        "",
        "   ",
        "\ufeff{}",  # a BOM in a str: json refuses it with its own message
        b"\xef\xbb\xbf{}",  # in bytes: json reads past it
        '{"a": 1}'.encode("utf-16"),  # json detects UTF-16
        b'{"a": "\xff"}',  # not UTF-8
        '{"a": 1} {"b": 2}',  # extra data
        '{"a": 1}\n\n',  # trailing whitespace is fine
        "[1, 2,]",
        '{"a": NaN, "b": -Infinity}',
        '"\\ud800"',  # a lone surrogate escape: json accepts it
        "1" * 5000,  # past the integer conversion limit: json's ValueError
        "[" * 100_000 + "]" * 100_000,  # deeper than the scanner recurses: RecursionError
    ],
)
def test_the_edges_of_json_get_json_loads_own_answer(data):
    assert _answer(hotjson.loads, data) == _answer(json.loads, data)


@settings(max_examples=150, deadline=None)
@given(
    ODD_VALUES,
    st.booleans(),
    st.sampled_from([(", ", ": "), (",", ":")]),
    st.booleans(),
    st.sampled_from([None, str]),
)
def test_dumps_writes_what_json_dumps_writes(value, ascii_only, separators, sort_keys, default):
    options = {
        "ensure_ascii": ascii_only,
        "separators": separators,
        "sort_keys": sort_keys,
        "default": default,
    }
    mine, theirs = _answer(hotjson.dumps, value, **options), _answer(json.dumps, value, **options)
    if default is str:  # an object's text names its address, the same object in both calls
        assert mine == theirs
    else:
        assert mine[0] == theirs[0] and (mine[0] != "value" or mine == theirs)


def test_a_circular_value_is_json_dumps_own_error():
    loop: list[object] = []
    loop.append(loop)
    assert _answer(hotjson.dumps, loop) == _answer(json.dumps, loop)


def test_the_constants_are_json_own():
    value = hotjson.loads("[NaN, Infinity, -Infinity]")
    assert math.isnan(value[0]) and value[1:] == [math.inf, -math.inf]
    assert hotjson.dumps([math.nan, math.inf]) == "[NaN, Infinity]"
