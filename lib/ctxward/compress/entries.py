"""What L1 works on: an entry, its result and a run; the band templates and their line counts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ctxward.compress import scoring
from ctxward.compress.scoring import Preflight, Score
from ctxward.core.values import Value

BAND_TEMPLATES = {
    "CRITICAL": "compress/critical.md.j2",
    "HIGH": "compress/high.md.j2",
    "MEDIUM": "compress/medium.md.j2",
    "LOW": "compress/low.md.j2",
}


BAND_LINES = {"CRITICAL": 3, "HIGH": 2, "MEDIUM": 1, "LOW": 1}


MEDIUM_CHARS = 80


STAGE_PREFIX = "L1-"


# Fields whose text is prose (cleaned of raw output by Layer 1); `tests` is reduced to counts.
PROSE_FIELDS = frozenset(
    {"summary", "details", "changes", "notes", "gotcha", "gotchas", "decision", "decisions"}
    | {"trade_off", "tradeoffs", "risks", "caveats", "title"}
)


class Entry(Value):
    """One subtask_summary after scrubbing and Layer 1: structured metadata only."""

    fields: Mapping[str, Any]
    source: str  # the scrubbed text it came from (kept in full under .ctxward/offload/)
    structured: bool  # parsed from YAML/JSON (False: free text)
    label: str = ""


class Route(Value):
    """--from, --to and --blocker: who sent an entry and who reads it next (over the entry's own
    `from`/`agent` and `to` fields), and whether it has or lifts a blocker."""

    sender: str | None = None
    receiver: str | None = None
    blocker: bool = False


class Result(Value):
    entry: Entry
    sender: str | None
    receiver: str | None
    preflight: Preflight
    score: Score
    text: str  # the compressed entry ('' when the preflight refused it)
    offload_path: str | None = None
    sha256: str | None = None

    @property
    def compressed(self) -> bool:
        return self.preflight.allowed

    @property
    def agent(self) -> str:
        return scoring.text_of(self.entry.fields.get("agent")) or self.sender or "unknown"

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "compressed": self.compressed,
            "label": self.entry.label,
            "agent": self.agent,
            "from": self.sender,
            "to": self.receiver,
            **self.score.as_dict(),
        }
        if self.compressed:
            data["text"] = self.text
            data["lines"] = BAND_LINES[self.score.band]
        else:
            data["reason"] = self.preflight.reason
        if self.score.adjustments:
            data["adjustments"] = list(self.score.adjustments)
        if self.offload_path:
            data["original"] = {"path": self.offload_path, "sha256": self.sha256}
        return data


class Run(Value):
    """One input (text or file) and what became of each entry in it."""

    label: str
    bytes_before: int
    results: tuple[Result, ...]
    redactions: int

    @property
    def bytes_after(self) -> int:
        return sum(len(r.text.encode("utf-8")) for r in self.results if r.compressed)
