"""`json.loads` and `json.dumps` for the per-call hooks, without importing `json`.

`import json` costs ~9 ms in a fresh interpreter (json.decoder and json.encoder import `re`,
which imports `enum`, `functools` and `collections`): most of what a hook that has nothing to
say costs beyond the interpreter itself (bench/hook_latency.py, bench/drift_latency.py). These
two run the C code `json.loads` and `json.dumps` themselves run (CPython's `_json` scanner and
encoder, given the settings json gives them). Whatever that code does not take whole (an error,
extra data, a BOM, indentation, an interpreter without `_json`) goes to `json` itself, whose
answer, value or exception, is the one given: the two never differ.
"""

from __future__ import annotations

TYPE_CHECKING = False  # `typing.TYPE_CHECKING` without importing typing: a hot-path module
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

_WHITESPACE = " \t\n\r"  # what json skips around a document (json.decoder.WHITESPACE)
_OTHER_ENCODINGS = (b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")  # json.detect_encoding's BOMs


class _DecoderSettings:
    """What `json.JSONDecoder()` hands its scanner."""

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


try:
    from _json import encode_basestring, encode_basestring_ascii, make_encoder, make_scanner
except ImportError:  # not CPython: json does it all
    _ACCELERATED = False
else:
    _ACCELERATED = True
    _settings: Any = _DecoderSettings()  # typeshed wants a JSONDecoder; these are what it reads
    _scan: Callable[[str, int], tuple[Any, int]] = make_scanner(_settings)


def loads(data: str | bytes) -> Any:
    """What `json.loads(data)` returns, or raises."""
    text = _text(data)
    if _ACCELERATED and text is not None:
        start = len(text) - len(text.lstrip(_WHITESPACE))
        try:
            value, end = _scan(text, start)
        except Exception:  # noqa: BLE001 - json.loads, below, raises it in its own form
            value, end = None, -1
        if end >= 0 and not text[end:].strip(_WHITESPACE):
            return value
    import json

    return json.loads(data)


def _text(data: str | bytes) -> str | None:
    """`data` as json.loads would read it, when that is plain UTF-8 (else None: json decides)."""
    if isinstance(data, str):
        return data
    if data.startswith(_OTHER_ENCODINGS) or b"\x00" in data[:4]:
        return None  # a BOM or UTF-16/32: json.detect_encoding's business
    try:
        return data.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        return None


def dumps(
    value: Any,
    *,
    ensure_ascii: bool = True,
    separators: tuple[str, str] = (", ", ": "),
    sort_keys: bool = False,
    default: Callable[[Any], Any] | None = None,
) -> str:
    """What `json.dumps(value, ...)` returns with these arguments (no indent), or raises."""
    if _ACCELERATED:
        encode = encode_basestring_ascii if ensure_ascii else encode_basestring
        item_separator, key_separator = separators
        try:
            chunks = make_encoder(
                {},  # json's markers: a circular reference is an error, not a hang
                default or _not_serializable,
                encode,
                None,
                key_separator,
                item_separator,
                sort_keys,
                False,  # skipkeys
                True,  # allow_nan
            )(value, 0)
            return "".join(chunks)
        except Exception:  # noqa: BLE001 - json.dumps, below, raises it in its own form
            pass
    import json

    return json.dumps(
        value,
        ensure_ascii=ensure_ascii,
        separators=separators,
        sort_keys=sort_keys,
        default=default,
    )


def _not_serializable(value: object) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")
