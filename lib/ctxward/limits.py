"""Bounds on parsed input (JSON, YAML): nesting depth, alias expansion, valid Unicode.

Parsing succeeds on inputs that later break a reader: JSON nested a few hundred levels deep
passes `json.loads` and then exhausts the recursion of the functions that walk it (measuring,
scrubbing, hashing); a YAML "billion laughs" document is a few hundred bytes whose aliases expand
to billions of values when walked; `"\\ud800"` is valid JSON but no UTF-8 text can hold it, so
every writer fails on it. `problem` finds all three in one iterative walk (no recursion), bounded
by `max_nodes` (so a bomb is refused after that many visits, not expanded).

Standard library only: the hook path imports it when a payload looks nested or escaped.
"""

from __future__ import annotations

MAX_DEPTH = 100  # host payloads and ctxward's own inputs nest a few levels


def problem(
    value: object, *, max_nodes: int | None = None, max_depth: int = MAX_DEPTH
) -> str | None:
    """Why parsed `value` is refused, or None: too deep, expands past `max_nodes` values (YAML
    aliases: each visit of a shared value counts), or holds a lone UTF-16 surrogate."""
    stack: list[tuple[object, int]] = [(value, 1)]
    visited = 0
    while stack:
        item, depth = stack.pop()
        visited += 1
        if max_nodes is not None and visited > max_nodes:
            return f"expands to more than {max_nodes:,} values (YAML aliases?)"
        if depth > max_depth:
            return f"nests deeper than {max_depth} levels"
        if isinstance(item, str):
            if not _encodable(item):
                return "holds a lone UTF-16 surrogate (\\ud800-\\udfff), which is not text"
        elif isinstance(item, dict):
            for key, inner in item.items():
                stack.append((key, depth + 1))
                stack.append((inner, depth + 1))
        elif isinstance(item, (list, tuple, set, frozenset)):
            stack.extend((inner, depth + 1) for inner in item)
    return None


def _encodable(text: str) -> bool:
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
