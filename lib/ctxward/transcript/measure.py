"""What the context audit counts: a tool call's key, the size of what went into the context."""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from typing import Any

from ctxward.core.text import cut, one_line
from ctxward.transcript.reader import KEY_CHARS, MAX_GROUPS, str_of


def scrubbed_key(text: str, limit: int = KEY_CHARS) -> str:
    """`text` scrubbed, then on one line and cut to `limit` (in that order: a secret that spans
    lines or the cut, a PEM block in a heredoc say, is only recognised whole)."""
    return cut(one_line(_clean_key(text)), limit)


_KEY_FIELDS = ("file_path", "notebook_path", "path", "command", "url", "query", "pattern")


def tool_key(name: str, params: Mapping[str, Any], cwd: str = "") -> str:
    """What a tool call is about: the file read, the command run, the agent type..."""
    if name in ("Agent", "Task"):
        return scrubbed_key(str_of(params.get("subagent_type")) or "general-purpose")
    if name == "Skill":
        return scrubbed_key(str_of(params.get("skill")) or str_of(params.get("command")))
    if name in ("Grep", "Glob"):
        pattern = str_of(params.get("pattern"))
        where = str_of(params.get("path"))
        return scrubbed_key(without_cwd(f"{pattern} in {where}" if where else pattern, cwd))
    for name_of_field in _KEY_FIELDS:
        value = params.get(name_of_field)
        if isinstance(value, str) and value:
            return scrubbed_key(without_cwd(value, cwd))
    return ""


def without_cwd(text: str, cwd: str) -> str:
    if cwd and len(cwd) > 1:
        return text.replace(cwd.rstrip("/") + "/", "")
    return text


def utf8_len(text: str) -> int:
    # surrogatepass: a lone surrogate (JSON may escape one) counts its 3 bytes, never raises
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def rendered_size(rendered: object) -> int:
    if isinstance(rendered, str):
        return utf8_len(rendered)
    total = 0
    if isinstance(rendered, list):
        for item in rendered:
            if isinstance(item, dict):
                total += rendered_size(item.get("content"))
            elif isinstance(item, str):
                total += utf8_len(item)
    return total


_ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def json_size(value: object) -> int:
    """UTF-8 bytes of `value` as compact JSON (a string counts its text only)."""
    if isinstance(value, str):
        return utf8_len(value)
    try:
        return utf8_len(_ENCODE(value))
    except (TypeError, ValueError):
        return 0


def input_size(params: dict[str, Any]) -> int:
    """A tool input's size as compact JSON, its strings counted as their text (no escapes)."""
    if not params:
        return 2
    size = 1 + len(params)  # the braces and the commas
    for key, value in params.items():
        if type(value) is not str:
            return json_size(params)
        size += len(key) + 5 + utf8_len(value)  # "key":"value"
    return size


@functools.lru_cache(maxsize=4096)
def _clean_key(key: str) -> str:
    """A group key scrubbed of secrets (a command line can hold one); keys repeat, so cached."""
    from ctxward.core.scrub import redact

    if not key:
        return key
    # A lone surrogate (JSON may escape one) can be neither printed nor written: made "?".
    return redact(key.encode("utf-8", "replace").decode("utf-8"))


def user_key(raw: Mapping[str, Any], content: str) -> str:
    if content.startswith(("<local-command", "<command-")):
        return "command"
    return "meta" if raw.get("isMeta") is True else "prompt"


class Groups:
    """Bytes and counts per (tool, key), bounded: the smallest fold into '<tool> (other)'."""

    __slots__ = ("data", "folded", "tools")

    def __init__(self) -> None:
        self.data: dict[tuple[str, str], list[int]] = {}
        self.tools: dict[str, int] = {}  # bytes per tool, kept as groups are added
        self.folded = 0

    def add(self, tool: str, key: str, size: int, count: int) -> None:
        self.tools[tool] = self.tools.get(tool, 0) + size
        entry = self.data.get((tool, key))
        if entry is None:
            if len(self.data) >= MAX_GROUPS:
                self._fold()
                entry = self.data.get((tool, key))
            if entry is None:
                entry = self.data[(tool, key)] = [0, 0]
        entry[0] += size
        entry[1] += count

    def _fold(self) -> None:
        ranked = sorted(self.data.items(), key=lambda item: item[1][0])
        for (tool, key), (size, count) in ranked[: len(ranked) // 2]:
            if key == "(other)":
                continue
            del self.data[(tool, key)]
            self.folded += 1
            other = self.data.setdefault((tool, "(other)"), [0, 0])
            other[0] += size
            other[1] += count

    def merge(self, other: Groups) -> None:
        for (tool, key), (size, count) in other.data.items():
            self.add(tool, key, size, count)
        self.folded += other.folded

    @property
    def total(self) -> int:
        return sum(entry[0] for entry in self.data.values())

    def top(self, limit: int) -> list[dict[str, Any]]:
        """The `limit` largest groups; keys are scrubbed (a command line can hold a secret)."""
        total = self.total
        ranked = sorted(self.data.items(), key=lambda item: (-item[1][0], item[0]))
        return [
            {
                "tool": _clean_key(tool),
                "key": _clean_key(key),
                "bytes": size,
                "pctOfTotal": round(100.0 * size / total, 1) if total else 0.0,
                "count": count,
            }
            for (tool, key), (size, count) in ranked[:limit]
            if size or count
        ]

    def by_tool(self) -> dict[str, int]:
        return dict(self.tools)
