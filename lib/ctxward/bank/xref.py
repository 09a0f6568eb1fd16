"""The cross-reference index (seed 000 §7): `_xref/index.md` and monotonic ids in `_next_id.json`.

Ids are a prefix and four digits — D decision, E endpoint, M migration (new table/column),
C component — taken from `_xref/_next_id.json` (`{"version": 1, "next": {"E": 3, ...}}`) and
incremented; a counter never goes back, so an id is never handed out twice. The same entity (type
and name, compared without case or extra spaces) always keeps its first id; an id already in the
index for a different entity is an error (`_next_id.json` behind the index), never a silent reuse.

Rows come from CRITICAL entries that name an endpoint (`POST /auth/login`, `/api/…`, `/v1/…`),
a table or column (`CREATE TABLE`, `ALTER TABLE`, "new table", "new column", "migration") or a
component (`LoginForm`, `*.tsx`), from REVIEW entries with a decision note (a `## Decision`
heading, a `decision` field, an ADR reference), and from blockers: an entry that completes after
being blocked (or names `blocked_by` / `unblocks`) links the blocker to what it unblocked.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ctxward.bank.markup import Section, cell, split_row, split_sections, trim_blank
from ctxward.compress.lines import MIGRATION_DIRS
from ctxward.core.text import cut, one_line
from ctxward.core.values import Value
from ctxward.errors import CtxwardError

PREFIXES = {"D": "decision", "E": "endpoint", "M": "migration", "C": "component"}
TYPE_PREFIX = {"endpoint": "E", "migration": "M", "component": "C", "ADR": "D", "decision": "D"}
INDEX_TITLE = "Cross-Reference Index"
SECTIONS = ("By Feature", "By Entity", "Decision Links", "Blocker Links", "Waiting on Blockers")
HEADERS = {
    "By Feature": ("Feature", "Phase(s)", "Agent(s)", "Priority", "Summary"),
    "By Entity": ("Entity ID", "Type", "Name", "Location", "Phase", "Agent"),
    "Decision Links": ("Ref ID", "Type", "Summary", "Links To", "Phase"),
    "Blocker Links": ("From", "To", "Relation", "Phase"),
    "Waiting on Blockers": ("Entry", "Blocker", "Phase", "Since"),
}
_ID = re.compile(r"^([DEMC])(\d{4,})$")
_BANDS = ("CRITICAL", "HIGH", "MEDIUM", "LOW")


class XrefError(CtxwardError):
    """The index and `_next_id.json` disagree, or a file of `_xref/` cannot be read."""


def norm(text: str) -> str:
    """An entity's identity: case and spacing do not matter."""
    return one_line(text).casefold()


def phase_cell(phase: str) -> str:
    return f"P{phase}" if phase and not phase.upper().startswith("P") else phase


def phase_of(value: str) -> str:
    return value[1:] if value[:1] == "P" and len(value) > 1 else value


# -- the rows -------------------------------------------------------------------------------------


@dataclass(slots=True)
class FeatureRow:
    feature: str
    phases: list[str]
    agents: list[str]
    priority: str
    summary: str
    score: float = -1.0  # the score behind `summary` in this run (not stored)

    def cells(self) -> list[str]:
        return [
            cell(self.feature),
            cell(", ".join(self.phases)),
            cell(", ".join(self.agents)),
            cell(self.priority),
            cell(self.summary),
        ]


class Entity(Value):
    id: str
    type: str
    name: str
    location: str
    phase: str
    agent: str


class Decision(Value):
    id: str
    type: str
    summary: str
    links_to: str
    phase: str


class Link(Value):
    source: str
    target: str
    relation: str
    phase: str


class Waiting(Value):
    entry: str
    blocker: str
    phase: str
    since: str


def row_cells(row: Entity | Decision | Link | Waiting) -> list[str]:
    """A row's table cells: its fields in order, the phase spelled `P<n>`."""
    columns = row.as_dict().items()
    return [cell(phase_cell(value) if name == "phase" else value) for name, value in columns]


@dataclass(slots=True)
class Index:
    features: dict[str, FeatureRow] = field(default_factory=dict)
    entities: list[Entity] = field(default_factory=list)
    decisions: list[Decision] = field(default_factory=list)
    links: list[Link] = field(default_factory=list)
    waiting: list[Waiting] = field(default_factory=list)
    extra: list[Section] = field(default_factory=list)  # sections someone else wrote: kept

    def ids(self) -> dict[str, str]:
        """Every id in the index → what it names ("endpoint POST /x")."""
        named = {e.id: f"{e.type} {e.name}" for e in self.entities}
        named.update({d.id: f"{d.type} {d.summary}" for d in self.decisions})
        return named


def _rows(section: Section, header: Sequence[str]) -> list[list[str]]:
    rows = []
    wanted = [norm(name) for name in header]
    for line in section.lines:
        cells = split_row(line)
        if cells is None or [norm(c) for c in cells] == wanted:
            continue
        rows.append((cells + [""] * len(header))[: len(header)])
    return rows


def _names(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


def parse_index(text: str) -> Index:
    """Read `_xref/index.md` back (unknown sections are kept as they are)."""
    index = Index()
    for section in split_sections(text)[1:]:
        if section.heading not in HEADERS:
            index.extra.append(section)
            continue
        for row in _rows(section, HEADERS[section.heading]):
            if section.heading == "By Feature" and row[0]:
                index.features[norm(row[0])] = FeatureRow(
                    row[0], [phase_of(p) for p in _names(row[1])], _names(row[2]), row[3], row[4]
                )
            elif section.heading == "By Entity" and row[0]:
                index.entities.append(
                    Entity(row[0], row[1], row[2], row[3], phase_of(row[4]), row[5])
                )
            elif section.heading == "Decision Links" and row[0]:
                index.decisions.append(Decision(row[0], row[1], row[2], row[3], phase_of(row[4])))
            elif section.heading == "Blocker Links":
                index.links.append(Link(row[0], row[1], row[2], phase_of(row[3])))
            elif section.heading == "Waiting on Blockers":
                index.waiting.append(Waiting(row[0], row[1], phase_of(row[2]), row[3]))
    return index


def render_index(index: Index) -> str:
    """`_xref/index.md` (template bank/xref_index.md.j2)."""
    from ctxward.core.render import render

    tables = {
        "By Feature": [row.cells() for row in index.features.values()],
        "By Entity": [row_cells(row) for row in index.entities],
        "Decision Links": [row_cells(row) for row in index.decisions],
        "Blocker Links": [row_cells(row) for row in index.links],
        "Waiting on Blockers": [row_cells(row) for row in index.waiting],
    }
    sections = [
        {"heading": name, "header": list(HEADERS[name]), "rows": tables[name]}
        for name in SECTIONS
        if tables[name] or name in SECTIONS[:3]
    ]
    extra = ["\n".join(trim_blank(section.lines)) for section in index.extra]
    return render(
        "bank/xref_index.md.j2",
        title=INDEX_TITLE,
        sections=sections,
        extra=[
            {"heading": s.heading, "body": body} for s, body in zip(index.extra, extra, strict=True)
        ],
    )


# -- ids ------------------------------------------------------------------------------------------


@dataclass(slots=True)
class Ids:
    next: dict[str, int]

    def as_json(self) -> str:
        body = {"version": 1, "next": {prefix: self.next[prefix] for prefix in sorted(self.next)}}
        return json.dumps(body, indent=2, sort_keys=True) + "\n"


def _highest(index: Index) -> dict[str, int]:
    top = dict.fromkeys(PREFIXES, 0)
    for ref in index.ids():
        match = _ID.match(ref)
        if match:
            top[match.group(1)] = max(top[match.group(1)], int(match.group(2)))
    return top


def parse_ids(text: str | None, index: Index, where: str = "_xref/_next_id.json") -> Ids:
    """The counters; without the file they start after the highest id in the index."""
    if text is None:
        return Ids({prefix: top + 1 for prefix, top in _highest(index).items()})
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        raise XrefError(f"{where}: not valid JSON") from None
    counters = data.get("next") if isinstance(data, dict) else None
    if not isinstance(counters, dict):
        raise XrefError(f'{where}: expected {{"version": 1, "next": {{"E": 1, ...}}}}')
    out = {}
    for prefix in PREFIXES:
        value = counters.get(prefix, 1)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise XrefError(f"{where}: next.{prefix} must be a whole number ≥ 1, got {value!r}")
        out[prefix] = value
    return Ids(out)


# -- the registry: what a promotion adds ----------------------------------------------------------


class Registry:
    """Adds rows to an Index, handing out ids from Ids; counts what it added."""

    def __init__(self, index: Index, ids: Ids, where: str = "_xref/_next_id.json") -> None:
        self.index = index
        self.ids = ids
        self.where = where
        self.added = 0
        self._entities = {(e.type, norm(e.name)): e for e in index.entities}
        self._decisions = {(d.type, norm(d.links_to or d.summary)): d for d in index.decisions}
        self._links = {(norm(k.source), norm(k.target), k.relation) for k in index.links}
        self._named = index.ids()
        self._feature_agents: dict[str, set[str]] = {}

    def _new_id(self, prefix: str, what: str) -> str:
        number = self.ids.next[prefix]
        ref = f"{prefix}{number:04d}"
        if ref in self._named:
            raise XrefError(
                f"{self.where}: the next {prefix} id is {ref}, which _xref/index.md already uses "
                f"for {self._named[ref]}; an id is never reused for {what} (restore "
                f"{self.where} or set next.{prefix} above the highest id)"
            )
        self.ids.next[prefix] = number + 1
        self._named[ref] = what
        return ref

    def entity(self, kind: str, name: str, location: str, phase: str, agent: str) -> str:
        """The id of (kind, name): the existing one, else a new row."""
        key = (kind, norm(name))
        found = self._entities.get(key)
        if found is not None:
            return found.id
        row = Entity(
            self._new_id(TYPE_PREFIX[kind], f"{kind} {name}"), kind, name, location, phase, agent
        )
        self.index.entities.append(row)
        self._entities[key] = row
        self.added += 1
        return row.id

    def decision(self, kind: str, summary: str, links_to: str, phase: str) -> str:
        key = (kind, norm(links_to or summary))
        found = self._decisions.get(key)
        if found is not None:
            return found.id
        row = Decision(self._new_id("D", f"{kind} {summary}"), kind, summary, links_to, phase)
        self.index.decisions.append(row)
        self._decisions[key] = row
        self.added += 1
        return row.id

    def link(self, source: str, target: str, relation: str, phase: str) -> bool:
        key = (norm(source), norm(target), relation)
        if key in self._links or not source.strip() or not target.strip():
            return False
        self.index.links.append(Link(source, target, relation, phase))
        self._links.add(key)
        self.added += 1
        return True

    def wait(self, entry: str, blocker: str, phase: str, since: str) -> None:
        """Record a blocked entry (not promoted) until it completes (once it has, never again)."""
        if any(norm(w.entry) == norm(entry) for w in self.index.waiting):
            return
        agent = norm(entry.rsplit(": ", 1)[-1])
        for link in self.index.links:
            done = link.relation == "unblocked" and link.phase == phase
            if done and norm(link.target).endswith(f": {agent}"):
                return
        self.index.waiting.append(Waiting(entry, blocker, phase, since))

    def resolve(self, phase: str, agent: str, target: str) -> int:
        """Link every waiting entry of (phase, agent) to `target`, which completed; drop them."""
        done = 0
        kept = []
        for row in self.index.waiting:
            if row.phase == phase and norm(row.entry).endswith(f": {norm(agent)}"):
                self.link(row.blocker or row.entry, target, "unblocked", phase)
                done += 1
            else:
                kept.append(row)
        self.index.waiting = kept
        return done

    def feature(
        self, name: str, phase: str, agent: str, band: str, summary: str, score: float
    ) -> None:
        key = norm(name)
        row = self.index.features.get(key)
        if row is None:
            row = FeatureRow(name, [], [], band, summary, score)
            self.index.features[key] = row
        if phase not in row.phases:
            row.phases.append(phase)
        agents = self._feature_agents.setdefault(key, {norm(a) for a in row.agents})
        if agent and norm(agent) not in agents:
            agents.add(norm(agent))
            row.agents.append(agent)
        if _rank(band) < _rank(row.priority) or (band == row.priority and score > row.score):
            row.priority, row.summary, row.score = band, summary, score


def _rank(band: str) -> int:
    return _BANDS.index(band) if band in _BANDS else len(_BANDS)


# -- detection ------------------------------------------------------------------------------------

_METHOD_PATH = re.compile(r"\b(GET|POST|PUT|PATCH|DELETE)\s+(/[\w\-./{}:<>]*[\w}>]|/)")
_BARE_PATH = re.compile(r"(?<![\w./])/(?:api|v\d+)(?:/[\w\-.{}:<>]*[\w}>])+")
_ENDPOINT_FILE = re.compile(r"(?i)(?:^|/)(?:routers?|routes?|api|controllers?|views|endpoints?)/")
_MIGRATION_TRIGGER = re.compile(
    r"(?i)\b(?:new tables?|new columns?|migrations?|alter table|create table)\b"
)
_CREATE = re.compile(r"(?i)\bcreate table (?:if not exists )?[`\"']?(\w+)")
_ALTER = re.compile(
    r"(?i)\balter table [`\"']?(\w+)[`\"']? add (?:column )?(?:if not exists )?[`\"']?(\w+)"
)
_QUOTED = re.compile(
    r"(?i)\bnew (table|column)s? (?:named |called )?[`\"']?(\w+)[`\"']?"
    r"|[`\"'](\w+)[`\"'] (table|column)\b"
)
_SNAKE = re.compile(r"\b([a-z][a-z0-9]*_[a-z0-9_]+) (table|column)\b")
# Its stem, without the extension (compress keeps the name whole).
_MIGRATION_FILE = re.compile(r"(?:^|/)" + MIGRATION_DIRS + r"/([\w.-]+?)(?:\.\w+)?$")
_NOT_NAMES = frozenset({"new", "the", "a", "an", "this", "that", "for", "with", "if", "to"})
_COMPONENT = re.compile(
    r"\b([A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+)*(?:Form|Page|View|Modal|Button|List|Card|Component"
    r"|Dialog|Panel|Table|Provider|Screen|Layout|Widget|Menu|Bar))\b"
)
_NAMED_COMPONENT = re.compile(
    r"\b([A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+)+) component\b"
    r"|\bcomponent [`\"']?([A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+)*)"
)
_COMPONENT_FILE = re.compile(r"(?:^|/)([A-Z][A-Za-z0-9]*)\.(?:tsx|jsx|vue|svelte)$")
_DECISION_HEADING = re.compile(
    r"(?im)^[ \t]*#{1,6}[ \t]*decisions?\b[^\n]*\n+((?:[ \t]*[^\s#][^\n]*\n?)+)"
)
_ADR = re.compile(r"(?i)(?:_notes/)?\bADR[-_][\w.-]*\w|(?<![\w/])_notes/[\w./-]*adr[\w./-]*")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


class Found(Value):
    kind: str  # endpoint | migration | component
    name: str
    location: str


def _unique(found: Iterable[Found]) -> list[Found]:
    seen: dict[tuple[str, str], Found] = {}
    for item in found:
        seen.setdefault((item.kind, norm(item.name)), item)
    return list(seen.values())


def _first(files: Sequence[str], pattern: re.Pattern[str] | None = None) -> str:
    for name in files:
        if pattern is None or pattern.search(name):
            return name
    return files[0] if files and pattern is None else ""


def entities(text: str, files: Sequence[str]) -> list[Found]:
    """Endpoints, tables/columns and components a (CRITICAL) entry mentions, each once."""
    found: list[Found] = []
    endpoint_file = _first(files, _ENDPOINT_FILE) or _first(files)
    named_paths = set()
    for match in _METHOD_PATH.finditer(text):
        path = match.group(2).rstrip("/.") or "/"
        named_paths.add(path)
        found.append(Found("endpoint", f"{match.group(1)} {path}", endpoint_file))
    for match in _BARE_PATH.finditer(text):
        path = match.group(0).rstrip("/.")
        if path not in named_paths:
            found.append(Found("endpoint", path, endpoint_file))
    if _MIGRATION_TRIGGER.search(text):
        migration_file = _first(files, _MIGRATION_FILE)
        location = migration_file or _first(files)
        names: list[str] = []
        names += [f"{m.group(1)} table" for m in _CREATE.finditer(text)]
        names += [f"{m.group(1)}.{m.group(2)} column" for m in _ALTER.finditer(text)]
        for m in _QUOTED.finditer(text):
            name, what = (m.group(2), m.group(1)) if m.group(2) else (m.group(3), m.group(4))
            if name and name.lower() not in _NOT_NAMES:
                names.append(f"{name} {what.lower()}")
        names += [f"{m.group(1)} {m.group(2)}" for m in _SNAKE.finditer(text)]
        if not names and migration_file:
            stem = _MIGRATION_FILE.search(migration_file)
            names.append(f"migration {stem.group(1) if stem else migration_file}")
        found += [Found("migration", name, location) for name in names]
    components = [m.group(1) for m in _COMPONENT.finditer(text)]
    components += [m.group(1) or m.group(2) for m in _NAMED_COMPONENT.finditer(text)]
    by_file = {hit.group(1): f for f in files if (hit := _COMPONENT_FILE.search(f))}
    components += list(by_file)
    for name in components:
        location = by_file.get(name) or _first(files, _COMPONENT_FILE) or _first(files)
        found.append(Found("component", name, location))
    return _unique(found)


class DecisionNote(Value):
    kind: str  # "ADR" or "decision"
    summary: str
    links_to: str


def decision_note(fields: Mapping[str, Any], source: str, title: str) -> DecisionNote | None:
    """A REVIEW's decision note: `## Decision` text, a `decision` field, or an ADR reference."""
    summary = ""
    heading = _DECISION_HEADING.search(source)
    if heading:
        summary = heading.group(1).strip().splitlines()[0].strip(" -*")
    for name in ("decision", "decisions"):
        value = fields.get(name)
        if not summary and value:
            summary = str(value[0] if isinstance(value, list) and value else value)
    narrative = "\n".join(str(v) for v in fields.values() if isinstance(v, str))
    adr = _ADR.search(source) or _ADR.search(narrative)
    if not summary and adr is None:
        return None
    summary = _SENTENCE.split(one_line(summary))[0] if summary else title
    summary = cut(summary, 120, strip=True)
    return DecisionNote("ADR" if adr else "decision", summary, adr.group(0) if adr else "")
