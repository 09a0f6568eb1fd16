"""Merging ctxward's hook blocks into a host's settings, and taking them out again, leaving every
other handler as it was.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ctxward.core.jsonedit import hooks_block
from ctxward.core.values import Value
from ctxward.hosts.claude_version import ClaudeVersion
from ctxward.hosts.settings import identifies_ctxward
from ctxward.hosts.wiring import CLAUDE as CLAUDE
from ctxward.hosts.wiring import CODEX as CODEX
from ctxward.hosts.wiring import GEMINI as GEMINI
from ctxward.hosts.wiring import OPENCODE as OPENCODE


class Change(Value):
    """What install or uninstall did (or, in a dry run, would do) to one event."""

    event: str
    action: str  # added | updated | unchanged | removed | skipped
    reason: str = ""


def _strip_ours(groups: list[Any]) -> tuple[list[Any], int | None, bool]:
    """(groups without ctxward's handlers, index of the first group that was all ours, any?)."""
    kept: list[Any] = []
    first_own: int | None = None
    found = False
    for group in groups:
        handlers = group["hooks"]
        mine = [handler for handler in handlers if identifies_ctxward(handler)]
        if not mine:
            kept.append(group)
            continue
        found = True
        rest = [handler for handler in handlers if not identifies_ctxward(handler)]
        if rest:
            kept.append({**group, "hooks": rest})
        elif first_own is None:
            first_own = len(kept)
    return kept, first_own, found


def merge(
    data: dict[str, Any],
    wiring: Mapping[str, list[dict[str, Any]]],
    leave_out: Mapping[str, str],
    label: str,
) -> tuple[dict[str, Any], list[Change]]:
    """`data` with ctxward's wiring merged in (a new object; `data` is not changed).

    `leave_out` maps events of the wiring that must not be written to the reason; ctxward's
    handlers already under such an event are removed.
    """
    result = json.loads(json.dumps(data))  # a deep copy that keeps key order
    hooks = hooks_block(result, label)
    created = hooks is None
    if hooks is None:
        hooks = {}
        result["hooks"] = hooks
    changes: list[Change] = []
    for event, groups in wiring.items():
        current = hooks.get(event, [])
        if event in leave_out:
            kept, _, found = _strip_ours(current)
            if found:
                _set_or_drop(hooks, event, kept)
                changes.append(Change(event, "removed", leave_out[event]))
            else:
                changes.append(Change(event, "skipped", leave_out[event]))
            continue
        own = [group for group in current if any(map(identifies_ctxward, group["hooks"]))]
        if own == list(groups):
            changes.append(Change(event, "unchanged"))
            continue
        kept, position, found = _strip_ours(current)
        at = len(kept) if position is None else position
        hooks[event] = kept[:at] + [json.loads(json.dumps(g)) for g in groups] + kept[at:]
        changes.append(Change(event, "updated" if found else "added"))
    for event in list(hooks):
        if event not in wiring:
            kept, _, found = _strip_ours(hooks[event])
            if found:
                _set_or_drop(hooks, event, kept)
                changes.append(Change(event, "removed", "ctxward no longer wires this event"))
    if created and not hooks:
        del result["hooks"]  # everything was left out: add nothing, not even an empty block
    return result, changes


def unmerge(data: dict[str, Any], label: str) -> tuple[dict[str, Any], list[Change]]:
    """`data` without any ctxward handler (a new object); empty containers it left go too."""
    result = json.loads(json.dumps(data))
    hooks = hooks_block(result, label)
    changes: list[Change] = []
    if hooks is None:
        return result, changes
    for event in list(hooks):
        kept, _, found = _strip_ours(hooks[event])
        if found:
            _set_or_drop(hooks, event, kept)
            changes.append(Change(event, "removed"))
    if changes and not hooks:
        del result["hooks"]
    return result, changes


def _set_or_drop(hooks: dict[str, Any], event: str, groups: list[Any]) -> None:
    if groups:
        hooks[event] = groups
    else:
        hooks.pop(event, None)


def unknown_events(data: Mapping[str, Any], version: ClaudeVersion) -> dict[str, bool | None]:
    """Events named in a settings file that `version` does not know (False) or may not (None)."""
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return {}
    verdicts = {event: version.knows(event) for event in hooks}
    return {event: known for event, known in verdicts.items() if known is not True}
