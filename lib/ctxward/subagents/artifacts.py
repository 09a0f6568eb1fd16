"""Sub-agent results as metadata (G7) and the shared channel between sibling sub-agents (G8).

G7: a sub-agent writes its full output to
``<sub_agents>/<sid>/artifacts/<rid>-<role>-<idx>.<ext>`` and records an `ArtifactMeta` for it
(path, size, sha256, status, a ≤ 200-character summary); the orchestrator then sees only the
reducer view of the batch, about 200 characters per sub-agent, and Reads an artifact when it
needs the content. ``<sub_agents>`` is ``.ctxward/sub_agents``, or ``.peaks/_sub_agents`` under
``preset: peaks``; the ArtifactMeta record sits next to the artifact as ``<name>.meta.json``.

G8: ``<sub_agents>/<sid>/shared/<batch>.json`` holds the batch's shared entries (last write wins
per key) and each role's last heartbeat. Many sub-agents write it at once: every change is a
read-modify-write under `fsutil.locked`, written by `fsutil.atomic_write`. Values are scrubbed
of secrets before they are stored; a value of 1 KB or more draws a warning, 64 KB or more is
refused (BadInput, nothing written).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from ctxward.core.fsutil import atomic_write, locked, open_regular, read_regular
from ctxward.core.project import Project
from ctxward.core.scrub import scrub
from ctxward.core.values import Value
from ctxward.errors import BadInput

STATUSES = ("created", "finalized", "partial", "failed")


HEARTBEAT_STATUSES = ("started", "running", "done", "failed")


SUMMARY_CHARS = 200


SHARE_WARN_BYTES = 1024


SHARE_MAX_BYTES = 64 * 1024


KEY_CHARS = 200


DEFAULT_SESSION = "local"


META_SUFFIX = ".meta.json"


_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


class Notice(Value):
    """A non-fatal finding: a stable code for machines, a sentence for people."""

    code: str
    message: str

    def as_dict(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message}


class ArtifactMeta(Value):
    """Seed 004 G7 ArtifactMeta (`as_dict` gives the seed's camelCase JSON).

    `content_inlined` is always the literal False: the content stays on disk.
    """

    path: str
    size: int
    sha256: str
    status: str
    summary: str | None
    written_at: str
    rid: str
    role: str
    idx: int
    content_inlined: Literal[False] = False

    def as_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "size": self.size,
            "sha256": self.sha256,
            "status": self.status,
            "contentInlined": False,
            "summary": self.summary,
            "writtenAt": self.written_at,
            "rid": self.rid,
            "role": self.role,
            "idx": self.idx,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ArtifactMeta:
        """Rebuild from a stored record; ValueError when a field is missing or mistyped."""
        try:
            meta = cls(
                path=str(data["path"]),
                size=int(data["size"]),
                sha256=str(data["sha256"]),
                status=str(data["status"]),
                summary=None if data.get("summary") is None else str(data["summary"]),
                written_at=str(data["writtenAt"]),
                rid=str(data["rid"]),
                role=str(data["role"]),
                idx=int(data["idx"]),
            )
        except (KeyError, TypeError) as exc:
            raise ValueError(f"not an ArtifactMeta record: {exc}") from None
        if meta.status not in STATUSES:
            raise ValueError(f"unknown status {meta.status!r}")
        return meta


class Recorded(Value):
    meta: ArtifactMeta
    batch: str
    record_path: Path
    warnings: tuple[Notice, ...] = ()


def now_iso(now: datetime | None = None) -> str:
    """UTC ISO 8601 with milliseconds and a Z, as Claude Code writes timestamps."""
    moment = (now or datetime.now(timezone.utc)).astimezone(timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def parse_iso(text: str, what: str = "timestamp") -> datetime:
    """An ISO 8601 time (Z or offset; naive means UTC); BadInput when it is not one."""
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise BadInput(
            f"{what} {text!r} is not an ISO 8601 time (e.g. 2026-11-30T08:20:51Z)"
        ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def check_name(value: str, what: str) -> str:
    """`value` when it is a safe file-name part ([A-Za-z0-9._-], no '..'); else BadInput."""
    if not _NAME.fullmatch(value) or ".." in value:
        raise BadInput(
            f"{what} {value!r} must be 1-128 characters of letters, digits, '.', '_' or '-', "
            "starting with a letter or digit, without '..'"
        )
    return value


def safe_name(value: str, fallback: str = "unknown") -> str:
    """`value` folded into a safe file-name part (for host-supplied ids that must not fail)."""
    folded = _UNSAFE.sub("-", value).strip(".-")[:128].replace("..", ".")
    return folded or fallback


def resolve_session(explicit: str | None, env: Mapping[str, str]) -> str:
    """--session, else $CLAUDE_CODE_SESSION_ID, else 'local'; BadInput when unsafe."""
    value = explicit or env.get("CLAUDE_CODE_SESSION_ID") or DEFAULT_SESSION
    return check_name(value, "session")


def session_dir(project: Project, session: str) -> Path:
    return project.sub_agents_dir / check_name(session, "session")


def artifacts_dir(project: Project, session: str) -> Path:
    return session_dir(project, session) / "artifacts"


def shared_path(project: Project, session: str, batch: str) -> Path:
    return session_dir(project, session) / "shared" / f"{check_name(batch, 'batch')}.json"


def artifact_stem(rid: str, role: str, idx: int) -> str:
    if idx < 0:
        raise BadInput(f"idx {idx} must be 0 or more")
    return f"{check_name(rid, 'rid')}-{check_name(role, 'role')}-{idx:03d}"


def artifact_path(
    project: Project, session: str, rid: str, role: str, idx: int, ext: str = "md"
) -> Path:
    """Where the artifact <rid>-<role>-<idx>.<ext> of `session` belongs (seed G7 convention)."""
    if not re.fullmatch(r"[A-Za-z0-9]{1,16}", ext):
        raise BadInput(f"extension {ext!r} must be 1-16 letters or digits")
    return artifacts_dir(project, session) / f"{artifact_stem(rid, role, idx)}.{ext}"


def _file_digest(path: Path) -> tuple[int, str]:
    digest = hashlib.sha256()
    size = 0
    with open(open_regular(path), "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
            size += len(chunk)
    return size, digest.hexdigest()


def _clean_summary(summary: str | None) -> str | None:
    if summary is None:
        return None
    flat = " ".join(summary.split())
    if not flat:
        return None
    cleaned, _ = scrub(flat)
    if len(cleaned) > SUMMARY_CHARS:
        raise BadInput(
            f"summary is {len(cleaned)} characters; the ArtifactMeta summary holds at most "
            f"{SUMMARY_CHARS} (put the detail in the artifact)"
        )
    return cleaned


def first_line_summary(text: str) -> str | None:
    """The first non-empty line of `text`, cut to fit the 200-character summary."""
    for line in text.splitlines():
        flat = " ".join(line.split()).lstrip("#>*- ").strip()
        if flat:
            return flat if len(flat) <= SUMMARY_CHARS else flat[: SUMMARY_CHARS - 1] + "…"
    return None


def record_artifact(
    project: Project,
    session: str,
    path: Path,
    *,
    rid: str,
    role: str,
    idx: int,
    batch: str | None = None,
    summary: str | None = None,
    status: str = "finalized",
    now: datetime | None = None,
) -> Recorded:
    """Hash `path` and write its ArtifactMeta record; re-recording the same name replaces it."""
    if status not in STATUSES:
        raise BadInput(f"status {status!r} is not one of {', '.join(STATUSES)}")
    stem = artifact_stem(rid, role, idx)
    batch = check_name(batch or rid, "batch")
    if not path.exists():
        raise BadInput(f"{path}: no such file")
    if not path.is_file():
        raise BadInput(f"{path}: not a regular file")
    cleaned = _clean_summary(summary)
    try:
        size, digest = _file_digest(path)
    except FileNotFoundError:
        raise  # it vanished after the check (`watch` skips it)
    except OSError as exc:  # unreadable, or swapped for a FIFO after the check
        raise BadInput(f"{path}: cannot be read ({exc.strerror or exc})") from None
    folder = artifacts_dir(project, session)
    warnings: list[Notice] = []
    if path.resolve().parent != folder.resolve() or not path.name.startswith(stem + "."):
        expected = project.relative(folder / f"{stem}{path.suffix or '.md'}")
        warnings.append(
            Notice(
                "NOT_AT_CONVENTIONAL_PATH",
                f"{project.relative(path)} is recorded where it is; the convention is {expected}",
            )
        )
    meta = ArtifactMeta(
        path=project.relative(path),
        size=size,
        sha256=digest,
        status=status,
        summary=cleaned,
        written_at=now_iso(now),
        rid=rid,
        role=role,
        idx=idx,
    )
    record_path = folder / f"{stem}{META_SUFFIX}"
    body = {**meta.as_dict(), "batch": batch}
    atomic_write(record_path, json.dumps(body, ensure_ascii=False, indent=2) + "\n")
    return Recorded(meta, batch, record_path, tuple(warnings))


def save_text_artifact(
    project: Project,
    session: str,
    text: str,
    *,
    rid: str,
    role: str,
    batch: str,
    status: str = "finalized",
    summary: str | None = None,
    ext: str = "md",
    now: datetime | None = None,
) -> Recorded:
    """Scrub `text`, write it as the next artifact <rid>-<role>-<idx> and record it.

    Idempotent: when an artifact of the same rid and role already holds these exact bytes, its
    record is returned and nothing is written.
    """
    cleaned, _ = scrub(text)
    data = cleaned.encode("utf-8")
    digest = hashlib.sha256(data).hexdigest()
    folder = artifacts_dir(project, session)
    prefix = f"{check_name(rid, 'rid')}-{check_name(role, 'role')}-"
    # The index is taken and the artifact written under one lock: parallel stops of one agent
    # (the same rid and role) each get their own index, none overwrites another's report.
    with locked(folder, project.locks_dir):
        used: list[int] = []
        for record_file in sorted(folder.glob(f"{prefix}*{META_SUFFIX}")):
            try:
                stored = json.loads(read_regular(record_file).decode("utf-8"))
                meta = ArtifactMeta.from_dict(stored)
            except (OSError, ValueError, RecursionError):
                continue
            used.append(meta.idx)
            if meta.sha256 == digest and (project.root / meta.path).is_file():
                return Recorded(meta, str(stored.get("batch") or batch), record_file)
        used.extend(_indexes_on_disk(folder, prefix))  # a file whose record is missing
        idx = max(used, default=0) + 1
        path = artifact_path(project, session, rid, role, idx, ext)
        atomic_write(path, data)
        return record_artifact(
            project,
            session,
            path,
            rid=rid,
            role=role,
            idx=idx,
            batch=batch,
            summary=summary if summary is not None else first_line_summary(cleaned),
            status=status,
            now=now,
        )


def _indexes_on_disk(folder: Path, prefix: str) -> list[int]:
    """The indexes of the artifact files `<prefix>NNN.<ext>` in `folder` (records or not)."""
    found: list[int] = []
    if not folder.is_dir():
        return found
    for path in folder.iterdir():
        rest = path.name[len(prefix) :] if path.name.startswith(prefix) else ""
        digits = rest.split(".", 1)[0]
        if digits.isdigit():
            found.append(int(digits))
    return found


class BatchArtifact(Value):
    meta: ArtifactMeta
    record_path: Path


@dataclass(slots=True)
class Batch:
    """Everything known about one batch of one session."""

    session: str
    batch: str
    artifacts: list[BatchArtifact] = field(default_factory=list)
    heartbeats: dict[str, dict[str, Any]] = field(default_factory=dict)
    entries: dict[str, dict[str, Any]] = field(default_factory=dict)
    unreadable: list[str] = field(default_factory=list)

    @property
    def roles_without_artifact(self) -> list[str]:
        have = {item.meta.role for item in self.artifacts}
        return sorted(role for role in self.heartbeats if role not in have)

    @property
    def total(self) -> int:
        return len(self.artifacts) + len(self.roles_without_artifact)

    @property
    def done(self) -> int:
        finished = sum(1 for item in self.artifacts if item.meta.status == "finalized")
        beats = self.heartbeats
        return finished + sum(
            1 for role in self.roles_without_artifact if beats[role].get("status") == "done"
        )

    @property
    def elapsed_seconds(self) -> float:
        """From the batch's first sign of life to its last artifact (or 'done' heartbeat)."""
        starts: list[str] = [item.meta.written_at for item in self.artifacts]
        ends: list[str] = list(starts)
        for beat in self.heartbeats.values():
            starts.append(str(beat.get("firstAt") or beat.get("at") or ""))
            if beat.get("status") in ("done", "failed"):
                ends.append(str(beat.get("at") or ""))
        starts += [str(entry.get("writtenAt") or "") for entry in self.entries.values()]
        times = [t for t in starts if t]
        finished = [t for t in ends if t]
        if not times or not finished:
            return 0.0
        try:
            first = min(parse_iso(t) for t in times)
            last = max(parse_iso(t) for t in finished)
        except BadInput:
            return 0.0
        return max((last - first).total_seconds(), 0.0)
