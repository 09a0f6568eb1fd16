"""`bank close-sprint` (seed 000 C5): bulk cleanup of `.tmp/`, a cross-ref archive, and the
entries still unresolved.

- `.tmp/`: ZZ artifacts are deleted; a staged entry or artifact is deleted only when every entry
  in it is in the bank with the same content hash (it was promoted). Anything else stays: an
  entry the preflight refuses (blocked, in progress, NEEDS_REVISION, …) or one not promoted yet
  is listed as unresolved; a file ctxward does not recognise is listed and left in place.
- `_xref/index.md` is copied to `_xref/archive/YYYY-MM-DD-index.md`; the index itself stays
  (its ids survive sprint boundaries, seed 000 §7).
- Unresolved: those `.tmp/` entries, the bank's `partial` (⚠️) entries, and blocked entries the
  index is still waiting on.
- Learnings (seed 000 §15, `bank.learnings`): each feature's surviving learnings are promoted to
  `03-learnings.md` as atomic facts, then its `learnings/<feature>/learnings.md` is deleted.
- A DISC entry whose outcome is DISCARD (seed 000 §10) is deleted with its staged file, never
  archived.
All in one transaction (the learnings files, outside the bank, are deleted once it committed);
`_notes/` is never touched.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ctxward.bank import inputs, learnings, state, txn
from ctxward.compress import scoring, staging
from ctxward.core.project import Project

XREF_ARCHIVE = "_xref/archive/{date}-index.md"


@dataclass(slots=True)
class Unresolved:
    what: str
    reason: str
    where: str

    def as_dict(self) -> dict[str, str]:
        return {"what": self.what, "reason": self.reason, "where": self.where}


@dataclass(slots=True)
class Closed:
    deleted: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    unrecognized: list[str] = field(default_factory=list)
    unresolved: list[Unresolved] = field(default_factory=list)
    xref_archive: str = ""
    discarded: list[str] = field(default_factory=list)  # DISC entries with DISCARD (§10)
    learnings: list[dict[str, Any]] = field(default_factory=list)  # per feature (§15)
    dry_run: bool = False
    written: list[str] = field(default_factory=list)

    def as_dict(self, project: Project) -> dict[str, Any]:
        return {
            "bank": project.relative(project.bank_dir),
            "dry_run": self.dry_run,
            "deleted": self.deleted,
            "kept": self.kept,
            "unrecognized": self.unrecognized,
            "unresolved": [u.as_dict() for u in self.unresolved],
            "xref_archive": self.xref_archive or None,
            "discarded": self.discarded,
            "learnings": self.learnings,
            "written": self.written,
        }


def _bank_hashes(current: state.State) -> set[str]:
    """Every content hash the bank holds (01 rows and 02 items). The hash covers the date, the
    phase, the agent and the summary, so it alone says whether an entry was promoted."""
    found = {row.hash for row in current.active.rows()}
    for chunk in current.log.chunks:
        if chunk.key is None:
            continue
        for part in chunk.body:
            if not isinstance(part, str):
                found.add(part.hash)
    return found


def close_sprint(project: Project, *, now: datetime | None = None, dry_run: bool = False) -> Closed:
    """Clean `.tmp/`, archive the cross-reference index, list what is unresolved."""
    from ctxward.core.config import load as load_config

    now = now or datetime.now(timezone.utc)
    today = now.strftime("%Y-%m-%d")
    tables = scoring.load_tables(load_config(project).scoring)
    report = Closed(dry_run=dry_run)
    if not project.bank_dir.is_dir():
        return report
    with state.session(project) as opened:
        bank = opened.bank
        current = state.load(bank)
        labels = [phase.label for phase in current.active.ordered_phases()]
        held = _bank_hashes(current)
        deletes: list[Path] = []
        sources, report.unrecognized = inputs.staged_sources(project)
        folder = bank / ".tmp"
        for path in sorted(folder.glob("ZZ-*.md")) if folder.is_dir() else []:
            deletes.append(path)
        for source in sources:
            collected = inputs.collect(
                project,
                [source],
                tables,
                gate="*",
                receiver=None,
                date=today,
                explicit=False,
                store=False,
            )
            report.unrecognized.extend(collected.unrecognized)
            if collected.unrecognized:
                continue
            pending = False
            report.discarded.extend(collected.discarded)
            for skip in collected.skipped:
                report.unresolved.append(Unresolved(skip.what, skip.reason, source.label))
                pending = True
            for item in collected.items:
                digests = {
                    staging.entry_hash(item.date, label, item.agent.strip().lower(), item.summary)
                    for label in ([item.phase] if item.phase != "*" else labels)
                }
                if not digests & held:
                    report.unresolved.append(
                        Unresolved(
                            f"{source.label} [{item.agent}]",
                            "staged, not promoted yet (run `ctxward bank promote --phase N`)",
                            source.label,
                        )
                    )
                    pending = True
            if pending:
                report.kept.append(source.label)
            else:
                deletes.append(source.path)
        for row in current.active.rows():
            if row.partial or row.status == "partial":
                report.unresolved.append(
                    Unresolved(
                        f"Phase {row.phase}: {row.title or row.agent} [{row.agent}]",
                        "partial ⚠️",
                        "01-active-context.md",
                    )
                )
        for waiting in current.index.waiting:
            report.unresolved.append(
                Unresolved(waiting.entry, f"blocked: {waiting.blocker}", state.INDEX)
            )
        report.deleted = [project.relative(path) for path in deletes]
        writes: dict[Path, str] = {}
        if current.texts[state.INDEX] is not None:
            from ctxward.core.render import render

            target = bank / XREF_ARCHIVE.format(date=today)
            report.xref_archive = project.relative(target)
            from ctxward.core.scrub import redact

            text = render("bank/xref_archive.md.j2", date=today, index=current.texts[state.INDEX])
            writes[target] = redact(text)
        current_facts = state.read_file(bank, learnings.FILE)
        features = learnings.surviving(bank, current_facts or "")
        facts = learnings.render(current_facts, features, today)
        if facts is not None:
            from ctxward.core.scrub import redact

            writes[bank / learnings.FILE] = redact(facts)
        report.learnings = [
            {
                "feature": f.name,
                "file": project.relative(f.path),
                "promoted": len(f.facts),
                "known": f.known,
            }
            for f in features
        ]
        if not dry_run:
            report.written = txn.commit(bank, writes, deletes)
            from ctxward.core.fsutil import remove

            for feature in features:  # promoted (or held already): the file goes (§15)
                remove(feature.path)
    return report
