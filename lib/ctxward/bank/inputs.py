"""What a promotion reads: entry files, or the entries staged in the bank's `.tmp/` by C8/C11.

Every input is scrubbed, parsed and passed through Layer 1 by the L1 compressor
(`parse.parse_entries`), then preflighted and scored (`compress.assess`) for the
next agent. A staged L1 entry is re-read from the full original it names (`.ctxward/offload/`),
so L2 scores the whole entry, not its compressed lines. The entry kind comes from its `type`
field, else from the file name (`IMPL-…`, `REVIEW-…`, `PLAN-…`, `DISC-…`), else subtask_summary.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ctxward.bank.markup import phase_matches
from ctxward.compress import engine as compress
from ctxward.compress import entries as compress_entries
from ctxward.compress import identity as identities
from ctxward.compress import lines as compress_lines
from ctxward.compress import parse, scoring, staging
from ctxward.compress.scoring import Tables
from ctxward.core.fsutil import read_named, read_regular_text
from ctxward.core.project import Project
from ctxward.core.scrub import scrub
from ctxward.core.text import one_line
from ctxward.core.values import Value
from ctxward.errors import BadInput

KINDS = {
    "subtask_summary": "summary",
    "subtask": "summary",
    "summary": "summary",
    "impl": "impl",
    "implementation": "impl",
    "review": "review",
    "plan": "plan",
    "disc": "disc",
    "discussion": "disc",
    "adr": "adr",
}
TYPE_OF_KIND = {"summary": "subtask_summary", "impl": "IMPL", "review": "REVIEW", "plan": "PLAN"}
_NAME_KINDS = (("IMPL", "impl"), ("REVIEW", "review"), ("PLAN", "plan"), ("DISC", "disc"))
SUFFIXES = (".md", ".yaml", ".yml", ".json")
TMP_OWN = ("compress.lock", "compress.lock.owner")
_BLOCKED = ("blocked", "in_progress", "escalated")


class Source(Value):
    label: str  # project-relative path
    path: Path
    in_tmp: bool  # staged in the bank's .tmp/: deleted once everything in it is promoted


@dataclass(slots=True)
class Item:
    """One entry that passed the preflight, scored for the next agent."""

    kind: str  # summary | impl | review | plan | disc
    date: str
    phase: str
    agent: str  # as written
    hash: str
    result: compress_entries.Result
    view: dict[str, Any]
    source: Source
    title: str
    summary: str
    files: list[str]
    fields: Mapping[str, Any]
    text: str  # the scrubbed text the entry came from
    original: str = ""  # where that text is kept in full (.ctxward/offload/<sha256>.md)
    identity: str = ""  # `id:…`, `t:…` or `h:<hash>` (bank.identity)
    agent_cmp: str = ""  # how the agent compares (bank.identity.agent_key)

    @property
    def agent_key(self) -> str:
        return self.agent_cmp or self.agent.strip()

    @property
    def key(self) -> str:
        """`date|phase|agent|identity`: two subtasks of one agent are two entries."""
        return identities.key(self.date, self.phase, self.agent_key, self.identity or self.hash)

    @property
    def updatable(self) -> bool:
        """Whether the entry names itself (an id or a title): a new text of it is an update."""
        return identities.is_explicit(self.identity)

    @property
    def band(self) -> str:
        return self.result.score.band

    @property
    def score(self) -> float:
        return self.result.score.score


class Skip(Value):
    what: str
    reason: str
    date: str = ""
    phase: str = ""
    agent: str = ""
    blocker: str = ""  # the blocker, when the entry is blocked

    @property
    def blocked(self) -> bool:
        return bool(self.blocker)


NO_ENTRY = "no subtask_summary or typed entry found"


@dataclass(slots=True)
class Collected:
    items: list[Item] = field(default_factory=list)
    skipped: list[Skip] = field(default_factory=list)
    unrecognized: list[str] = field(default_factory=list)
    other_phases: int = 0  # staged entries of other gates, left for them
    sources: list[Source] = field(default_factory=list)
    kept: set[str] = field(default_factory=set)  # sources that must stay (something was refused)
    discarded: list[str] = field(default_factory=list)  # DISC entries the user DISCARDed


def discarded(fields: Mapping[str, Any]) -> bool:
    """Whether a discussion's outcome is DISCARD (its verdict, decision or status)."""
    for name in ("verdict", "decision", "status"):
        value = scoring.text_of(fields.get(name)).upper().replace(" ", "_")
        if value == "DISCARD" or value == "DISCARDED":
            return True
    return False


def kind_of(fields: Mapping[str, Any], filename: str) -> str:
    raw = scoring.text_of(fields.get("type")).lower().replace("-", "_")
    if raw:
        return KINDS.get(raw, "summary")
    upper = filename.upper()
    for prefix, kind in _NAME_KINDS:
        if upper.startswith(prefix):
            return kind
    return "summary"


def _read(path: Path, label: str) -> str:
    if not path.is_file():
        raise BadInput(f"{label}: no such file")
    try:
        return read_named(path).decode("utf-8")  # the user named it: bounded, never a FIFO
    except UnicodeDecodeError as exc:
        raise BadInput(f"{label}: not UTF-8 (byte {exc.start})") from None
    except OSError as exc:
        raise BadInput(f"{label}: cannot be read ({exc.strerror})") from None


def staged_sources(project: Project) -> tuple[list[Source], list[str]]:
    """The bank's .tmp/ files that may hold entries, and the ones that are not ours to read."""
    folder = project.bank_dir / ".tmp"
    sources: list[Source] = []
    unrecognized: list[str] = []
    if not folder.is_dir():
        return sources, unrecognized
    for path in sorted(folder.iterdir()):
        name = path.name
        if (
            name in TMP_OWN
            or name.startswith(".")
            or (name.startswith("ZZ-") and name.endswith(".md"))
        ):
            continue
        if not path.is_file() or path.suffix not in SUFFIXES:
            unrecognized.append(project.relative(path))
            continue
        sources.append(Source(project.relative(path), path, True))
    return sources, unrecognized


def explicit_sources(project: Project, paths: Sequence[str]) -> list[Source]:
    tmp = (project.bank_dir / ".tmp").resolve()
    sources = []
    for raw in paths:
        path = Path(raw)
        if not path.is_absolute():
            path = Path.cwd() / path
        if not path.is_file():
            raise BadInput(f"{raw}: no such file")
        sources.append(Source(project.relative(path), path, path.resolve().parent == tmp))
    return sources


def collect(
    project: Project,
    sources: Sequence[Source],
    tables: Tables,
    *,
    gate: str,
    receiver: str | None,
    date: str,
    explicit: bool,
    progress: Callable[[str], None] | None = None,
    store: bool = True,
) -> Collected:
    """Parse, preflight and score every entry of `sources` for phase gate `gate`.

    With `store`, each source's scrubbed text is kept in `.ctxward/offload/` first.
    """
    out = Collected(sources=list(sources))
    for source in sources:
        _collect_one(project, source, tables, gate, receiver, date, explicit, store, out)
        if progress is not None:
            progress(source.label)
    return out


def _entries(
    project: Project, source: Source, text: str, tables: Tables
) -> tuple[list[compress_entries.Entry], staging.Staged | None, str]:
    """(entries, the L1 header if staged, the scrubbed text they came from)."""
    staged = staging.read_staged(source.path) if source.in_tmp or "ctxward:l1" in text else None
    scrubbed = scrub(text)[0]
    if staged is not None and staged.state == "compressed":
        original = staged.attrs.get("original", "")
        match = _from_original(project, staged, original, tables) if original else None
        if match is not None:
            return [match[0]], staged, match[1]
        return [_from_header(staged, scrubbed, tables, source.label)], staged, scrubbed
    entries = [e for e in parse.parse_entries(scrubbed, tables, source.label) if e.structured]
    return entries, staged, scrubbed


def _from_original(
    project: Project, staged: staging.Staged, original: str, tables: Tables
) -> tuple[compress_entries.Entry, str] | None:
    path = project.root / original
    try:
        text = scrub(read_regular_text(path))[0]
    except (OSError, UnicodeDecodeError):
        return None
    staged_date = staged.key.split("|")[0]
    for entry in parse.parse_entries(text, tables, original):
        fields = entry.fields
        agent = scoring.text_of(fields.get("agent")) or staged.attrs.get("from") or "unknown"
        digest = staging.entry_hash(
            scoring.text_of(fields.get("date")) or staged_date,
            scoring.text_of(fields.get("phase")) or "none",
            agent,
            scoring.text_of(fields.get("summary")),
        )
        if digest == staged.hash:
            return entry, text
    return None


def _from_header(
    staged: staging.Staged, text: str, tables: Tables, label: str
) -> compress_entries.Entry:
    """A staged entry whose original is gone: its compressed lines stand for the summary."""
    body = [
        line
        for line in text.splitlines()
        if line.strip() and not line.startswith("#") and "ctxward:l1" not in line
    ]
    fields = {
        "agent": staged.agent or "unknown",
        "phase": staged.phase,
        "date": staged.key.split("|")[0],
        "summary": one_line(" ".join(body)),
        "status": "complete",
    }
    return compress_entries.Entry(compress_lines.structural(fields, tables), text, True, label)


def _collect_one(
    project: Project,
    source: Source,
    tables: Tables,
    gate: str,
    receiver: str | None,
    default_date: str,
    explicit: bool,
    store: bool,
    out: Collected,
) -> None:
    text = _read(source.path, source.label)
    entries, staged, scrubbed = _entries(project, source, text, tables)
    original = staged.attrs.get("original", "") if staged is not None else ""
    if entries and store and not original:  # what is compressed is on disk first (scrubbed)
        from ctxward.core.offload import offload

        original = project.relative(offload(project, scrubbed, "md").path)
    if not entries:
        if source.in_tmp and not explicit:
            out.unrecognized.append(source.label)
        else:
            out.skipped.append(Skip(source.label, NO_ENTRY))
        out.kept.add(source.label)
        return
    staged_date = staged.key.split("|")[0] if staged is not None else ""
    sender = (staged.attrs.get("from") or None) if staged is not None else None
    staged_to = (staged.attrs.get("to") or None) if staged is not None else None
    for entry in entries:
        fields = dict(entry.fields)
        kind = kind_of(fields, source.path.name)
        if kind in TYPE_OF_KIND and not fields.get("type"):
            fields["type"] = TYPE_OF_KIND[kind]
        entry = compress_entries.Entry(fields, entry.source, entry.structured, entry.label)
        own_phase = scoring.text_of(fields.get("phase"))
        phase = own_phase if own_phase and own_phase.lower() != "none" else gate
        date = scoring.text_of(fields.get("date")) or staged_date or default_date
        if not phase_matches(gate, phase):
            if explicit:
                out.skipped.append(Skip(source.label, f"phase {phase}, not {gate}", date, phase))
            else:
                out.other_phases += 1
            out.kept.add(source.label)
            continue
        # scored, not rendered: L2 renders each entry in the mode the budget picks
        result = compress.assess(
            entry, tables, compress_entries.Route(sender, receiver or staged_to)
        )
        agent = result.agent
        if kind == "disc" and discarded(fields):
            # seed 000 §10: "DISC with DISCARD → delete artifact, do not archive": never in the
            # bank; its staged file goes (unless something else in it must stay)
            out.discarded.append(f"{source.label} [{agent}]")
            continue
        if not result.compressed:
            status = scoring.status_of(fields)
            blocker = ""
            if status in _BLOCKED or "blocker" in result.preflight.reason:
                blocker = (
                    scoring.text_of(fields.get("blocked_by"))
                    or scoring.text_of(fields.get("blockers"))
                    or f"status {status or 'blocked'}"
                )
            what = f"{source.label} [{agent}]"
            out.skipped.append(Skip(what, result.preflight.reason, date, phase, agent, blocker))
            out.kept.add(source.label)
            continue
        if kind == "adr":  # the preflight refuses ADRs; kept here as a second fence
            out.kept.add(source.label)
            continue
        summary = scoring.text_of(fields.get("summary"))
        view = compress.view(entry, result.score, result.sender, result.receiver, tables)
        named = identities.explicit(fields)
        title = (
            named[1] if named and named[0] == "title" else scoring.text_of(fields.get("title"))
        ) or compress_lines.first_sentence(summary, 60)
        digest = staging.entry_hash(date, phase, agent.strip().lower(), summary)
        out.items.append(
            Item(
                kind=kind,
                date=date,
                phase=phase,
                agent=agent,
                hash=digest,
                result=result,
                view=view,
                source=source,
                title=title or agent,
                summary=summary,
                files=scoring.file_list(fields),
                fields=fields,
                text=scrubbed if len(entries) == 1 else entry.source,
                original=original,
                identity=identities.of(fields, digest),
                agent_cmp=identities.agent_key(agent, identities.known_agents(tables)),
            )
        )
