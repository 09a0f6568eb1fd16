"""L1 inline compression (seed 000 §12): scrub → Layer 1 → preflight → score → band template.

Input is a subtask_summary (a fenced ```yaml/```json block whose top key is `subtask_summary`,
an unfenced `subtask_summary:` block, a bare mapping with a `summary`, a list of them) or free
text. Each entry is scored on its own (seed 000 §14) and rendered with its band's template:
CRITICAL 3 lines (what / why it matters next / gotcha), HIGH 2 lines, MEDIUM one line
`[agent] — <first sentence ≤80> — <files>`, LOW `[agent] — <files>`, keeping only the fields
the (from, to) agent pair's mask allows (seed 000 §5). The semantic lines are built from the
entry's own text and the agent-pair variant table (§4): deterministic, no model.

Non-destructive: the source is never touched; the full scrubbed original is kept in
`.ctxward/offload/<sha256>.md` and the result names it. Staging for L2 (C8, C11) writes one
idempotent file per (date, phase, agent) under the memory bank's `.tmp/` (seed 000 §17).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ctxward.compress import scoring
from ctxward.compress.scoring import Preflight, Score, Tables
from ctxward.core.fsutil import atomic_write, locked, open_regular, read_regular_text
from ctxward.core.project import Project
from ctxward.core.scrub import scrub
from ctxward.errors import BadInput

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


@dataclass(frozen=True, slots=True)
class Entry:
    """One subtask_summary after scrubbing and Layer 1: structured metadata only."""

    fields: Mapping[str, Any]
    source: str  # the scrubbed text it came from (kept in full under .ctxward/offload/)
    structured: bool  # parsed from YAML/JSON (False: free text)
    label: str = ""


@dataclass(frozen=True, slots=True)
class Result:
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


@dataclass(frozen=True, slots=True)
class Run:
    """One input (text or file) and what became of each entry in it."""

    label: str
    bytes_before: int
    results: tuple[Result, ...]
    redactions: int

    @property
    def bytes_after(self) -> int:
        return sum(len(r.text.encode("utf-8")) for r in self.results if r.compressed)


# -- parsing -------------------------------------------------------------------------------------

_FENCE = re.compile(r"^[ \t]*```[ \t]*(?:ya?ml|json)?[ \t]*\n(.*?)^[ \t]*```[ \t]*$", re.M | re.S)
_BARE_BLOCK = re.compile(r"^subtask_summary:[ \t]*\n(?:(?:[ \t]+[^\n]*|[ \t]*)(?:\n|\Z))+", re.M)


def _load(text: str) -> Any:
    """JSON or YAML (safe loader) from `text`; None when it is neither.

    BadInput when it parses but cannot be read safely (`ctxward.core.limits`): nested too deep, YAML
    aliases that expand past twice the text's length (a "billion laughs"), a lone surrogate.
    """
    stripped = text.strip()
    if not stripped:
        return None
    if stripped[0] in "{[":
        try:
            return _bounded(json.loads(stripped), stripped)
        except (ValueError, RecursionError):
            pass
    import yaml

    try:
        data = yaml.load(stripped, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except (yaml.YAMLError, ValueError, RecursionError):  # ValueError: an integer too long
        return None
    return _bounded(data, stripped)


def _bounded(data: Any, text: str) -> Any:
    from ctxward.core.limits import problem

    refused = problem(data, max_nodes=2 * len(text) + 100)
    if refused is not None:
        raise BadInput(f"the entry {refused}")
    return data


def _mappings(data: Any, *, bare: bool) -> list[dict[str, Any]]:
    """The subtask_summary mappings in parsed `data` (a `summary` mapping counts when bare)."""
    if isinstance(data, list):
        return [found for item in data for found in _mappings(item, bare=True)]
    if not isinstance(data, dict):
        return []
    if "subtask_summary" in data:
        inner = data["subtask_summary"]
        items = inner if isinstance(inner, list) else [inner]
        extra = {k: v for k, v in data.items() if k != "subtask_summary"}
        return [{**extra, **item} for item in items if isinstance(item, dict)]
    if bare and "summary" in data:
        return [data]
    return []


def parse_entries(text: str, tables: Tables, label: str = "") -> list[Entry]:
    """The entries in (already scrubbed) `text`; free text becomes one entry."""
    found: list[Entry] = []
    for block in _FENCE.finditer(text):
        for raw in _mappings(_load(block.group(1)), bare=False):
            found.append(Entry(structural(raw, tables), block.group(0), True, label))
    if found:
        return found
    for raw in _mappings(_load(text), bare=True):
        found.append(Entry(structural(raw, tables), text, True, label))
    if found:
        return found
    for block in _BARE_BLOCK.finditer(text):
        for raw in _mappings(_load(block.group(0)), bare=False):
            found.append(Entry(structural(raw, tables), block.group(0), True, label))
    if found or not text.strip():
        return found
    return [Entry(structural({"summary": text}, tables), text, False, label)]


# -- Layer 1: structured metadata only -----------------------------------------------------------

_CODE_FENCE = re.compile(r"```.*?(?:```|\Z)", re.S)
_TRACEBACK = re.compile(
    r"^[ \t]*Traceback \(most recent call last\):.*?"
    r"(?:^[\w.]*(?:Error|Exception|Exit)\b[^\n]*$|\Z)",
    re.M | re.S,
)
_FRAME_LINES = re.compile(r"(?:^[ \t]+(?:File \"[^\n]*|at [\w.$<>]+\([^\n]*)\n?)+", re.M)
_TEST_COUNTS = re.compile(
    r"(\d+)\s+(passed|failed|errors?|skipped|xfailed|xpassed|warnings?)", re.IGNORECASE
)


def structural(raw: Mapping[str, Any], tables: Tables) -> dict[str, Any]:
    """Layer 1 (seed 000 §13): keep the allowed metadata fields; raw output never passes.

    Fields outside the allowed list (stdout, stderr, output, logs, traceback, env, config values)
    are dropped; pasted code blocks and stack traces inside prose become "(raw output omitted)";
    `tests` is reduced to its counts.
    """
    kept: dict[str, Any] = {}
    for key, value in raw.items():
        name = str(key).strip().lower()
        if name not in tables.allowed_fields or value is None:
            continue
        if name in PROSE_FIELDS:
            value = _prose(value)
        elif name == "tests":
            value = summarize_tests(value)
        kept[name] = value
    return kept


def _prose(value: Any) -> Any:
    if isinstance(value, list):
        return [_prose(item) for item in value]
    if not isinstance(value, str):
        return value
    text = _CODE_FENCE.sub("(raw output omitted)", value)
    text = _TRACEBACK.sub("(raw output omitted)", text)
    return _FRAME_LINES.sub("", text).strip()


def summarize_tests(value: Any) -> str:
    """A test result as "12 passed, 1 failed" (counts only; never the raw output)."""
    if isinstance(value, Mapping):
        return ", ".join(f"{v} {k}" for k, v in value.items() if isinstance(v, (int, str)))
    text = scoring.text_of(value)
    counts = _TEST_COUNTS.findall(text)
    if counts and ("\n" in text or len(text) > 80):
        return ", ".join(f"{n} {word.lower()}" for n, word in counts)
    first = text.splitlines()[0] if text else ""
    return _cut(first, 80)


# -- the semantic lines --------------------------------------------------------------------------

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9`\"'(\[])|\n+")
_ENDPOINT = re.compile(r"\b(GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS)\s+(/[\w\-./{}:<>]*)")
_API_PATH = re.compile(r"(?<![\w./])/(?:api|v\d+|auth|graphql)(?:/[\w\-.{}:<>]+)*")
_STATUS_CONTEXT = re.compile(
    r"(?i)status|http|return|respon|code|error|\b[1-5]\d\d\s+(?:ok|\w+ed)\b"
)
_STATUS_CODE = re.compile(r"\b([1-5]\d\d)\b(?!\s*(?:ms|%|files?|lines?|tests?|rows?|kb|mb|bytes))")
_SHAPE = re.compile(r"\{[^{}\n]{1,120}\}")
_TABLE = re.compile(
    r"(?i)\bcreate table (?:if not exists )?[`\"]?(\w+)|[`\"](\w+)[`\"] table\b|\btable [`\"](\w+)"
    r"|\b(\w+) table\b"
)
_NOT_TABLE = frozenset({"new", "the", "a", "an", "this", "that", "each", "one", "same", "join"})
_RELATION = re.compile(
    r"(?i)\b(?:foreign keys?|fk)\b[^.;\n]{0,60}"
    r"|\b(?:belongs to|has many|has one|references)\s+`?\w+"
)
_COLUMN = re.compile(
    r"(?i)\badd column (?:if not exists )?[`\"]?(\w+)|[`\"](\w+)[`\"] (?:column|field)\b"
    r"|\b(?:column|field) [`\"]?(\w+)"
)
_MIGRATION_FILE = re.compile(r"(?:^|/)(?:migrations?|alembic/versions|db/migrate)/([\w.-]+)")
_MIGRATION_VERSION = re.compile(r"(?i)\bmigration\s+#?(\d[\w-]*)")
_SQL_TYPE = re.compile(
    r"\b(VARCHAR(?:\(\d+\))?|TEXT|INTEGER|BIGINT|SMALLINT|UUID|BOOLEAN|TIMESTAMPTZ|TIMESTAMP|JSONB"
    r"|NUMERIC(?:\(\d+, ?\d+\))?|DECIMAL|FLOAT|ENUM|varchar(?:\(\d+\))?|bigint|uuid|jsonb"
    r"|timestamptz|boolean|integer)\b"
)
_DEFAULT = re.compile(r"(?i)\bdefaults? (?:to |= ?|: ?)?([`\"']?[\w.-]+[`\"']?)")
_COMPONENT = re.compile(
    r"\b([A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+)*(?:Form|Page|View|Modal|Button|List|Card|Component"
    r"|Dialog|Panel|Table|Provider|Screen|Layout|Widget|Menu|Bar|Hook))\b"
)
_COMPONENT_FILE = re.compile(r"([\w-]+)\.(?:tsx|jsx|vue|svelte)$")
_HANDLER = re.compile(r"\b((?:on|handle)[A-Z]\w+)\b")
_ENV_VAR = re.compile(r"\b([A-Z][A-Z0-9]*_[A-Z0-9_]*[A-Z0-9])\b")
_CONFIG_FILE = re.compile(
    r"(?i)(?:^|/)(?:dockerfile|docker-compose[\w.-]*|[\w.-]+\.(?:ya?ml|toml|ini|env|tf|conf|cfg))$"
)
_DEPLOY_TARGET = re.compile(
    r"(?i)\b(?:deploy(?:ed|s|ing)?|releas(?:ed|es|ing)|ship(?:ped|s)?)\s+(?:\w+\s+)?(?:to|on)\s+"
    r"([\w.:/-]+\w)"
)
_CAVEAT = re.compile(
    r"(?i)\b(?:but|however|note|must|never|instead|breaking|trade-?offs?|caveat|beware|careful"
    r"|requires?|only|no longer|deprecated|rollback|rollout|warning|no|without|cannot|can't"
    r"|won't|always|avoid)\b"
)
_GOTCHA_FIELDS = (
    "gotcha",
    "gotchas",
    "caveats",
    "trade_off",
    "tradeoffs",
    "decision",
    "decisions",
    "risks",
)
_EXTRACT_LIMIT = 4


def sentences(text: str) -> list[str]:
    """The sentences of `text` (markdown bullets and surrounding space removed)."""
    parts = (part.strip().lstrip("-*• ").strip() for part in _SENTENCE_END.split(text))
    return [part for part in parts if part]


def first_sentence(text: str, limit: int) -> str:
    found = sentences(text)
    return _cut(found[0] if found else "", limit)


def _cut(text: str, limit: int) -> str:
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    if " " in cut[limit // 2 :]:
        cut = cut[: cut.rfind(" ")]
    return cut.rstrip(" ,;:-") + "…"


def _unique(values: Iterable[str]) -> list[str]:
    seen: dict[str, None] = {}
    for value in values:
        value = value.strip().strip("`\"'")
        if value and value.lower() not in (v.lower() for v in seen):
            seen[value] = None
    return list(seen)[:_EXTRACT_LIMIT]


def _groups(pattern: re.Pattern[str], text: str) -> list[str]:
    out = []
    for match in pattern.finditer(text):
        groups = [g for g in match.groups() if g]
        out.append(groups[0] if groups else match.group(0))
    return out


def _endpoints(text: str) -> list[str]:
    found = [f"{m.group(1)} {m.group(2)}" for m in _ENDPOINT.finditer(text)]
    paths = {m.group(2) for m in _ENDPOINT.finditer(text)}
    found += [m.group(0) for m in _API_PATH.finditer(text) if m.group(0) not in paths]
    return _unique(found)


def _status_codes(text: str) -> list[str]:
    codes: list[str] = []
    for sentence in sentences(text):
        if _STATUS_CONTEXT.search(sentence):
            codes += _STATUS_CODE.findall(sentence)
    return _unique(codes)


def extract(kind: str, fields: Mapping[str, Any], text: str, files: Sequence[str]) -> list[str]:
    """The details of one §4 variant aspect found in the entry (deterministic, may be empty)."""
    if kind in ("verdict", "critical_issues", "coverage", "tests", "status"):
        value = scoring.text_of(fields.get(kind))
        return [f"{kind.replace('_', ' ')} {value}"] if value else []
    if kind == "endpoints":
        return _endpoints(text)
    if kind == "status_codes":
        return _status_codes(text)
    if kind == "shapes":
        return _unique(m.group(0) for m in _SHAPE.finditer(text))
    if kind == "tables":
        return _unique(t for t in _groups(_TABLE, text) if t.lower() not in _NOT_TABLE)
    if kind == "relationships":
        return _unique(m.group(0) for m in _RELATION.finditer(text))
    if kind == "columns":
        return _unique(_groups(_COLUMN, text))
    if kind == "migrations":
        names = [m.group(1) for f in files if (m := _MIGRATION_FILE.search(f))]
        return _unique(names + _MIGRATION_VERSION.findall(text))
    if kind == "types":
        return _unique(_SQL_TYPE.findall(text))
    if kind == "defaults":
        return _unique(f"default {d}" for d in _DEFAULT.findall(text))
    if kind == "components":
        from_files = [m.group(1) for f in files if (m := _COMPONENT_FILE.search(f))]
        return _unique(_COMPONENT.findall(text) + from_files)
    if kind == "handlers":
        return _unique(_HANDLER.findall(text))
    if kind == "env_vars":
        return _unique(_ENV_VAR.findall(text))
    if kind == "config_files":
        return _unique(f for f in files if _CONFIG_FILE.search(f))
    if kind == "deploy_targets":
        return _unique(_DEPLOY_TARGET.findall(text))
    return []


def _gotcha(fields: Mapping[str, Any], summary_sentences: Sequence[str]) -> str:
    for name in _GOTCHA_FIELDS:
        value = fields.get(name)
        if isinstance(value, list):
            value = next((item for item in value if not scoring.is_empty(item)), None)
        if not scoring.is_empty(value):
            return first_sentence(scoring.text_of(value), 200)
    for sentence in summary_sentences[1:]:
        if _CAVEAT.search(sentence):
            return _cut(sentence, 200)
    return ""


def _files_text(files: Sequence[str], shown: int = 3) -> str:
    if len(files) <= shown:
        return ", ".join(files)
    return ", ".join(files[:shown]) + f" (+{len(files) - shown})"


def semantic(
    fields: Mapping[str, Any],
    score: Score,
    sender: str | None,
    receiver: str | None,
    tables: Tables,
) -> dict[str, Any]:
    """The pieces of the CRITICAL/HIGH lines: what changed, for the next agent, gotcha."""
    summary = scoring.text_of(fields.get("summary"))
    found = sentences(summary)
    files = scoring.file_list(fields)
    row = scoring.variant(sender, receiver, tables)
    details = [
        item
        for aspect in row.get("extract") or []
        for item in extract(str(aspect), fields, scoring.narrative(fields), files)
    ]
    endpoints = [e for e in _endpoints(summary) if e.split()[-1] not in (found[0] if found else "")]
    risky = [
        keyword
        for keyword in scoring.find_keywords(scoring.narrative(fields), tables)
        if keyword.risk is not None and keyword.risk == score.dimensions["risk"]
    ]
    return {
        "what": _cut(found[0], 200).rstrip(" .") if found else "",
        "contract": endpoints[:2],
        "include": str(row.get("include", "")),
        "details": _unique(details),
        "gotcha": _gotcha(fields, found),
        "risk_category": risky[0].category if risky and score.dimensions["risk"] > 0 else "",
        "risk_terms": [keyword.term for keyword in risky][:3],
    }


# -- compressing ---------------------------------------------------------------------------------


def agents_for(
    fields: Mapping[str, Any],
    sender: str | None,
    receiver: str | None,
    fallback_sender: str | None = None,
) -> tuple[str | None, str | None]:
    """(from, to): the flags first, then the entry's `from`/`agent` and `to` fields."""
    sender = (
        sender
        or scoring.text_of(fields.get("from"))
        or scoring.text_of(fields.get("agent"))
        or fallback_sender
        or ""
    )
    receiver = receiver or scoring.text_of(fields.get("to"))
    return (sender.lower() or None), (receiver.lower() or None)


def view(
    entry: Entry, score: Score, sender: str | None, receiver: str | None, tables: Tables
) -> dict[str, Any]:
    """Plain data for the band templates, after the (from, to) field mask.

    The mask (seed 000 §5) decides which fields show: `summary_semantic` allows the generated
    what-line, `summary` the summary itself (full, or cut as the mask says). The line for the next
    agent and the gotcha come from the §4 variant row and the entry's own text.
    """
    fields = dict(entry.fields)
    fields.setdefault("agent", sender or "unknown")
    expanded = score.band in ("CRITICAL", "HIGH")
    sem = semantic(fields, score, sender, receiver, tables) if expanded else {}
    if expanded:
        fields["summary_semantic"] = sem["what"]
    masked = scoring.apply_mask(fields, sender, receiver, tables)
    allowed, truncate = scoring.field_mask(sender, receiver, tables)
    limit = min(MEDIUM_CHARS, int(truncate.get("summary", MEDIUM_CHARS)))
    summary = scoring.text_of(fields.get("summary"))
    if "summary_semantic" in masked:
        what, contract = sem.get("what", ""), sem.get("contract", [])
    elif "summary" in masked:
        what = scoring.text_of(masked["summary"]) if truncate else _cut(summary, 2000)
        what = what.rstrip(" .")
        contract = []
    else:
        what, contract = "", []
    shows_summary = "summary" in allowed or "summary_semantic" in allowed
    return {
        "band": score.band,
        "agent": scoring.text_of(fields.get("agent")),
        "partial": scoring.status_of(fields) == "partial",
        "receiver": receiver or "",
        "meta": {
            name: scoring.text_of(masked[name])
            for name in ("date", "status", "tests", "coverage", "verdict", "critical_issues")
            if name in masked
        },
        "files": _files_text(scoring.file_list(masked)) if "files" in masked else "",
        "line": first_sentence(summary, limit) if shows_summary else "",
        "what": what,
        "contract": contract,
        "include": sem.get("include", ""),
        "details": sem.get("details", []),
        "gotcha": sem.get("gotcha", ""),
        "risk_category": sem.get("risk_category", ""),
        "risk_terms": sem.get("risk_terms", []),
    }


def render_entry(context: Mapping[str, Any]) -> str:
    from ctxward.core.render import render

    return render(BAND_TEMPLATES[str(context["band"])], entry=context)


def compress_text(
    text: str,
    tables: Tables,
    *,
    project: Project | None = None,
    sender: str | None = None,
    receiver: str | None = None,
    blocker: bool = False,
    label: str = "",
    fallback_sender: str | None = None,
) -> Run:
    """Scrub, parse, preflight, score and render every entry of `text`.

    With a project, the full scrubbed original is stored in .ctxward/offload/ (content-addressed,
    idempotent) and each result names it; the source itself is never modified. The original is
    stored only once the text was read: a refused input (BadInput) writes nothing.
    """
    run, scrubbed = _compress(
        text,
        tables,
        sender=sender,
        receiver=receiver,
        blocker=blocker,
        label=label,
        fallback_sender=fallback_sender,
    )
    return _with_stored_original(run, scrubbed, project)


def _compress(
    text: str,
    tables: Tables,
    *,
    sender: str | None,
    receiver: str | None,
    blocker: bool,
    label: str,
    fallback_sender: str | None = None,
) -> tuple[Run, str]:
    """`compress_text` without storing the original: (the run, the scrubbed text)."""
    scrubbed, redactions = scrub(text)
    results = [
        compress_entry(
            entry,
            tables,
            sender=sender,
            receiver=receiver,
            blocker=blocker,
            fallback_sender=fallback_sender,
        )
        for entry in parse_entries(scrubbed, tables, label)
    ]
    return Run(label, len(text.encode("utf-8")), tuple(results), len(redactions)), scrubbed


def _with_stored_original(run: Run, scrubbed: str, project: Project | None) -> Run:
    """Store the scrubbed original in .ctxward/offload/ and name it in each result."""
    if project is None or not scrubbed.strip():
        return run
    from ctxward.core.offload import offload

    stored = offload(project, scrubbed, "md")
    path = project.relative(stored.path)
    results = tuple(_with_original(r, path, stored.sha256) for r in run.results)
    return Run(run.label, run.bytes_before, results, run.redactions)


def _with_original(result: Result, path: str, sha256: str) -> Result:
    return Result(
        result.entry,
        result.sender,
        result.receiver,
        result.preflight,
        result.score,
        result.text,
        path,
        sha256,
    )


def compress_entry(
    entry: Entry,
    tables: Tables,
    *,
    sender: str | None = None,
    receiver: str | None = None,
    blocker: bool = False,
    fallback_sender: str | None = None,
) -> Result:
    """Preflight, score and render one (scrubbed, Layer 1) entry."""
    sender, receiver = agents_for(entry.fields, sender, receiver, fallback_sender)
    score = scoring.score_entry(
        entry.fields, tables, sender=sender, receiver=receiver, blocker=blocker
    )
    check = scoring.preflight(entry.fields) if entry.structured else Preflight(True)
    if not check.allowed:
        return Result(entry, sender, receiver, check, score, "")
    text = render_entry(view(entry, score, sender, receiver, tables))
    return Result(entry, sender, receiver, check, score, text)


def score_text(
    text: str,
    tables: Tables,
    *,
    sender: str | None = None,
    receiver: str | None = None,
    blocker: bool = False,
) -> list[tuple[Entry, Score]]:
    """Score every entry of `text` (scrubbed first; nothing is written)."""
    scored = []
    for entry in parse_entries(scrub(text)[0], tables):
        pair = agents_for(entry.fields, sender, receiver)
        scored.append(
            (
                entry,
                scoring.score_entry(
                    entry.fields, tables, sender=pair[0], receiver=pair[1], blocker=blocker
                ),
            )
        )
    return scored


def tokens(size: int) -> int:
    """The token estimate used everywhere: ceil(bytes / 4)."""
    return math.ceil(size / 4)


def stats(runs: Sequence[Run]) -> dict[str, Any]:
    """Bytes and estimated tokens before and after, the ratio, and entries per band."""
    before = sum(run.bytes_before for run in runs)
    after = sum(run.bytes_after for run in runs)
    bands = dict.fromkeys(scoring.BANDS, 0)
    skipped = 0
    for run in runs:
        for result in run.results:
            if result.compressed:
                bands[result.score.band] += 1
            else:
                skipped += 1
    return {
        "inputs": len(runs),
        "entries": sum(bands.values()),
        "skipped": skipped,
        "bytes_before": before,
        "bytes_after": after,
        "tokens_before": tokens(before),
        "tokens_after": tokens(after),
        "ratio": round(after / before, 3) if before else 0.0,
        "bands": bands,
        "redactions": sum(run.redactions for run in runs),
    }


def compress_many(
    sources: Iterable[tuple[str, str]],
    tables: Tables,
    *,
    project: Project | None = None,
    sender: str | None = None,
    receiver: str | None = None,
    blocker: bool = False,
    progress: Callable[[str], None] | None = None,
) -> list[Run]:
    """`compress_text` over (label, text) pairs, each entry scored on its own (seed 000 §14).

    Every source is read before any original is stored: one refused source writes nothing.
    """
    done = []
    for label, text in sources:
        done.append(
            _compress(text, tables, sender=sender, receiver=receiver, blocker=blocker, label=label)
        )
        if progress is not None:
            progress(label)
    return [_with_stored_original(run, scrubbed, project) for run, scrubbed in done]


# -- staging for L2 (C8, C11) --------------------------------------------------------------------

_HEADER = re.compile(r"<!-- ctxward:l1 (?P<attrs>.*?) -->")
_ATTR = re.compile(r'(\w+)="([^"]*)"')
_SLUG = re.compile(r"[^a-z0-9]+")


@dataclass(frozen=True, slots=True)
class Staged:
    path: Path
    key: str
    hash: str
    state: str  # "compressed" or "pending"
    band: str
    score: float
    agent: str
    phase: str
    written: bool = False
    attrs: Mapping[str, str] = field(default_factory=dict)
    replaced: str = ""  # the hash of the earlier version of the same entry this one replaced


def entry_hash(date: str, phase: str, agent: str, summary: str) -> str:
    """seed 000 §17: sha256 of "date|phase|agent|summary", first 16 hex digits."""
    canonical = f"{date}|{phase}|{agent}|{summary}"
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


def stage_dir(project: Project) -> Path:
    return project.bank_dir / ".tmp"


def _slug(value: str) -> str:
    return _SLUG.sub("-", value.lower()).strip("-") or "none"


def _today() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%d")


def read_staged(path: Path) -> Staged | None:
    """The header of a staged L1 file, or None when `path` is not one."""
    try:
        with open(open_regular(path), encoding="utf-8") as handle:
            head = handle.read(4096)
    except (OSError, UnicodeDecodeError):  # a FIFO too: `open_regular` never waits on one
        return None
    match = _HEADER.search(head)
    if match is None:
        return None
    attrs = dict(_ATTR.findall(match.group("attrs")))
    return Staged(
        path=path,
        key=attrs.get("key", ""),
        hash=attrs.get("hash", ""),
        state=attrs.get("state", ""),
        band=attrs.get("band", ""),
        score=float(attrs.get("score", "0") or 0),
        agent=attrs.get("agent", ""),
        phase=attrs.get("phase", ""),
        attrs=attrs,
    )


def _stage_name(date: str, phase: str, agent: str, identity: str, digest: str) -> str:
    """`L1-<date>-phase-<phase>-<agent>-<which>.md`: one file per entry (issue 16), where
    <which> is the entry's own id or title (slug + a short hash of the exact identity and agent)
    or, for an entry without one, its content hash."""
    from ctxward.bank import identity as identities

    base = f"{STAGE_PREFIX}{_slug(date)}-phase-{_slug(phase)}-{_slug(agent)}"
    if not identities.is_explicit(identity):
        return f"{base}-{digest[:12]}.md"
    exact = hashlib.sha256(f"{agent}|{identity}".encode()).hexdigest()[:6]
    return f"{base}-{_slug(identity.split(':', 1)[1])[:40].strip('-')}-{exact}.md"


def stage(project: Project, result: Result, *, state: str = "compressed") -> Staged:
    """Write `result` to the bank's .tmp/ for L2 promotion; idempotent (seed 000 §17).

    One file per entry (`bank.identity`): two subtasks of one agent in one phase are two files.
    An identical content hash is left alone; a new text of the same entry (its own id or title)
    overwrites its file and says so (`replaced`: the earlier hash, whose full text stays in
    `.ctxward/offload/`). `pending` stores the Layer-1 entry for C11 to compress.
    """
    from ctxward.bank import identity as identities
    from ctxward.core.render import render

    fields = result.entry.fields
    date = scoring.text_of(fields.get("date")) or _today()
    phase = scoring.text_of(fields.get("phase")) or "none"
    agent = result.agent
    digest = entry_hash(date, phase, agent, scoring.text_of(fields.get("summary")))
    identity = identities.of(fields, digest)
    folder = stage_dir(project)
    path = folder / _stage_name(date, phase, agent, identity, digest)
    attrs = {
        "key": identities.key(date, phase, agent, identity),
        "hash": digest,
        "state": state,
        "band": result.score.band,
        "score": f"{result.score.score:.2f}",
        "agent": agent,
        "phase": phase,
        "from": result.sender or "",
        "to": result.receiver or "",
        "original": result.offload_path or "",
    }
    with locked(folder, project.locks_dir):
        current = read_staged(path)
        if (
            current is not None
            and current.hash == digest
            and current.state in ("compressed", state)
        ):
            return current  # the same content is staged already (compressed wins over pending)
        text = render(
            "compress/staged.md.j2",
            attrs=attrs,
            entry_text=result.text,
            # the key's date is kept with a pending entry, so that C11 finds the same file later
            entry_yaml=_yaml({**fields, "date": date}) if state == "pending" else "",
        )
        written = atomic_write(path, text, validate=_has_heading)
    score = result.score
    replaced = current.hash if current is not None and current.hash != digest else ""
    return Staged(
        path,
        attrs["key"],
        digest,
        state,
        score.band,
        score.score,
        agent,
        phase,
        written,
        attrs,
        replaced,
    )


def _yaml(data: Mapping[str, Any]) -> str:
    import yaml

    return yaml.safe_dump(
        {"subtask_summary": dict(data)}, sort_keys=False, allow_unicode=True, width=100
    )


def _has_heading(data: bytes) -> None:
    """seed 000 §11: a written bank file is non-empty and has a heading."""
    if not data.strip() or not any(line.startswith(b"#") for line in data.splitlines()):
        raise ValueError("staged entry has no heading")


# -- C11: handoff --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Handoff:
    compressed: tuple[Staged, ...]  # compressed by this run
    already: tuple[Staged, ...]  # staged compressed earlier (C8, or an earlier handoff)
    skipped: tuple[tuple[str, str], ...]  # (what, why): left in place
    unrecognized: tuple[str, ...]  # .tmp/ files with no subtask_summary: flagged, left in place


def handoff(project: Project, tables: Tables, *, phase: str | None = None) -> Handoff:
    """C11: compress the completed work staged in the bank's .tmp/ and list what was compressed.

    Pending L1 entries (staged by C8 below HIGH) are compressed in place; other artifacts in
    .tmp/ carrying subtask_summaries (IMPL/REVIEW notes) get an L1 entry staged next to them and
    are left untouched. `phase` limits the run to entries of that phase.
    """
    folder = stage_dir(project)
    compressed: list[Staged] = []
    already: list[Staged] = []
    skipped: list[tuple[str, str]] = []
    unrecognized: list[str] = []
    if not folder.is_dir():
        return Handoff((), (), (), ())
    for path in sorted(folder.iterdir()):
        if (
            not path.is_file()
            or path.name.startswith(".")
            or path.suffix not in (".md", ".yaml", ".yml", ".json")
        ):
            continue
        staged = read_staged(path)
        if staged is not None:
            if phase is not None and staged.phase != phase:
                continue
            if staged.state == "compressed":
                already.append(staged)
                continue
        try:
            text = read_regular_text(path)
        except (OSError, UnicodeDecodeError):
            unrecognized.append(project.relative(path))
            continue
        sender = staged.attrs.get("from") if staged else None
        receiver = staged.attrs.get("to") if staged else None
        run = compress_text(
            text,
            tables,
            project=project,
            sender=sender or None,
            receiver=receiver or None,
            label=project.relative(path),
        )
        structured = [r for r in run.results if r.entry.structured]
        if not structured:
            unrecognized.append(project.relative(path))
            continue
        for result in structured:
            entry_phase = scoring.text_of(result.entry.fields.get("phase")) or "none"
            if phase is not None and entry_phase != phase:
                continue
            original = staged.attrs.get("original", "") if staged else ""
            if original:  # keep pointing at what the sub-agent wrote, not at the staged copy
                result = _with_original(result, original, Path(original).stem)
            if not result.compressed:
                skipped.append(
                    (f"{project.relative(path)} [{result.agent}]", result.preflight.reason)
                )
                continue
            done = stage(project, result)
            (compressed if done.written else already).append(done)
    listed = {item.path for item in compressed}
    unique = {item.path: item for item in already if item.path not in listed}
    return Handoff(tuple(compressed), tuple(unique.values()), tuple(skipped), tuple(unrecognized))


# -- hooks: C8 at SubagentStop, C11 at PreCompact; failures go to the log, never to the agent ----

_STAGED_NOW = ("CRITICAL", "HIGH")


def subagent_stopped(project: Project, data: Mapping[str, Any]) -> list[Staged]:
    """C8: stage the sub-agent's completed subtask_summaries for L2 promotion.

    Read from `last_assistant_message`, else the last assistant message of the sub-agent's
    transcript. A CRITICAL or HIGH entry is compressed inline now; a completed entry below HIGH
    is staged `pending`, for the next handoff (C11) to compress. Entries the preflight refuses
    (in progress, blocked, …) are not staged. The compaction agent (agent_type "") is ignored.
    """
    agent_type = data.get("agent_type")
    if not isinstance(agent_type, str) or not agent_type:
        return []
    message = data.get("last_assistant_message")
    text = message if isinstance(message, str) else ""
    if "subtask_summary" not in text:
        path = data.get("agent_transcript_path")
        if isinstance(path, str) and path:
            from ctxward.transcript.reader import last_assistant_text

            text = last_assistant_text(path)
    if "subtask_summary" not in text:
        return []
    from ctxward.core.config import load

    tables = scoring.load_tables(load(project).scoring)
    agent_id = data.get("agent_id")
    label = f"sub-agent {agent_id}" if isinstance(agent_id, str) and agent_id else "sub-agent"
    run = compress_text(text, tables, project=project, label=label, fallback_sender=agent_type)
    staged = []
    for result in run.results:
        status = scoring.status_of(result.entry.fields)
        if not (result.entry.structured and result.compressed):
            continue
        if status not in ("complete", "partial"):
            continue
        state = "compressed" if result.score.band in _STAGED_NOW else "pending"
        staged.append(stage(project, result, state=state))
    return staged


def session_handoff(project: Project) -> Handoff | None:
    """C11 at PreCompact: the handoff, when the bank has a .tmp/ to look at (else nothing)."""
    if not stage_dir(project).is_dir():
        return None
    from ctxward.core.config import load

    return handoff(project, scoring.load_tables(load(project).scoring))


def log_failure(project: Project, label: str) -> str:
    """Write the current exception's traceback to .ctxward/log/; return its relative path."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S.%fZ")
    path = project.log_dir / f"{stamp}-{label}.log"
    try:
        atomic_write(path, traceback.format_exc())
    except Exception:  # noqa: BLE001 - logging must not mask the original failure
        return "traceback not saved: the log folder is not writable"
    return project.relative(path)
