"""The Markdown the bank writes and reads back: marker comments, sections, table cells.

Every block ctxward owns in a bank file starts with one HTML comment that carries its
machine-readable attributes (`<!-- ctxward:entry key="…" hash="…" -->`). Markdown viewers hide
it; the parser reads it back, so the files are the bank's only state (no hidden database) and a
round trip (parse → render) gives the same bytes. Attribute values are HTML-escaped, so a value
can never close the comment.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Mapping

from ctxward.core.text import one_line
from ctxward.core.values import Value

_MARKER = re.compile(r"^<!-- ctxward:(?P<kind>[\w-]+)(?P<attrs>(?: [\w-]+=\"[^\"]*\")*) -->$")
_ATTR = re.compile(r'([\w-]+)="([^"]*)"')
_CELL_SPLIT = re.compile(r"(?<!\\)\|")
_RULE_CELL = re.compile(r":?-+:?")  # a cell of the `|---|:---:|` rule under a table's header
_NATURAL = re.compile(r"(\d+)")


def escape(value: object) -> str:
    """A marker attribute value: one line, HTML-escaped (no quote, no `>`)."""
    text = one_line(str(value))
    return html.escape(text, quote=True)


def escaped(attrs: Mapping[str, object]) -> dict[str, str]:
    """`attrs` ready for the `_marker.j2` macro (empty values dropped)."""
    return {name: escape(value) for name, value in attrs.items() if str(value) != ""}


def parse_marker(line: str) -> tuple[str, dict[str, str]] | None:
    """(kind, attrs) of a `<!-- ctxward:kind a="b" -->` line, or None."""
    match = _MARKER.match(line.rstrip("\n"))
    if match is None:
        return None
    attrs = {name: html.unescape(value) for name, value in _ATTR.findall(match.group("attrs"))}
    return match.group("kind"), attrs


def cell(value: object) -> str:
    """A Markdown table cell: one line, `|` escaped, `—` for an empty value; a value that would
    read as something else (the `|---|` rule's `-` or `:--:`, a literal `—`) gets a backslash,
    so that `split_row` gives every value back as it was."""
    text = one_line(str(value)).replace("|", "\\|")
    if not text:
        return "—"
    return "\\" + text if _needs_escape(text) else text


def _needs_escape(text: str) -> bool:
    return text == "—" or _RULE_CELL.fullmatch(text) is not None


def split_row(line: str) -> list[str] | None:
    """The cells of a `| a | b |` table row (None for other lines and the `|---|` rule)."""
    stripped = line.strip()
    if not (stripped.startswith("|") and stripped.endswith("|")) or len(stripped) < 2:
        return None
    cells = [part.strip().replace("\\|", "|") for part in _CELL_SPLIT.split(stripped[1:-1])]
    if all(_RULE_CELL.fullmatch(part) for part in cells):
        return None
    return [_value(part) for part in cells]


def _value(part: str) -> str:
    if part == "—":
        return ""
    return part[1:] if part.startswith("\\") and _needs_escape(part[1:]) else part


class Section(Value):
    """One `## Heading` section of a document: its heading line and its body lines."""

    heading: str  # the heading's text ("Completed Phases"), '' for the head before any heading
    lines: tuple[str, ...]  # the body lines, without their newlines

    @property
    def text(self) -> str:
        head = [f"## {self.heading}"] if self.heading else []
        return "".join(f"{line}\n" for line in (*head, *self.lines))


def split_sections(text: str, level: int = 2) -> list[Section]:
    """`text` cut at each heading of exactly `level` (#-count); the first Section is the head."""
    prefix = "#" * level + " "
    sections: list[Section] = []
    heading = ""
    body: list[str] = []
    for line in text.splitlines():
        if line.startswith(prefix):
            sections.append(Section(heading, tuple(body)))
            heading, body = line[len(prefix) :].strip(), []
        else:
            body.append(line)
    sections.append(Section(heading, tuple(body)))
    return sections


def trim_blank(lines: Iterable[str]) -> list[str]:
    """`lines` without leading and trailing blank lines."""
    out = list(lines)
    while out and not out[0].strip():
        out.pop(0)
    while out and not out[-1].strip():
        out.pop()
    return out


def natural_key(label: str) -> tuple[tuple[int, int | str], ...]:
    """Sort key of a phase label: "2" < "2a" < "2b" < "10"."""
    parts = [part for part in _NATURAL.split(label) if part]
    return tuple((0, int(part)) if part.isdigit() else (1, part.lower()) for part in parts)


def phase_matches(gate: str, label: str) -> bool:
    """Whether phase `label` belongs to gate `gate`: the same label, or gate + a letter (2 → 2a).

    The gate `*` takes every phase.
    """
    if label == gate or gate == "*":
        return True
    rest = label[len(gate) :] if label.startswith(gate) else ""
    return bool(rest) and rest.isalpha() and gate[-1:].isdigit()


def has_heading(data: bytes) -> bool:
    """seed 000 §11: a written bank file is non-empty and has a `#` heading line."""
    return bool(data.strip()) and any(line.startswith(b"#") for line in data.splitlines())
