"""The hand-off: staged entries promoted at a phase gate, from a sub-agent's stop or a session."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ctxward.compress import scoring
from ctxward.compress.engine import compress_text, with_original
from ctxward.compress.scoring import Tables
from ctxward.compress.staging import Handoff, Staged, read_staged, stage, stage_dir
from ctxward.core.fsutil import read_regular_text
from ctxward.core.project import Project


def handoff(project: Project, tables: Tables, *, phase: str | None = None) -> Handoff:
    """C11: compress the completed work staged in the bank's .tmp/ and list what was compressed.

    Pending L1 entries (staged by C8 below HIGH) are compressed in place; other artifacts in
    .tmp/ carrying subtask_summaries (IMPL/REVIEW notes) get an L1 entry staged next to them and
    are left untouched. `phase` limits the run to entries of that phase.
    """
    folder = stage_dir(project)
    compressed: list[Staged] = []
    already: list[Staged] = []
    skipped: list[tuple[str, str]] = []
    unrecognized: list[str] = []
    if not folder.is_dir():
        return Handoff((), (), (), ())
    for path in sorted(folder.iterdir()):
        if (
            not path.is_file()
            or path.name.startswith(".")
            or path.suffix not in (".md", ".yaml", ".yml", ".json")
        ):
            continue
        staged = read_staged(path)
        if staged is not None:
            if phase is not None and staged.phase != phase:
                continue
            if staged.state == "compressed":
                already.append(staged)
                continue
        try:
            text = read_regular_text(path)
        except (OSError, UnicodeDecodeError):
            unrecognized.append(project.relative(path))
            continue
        sender = staged.attrs.get("from") if staged else None
        receiver = staged.attrs.get("to") if staged else None
        run = compress_text(
            text,
            tables,
            project=project,
            sender=sender or None,
            receiver=receiver or None,
            label=project.relative(path),
        )
        structured = [r for r in run.results if r.entry.structured]
        if not structured:
            unrecognized.append(project.relative(path))
            continue
        for result in structured:
            entry_phase = scoring.text_of(result.entry.fields.get("phase")) or "none"
            if phase is not None and entry_phase != phase:
                continue
            original = staged.attrs.get("original", "") if staged else ""
            if original:  # keep pointing at what the sub-agent wrote, not at the staged copy
                result = with_original(result, original, Path(original).stem)
            if not result.compressed:
                skipped.append(
                    (f"{project.relative(path)} [{result.agent}]", result.preflight.reason)
                )
                continue
            done = stage(project, result)
            (compressed if done.written else already).append(done)
    listed = {item.path for item in compressed}
    unique = {item.path: item for item in already if item.path not in listed}
    return Handoff(tuple(compressed), tuple(unique.values()), tuple(skipped), tuple(unrecognized))


_STAGED_NOW = ("CRITICAL", "HIGH")


def subagent_stopped(project: Project, data: Mapping[str, Any]) -> list[Staged]:
    """C8: stage the sub-agent's completed subtask_summaries for L2 promotion.

    Read from `last_assistant_message`, else the last assistant message of the sub-agent's
    transcript. A CRITICAL or HIGH entry is compressed inline now; a completed entry below HIGH
    is staged `pending`, for the next handoff (C11) to compress. Entries the preflight refuses
    (in progress, blocked, …) are not staged. The compaction agent (agent_type "") is ignored.
    """
    agent_type = data.get("agent_type")
    if not isinstance(agent_type, str) or not agent_type:
        return []
    message = data.get("last_assistant_message")
    text = message if isinstance(message, str) else ""
    if "subtask_summary" not in text:
        path = data.get("agent_transcript_path")
        if isinstance(path, str) and path:
            from ctxward.transcript.reader import last_assistant_text

            text = last_assistant_text(path)
    if "subtask_summary" not in text:
        return []
    from ctxward.core.config import load

    tables = scoring.load_tables(load(project).scoring)
    agent_id = data.get("agent_id")
    label = f"sub-agent {agent_id}" if isinstance(agent_id, str) and agent_id else "sub-agent"
    run = compress_text(text, tables, project=project, label=label, fallback_sender=agent_type)
    staged = []
    for result in run.results:
        status = scoring.status_of(result.entry.fields)
        if not (result.entry.structured and result.compressed):
            continue
        if status not in ("complete", "partial"):
            continue
        state = "compressed" if result.score.band in _STAGED_NOW else "pending"
        staged.append(stage(project, result, state=state))
    return staged


def session_handoff(project: Project) -> Handoff | None:
    """C11 at PreCompact: the handoff, when the bank has a .tmp/ to look at (else nothing)."""
    if not stage_dir(project).is_dir():
        return None
    from ctxward.core.config import load

    return handoff(project, scoring.load_tables(load(project).scoring))
