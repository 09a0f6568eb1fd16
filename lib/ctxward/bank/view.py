"""What the bank says: `bank status` (budgets, bands, last promotion) and `bank context`
(what the next phase's agent is given: seed 000 §15's Wisdom Bridge injection)."""

from __future__ import annotations

from typing import Any

from ctxward.bank import active, budget, state, zz
from ctxward.bank.markup import phase_matches
from ctxward.core.fsutil import read_regular, read_regular_text
from ctxward.core.project import Project
from ctxward.errors import BadInput, CtxwardError


def status(project: Project) -> dict[str, Any]:
    """Budget used and left per phase, carryover, entries per band, the last promotion."""
    from ctxward.core.config import load as load_config

    settings = load_config(project).bank
    bank = project.bank_dir
    data: dict[str, Any] = {"bank": project.relative(bank), "exists": bank.is_dir()}
    if not bank.is_dir():
        return data
    with state.session(project) as opened:
        current = state.load(bank)
        data["recovered"] = opened.recovered
    doc = current.active
    total = settings.total_budget
    estimated = int(doc.params.get("phases") or settings.phases)
    per_phase = budget.per_phase(total, estimated)
    phases = []
    bands_total = dict.fromkeys(budget.BANDS, 0)
    for phase in doc.ordered_phases():
        bands = dict.fromkeys(budget.BANDS, 0)
        updated = [_updated(row) for row in phase.rows if row.previous]
        for row in phase.rows:
            bands[row.band] = bands.get(row.band, 0) + 1
            bands_total[row.band] = bands_total.get(row.band, 0) + 1
        phases.append(
            {
                "phase": phase.label,
                "allocated": phase.allocated,
                "carried_in": phase.carried_in,
                "used": budget.lines(phase.used),
                "left": budget.lines(phase.unused),
                "carryover": phase.carry_out,
                "entries": len(phase.rows),
                "updated": updated,
                "bands": bands,
                "trimmed": sum(1 for row in phase.rows if row.mode == "trimmed"),
            }
        )
    ordered = doc.ordered_phases()
    tmp = bank / ".tmp"
    data.update(
        {
            "total": total,
            "estimated_phases": estimated,
            "per_phase": per_phase,
            "used": budget.lines(doc.used),
            "left": budget.lines(max(total * 2 - doc.used, 0)),
            "over": doc.used > total * 2,
            "cumulative": {
                "used": budget.lines(doc.used),
                "budget": per_phase * len(ordered),
                "allocated": sum(p.allocated for p in ordered),
            },
            "carryover_next": ordered[-1].carry_out if ordered else 0,
            "phases": phases,
            "bands": bands_total,
            "entries": sum(bands_total.values()),
            "updated": sum(
                1 for phase in doc.ordered_phases() for row in phase.rows if row.previous
            ),
            "plans": len(doc.plans),
            "last_promotion": {
                "at": doc.params.get("last"),
                "phase": doc.params.get("last-phase"),
                "entries": int(doc.params.get("last-count") or 0),
            }
            if doc.params.get("last")
            else None,
            "feature": doc.params.get("feature"),
            "xref": {
                "entities": len(current.index.entities),
                "decisions": len(current.index.decisions),
                "links": len(current.index.links),
                "waiting": len(current.index.waiting),
                "next": dict(current.ids.next),
            },
            "progress_sections": sum(1 for c in current.log.chunks if c.key is not None),
            "tmp": {
                "zz": sorted(p.name for p in tmp.glob("ZZ-*.md")) if tmp.is_dir() else [],
                "staged": sorted(p.name for p in tmp.glob("L1-*.md")) if tmp.is_dir() else [],
            },
        }
    )
    return data


def _updated(row: active.Row) -> dict[str, str]:
    """An entry that replaced an earlier version of itself (the earlier one is archived)."""
    return {
        "title": row.title or row.agent,
        "agent": row.agent,
        "hash": row.hash,
        "previous": row.previous,
    }


def learnings_path(project: Project, feature: str) -> str:
    """`.ctxward/learnings/<feature>/learnings.md` (`.pantheon/learnings/…` under the preset)."""
    return project.relative(project.bank_dir.parent / "learnings" / feature / "learnings.md")


def context(project: Project, phase: str, feature: str | None = None) -> dict[str, Any]:
    """The next phase's prompt preamble: previous wave learnings + the ZZ artifact of `phase`."""
    from ctxward.bank.promote import check_phase
    from ctxward.core.render import render
    from ctxward.core.scrub import redact

    gate = check_phase(phase)
    bank = project.bank_dir
    if not bank.is_dir():
        raise CtxwardError(
            f"no memory bank at {project.relative(bank)}: run `ctxward bank promote` first"
        )
    with state.session(project):
        path = bank / zz.relpath(gate)
        try:
            artifact = read_regular_text(path)
        except FileNotFoundError:
            raise CtxwardError(
                f"{project.relative(path)}: no ZZ artifact for phase {gate}; "
                f"run `ctxward bank promote --phase {gate}` first"
            ) from None
        except UnicodeDecodeError as exc:
            raise BadInput(f"{project.relative(path)}: not UTF-8 (byte {exc.start})") from None
        except OSError as exc:  # a folder, a FIFO (`read_regular_text` never waits on one)
            raise BadInput(f"{project.relative(path)}: cannot read: {exc.strerror}") from None
        text = state.read_file(bank, active.FILE)
        doc = active.parse(text) if text is not None else None
    name = feature or (doc.params.get("feature") if doc else None)
    learnings = ""
    source = ""
    if name:
        if "/" in name or "\\" in name or name.startswith("."):
            raise BadInput(f"--feature {name!r}: a feature name, not a path")
        source = learnings_path(project, name)
        target = project.root / source
        if target.is_file():
            try:
                learnings = read_regular(target).decode("utf-8").strip()
            except UnicodeDecodeError as exc:
                raise BadInput(f"{source}: not UTF-8 (byte {exc.start})") from None
            except OSError as exc:  # swapped for a FIFO after the check: never waited on
                raise BadInput(f"{source}: cannot read: {exc.strerror}") from None
    text = redact(
        render(
            "bank/next_prompt.md.j2",
            phase=gate,
            next_phase=zz.next_label(gate),
            learnings=learnings,
            zz=artifact.strip(),
        )
    )
    return {
        "phase": gate,
        "feature": name,
        "learnings": source if learnings else None,
        "zz": project.relative(path),
        "text": text,
        "phases": [
            p.label for p in (doc.ordered_phases() if doc else []) if phase_matches(gate, p.label)
        ],
        "entries": {
            p.label: len(p.rows)
            for p in (doc.ordered_phases() if doc else [])
            if phase_matches(gate, p.label)
        },
        "updated": [
            {"phase": p.label, **_updated(row)}
            for p in (doc.ordered_phases() if doc else [])
            if phase_matches(gate, p.label)
            for row in p.rows
            if row.previous
        ],
    }
