"""`02-progress-log.md`: the IMPL / subtask archive and REVIEW lines (seed 000 C2, C3, §17).

One section per (date, phase, agent), headed `### YYYY-MM-DD — Phase N: agent`; a heading is
never written twice (seed 000 §17: one that already exists, even hand-written, is not appended
again; it receives the new item). Inside it, one item per entry — `summary`, `impl`, `review`,
`disc` — each a marker comment with its kind, content hash and identity (`entry`, see
`bank.identity`) and its lines; the review item is the `**Review:** …` line. Nothing is ever
replaced (issue 16): the same hash is skipped; another subtask of the same agent is another item;
a new version of the same entry is appended after the old one, marked `updates="<old hash>"`, and
the old one stays. Sections and lines that ctxward did not write are kept byte for byte (a
section is only re-rendered when an item is added to it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ctxward.bank.markup import escaped, parse_marker, trim_blank

FILE = "02-progress-log.md"
TITLE = "Progress Log"
HEADING = re.compile(
    r"^### (?P<date>\d{4}-\d\d-\d\d) — (?:Phase )?(?P<phase>.+?): (?P<agent>.+?)\s*$"
)
_CHUNK = re.compile(r"^#{2,6} ")


@dataclass(slots=True)
class Item:
    kind: str
    hash: str
    lines: list[str]
    attrs: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class Chunk:
    """A heading and its body. `key` is set for a `### date — phase: agent` section."""

    heading: str
    key: str | None = None
    body: list[Item | str] = field(default_factory=list)
    raw: str | None = None  # the text as read (None once changed)

    def items(self, kind: str) -> list[Item]:
        return [part for part in self.body if isinstance(part, Item) and part.kind == kind]

    def item(self, kind: str) -> Item | None:
        found = self.items(kind)
        return found[0] if found else None

    def latest(self, kind: str, entry: str) -> Item | None:
        """The newest item of `kind` for the entry identity `entry` (None: not there)."""
        found = [part for part in self.items(kind) if part.attrs.get("entry") == entry]
        return found[-1] if found else None

    def holds(self, kind: str, digest: str) -> bool:
        return any(part.hash == digest for part in self.items(kind))

    def put(self, item: Item) -> bool:
        """Append `item`; False when an item of its kind with its hash is there already."""
        if self.holds(item.kind, item.hash):
            return False
        while self.body and isinstance(self.body[-1], str) and not self.body[-1].strip():
            self.body.pop()
        self.body.append(item)
        self.raw = None
        return True


@dataclass(slots=True)
class ProgressLog:
    head: list[str] = field(default_factory=lambda: [f"# {TITLE}"])
    chunks: list[Chunk] = field(default_factory=list)
    by_key: dict[str, Chunk] = field(default_factory=dict)

    def section(self, date: str, phase: str, agent: str) -> Chunk:
        """The section of (date, phase, agent), created (at the end) when missing."""
        key = section_key(date, phase, agent)
        chunk = self.by_key.get(key)
        if chunk is None:
            chunk = Chunk(heading=f"### {date} — Phase {phase}: {agent}", key=key)
            self.chunks.append(chunk)
            self.by_key[key] = chunk
        return chunk


def section_key(date: str, phase: str, agent: str) -> str:
    return f"{date}|{phase}|{agent.strip().lower()}"


def parse(text: str) -> ProgressLog:
    """Read `02-progress-log.md` back."""
    log = ProgressLog(head=[])
    chunk: Chunk | None = None
    lines: list[str] = []

    def close() -> None:
        if chunk is None:
            return
        chunk.raw = "\n".join([chunk.heading, *lines]) + "\n"
        _parse_body(chunk, lines)
        log.chunks.append(chunk)
        if chunk.key is not None:
            log.by_key.setdefault(chunk.key, chunk)

    for line in text.splitlines():
        if _CHUNK.match(line):
            close()
            match = HEADING.match(line)
            key = (
                section_key(match.group("date"), match.group("phase"), match.group("agent"))
                if match
                else None
            )
            chunk, lines = Chunk(heading=line, key=key), []
        elif chunk is None:
            log.head.append(line)
        else:
            lines.append(line)
    close()
    log.head = trim_blank(log.head) or [f"# {TITLE}"]
    return log


def _parse_body(chunk: Chunk, lines: list[str]) -> None:
    item: Item | None = None
    for line in lines:
        marker = parse_marker(line)
        if marker is not None and marker[0] == "log":
            attrs = marker[1]
            item = Item(attrs.get("kind", ""), attrs.get("hash", ""), [], attrs)
            chunk.body.append(item)
            continue
        if item is not None and line.strip():
            item.lines.append(line)
            continue
        item = None
        chunk.body.append(line)


def render(log: ProgressLog) -> str:
    """The whole file: unchanged sections as read, changed ones through bank/log_section.md.j2."""
    from ctxward.core.render import render as render_template

    parts = []
    for chunk in log.chunks:
        if chunk.raw is None:
            body: list[dict[str, object]] = []
            for part in chunk.body:
                if isinstance(part, Item):
                    attrs = escaped({"kind": part.kind, "hash": part.hash, **_extra(part)})
                    body.append({"marker": attrs, "lines": part.lines})
                else:
                    body.append({"marker": None, "lines": [part]})
            chunk.raw = render_template("bank/log_section.md.j2", heading=chunk.heading, body=body)
        parts.append(chunk.raw.rstrip("\n"))
    return render_template("bank/progress_log.md.j2", head=log.head, chunks=parts)


def _extra(item: Item) -> dict[str, str]:
    return {k: v for k, v in item.attrs.items() if k not in ("kind", "hash")}
