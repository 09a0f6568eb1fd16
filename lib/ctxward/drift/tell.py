"""Telling the model: one factual sentence per signature (imports Jinja2 only when one fired)."""

from __future__ import annotations

import os

from ctxward.drift.log import (
    analyze_transcript,
    describe,
    log_path,
    newest_log,
    public_evidence,
    read_log,
    sessions_folder,
)
from ctxward.drift.signatures import LOG_SUFFIX, NAMES
from ctxward.errors import BadInput

# `typing.TYPE_CHECKING` without importing typing: this module is on the PostToolUse hot path.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from pathlib import Path
    from typing import Any

    from ctxward.core.project import Project

# invariants.INVARIANTS_FILE, without importing that module (YAML, ~10 ms) to render a fact.
INVARIANTS_FILE = "invariants.md"


def facts(project: Project, reports: Sequence[Mapping[str, Any]], data: Mapping[str, Any]) -> str:
    """The additionalContext for `reports`: one factual sentence per signature (template),
    scrubbed of secrets as a whole (the quoted call is scrubbed before it is shortened, too)."""
    from ctxward.core.render import render
    from ctxward.core.scrub import scrub

    root = str(project.root)
    current = data.get("tool_use_id")
    label = describe(str(data.get("tool_name") or ""), data.get("tool_input"), root)
    items = []
    for report in reports:
        evidence = dict(report.get("evidence") or {})
        same_call = bool(current) and evidence.get("id") == current
        items.append(
            {
                "signature": report.get("signature"),
                "name": NAMES.get(str(report.get("signature")), str(report.get("signature"))),
                "evidence": public_evidence(evidence),
                "label": label if same_call or not evidence.get("id") else "",
            }
        )
    text = render("drift/context.md.j2", reports=items, plans=_plan_files(project)).strip()
    return scrub(text)[0]


def _plan_files(project: Project, limit: int = 3) -> list[str]:
    """The trusted active plans' invariants files (relative), at most `limit`, by name: the
    model is sent to re-read no plan that came untrusted with the repository (invariants.trust)."""
    from ctxward.invariants.read import plans_for_the_model

    trusted = plans_for_the_model(project)[0]
    return [project.relative(plan.invariants_path) for plan in trusted[:limit]]


def report(
    project: Project,
    session: str | None,
    env: Mapping[str, str],
    *,
    from_transcript: bool = False,
) -> dict[str, Any]:
    """The drift report of one session, from its hook log or else its Claude Code transcript.

    `session`: a session id, the path of a hook log (`*.tools.jsonl`) or of a transcript; None
    picks the current session ($CLAUDE_CODE_SESSION_ID), else the newest hook log, else the
    project's newest transcript. `from_transcript` skips the hook log. BadInput when none is
    found or the file cannot be read.
    """
    import re
    from pathlib import Path

    from ctxward.transcript import reader

    if session and (os.sep in session or session.endswith(".jsonl")):
        path = Path(session).expanduser()
        if not path.is_file():
            raise BadInput(f"{session}: no such file")
        if path.name.endswith(LOG_SUFFIX) and not from_transcript:
            return _read(project, path, log=True)
        return _read(project, path, log=False)
    wanted = session or env.get("CLAUDE_CODE_SESSION_ID") or ""
    if wanted:
        log = log_path(project, wanted)
        if log.is_file() and not from_transcript:
            return _read(project, log, log=True)
        found = None
        if re.fullmatch(r"[A-Za-z0-9._-]+", wanted):
            folder = reader.projects_dir(env)
            exact = folder / reader.project_folder_name(project.root) / f"{wanted}.jsonl"
            candidates = [exact, *sorted(folder.glob(f"*/{wanted}.jsonl"))]
            found = next((p for p in candidates if p.is_file()), None)
        if found is not None:
            return _read(project, found, log=False)
        if session:
            raise BadInput(
                f"no hook log ({project.relative(log)}) and no Claude Code transcript "
                f"under {reader.projects_dir(env)} for session {session!r}"
            )
    if not from_transcript:
        newest = newest_log(project)
        if newest is not None:
            return _read(project, newest, log=True)
    found = reader.find_transcript(project.root, env)
    if found is None:
        raise BadInput(
            f"no hook log under {project.relative(sessions_folder(project))}/ and no Claude Code "
            f"transcript of this project under {reader.projects_dir(env)}; name a session"
        )
    return _read(project, found, log=False)


def _read(project: Project, path: Path, *, log: bool) -> dict[str, Any]:
    from ctxward.core.config import load

    try:
        if log:
            return read_log(project, path)
        return analyze_transcript(project, path, load(project).drift)
    except OSError as exc:
        raise BadInput(f"{path}: cannot read: {exc.strerror or exc}") from None
