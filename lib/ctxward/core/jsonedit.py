"""Format-preserving edits of a host's JSON settings file (Claude Code, Codex).

- `read_json` parses with `json` and refuses (BadInput, one line naming the file) anything not
  safely mergeable: not UTF-8, not an object, a duplicated key, comments (JSON has none; a file
  with `//` or `/* */` is refused rather than rewritten without them), an integer too long, a
  nesting too deep, a FIFO, a file past MAX_SETTINGS_BYTES. `hooks_block` checks the shape of
  its `hooks` object.
- `rewrite` writes the new data back with the file's own formatting: every value that did not
  change is copied from the original text verbatim (inline objects, alignment, escapes, key
  order, the final newline); only the objects and lists that changed are written anew, with the
  file's indentation (2 or 4 spaces, tabs, or none) and line endings (LF or CRLF).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctxward.core.fsutil import read_regular
from ctxward.core.values import Value
from ctxward.errors import BadInput, digits_problem

MAX_SETTINGS_BYTES = 16 * 1024 * 1024  # a host's settings file; real ones are a few KB


class JsonStyle(Value):
    """How a JSON file was formatted, so that it can be written back the same way."""

    indent: str | None = "  "
    separators: tuple[str, str] = (",", ": ")
    ensure_ascii: bool = False
    trailing_newline: bool = True
    newline: str = "\n"  # or "\r\n": a file written on Windows keeps its line endings

    def dumps(self, data: Any) -> str:
        text = json.dumps(
            data, indent=self.indent, separators=self.separators, ensure_ascii=self.ensure_ascii
        ).replace("\n", self.newline)
        return text + self.newline if self.trailing_newline else text


def detect_style(text: str) -> JsonStyle:
    """The indentation, separators, escaping, line endings and final newline of a JSON text."""
    indent: str | None = None
    for line in text.splitlines()[1:]:
        stripped = line.lstrip(" \t")
        if stripped and stripped != line:
            lead = line[: len(line) - len(stripped)]
            indent = "\t" if lead.startswith("\t") else " " * len(lead)
            break
    if indent is None:  # the separators between keys and values, strings left out
        spaced = re.search(r'""\s*:\s', _STRING.sub('""', text)) is not None
        separators = (", ", ": ") if spaced else (",", ":")
    else:
        separators = (",", ": ")
    ascii_only = text.isascii() and "\\u" in text
    return JsonStyle(
        indent=indent,
        separators=separators,
        ensure_ascii=ascii_only,
        trailing_newline=text.endswith("\n") or not text,
        newline="\r\n" if "\r\n" in text.split("\n", 1)[0] + "\n" else "\n",
    )


@dataclass(slots=True)
class _Node:
    """A JSON value's place in the original text (objects and arrays keep their children's)."""

    start: int
    end: int
    value: Any
    keys: dict[str, _Node] | None = None
    items: list[_Node] | None = None


_DECODER = json.JSONDecoder()
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_SPACE = re.compile(r"[ \t\n\r]*")


def _parse_spans(text: str, index: int = 0) -> _Node:
    """Parse already-validated JSON, remembering where every value sits in `text`."""
    index = _SPACE.match(text, index).end()  # type: ignore[union-attr]
    char = text[index]
    if char not in "{[":
        value, end = _DECODER.raw_decode(text, index)
        return _Node(index, end, value)
    start, closing = index, "}" if char == "{" else "]"
    keys: dict[str, _Node] = {}
    items: list[_Node] = []
    index = _SPACE.match(text, index + 1).end()  # type: ignore[union-attr]
    while text[index] != closing:
        if char == "{":
            key, index = _DECODER.raw_decode(text, index)
            index = _SPACE.match(text, index).end() + 1  # type: ignore[union-attr]  # past ':'
            child = _parse_spans(text, index)
            keys[key] = child
        else:
            child = _parse_spans(text, index)
            items.append(child)
        index = _SPACE.match(text, child.end).end()  # type: ignore[union-attr]
        if text[index] == ",":
            index = _SPACE.match(text, index + 1).end()  # type: ignore[union-attr]
    if char == "{":
        value = {key: node.value for key, node in keys.items()}
        return _Node(start, index + 1, value, keys=keys)
    return _Node(start, index + 1, [node.value for node in items], items=items)


def _same(a: Any, b: Any) -> bool:
    """Equal, with the same types and the same key order (so the original text still fits)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[key], b[key]) for key in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def rewrite(text: str, data: Any, style: JsonStyle) -> str:
    """`data` as JSON text that reuses `text` verbatim for every value that did not change.

    Only the objects and arrays that changed are written anew, with the file's indentation and
    line endings; everything else (inline objects, aligned entries, escapes, number spellings)
    is copied.
    """
    if not text.strip():
        return style.dumps(data)
    root = _parse_spans(text)
    return text[: root.start] + _emit(text, data, root, 0, style) + text[root.end :]


def _emit(text: str, value: Any, node: _Node | None, level: int, style: JsonStyle) -> str:
    if node is not None and _same(value, node.value):
        return text[node.start : node.end]
    if not isinstance(value, (dict, list)) or not value:
        fresh = json.dumps(
            value, indent=style.indent, separators=style.separators, ensure_ascii=style.ensure_ascii
        )
        return fresh.replace("\n", style.newline + (style.indent or "") * level)
    parts: list[str] = []
    if isinstance(value, dict):
        keys = node.keys if node is not None and node.keys is not None else {}
        for key, item in value.items():
            name = json.dumps(key, ensure_ascii=style.ensure_ascii)
            child = _emit(text, item, keys.get(key), level + 1, style)
            parts.append(name + style.separators[1] + child)
        opening, closing = "{", "}"
    else:
        unused = list(node.items) if node is not None and node.items is not None else []
        for item in value:
            match = next((n for n in unused if _same(item, n.value)), None)
            if match is not None:
                unused.remove(match)
            parts.append(_emit(text, item, match, level + 1, style))
        opening, closing = "[", "]"
    if style.indent is None:
        return opening + style.separators[0].join(parts) + closing
    inner, newline = style.indent * (level + 1), style.newline
    return (
        opening
        + newline
        + ("," + newline).join(inner + part for part in parts)
        + newline
        + style.indent * level
        + closing
    )


def _comment_at(text: str) -> int | None:
    """The line of the first `//` or `/*` outside a JSON string, None when there is none."""
    in_string = False
    escaped = False
    line = 1
    for index, char in enumerate(text):
        if char == "\n":
            line += 1
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char == "/" and text[index + 1 : index + 2] in ("/", "*"):
            return line
    return None


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise _DuplicateKey(key)
        seen[key] = value
    return seen


class _DuplicateKey(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def read_json(path: Path, label: str) -> tuple[dict[str, Any], str, bool]:
    """(data, text, existed) of a JSON config file; BadInput for anything not safely mergeable."""
    if path.is_symlink():
        raise BadInput(f"{label}: is a symbolic link; edit its target instead")
    try:
        # A host file: links are the user's. Far past any real settings file: refused.
        raw = read_regular(path, follow_links=True, limit=MAX_SETTINGS_BYTES)
    except FileNotFoundError:
        return {}, "", False
    except IsADirectoryError:
        raise BadInput(f"{label}: is a folder, not a JSON file") from None
    except OSError as exc:  # a FIFO too: `read_regular` never waits on one
        raise BadInput(f"{label}: cannot read: {exc.strerror}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadInput(f"{label}: not UTF-8 (byte {exc.start})") from None
    if not text.strip():
        return {}, text, True
    try:
        data = json.loads(text, object_pairs_hook=_no_duplicates)
    except _DuplicateKey as exc:
        raise BadInput(
            f"{label}: the key {exc.key!r} appears twice in one object; keep one and run again"
        ) from None
    except json.JSONDecodeError as exc:
        line = _comment_at(text)
        if line is not None:
            raise BadInput(
                f"{label}: has a comment at line {line}; JSON has no comments, and ctxward "
                "will not rewrite the file without them: remove them (or move the file's "
                "hooks by hand) and run again"
            ) from None
        raise BadInput(
            f"{label}: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno}); "
            "fix it and run again"
        ) from None
    except ValueError:  # json's only other error: an integer past sys.get_int_max_str_digits()
        raise BadInput(f"{label}: has {digits_problem()}; fix it and run again") from None
    except RecursionError:
        raise BadInput(f"{label}: nested too deeply to be a settings file; fix it") from None
    if not isinstance(data, dict):
        raise BadInput(f"{label}: is a JSON {type(data).__name__}, not an object")
    return data, text, True


def hooks_block(data: Mapping[str, Any], label: str) -> dict[str, Any] | None:
    """The file's `hooks` object after checking its shape; BadInput names the bad key."""
    hooks = data.get("hooks")
    if hooks is None:
        return None
    if not isinstance(hooks, dict):
        raise BadInput(f"{label}: 'hooks' is a {_json_type(hooks)}, not an object")
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            raise BadInput(f"{label}: hooks.{event} is a {_json_type(groups)}, not a list")
        for index, group in enumerate(groups):
            if not isinstance(group, dict):
                raise BadInput(f"{label}: hooks.{event}[{index}] is not an object")
            handlers = group.get("hooks")
            if not isinstance(handlers, list):
                raise BadInput(f"{label}: hooks.{event}[{index}].hooks is not a list")
            for position, handler in enumerate(handlers):
                if not isinstance(handler, dict):
                    raise BadInput(
                        f"{label}: hooks.{event}[{index}].hooks[{position}] is not an object"
                    )
    return hooks


def _json_type(value: object) -> str:
    names = {dict: "object", list: "list", str: "string", bool: "boolean", type(None): "null"}
    return names.get(type(value), "number")
