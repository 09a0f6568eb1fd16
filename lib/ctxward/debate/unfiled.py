"""What the Stop and SubagentStop hooks ask: is a debate's verdict waiting to be filed?

Seed 002: "no layer transition after a debate until the wiki write is confirmed". The hook
refuses to end the turn (`decision: block`, whose reason reaches the model) while a debate has a
verdict and no wiki page. Bounded, so that nothing can trap the user:

- only debates opened on this machine by this user count: `debate open` leaves a marker in the
  user's state folder (`<state>/debates/<sha256 of project root and id>`, where no clone can
  write) and seals the record's identity with this user's key; a repository's committed
  `.ctxward/debates/` has neither. The hook looks at a record only when its marker exists (one
  `stat` per file) and believes it only when its seal checks;
- never while Claude Code's loop guard `stop_hook_active` is set (the model is already
  continuing because a Stop hook asked it to): at most one block per turn;
- at most MAX_BLOCKS blocks per debate in all (counted in its marker): a verdict that cannot be
  filed (a read-only wiki folder) costs a few extra turns, not every turn forever;
- filing removes the marker, so a settled debate costs the hook nothing again.

Standard library only: Stop fires at the end of every turn, and with no `.ctxward/debates/`
the check is one failed `scandir`.
"""

from __future__ import annotations

import hashlib
import json
import os

# `typing.TYPE_CHECKING` without importing typing (the Stop hook's path).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path
    from typing import Any

    from ctxward.core.project import Project

MARKERS_DIRNAME = "debates"
MAX_BLOCKS = 3  # per debate, over its whole life
MAX_RECORDS = 200  # files the hook looks at in .ctxward/debates/, whatever is committed there
MAX_RECORD_BYTES = 4 * 1024 * 1024  # store.MAX_RECORD_BYTES


def identity(project: Project, debate: dict[str, Any]) -> bytes:
    """What a debate's seal covers: the project, the debate's id and when it was opened."""
    return f"ctxward-debate\0{project.root}\0{debate['id']}\0{debate['opened_ms']}".encode()


def marker_path(project: Project, debate_id: str, env: Mapping[str, str] | None = None) -> Path:
    from ctxward.core.userstate import state_dir

    key = hashlib.sha256(f"{project.root}\0{debate_id}".encode()).hexdigest()
    return state_dir(env) / MARKERS_DIRNAME / key


def write_marker(
    project: Project,
    debate_id: str,
    opened_ms: int,
    blocks: int = 0,
    env: Mapping[str, str] | None = None,
) -> None:
    from ctxward.core.fsutil import atomic_write, ensure_folder

    path = marker_path(project, debate_id, env)
    ensure_folder(path.parent, mode=0o700)
    body = {"project": str(project.root), "id": debate_id, "opened_ms": opened_ms, "blocks": blocks}
    atomic_write(path, json.dumps(body) + "\n")


def remove_marker(project: Project, debate_id: str, env: Mapping[str, str] | None = None) -> None:
    from ctxward.core.fsutil import remove

    remove(marker_path(project, debate_id, env))


def _read_json(path: str | Path, limit: int) -> Any:
    from ctxward.core.fsutil import read_regular

    try:
        return json.loads(read_regular(path, limit=limit))
    except (OSError, ValueError):  # gone, a link, a FIFO, too large, not JSON
        return None


def holding(project: Project, env: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """The debates opened here whose verdict is not filed and that may still hold a turn.

    Each comes with its marker's block count; `count_block` records a block.
    """
    folder = os.path.join(project.state_dir, "debates")
    try:
        with os.scandir(folder) as entries:
            names = sorted(
                entry.name[: -len(".json")]
                for entry in entries
                if entry.name.endswith(".json") and entry.is_file(follow_symlinks=False)
            )[:MAX_RECORDS]
    except OSError:  # no debates (the usual case), or a folder we may not read
        return []
    from ctxward.invariants.trust import is_sealed

    found = []
    for debate_id in names:
        marker_file = marker_path(project, debate_id, env)
        if not os.path.isfile(marker_file):
            continue  # not opened here (or filed already)
        marker = _read_json(marker_file, 4096)
        debate = _read_json(os.path.join(folder, f"{debate_id}.json"), MAX_RECORD_BYTES)
        if not isinstance(marker, dict) or not isinstance(debate, dict):
            continue
        if debate.get("id") != debate_id or not isinstance(debate.get("opened_ms"), int):
            continue
        if not is_sealed(identity(project, debate), debate.get("seal"), env):
            continue  # replaced by a record this user did not open
        blocks = marker.get("blocks")
        if not isinstance(blocks, int) or blocks >= MAX_BLOCKS:
            continue
        verdict = debate.get("verdict")
        if not isinstance(verdict, dict) or _filed(project, debate):
            continue
        found.append({"id": debate_id, "verdict": verdict, "blocks": blocks, "debate": debate})
    return found


def _filed(project: Project, debate: dict[str, Any]) -> bool:
    filed = debate.get("filed")
    if not isinstance(filed, dict) or not isinstance(filed.get("path"), str):
        return False
    return os.path.isfile(os.path.join(project.root, filed["path"]))


def count_block(
    project: Project, held: dict[str, Any], env: Mapping[str, str] | None = None
) -> None:
    write_marker(project, held["id"], held["debate"]["opened_ms"], held["blocks"] + 1, env)
