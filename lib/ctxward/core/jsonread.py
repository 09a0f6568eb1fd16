"""`json.loads` for the hook hot path, without importing `json`.

`import json` costs ~9 ms in a fresh interpreter (json.decoder imports `re`, which imports
`enum`, `functools` and `collections`): most of what a PreToolUse hook that has nothing to say
costs beyond the interpreter itself (bench/hook_latency.py). `loads` parses with the scanner
`json.loads` itself runs, CPython's C `_json.make_scanner`, given json's defaults. Whatever that
does not accept whole (an error, extra data, a BOM, an interpreter without `_json`) goes to
`json.loads`, whose answer, value or exception, is the one given: the two never differ.
"""

from __future__ import annotations

TYPE_CHECKING = False  # `typing.TYPE_CHECKING` without importing typing: a hot-path module
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

_WHITESPACE = " \t\n\r"  # what json skips around a document (json.decoder.WHITESPACE)


class _Defaults:
    """The settings `json.JSONDecoder()` hands its scanner."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = {
        "-Infinity": float("-inf"),
        "Infinity": float("inf"),
        "NaN": float("nan"),
    }.__getitem__


def _scanner() -> Callable[[str, int], tuple[Any, int]] | None:
    try:
        from _json import make_scanner
    except ImportError:  # not CPython: json.loads does it all
        return None
    settings: Any = _Defaults()  # typeshed wants a JSONDecoder; it reads these attributes
    scan: Callable[[str, int], tuple[Any, int]] = make_scanner(settings)
    return scan


_scan = _scanner()


def loads(text: str) -> Any:
    """What `json.loads(text)` returns, or raises."""
    if _scan is not None:
        start = len(text) - len(text.lstrip(_WHITESPACE))
        try:
            value, end = _scan(text, start)
        except Exception:  # noqa: BLE001 - json.loads, below, raises it in its own form
            value, end = None, -1
        if end >= 0 and not text[end:].strip(_WHITESPACE):
            return value
    import json

    return json.loads(text)
