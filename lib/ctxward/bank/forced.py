"""`forcedAt` recorded in the bank log (seed 004 G9 CLI, issue 16).

`ctxward dispatch check --force` lets a hard-reject through; each time it does, one row goes to
the `## Forced Dispatches` section of `02-progress-log.md` (created at the end of the log the
first time): when (`forcedAt`), how large the prompt was, the tier it reached, the agent type and
the prompt's sha256 (never its text). Written under the bank lock through the transaction, like
every bank file; the rest of the log is kept byte for byte.
"""

from __future__ import annotations

from pathlib import Path

from ctxward.bank import progress, state, txn
from ctxward.core.project import Project

HEADING = "## Forced Dispatches"


def record(
    project: Project,
    *,
    forced_at: str,
    size: int,
    tier: str,
    capacity: int,
    agent_type: str | None,
    sha256: str,
) -> Path:
    """Append the row of one forced dispatch; the log's path."""
    from ctxward.core.render import render
    from ctxward.core.scrub import redact

    row = render(
        "bank/forced_row.md.j2",
        at=forced_at,
        size=size,
        tier=tier,
        capacity=capacity,
        agent=agent_type or "general-purpose",
        sha256=sha256,
    ).strip("\n")
    with state.session(project) as opened:
        bank = opened.bank
        log = progress.parse(state.read_file(bank, progress.FILE) or "")
        chunk = next((c for c in log.chunks if c.heading == HEADING), None)
        if chunk is None:
            head = render("bank/forced_section.md.j2", heading=HEADING).rstrip("\n")
            log.chunks.append(progress.Chunk(heading=HEADING, raw=f"{head}\n{row}\n"))
        else:
            chunk.raw = (chunk.raw or HEADING).rstrip("\n") + f"\n{row}\n"
        txn.commit(bank, {bank / progress.FILE: redact(progress.render(log))}, [])
    return bank / progress.FILE
