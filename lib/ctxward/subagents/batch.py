"""A batch's artifacts read back, and the reducer's view of them (what the orchestrator reads)."""

from __future__ import annotations

import json

from ctxward.core.fsutil import read_regular
from ctxward.core.project import Project
from ctxward.core.text import size_text_compact
from ctxward.subagents.artifacts import (
    META_SUFFIX,
    ArtifactMeta,
    Batch,
    BatchArtifact,
    artifacts_dir,
    check_name,
    shared_path,
)
from ctxward.subagents.channel import read_channel


def load_batch(project: Project, session: str, batch: str) -> Batch:
    """The batch's artifact records, heartbeats and shared entries (missing parts are empty)."""
    check_name(batch, "batch")
    found = Batch(session=session, batch=batch)
    folder = artifacts_dir(project, session)
    for record_file in sorted(folder.glob(f"*{META_SUFFIX}")) if folder.is_dir() else ():
        try:
            stored = json.loads(read_regular(record_file).decode("utf-8"))
            if not isinstance(stored, dict):
                raise ValueError("not an object")
            if stored.get("batch", stored.get("rid")) != batch:
                continue
            found.artifacts.append(BatchArtifact(ArtifactMeta.from_dict(stored), record_file))
        except (OSError, ValueError, RecursionError):
            found.unreadable.append(project.relative(record_file))
    found.artifacts.sort(key=lambda item: (item.meta.written_at, item.record_path.name))
    channel = read_channel(shared_path(project, session, batch))
    found.heartbeats = channel["heartbeats"]
    found.entries = channel["entries"]
    return found


def reducer_view(project: Project, found: Batch) -> str:
    """The orchestrator's view of a batch: one line per sub-agent, no artifact content."""
    from ctxward.core.render import render

    lines = []
    first_dir: str | None = None
    for item in found.artifacts:
        meta = item.meta
        folder, _, name = meta.path.rpartition("/")
        if first_dir is None:
            first_dir = folder
            shown = meta.path
        elif folder == first_dir and "/" in folder:
            shown = f".../{folder.rpartition('/')[2]}/{name}"
        else:
            shown = meta.path
        lines.append(
            {
                "role": meta.role,
                "path": shown,
                "size": size_text_compact(meta.size),
                "sha": meta.sha256[:8],
                "status": meta.status,
                "summary": meta.summary,
            }
        )
    waiting = [
        {"role": role, "status": str(found.heartbeats[role].get("status") or "")}
        for role in found.roles_without_artifact
    ]
    return render(
        "subagents/reduce.txt.j2",
        batch=found.batch,
        done=found.done,
        total=found.total,
        elapsed=f"{found.elapsed_seconds:.1f}",
        lines=lines,
        waiting=waiting,
        unreadable=found.unreadable,
    )
