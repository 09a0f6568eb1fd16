"""The shared channel (G8): a batch's sub-agents share findings and heartbeats in one locked
file, `.ctxward/sub_agents/<sid>/shared/<batch>.json`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from ctxward.core.fsutil import atomic_write, locked, read_regular
from ctxward.core.limits import MAX_DEPTH, problem
from ctxward.core.project import Project
from ctxward.core.scrub import scrub
from ctxward.core.values import Value
from ctxward.errors import BadInput, CtxwardError
from ctxward.subagents.artifacts import (
    HEARTBEAT_STATUSES,
    KEY_CHARS,
    SHARE_MAX_BYTES,
    SHARE_WARN_BYTES,
    Notice,
    check_name,
    now_iso,
    parse_iso,
    shared_path,
)


def _empty_channel() -> dict[str, Any]:
    return {"entries": {}, "heartbeats": {}}


def read_channel(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return _empty_channel()
    try:
        data = json.loads(read_regular(path).decode("utf-8"))
    except (OSError, ValueError, RecursionError) as exc:
        raise CtxwardError(
            f"{path}: the shared channel is unreadable ({exc}); left untouched"
        ) from None
    if not isinstance(data, dict):
        raise CtxwardError(f"{path}: the shared channel is not a JSON object; left untouched")
    refused = problem(data)  # hand-edited: too deep to walk, or a surrogate no output can hold
    if refused is not None:
        raise CtxwardError(f"{path}: the shared channel {refused}; left untouched")
    entries = data.get("entries")
    beats = data.get("heartbeats")
    return {
        **data,
        "entries": entries if isinstance(entries, dict) else {},
        "heartbeats": beats if isinstance(beats, dict) else {},
    }


def _write_channel(path: Path, channel: Mapping[str, Any]) -> None:
    def validate(data: bytes) -> None:
        json.loads(data)

    text = json.dumps(channel, ensure_ascii=False, indent=1, sort_keys=True) + "\n"
    atomic_write(path, text, validate=validate)


def _scrub_value(value: Any) -> tuple[Any, int]:
    """`value` with every string in it scrubbed; (value, number of redactions)."""
    if isinstance(value, str):
        cleaned, found = scrub(value)
        return cleaned, len(found)
    if isinstance(value, list):
        total = 0
        items = []
        for item in value:
            cleaned_item, count = _scrub_value(item)
            items.append(cleaned_item)
            total += count
        return items, total
    if isinstance(value, dict):
        total = 0
        mapping = {}
        for key, item in value.items():
            cleaned_key, key_count = _scrub_value(key)
            cleaned_item, count = _scrub_value(item)
            mapping[cleaned_key] = cleaned_item
            total += key_count + count
        return mapping, total
    return value, 0


def _check_key(key: str) -> str:
    if not key or len(key) > KEY_CHARS or any(ord(ch) < 32 or ord(ch) == 127 for ch in key):
        raise BadInput(f"key {key!r} must be 1-{KEY_CHARS} printable characters")
    return key


class ValueTooLarge(BadInput):
    """A shared value of 64 KB or more: refused, nothing written."""

    code = "VALUE_TOO_LARGE"


class Shared(Value):
    batch: str
    key: str
    bytes: int
    written_at: str
    path: Path
    replaced: bool
    warnings: tuple[Notice, ...] = ()


def share(
    project: Project,
    session: str,
    batch: str,
    key: str,
    value_json: str,
    *,
    now: datetime | None = None,
) -> Shared:
    """Store `value_json` (a JSON text) under `key` in the batch's channel; last write wins."""
    _check_key(key)
    path = shared_path(project, session, batch)
    try:
        value = json.loads(value_json)
    except ValueError as exc:
        raise BadInput(f"--value is not JSON: {exc}") from None
    except RecursionError:
        raise BadInput(f"--value nests deeper than {MAX_DEPTH} levels") from None
    refused = problem(value)  # too deep to scrub, or a lone surrogate no file can hold
    if refused is not None:
        raise BadInput(f"--value {refused}")
    value, redactions = _scrub_value(value)
    stored = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    size = len(stored.encode("utf-8"))
    if size >= SHARE_MAX_BYTES:
        raise ValueTooLarge(
            f"value of {key!r} is {size} bytes; the shared channel refuses values of "
            f"{SHARE_MAX_BYTES} bytes (64 KB) or more: write an artifact and share its metadata"
        )
    warnings = []
    if size >= SHARE_WARN_BYTES:
        warnings.append(
            Notice(
                "VALUE_LARGE",
                f"value of {key!r} is {size} bytes (≥ 1 KB): siblings read it into their "
                "context; prefer an artifact path and a short summary",
            )
        )
    if redactions:
        warnings.append(
            Notice("REDACTED", f"{redactions} secret(s) in the value were redacted before storing")
        )
    written_at = now_iso(now)
    with locked(path, project.locks_dir):
        channel = read_channel(path)
        replaced = key in channel["entries"]
        channel["entries"][key] = {"value": value, "writtenAt": written_at, "bytes": size}
        channel["batch"] = batch
        channel["session"] = session
        _write_channel(path, channel)
    return Shared(batch, key, size, written_at, path, replaced, tuple(warnings))


def _glob_regex(pattern: str) -> re.Pattern[str]:
    return re.compile(".*".join(re.escape(part) for part in pattern.split("*")), re.DOTALL)


def shared_read(
    project: Project,
    session: str,
    batch: str,
    *,
    since: str | None = None,
    key_glob: str | None = None,
) -> list[dict[str, Any]]:
    """The batch's entries, oldest first: {key, value, writtenAt, bytes}. `*` globs the key."""
    threshold = parse_iso(since, "--since") if since else None
    matcher = _glob_regex(key_glob) if key_glob else None
    channel = read_channel(shared_path(project, session, batch))
    found = []
    for key, entry in channel["entries"].items():
        if not isinstance(entry, dict):
            continue
        if matcher is not None and not matcher.fullmatch(key):
            continue
        written = str(entry.get("writtenAt") or "")
        if threshold is not None:
            try:
                if not written or parse_iso(written) < threshold:
                    continue
            except BadInput:
                continue
        found.append(
            {
                "key": key,
                "value": entry.get("value"),
                "writtenAt": written,
                "bytes": entry.get("bytes"),
            }
        )
    found.sort(key=lambda item: (item["writtenAt"], item["key"]))
    return found


class Heartbeat(Value):
    batch: str
    role: str
    status: str
    at: str
    warnings: tuple[Notice, ...] = ()


def heartbeat(
    project: Project,
    session: str,
    batch: str,
    role: str,
    status: str,
    *,
    now: datetime | None = None,
) -> Heartbeat:
    """Record `role`'s status; 'done' without a '<role>.completed' entry warns (RL-23)."""
    check_name(role, "role")
    if status not in HEARTBEAT_STATUSES:
        raise BadInput(f"status {status!r} is not one of {', '.join(HEARTBEAT_STATUSES)}")
    path = shared_path(project, session, batch)
    at = now_iso(now)
    with locked(path, project.locks_dir):
        channel = read_channel(path)
        previous = channel["heartbeats"].get(role)
        first = previous.get("firstAt") if isinstance(previous, dict) else None
        channel["heartbeats"][role] = {"status": status, "at": at, "firstAt": first or at}
        channel["batch"] = batch
        channel["session"] = session
        _write_channel(path, channel)
        completed = f"{role}.completed" in channel["entries"]
    warnings = []
    if status == "done" and not completed:
        warnings.append(
            Notice(
                "COMPLETED_WITHOUT_SHARE",
                f"role {role!r} reported done without sharing '{role}.completed': run "
                f"`ctxward share --batch {batch} --key {role}.completed --value <artifact-meta>`",
            )
        )
    return Heartbeat(batch, role, status, at, tuple(warnings))


def warnings_as_dicts(warnings: Iterable[Notice]) -> list[dict[str, str]]:
    return [warning.as_dict() for warning in warnings]
