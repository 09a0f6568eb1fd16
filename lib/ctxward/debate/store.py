"""Debate records under `.ctxward/debates/<layer>-<slug>.json`, and their wiki pages.

Every record is written atomically (`fsutil.atomic_write`) under the debate's lock, from text
that went through `scrub.redact` first (what an agent argues may quote a credential). `open`
seals the debate's identity with this user's key (`trust.seal`): the Stop hook holds the turn
only for a debate opened on this machine, by this user, in this project, so a repository that
commits `.ctxward/debates/` cannot trap anyone (`unfiled`).

Filing (seed 002 "Wiki Filing Rule (Mandatory)") renders `debate/consensus.md.j2` to
`<debate.wiki_dir>/<layer>-<slug>.md` (default `docs/wiki/consensus/`) and records the page's
path and sha256 in the debate: `close` files, and files again when the page is gone.
"""

from __future__ import annotations

import json
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ctxward.core.fsutil import atomic_write, locked, read_regular, sha256_hex
from ctxward.core.project import Project
from ctxward.debate import protocol
from ctxward.debate.unfiled import identity, remove_marker, write_marker
from ctxward.errors import BadInput, CtxwardError

DEBATES_DIRNAME = "debates"
SCHEMA = 1
MAX_RECORD_BYTES = 4 * 1024 * 1024  # 50 rounds of 20,000-character turns fit with room


def debates_dir(project: Project) -> Path:
    return project.state_dir / DEBATES_DIRNAME


def record_path(project: Project, debate_id: str) -> Path:
    return debates_dir(project) / f"{protocol.name(debate_id, 'debate id')}.json"


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def _iso(ms: int) -> str:
    moment = datetime.fromtimestamp(ms / 1000, timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def scrubbed(value: Any) -> Any:
    """`value` with every string passed through `scrub.redact` (keys included)."""
    from ctxward.core.scrub import redact

    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {scrubbed(key): scrubbed(item) for key, item in value.items()}
    if isinstance(value, list):
        return [scrubbed(item) for item in value]
    return value


def wiki_page(project: Project, debate: dict[str, Any]) -> Path:
    from ctxward.core.config import load

    return project.root / load(project).debate.wiki_dir / f"{debate['id']}.md"


def load_debate(project: Project, debate_id: str) -> dict[str, Any]:
    path = record_path(project, debate_id)
    try:
        raw = read_regular(path, limit=MAX_RECORD_BYTES)
    except FileNotFoundError:
        raise BadInput(f"no debate {debate_id!r} (no {project.relative(path)})") from None
    except OSError as exc:
        raise CtxwardError(f"{project.relative(path)}: cannot read: {exc.strerror}") from None
    try:
        debate = json.loads(raw)
    except (UnicodeDecodeError, ValueError):
        raise CtxwardError(f"{project.relative(path)}: not a debate record (bad JSON)") from None
    if (
        not isinstance(debate, dict)
        or debate.get("schema") != SCHEMA
        or debate.get("id") != (debate_id)
    ):
        raise CtxwardError(f"{project.relative(path)}: not a debate record of this ctxward")
    return debate


def _save(path: Path, debate: dict[str, Any]) -> None:
    atomic_write(path, json.dumps(debate, ensure_ascii=False, indent=2) + "\n")


def open_debate(project: Project, data: object, *, now: int | None = None) -> dict[str, Any]:
    """Validate `data` (a DebateSession's opening) and write its record; BadInput when the
    debate exists already or its verdict page does (a settled debate is not re-litigated)."""
    from ctxward.invariants.trust import seal

    opening = protocol.parse_opening(scrubbed(data))
    debate_id = f"{opening['layer']}-{opening['slug']}"
    path = record_path(project, debate_id)
    opened = now_ms() if now is None else now
    debate: dict[str, Any] = {
        "schema": SCHEMA,
        "id": debate_id,
        **opening,
        "opened_at": _iso(opened),
        "opened_ms": opened,
        "rounds": [],
        "verdict": None,
        "filed": None,
    }
    page = wiki_page(project, debate)
    with locked(path, project.locks_dir):
        if path.exists() or path.is_symlink():
            raise BadInput(f"debate {debate_id!r} exists already ({project.relative(path)})")
        if page.exists():
            raise BadInput(
                f"{project.relative(page)} exists: that debate was settled; read it, or open "
                "this one with another slug"
            )
        debate["seal"] = seal(identity(project, debate))
        write_marker(project, debate_id, opened)  # the Stop hook's: opened here, by this user
        _save(path, debate)
    return debate


def add_round(
    project: Project, debate_id: str, data: object, *, now: int | None = None
) -> dict[str, Any]:
    """Append a round (§ Round Structure) and decide; BadInput once the debate has a verdict."""
    path = record_path(project, debate_id)
    with locked(path, project.locks_dir):
        debate = load_debate(project, debate_id)
        if debate["verdict"] is not None:
            filed = debate.get("filed")
            then = (
                f"it was filed to {filed['path']}"
                if isinstance(filed, dict)
                else f"`ctxward debate close {debate_id}` files it"
            )
            raise BadInput(
                f"debate {debate_id!r} has its verdict ({debate['verdict']['verdict']}); {then}"
            )
        moment = now_ms() if now is None else now
        entry = protocol.parse_round(scrubbed(data), len(debate["rounds"]) + 1)
        entry["at_ms"] = moment
        debate["rounds"].append(entry)
        verdict = protocol.decide(debate, moment)
        if verdict is not None:
            verdict["decided_at"] = _iso(moment)
        debate["verdict"] = verdict
        _save(path, debate)
    return debate


def close_debate(project: Project, debate_id: str, *, now: int | None = None) -> dict[str, Any]:
    """Give the debate its verdict if it has none (`protocol.close_verdict`), then file it."""
    path = record_path(project, debate_id)
    with locked(path, project.locks_dir):
        debate = load_debate(project, debate_id)
        if debate["verdict"] is None:
            moment = now_ms() if now is None else now
            verdict = protocol.close_verdict(debate, moment)
            verdict["decided_at"] = _iso(moment)
            debate["verdict"] = verdict
            _save(path, debate)  # the verdict stands even if the filing below fails
        page = wiki_page(project, debate)
        filed = debate.get("filed")
        ours = isinstance(filed, dict) and filed.get("path") == _rel(project, page)
        if ours and page.is_file():
            return debate  # filed already: the page (and any note added to it since) stays
        if page.exists() and not ours:
            raise CtxwardError(
                f"{project.relative(page)} exists and was not filed by this debate; move it "
                "away, then close again"
            )
        text = render_page(project, debate)
        atomic_write(page, text)
        debate["filed"] = {
            "path": _rel(project, page),
            "sha256": sha256_hex(text),
            "at": _iso(now_ms() if now is None else now),
        }
        _save(path, debate)
        remove_marker(project, debate_id)  # filed: nothing left for the Stop hook to hold
    return debate


def _rel(project: Project, path: Path) -> str:
    return project.relative(path)


def render_page(project: Project, debate: dict[str, Any]) -> str:
    from ctxward.core.render import render
    from ctxward.core.scrub import redact

    return redact(
        render(
            "debate/consensus.md.j2",
            debate=debate,
            verdict=debate["verdict"],
            record=project.relative(record_path(project, debate["id"])),
            evidence=list(
                dict.fromkeys(
                    ref
                    for entry in debate["rounds"]
                    for turn in (entry["attacker"], entry["defender"])
                    if turn
                    for ref in turn["evidence_refs"]
                )
            ),
        )
    )


def list_debates(project: Project) -> list[dict[str, Any]]:
    """Every readable debate record, by id (for `debate list`)."""
    folder = debates_dir(project)
    if not folder.is_dir() or folder.is_symlink():
        return []
    found = []
    for path in sorted(folder.glob("*.json"))[:1000]:
        try:
            found.append(load_debate(project, path.stem))
        except CtxwardError:
            continue
    return found
