"""The promotion's steps: rows and log lines made, which entries are new or changed, their
cross-references, the budget allocated per phase, what the trim archives, the files written.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from ctxward.bank import active, archive, budget, inputs, state, trim, xref, zz
from ctxward.bank import progress as progress_log
from ctxward.bank.active import PLANS, ActiveContext, Phase, PlanRow, Row
from ctxward.bank.inputs import Item
from ctxward.bank.markup import natural_key
from ctxward.bank.progress import Item as LogItem
from ctxward.compress import scoring
from ctxward.compress.lines import files_text
from ctxward.core.text import cut_at_word


def make_row(item: Item, mode: str) -> Row:
    """The `## Completed Phases` row of `item` in `mode` (rendered by the L1 band templates)."""
    from ctxward.core.render import render

    template = budget.MODE_TEMPLATES[mode][item.band]
    text = render(template, entry=item.view)
    return Row(
        key=item.key,
        hash=item.hash,
        band=item.band,
        score=item.score,
        mode=mode,
        agent=item.agent,
        status=scoring.status_of(item.fields) or "complete",
        title=item.title,
        files=str(item.view.get("files") or files_text(item.files)),
        partial=bool(item.view.get("partial")),
        lines=[line for line in text.splitlines() if line.strip()],
    )


def entry_label(date: str, phase: str, agent: str) -> str:
    """How links name an entry: its progress-log heading."""
    return f"{date} — Phase {phase}: {agent}"


def _log_lines(item: Item, refs: Sequence[str], decision: str = "") -> list[str]:
    from ctxward.core.render import render

    fields = item.fields
    meta = {
        name.replace("_", " "): scoring.text_of(fields.get(name))
        for name in ("status", "tests", "coverage", "critical_issues")
        if not scoring.is_empty(fields.get(name)) or (name == "critical_issues" and name in fields)
    }
    original = item.original
    text = render(
        "bank/log_item.md.j2",
        item={
            "kind": item.kind,
            "agent": item.agent,
            "band": item.band,
            "score": f"{item.score:.2f}",
            "verdict": scoring.text_of(fields.get("verdict")).upper(),
            "meta": meta,
            "partial": scoring.status_of(fields) == "partial",
            "summary": compress_summary(item.summary),
            "files": files_text(item.files, 6),
            "refs": list(refs),
            "decision": decision,
            "original": original,
        },
    )
    return [line for line in text.splitlines() if line.strip()]


def compress_summary(text: str, limit: int = 400) -> str:
    """The archived summary: one line, at most `limit` characters."""
    return cut_at_word(text, limit)


def dedupe(items: Sequence[Item]) -> tuple[list[Item], list[inputs.Skip]]:
    """One item per (kind, key) — the key holds the entry's identity; a later one wins (it is
    the newer text of the same entry) and the older is listed as superseded."""
    seen: dict[tuple[str, str], Item] = {}
    superseded = []
    for item in items:
        older = seen.pop((item.kind, item.key), None)
        if older is not None and older.hash != item.hash:
            superseded.append(
                inputs.Skip(
                    f"{older.source.label} [{older.agent}]",
                    f"superseded by {item.source.label}: a newer text of the same entry "
                    f"({older.hash} → {item.hash})",
                )
            )
        seen[(item.kind, item.key)] = item
    return list(seen.values()), superseded


def _new_phase(doc: ActiveContext, label: str, per_phase: int) -> Phase:
    """A phase's budget: PER_PHASE + the carryover of the phase before it (seed 000 §18)."""
    earlier = [p for p in doc.phases.values() if natural_key(p.label) < natural_key(label)]
    before = max(earlier, key=lambda p: natural_key(p.label)) if earlier else None
    carry = before.carry_out if before is not None else 0
    phase = Phase(label, per_phase + carry, carry)
    doc.phases[label] = phase
    return phase


@dataclass(slots=True)
class _Plan:
    changing: list[Item] = field(default_factory=list)  # subtask entries that change 01
    others: list[Item] = field(default_factory=list)  # IMPL/REVIEW/DISC/PLAN entries that change
    updated: dict[tuple[str, str], str] = field(default_factory=dict)  # (kind, key) → old hash
    replaced: list[Row] = field(default_factory=list)  # 01 rows an update replaces: archived
    skipped: list[inputs.Skip] = field(default_factory=list)
    kept: set[str] = field(default_factory=set)  # sources left in .tmp/ (something skipped)
    unchanged: int = 0


def _logged(log: progress_log.ProgressLog, kind: str) -> set[str]:
    """Every content hash of `kind` the progress log holds."""
    return {part.hash for chunk in log.chunks for part in chunk.items(kind)}


def classify(items: Sequence[Item], current: state.State) -> _Plan:
    """Which entries change the bank (seed 000 §17: the same content hash → skip).

    An entry is looked up by its key (date, phase, agent and its own identity); a hash the bank
    holds anywhere (a row written before identities, one the C7 trim archived) is unchanged too.
    """
    plan = _Plan()
    rows = {row.key: row for row in current.active.rows()}
    held = {row.hash for row in rows.values()}
    archived = _logged(current.log, "summary")
    for item in items:
        if item.kind == "summary":
            found = rows.get(item.key)
            if item.hash in held or (found is None and item.hash in archived):
                plan.unchanged += 1
                continue
            plan.changing.append(item)
            if found is not None:
                plan.updated[(item.kind, item.key)] = found.hash
                plan.replaced.append(found)
        elif item.kind == "plan":
            plan.others.append(item)
        else:
            chunk = current.log.by_key.get(
                progress_log.section_key(item.date, item.phase, item.agent)
            )
            if chunk is not None and chunk.holds(item.kind, item.hash):
                plan.unchanged += 1
                continue
            if item.kind == "review" and chunk is not None and chunk.item("review") is not None:
                plan.skipped.append(
                    inputs.Skip(
                        f"{item.source.label} [{item.agent}]",
                        f"{entry_label(item.date, item.phase, item.agent)} holds a **Review:** "
                        "line already (seed 000 §17: skip if the line exists); left as it is",
                    )
                )
                plan.kept.add(item.source.label)
                continue
            plan.others.append(item)
            earlier = chunk.latest(item.kind, item.identity) if chunk is not None else None
            if earlier is not None and item.updatable:
                plan.updated[(item.kind, item.key)] = earlier.hash
    return plan


def check_critical(doc: ActiveContext, changing: Sequence[Item], total: int) -> None:
    """§18: CRITICAL entries alone above TOTAL_BUDGET escalate before anything is written."""
    replaced = {item.key for item in changing}
    half = sum(r.cost for r in doc.rows() if r.band == "CRITICAL" and r.key not in replaced)
    half += sum(budget.cost("CRITICAL", "expanded") for i in changing if i.band == "CRITICAL")
    budget.check_critical(half, total)


def cross_reference(
    registry: xref.Registry,
    plan: _Plan,
    skipped: Sequence[inputs.Skip],
    feature: str | None,
    today: str,
) -> tuple[dict[tuple[str, str], list[str]], dict[str, str]]:
    """Entities, decisions, blocker links and feature rows of the changing entries (§7)."""
    refs: dict[tuple[str, str], list[str]] = {}
    decisions: dict[str, str] = {}
    for item in [*plan.changing, *plan.others]:
        label = entry_label(item.date, item.phase, item.agent)
        found_refs = refs.setdefault((item.kind, item.key), [])
        if item.band == "CRITICAL" and item.kind in ("summary", "impl"):
            narrative = "\n".join([scoring.narrative(item.fields), *item.files])
            for found in xref.entities(narrative, item.files):
                ref = registry.entity(
                    found.kind, found.name, found.location, item.phase, item.agent
                )
                found_refs.append(ref)
        if item.kind == "review":
            note = xref.decision_note(item.fields, item.text, item.title)
            if note is not None:
                links_to = note.links_to or f"02-progress-log.md ({label})"
                ref = registry.decision(note.kind, note.summary, links_to, item.phase)
                decisions[item.key] = ref
                found_refs.append(ref)
        if item.kind in ("summary", "impl"):
            blocker = scoring.text_of(item.fields.get("blocked_by")) or scoring.text_of(
                item.fields.get("blockers")
            )
            if blocker and not scoring.is_empty(blocker):
                registry.link(blocker, label, "unblocked", item.phase)
            for name in ("unblocks", "unblocked"):
                target = scoring.text_of(item.fields.get(name))
                if target and not scoring.is_empty(target):
                    registry.link(label, target, "unblocks", item.phase)
            registry.resolve(item.phase, item.agent, label)
        named = scoring.text_of(item.fields.get("feature")) or feature
        if named and item.kind == "summary":
            registry.feature(named, item.phase, item.agent, item.band, item.title, item.score)
    for skip in skipped:
        if skip.blocked and skip.agent:
            label = entry_label(skip.date, skip.phase, skip.agent)
            registry.wait(label, skip.blocker, skip.phase, today)
    return refs, decisions


def allocate(
    doc: ActiveContext,
    changing: Sequence[Item],
    per_phase: int,
    total: int,
    updated: dict[tuple[str, str], str],
) -> tuple[dict[str, str], list[str]]:
    """Place the changing subtask entries in their phases, priority-greedy (seed 000 §6)."""
    modes: dict[str, str] = {}
    warnings: list[str] = []
    by_phase: dict[str, list[Item]] = {}
    for item in changing:
        by_phase.setdefault(item.phase, []).append(item)
    for label in sorted(by_phase, key=natural_key):
        group = by_phase[label]
        target = doc.phases.get(label) or _new_phase(doc, label, per_phase)
        keys = {item.key for item in group}
        target.rows = [row for row in target.rows if row.key not in keys]
        chosen = budget.allocate(
            [budget.Candidate(i.key, i.band, i.score) for i in group],
            target.allocated * 2 - target.used,
            total * 2 - doc.used,
        )
        for item, mode in zip(group, chosen, strict=True):
            row = make_row(item, mode)
            row.previous = updated.get((item.kind, item.key), "")
            target.rows.append(row)
            modes[item.key] = mode
        flag = budget.overflow(label, sum(1 for r in target.rows if r.band == "CRITICAL"))
        if flag:
            warnings.append(flag)
    return modes, warnings


def archive_progress(
    log: progress_log.ProgressLog,
    plan: _Plan,
    refs: dict[tuple[str, str], list[str]],
    decisions: dict[str, str],
) -> None:
    """02: every promoted entry under its `### date — Phase N: agent` heading; review lines."""
    for item in [*plan.changing, *plan.others]:
        if item.kind == "plan":
            continue
        chunk = log.section(item.date, item.phase, item.agent)
        lines = _log_lines(item, refs.get((item.kind, item.key), []), decisions.get(item.key, ""))
        earlier = chunk.latest(item.kind, item.identity) if item.updatable else None
        attrs = {"entry": item.identity}
        if earlier is not None:
            attrs["updates"] = earlier.hash  # the earlier version stays above it
        chunk.put(LogItem(item.kind, item.hash, lines, attrs))


def record_plans(doc: ActiveContext, others: Sequence[Item], feature: str | None) -> None:
    """01 `## Plans` (C4): one row per (date, feature); an existing row is left alone."""
    for item in others:
        if item.kind != "plan":
            continue
        name = scoring.text_of(item.fields.get("feature")) or feature or item.title
        status = scoring.status_of(item.fields) or "complete"
        row = PlanRow(item.date, name, item.source.label, status)
        if all(existing.key != row.key for existing in doc.plans):
            doc.plans.append(row)
            if PLANS not in doc.order:
                doc.order.append(PLANS)


def new_files(
    current: state.State,
    registry: xref.Registry,
    gate: str,
    receiver: str | None,
    total: int,
    now: datetime,
    today: str,
    replaced: Sequence[Row] = (),
) -> tuple[dict[Path, str], trim.Trim | None]:
    """Every file of the new state: the previous versions of updated entries archived, then
    the C7 trim, when the section passed the budget."""
    bank = current.bank
    writes: dict[Path, str] = {}
    month = now.strftime("%Y-%m")
    store = archive.parse(month, archive.read(bank / archive.relpath(month)))
    kept = [store.add(row, "updated", today) for row in replaced]
    report = trim.c7(current.active, total, store, today)
    if report.trimmed or any(kept):
        writes[bank / archive.relpath(month)] = store.render()
    writes[bank / zz.relpath(gate)] = zz.render(current.active, current.index, gate, receiver)
    writes[bank / state.INDEX] = xref.render_index(current.index)
    if current.texts[state.NEXT_ID] is not None or registry.added:
        writes[bank / state.NEXT_ID] = current.ids.as_json()
    writes[bank / progress_log.FILE] = progress_log.render(current.log)
    writes[bank / active.FILE] = active.render(current.active, total)
    return {path: scrubbed(text) for path, text in writes.items()}, (
        report if report.trimmed else None
    )


def would_change(writes: dict[Path, str], deletes: Sequence[Path]) -> bool:
    """Whether committing would change anything (the time stamp is only set then)."""
    if any(path.is_file() for path in deletes):
        return True
    from ctxward.core.fsutil import read_regular

    for path, text in writes.items():
        try:
            if read_regular(path) != text.encode("utf-8"):
                return True
        except OSError:  # missing, or not a file (the commit says what is wrong with it)
            return True
    return False


def scrubbed(text: str) -> str:
    from ctxward.core.scrub import redact

    return redact(text)


def int_or_none(value: str | None) -> int | None:
    return int(value) if value and value.isdigit() else None


def phase_budget(
    doc: ActiveContext, gate: str, total: int, per_phase: int, estimated: int
) -> dict[str, Any]:
    """The gate phase's budget after the promotion (for the CLI and ZZ)."""
    from ctxward.bank.markup import phase_matches

    phases = [p for p in doc.ordered_phases() if phase_matches(gate, p.label)]
    allocated = sum(p.allocated for p in phases)
    used = sum(p.used for p in phases)
    unused = max(allocated * 2 - used, 0)
    return {
        "phase": gate,
        "allocated": allocated,
        "used": budget.lines(used),
        "unused": budget.lines(unused),
        "carryover": budget.carryover(unused),
        "section_used": budget.lines(doc.used),
        "total": total,
        "per_phase": per_phase,
        "phases": estimated,
    }
