"""`bank promote`: the L2 batch promotion at a phase gate (seed 000 §9, C1–C4, C7).

One call, one transaction (`txn.commit`): the entries are read, preflighted and scored, the
budget is allocated, and 01-active-context.md, 02-progress-log.md, the ZZ artifact,
`_xref/index.md`, `_xref/_next_id.json` (and the C7 archive when the trim runs) are written
together, and the `.tmp/` entries consumed are deleted, or nothing is.

Idempotent (seed 000 §17): an entry whose content hash is in the bank already changes nothing,
and a promotion that changes nothing writes nothing, not even its time stamp. Nothing is
silently replaced (issue 16): an entry is identified by its own id or subtask title, else by its
content (`bank.identity`), so two subtasks one agent finished in one phase on one day are two
entries; a new version of the same entry is `updated` (both hashes said), its previous row in
01 goes to `_notes/archive/` and its previous progress-log item stays.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from ctxward.bank import active, budget, inputs, state, trim, txn, xref, zz
from ctxward.bank.active import ActiveContext
from ctxward.bank.steps import (
    allocate,
    archive_progress,
    check_critical,
    classify,
    cross_reference,
    dedupe,
    int_or_none,
    new_files,
    phase_budget,
    record_plans,
    scrubbed,
    would_change,
)
from ctxward.compress import identity as identities
from ctxward.compress import scoring
from ctxward.core.project import Project
from ctxward.errors import BadInput

_PHASE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,31}$")


_DATE = re.compile(r"^\d{4}-\d\d-\d\d$")


def check_phase(value: str) -> str:
    """A phase label: `2`, `2a`, `3.1` (a leading "Phase " is dropped)."""
    label = value.strip()
    if label.lower().startswith("phase "):
        label = label[6:].strip()
    if not _PHASE.match(label):
        raise BadInput(f"--phase {value!r}: expected a label such as 2, 2a or 3.1")
    return label


def check_date(value: str) -> str:
    if not _DATE.match(value):
        raise BadInput(f"--date {value!r}: expected YYYY-MM-DD")
    try:
        datetime.strptime(value, "%Y-%m-%d")
    except ValueError:
        raise BadInput(f"--date {value!r}: not a calendar date") from None
    return value


@dataclass(slots=True)
class Promoted:
    kind: str
    key: str
    band: str
    score: float
    mode: str  # the 01 mode for subtask entries, "" for the others
    action: str  # "added" or "updated"
    refs: list[str] = field(default_factory=list)
    hash: str = ""
    previous: str = ""  # the hash of the version an update replaced in 01 / follows in 02
    title: str = ""

    @property
    def label(self) -> str:
        """The key as printed: without a content-hash identity (the title follows it)."""
        date, phase, agent, identity = identities.split(self.key)
        shown = f"{date}|{phase}|{agent}"
        return shown if not identities.is_explicit(identity) else f"{shown}|{identity}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "key": self.key,
            "label": self.label,
            "band": self.band,
            "score": self.score,
            "mode": self.mode or None,
            "lines": budget.lines(budget.cost(self.band, self.mode)) if self.mode else None,
            "action": self.action,
            "refs": self.refs,
            "hash": self.hash,
            "previous_hash": self.previous or None,
            "title": self.title,
        }


@dataclass(slots=True)
class Promotion:
    phase: str
    promoted: list[Promoted] = field(default_factory=list)
    unchanged: int = 0
    skipped: list[inputs.Skip] = field(default_factory=list)
    unrecognized: list[str] = field(default_factory=list)
    other_phases: int = 0
    xrefs_added: int = 0
    warnings: list[str] = field(default_factory=list)
    trim: trim.Trim | None = None
    written: list[str] = field(default_factory=list)
    zz: str = ""
    budget: dict[str, Any] = field(default_factory=dict)
    recovered: str | None = None
    inputs: int = 0
    discarded: list[str] = field(default_factory=list)  # DISC entries with DISCARD (§10)

    @property
    def bands(self) -> dict[str, int]:
        counts = dict.fromkeys(budget.BANDS, 0)
        for item in self.promoted:
            counts[item.band] = counts.get(item.band, 0) + 1
        return counts

    def confirmation(self) -> str:
        """The seed's line: "Compression complete: N entries compressed (M CRITICAL, P HIGH), …"."""
        from ctxward.core.render import render

        return render("bank/confirmation.txt.j2", promotion=self).strip()

    def as_dict(self, project: Project) -> dict[str, Any]:
        return {
            "phase": self.phase,
            "confirmation": self.confirmation(),
            "promoted": [item.as_dict() for item in self.promoted],
            "bands": self.bands,
            "unchanged": self.unchanged,
            "skipped": [
                {"what": s.what, "reason": s.reason, "blocker": s.blocker or None}
                for s in self.skipped
            ],
            "unrecognized": self.unrecognized,
            "other_phases": self.other_phases,
            "xrefs_added": self.xrefs_added,
            "warnings": self.warnings,
            "trim": self.trim.as_dict() if self.trim and self.trim.trimmed else None,
            "written": self.written,
            "zz": self.zz,
            "budget": self.budget,
            "recovered": self.recovered,
            "discarded": self.discarded,
            "bank": project.relative(project.bank_dir),
        }


def promote(
    project: Project,
    paths: Sequence[str] = (),
    *,
    phase: str,
    receiver: str | None = None,
    phases: int | None = None,
    budget_lines: int | None = None,
    feature: str | None = None,
    date: str | None = None,
    keep: bool = False,
    now: datetime | None = None,
    progress: Callable[[str], None] | None = None,
    portable_lock: bool = False,
) -> Promotion:
    """Promote ENTRIES (or the entries staged in `.tmp/` for the gate) into the memory bank."""
    from ctxward.core.config import load as load_config

    gate = check_phase(phase)
    now = now or datetime.now(timezone.utc)
    today = check_date(date) if date else now.strftime("%Y-%m-%d")
    if phases is not None and not 1 <= phases <= 100:
        raise BadInput(f"--phases {phases}: expected 1..100")
    if budget_lines is not None and not 10 <= budget_lines <= 10_000:
        raise BadInput(f"--budget {budget_lines}: expected 10..10000 lines")
    settings = load_config(project)
    tables = scoring.load_tables(settings.scoring)
    total = budget_lines or settings.bank.total_budget
    explicit = inputs.explicit_sources(project, paths) if paths else None
    receiver = receiver.strip().lower() if receiver else None

    with state.session(project, portable_lock=portable_lock) as opened:
        bank = opened.bank
        if explicit is None:
            sources, unrecognized = inputs.staged_sources(project)
        else:
            sources, unrecognized = explicit, []
        collected = inputs.collect(
            project,
            sources,
            tables,
            gate=gate,
            receiver=receiver,
            date=today,
            explicit=explicit is not None,
            progress=progress,
        )
        if (
            explicit is not None
            and not collected.items
            and not collected.discarded
            and _nothing_in(collected.skipped)
        ):
            names = ", ".join(skip.what for skip in collected.skipped[:3])
            raise BadInput(f"nothing to promote: no entry found in {names}; nothing written")
        current = state.load(bank)
        result = Promotion(
            phase=gate,
            skipped=list(collected.skipped),
            unrecognized=unrecognized + collected.unrecognized,
            other_phases=collected.other_phases,
            recovered=opened.recovered,
            inputs=len(sources),
            discarded=list(collected.discarded),
        )
        estimated = (
            phases or int_or_none(current.active.params.get("phases")) or settings.bank.phases
        )
        per_phase = budget.per_phase(total, estimated)
        items, superseded = dedupe(collected.items)
        result.skipped.extend(superseded)
        plan = classify(items, current)
        result.unchanged = plan.unchanged
        check_critical(current.active, plan.changing, total)
        registry = xref.Registry(current.index, current.ids, str(bank / state.NEXT_ID))
        refs, decisions = cross_reference(registry, plan, collected.skipped, feature, today)
        modes, result.warnings = allocate(
            current.active, plan.changing, per_phase, total, plan.updated
        )
        archive_progress(current.log, plan, refs, decisions)
        record_plans(current.active, plan.others, feature)
        result.skipped.extend(plan.skipped)
        result.promoted = [
            Promoted(
                item.kind,
                item.key,
                item.band,
                item.score,
                modes.get(item.key, "") if item.kind == "summary" else "",
                "updated" if (item.kind, item.key) in plan.updated else "added",
                refs.get((item.kind, item.key), []),
                item.hash,
                plan.updated.get((item.kind, item.key), ""),
                item.title,
            )
            for item in [*plan.changing, *plan.others]
        ]
        result.xrefs_added = registry.added
        if phases is not None:
            current.active.params["phases"] = str(phases)
        if feature:
            current.active.params["feature"] = feature
        writes, result.trim = new_files(
            current, registry, gate, receiver, total, now, today, plan.replaced
        )
        rendered_zz = writes[bank / zz.relpath(gate)]
        if not result.promoted and (bank / zz.relpath(gate)).is_file():
            del writes[bank / zz.relpath(gate)]  # nothing new for the next agent: keep it
        deletes = [
            # by its name in the bank's own .tmp/: the path given may be spelled with `..`
            bank / ".tmp" / source.path.resolve().name
            for source in collected.sources
            if source.in_tmp
            and not keep
            and source.label not in collected.kept
            and source.label not in plan.kept
        ]
        if would_change(writes, deletes):
            current.active.params.update(
                {
                    "last": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
                    "last-phase": gate,
                    "last-count": str(len(result.promoted)),
                    **_seals(project, rendered_zz, current.active),
                }
            )
            writes[bank / active.FILE] = scrubbed(active.render(current.active, total))
        result.zz = zz.relpath(gate)
        result.written = txn.commit(bank, writes, deletes)

        result.budget = phase_budget(current.active, gate, total, per_phase, estimated)
    return result


def _seals(project: Project, rendered: str, doc: ActiveContext) -> dict[str, str]:
    """The seals PreToolUse checks before it gives a dispatch this context (`bank.inject`): of
    the ZZ artifact this promotion rendered, and of the feature's learnings as it saw them."""
    from ctxward.bank import inject
    from ctxward.core.fsutil import read_regular

    seals = {"zz-seal": inject.seal("zz", rendered.encode("utf-8")), "learnings-seal": ""}
    feature = doc.params.get("feature")
    if feature and inject.feature_ok(feature):
        path = inject.learnings_file(project, feature)
        try:
            data = read_regular(path, limit=inject.MAX_LEARNINGS_BYTES)
        except (OSError, ValueError):  # missing, a link, a FIFO, too large: nothing sealed
            data = None
        if data is not None:
            seals["learnings-seal"] = inject.seal("learnings", data)
    return seals


def _nothing_in(skipped: Sequence[inputs.Skip]) -> bool:
    """Whether every given input held no entry at all (nothing blocked, nothing of a phase)."""
    return bool(skipped) and all(skip.reason == inputs.NO_ENTRY for skip in skipped)
