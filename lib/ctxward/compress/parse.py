"""Reading the input: subtask_summary blocks (fenced, bare, a list), mappings, or free text."""

from __future__ import annotations

import json
import re
from typing import Any

from ctxward.compress.entries import Entry
from ctxward.compress.lines import structural
from ctxward.compress.scoring import Tables
from ctxward.errors import BadInput

_FENCE = re.compile(r"^[ \t]*```[ \t]*(?:ya?ml|json)?[ \t]*\n(.*?)^[ \t]*```[ \t]*$", re.M | re.S)


_BARE_BLOCK = re.compile(r"^subtask_summary:[ \t]*\n(?:(?:[ \t]+[^\n]*|[ \t]*)(?:\n|\Z))+", re.M)


def _load(text: str) -> Any:
    """JSON or YAML (safe loader) from `text`; None when it is neither.

    BadInput when it parses but cannot be read safely (`ctxward.core.limits`): nested too deep, YAML
    aliases that expand past twice the text's length (a "billion laughs"), a lone surrogate.
    """
    stripped = text.strip()
    if not stripped:
        return None
    if stripped[0] in "{[":
        try:
            return _bounded(json.loads(stripped), stripped)
        except (ValueError, RecursionError):
            pass
    import yaml

    try:
        data = yaml.load(stripped, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except (yaml.YAMLError, ValueError, RecursionError):  # ValueError: an integer too long
        return None
    return _bounded(data, stripped)


def _bounded(data: Any, text: str) -> Any:
    from ctxward.core.limits import problem

    refused = problem(data, max_nodes=2 * len(text) + 100)
    if refused is not None:
        raise BadInput(f"the entry {refused}")
    return data


def _mappings(data: Any, *, bare: bool) -> list[dict[str, Any]]:
    """The subtask_summary mappings in parsed `data` (a `summary` mapping counts when bare)."""
    if isinstance(data, list):
        return [found for item in data for found in _mappings(item, bare=True)]
    if not isinstance(data, dict):
        return []
    if "subtask_summary" in data:
        inner = data["subtask_summary"]
        items = inner if isinstance(inner, list) else [inner]
        extra = {k: v for k, v in data.items() if k != "subtask_summary"}
        return [{**extra, **item} for item in items if isinstance(item, dict)]
    if bare and "summary" in data:
        return [data]
    return []


def parse_entries(text: str, tables: Tables, label: str = "") -> list[Entry]:
    """The entries in (already scrubbed) `text`; free text becomes one entry."""
    found: list[Entry] = []
    for block in _FENCE.finditer(text):
        for raw in _mappings(_load(block.group(1)), bare=False):
            found.append(Entry(structural(raw, tables), block.group(0), True, label))
    if found:
        return found
    for raw in _mappings(_load(text), bare=True):
        found.append(Entry(structural(raw, tables), text, True, label))
    if found:
        return found
    for block in _BARE_BLOCK.finditer(text):
        for raw in _mappings(_load(block.group(0)), bare=False):
            found.append(Entry(structural(raw, tables), block.group(0), True, label))
    if found or not text.strip():
        return found
    return [Entry(structural({"summary": text}, tables), text, False, label)]
