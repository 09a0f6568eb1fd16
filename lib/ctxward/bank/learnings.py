"""Wisdom Bridge cleanup at sprint close (seed 000 §15): learnings promoted, then removed.

`.ctxward/learnings/<feature>/learnings.md` (`.pantheon/learnings/…` under the preset) holds what
the agents extracted during the sprint. At sprint close each surviving learning — a list item, or
a paragraph — is promoted as one atomic fact to the bank's `03-learnings.md` (the repository's
memory), unless the same fact (case and spacing folded) is there already; then the learnings
file is deleted. The facts are written in the close-sprint transaction; the learnings files are
deleted after it committed (they live outside the bank), so an interruption between the two only
leaves a file whose facts the next close finds present already.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

FILE = "03-learnings.md"
_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(?P<text>.+)$")
_SPACE = re.compile(r"\s+")
_FACT_LINE = re.compile(r"^- (?P<text>.+)$")


@dataclass(slots=True)
class Feature:
    name: str
    path: Path  # its learnings.md
    facts: list[str] = field(default_factory=list)  # new ones, not in the bank yet
    known: int = 0  # facts the bank held already


def folder(bank: Path) -> Path:
    return bank.parent / "learnings"


def facts_of(text: str) -> list[str]:
    """The atomic facts of a learnings file: each list item, else each paragraph (headings and
    blank lines separate; a wrapped item continues on an indented line)."""
    found: list[str] = []
    current: list[str] = []

    def close() -> None:
        if current:
            fact = _SPACE.sub(" ", " ".join(current)).strip()
            if fact:
                found.append(fact)
            current.clear()

    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#") or line.startswith("<!--"):
            close()
            continue
        item = _ITEM.match(line)
        if item is not None:
            close()
            current.append(item.group("text"))
        else:
            current.append(line.strip())
    close()
    return found


def _folded(text: str) -> str:
    return _SPACE.sub(" ", text).strip().casefold()


def held(text: str) -> set[str]:
    """The facts `03-learnings.md` holds (folded)."""
    return {_folded(m.group("text")) for m in map(_FACT_LINE.match, text.splitlines()) if m}


def surviving(bank: Path, current: str) -> list[Feature]:
    """Every feature's learnings file, with the facts the bank does not hold yet."""
    from ctxward.core.fsutil import read_regular_text
    from ctxward.core.scrub import redact

    base = folder(bank)
    if not base.is_dir() or base.is_symlink():
        return []
    present = held(current)
    out = []
    for sub in sorted(base.iterdir()):
        path = sub / "learnings.md"
        if sub.is_symlink() or not sub.is_dir() or not path.is_file():
            continue
        try:
            text = redact(read_regular_text(path))
        except (OSError, UnicodeDecodeError):
            continue  # a link, a FIFO, not UTF-8: not ours to promote nor to delete
        feature = Feature(sub.name, path)
        for fact in facts_of(text):
            if _folded(fact) in present:
                feature.known += 1
            else:
                present.add(_folded(fact))
                feature.facts.append(fact)
        out.append(feature)
    return out


def render(current: str | None, features: list[Feature], today: str) -> str | None:
    """`03-learnings.md` with the new facts appended (None: nothing new)."""
    from ctxward.core.render import render as render_template

    blocks = [
        render_template("bank/learnings_block.md.j2", feature=f.name, date=today, facts=f.facts)
        for f in features
        if f.facts
    ]
    if not blocks:
        return None
    return render_template("bank/learnings.md.j2", head=(current or "").rstrip("\n"), blocks=blocks)
