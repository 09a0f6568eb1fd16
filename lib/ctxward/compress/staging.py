"""Staging for L2: one idempotent file per entry under the memory bank's `.tmp/`."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ctxward.compress import scoring
from ctxward.compress.entries import STAGE_PREFIX, Result
from ctxward.core.fsutil import atomic_write, locked, open_regular
from ctxward.core.project import Project
from ctxward.core.values import Value, field

_HEADER = re.compile(r"<!-- ctxward:l1 (?P<attrs>.*?) -->")


_ATTR = re.compile(r'(\w+)="([^"]*)"')


_SLUG = re.compile(r"[^a-z0-9]+")


class Staged(Value):
    path: Path
    key: str
    hash: str
    state: str  # "compressed" or "pending"
    band: str
    score: float
    agent: str
    phase: str
    written: bool = False
    attrs: Mapping[str, str] = field(default_factory=dict)
    replaced: str = ""  # the hash of the earlier version of the same entry this one replaced


def entry_hash(date: str, phase: str, agent: str, summary: str) -> str:
    """seed 000 §17: sha256 of "date|phase|agent|summary", first 16 hex digits."""
    canonical = f"{date}|{phase}|{agent}|{summary}"
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


def stage_dir(project: Project) -> Path:
    return project.bank_dir / ".tmp"


def _slug(value: str) -> str:
    return _SLUG.sub("-", value.lower()).strip("-") or "none"


def _today() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%d")


def read_staged(path: Path) -> Staged | None:
    """The header of a staged L1 file, or None when `path` is not one."""
    try:
        with open(open_regular(path), encoding="utf-8") as handle:
            head = handle.read(4096)
    except (OSError, UnicodeDecodeError):  # a FIFO too: `open_regular` never waits on one
        return None
    match = _HEADER.search(head)
    if match is None:
        return None
    attrs = dict(_ATTR.findall(match.group("attrs")))
    return Staged(
        path=path,
        key=attrs.get("key", ""),
        hash=attrs.get("hash", ""),
        state=attrs.get("state", ""),
        band=attrs.get("band", ""),
        score=float(attrs.get("score", "0") or 0),
        agent=attrs.get("agent", ""),
        phase=attrs.get("phase", ""),
        attrs=attrs,
    )


def _stage_name(date: str, phase: str, agent: str, identity: str, digest: str) -> str:
    """`L1-<date>-phase-<phase>-<agent>-<which>.md`: one file per entry (issue 16), where
    <which> is the entry's own id or title (slug + a short hash of the exact identity and agent)
    or, for an entry without one, its content hash."""
    from ctxward.compress import identity as identities

    base = f"{STAGE_PREFIX}{_slug(date)}-phase-{_slug(phase)}-{_slug(agent)}"
    if not identities.is_explicit(identity):
        return f"{base}-{digest[:12]}.md"
    exact = hashlib.sha256(f"{agent}|{identity}".encode()).hexdigest()[:6]
    return f"{base}-{_slug(identity.split(':', 1)[1])[:40].strip('-')}-{exact}.md"


def stage(project: Project, result: Result, *, state: str = "compressed") -> Staged:
    """Write `result` to the bank's .tmp/ for L2 promotion; idempotent (seed 000 §17).

    One file per entry (`bank.identity`): two subtasks of one agent in one phase are two files.
    An identical content hash is left alone; a new text of the same entry (its own id or title)
    overwrites its file and says so (`replaced`: the earlier hash, whose full text stays in
    `.ctxward/offload/`). `pending` stores the Layer-1 entry for C11 to compress.
    """
    from ctxward.compress import identity as identities
    from ctxward.core.render import render

    fields = result.entry.fields
    date = scoring.text_of(fields.get("date")) or _today()
    phase = scoring.text_of(fields.get("phase")) or "none"
    agent = result.agent
    digest = entry_hash(date, phase, agent, scoring.text_of(fields.get("summary")))
    identity = identities.of(fields, digest)
    folder = stage_dir(project)
    path = folder / _stage_name(date, phase, agent, identity, digest)
    attrs = {
        "key": identities.key(date, phase, agent, identity),
        "hash": digest,
        "state": state,
        "band": result.score.band,
        "score": f"{result.score.score:.2f}",
        "agent": agent,
        "phase": phase,
        "from": result.sender or "",
        "to": result.receiver or "",
        "original": result.offload_path or "",
    }
    with locked(folder, project.locks_dir):
        current = read_staged(path)
        if (
            current is not None
            and current.hash == digest
            and current.state in ("compressed", state)
        ):
            return current  # the same content is staged already (compressed wins over pending)
        text = render(
            "compress/staged.md.j2",
            attrs=attrs,
            entry_text=result.text,
            # the key's date is kept with a pending entry, so that C11 finds the same file later
            entry_yaml=_yaml({**fields, "date": date}) if state == "pending" else "",
        )
        written = atomic_write(path, text, validate=_has_heading)
    score = result.score
    replaced = current.hash if current is not None and current.hash != digest else ""
    return Staged(
        path,
        attrs["key"],
        digest,
        state,
        score.band,
        score.score,
        agent,
        phase,
        written,
        attrs,
        replaced,
    )


def _yaml(data: Mapping[str, Any]) -> str:
    import yaml

    return yaml.safe_dump(
        {"subtask_summary": dict(data)}, sort_keys=False, allow_unicode=True, width=100
    )


def _has_heading(data: bytes) -> None:
    """seed 000 §11: a written bank file is non-empty and has a heading."""
    if not data.strip() or not any(line.startswith(b"#") for line in data.splitlines()):
        raise ValueError("staged entry has no heading")


class Handoff(Value):
    compressed: tuple[Staged, ...]  # compressed by this run
    already: tuple[Staged, ...]  # staged compressed earlier (C8, or an earlier handoff)
    skipped: tuple[tuple[str, str], ...]  # (what, why): left in place
    unrecognized: tuple[str, ...]  # .tmp/ files with no subtask_summary: flagged, left in place
