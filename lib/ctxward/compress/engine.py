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

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ctxward.compress import scoring
from ctxward.compress.entries import BAND_TEMPLATES, MEDIUM_CHARS, Entry, Result, Route, Run
from ctxward.compress.lines import (
    distinct_values,
    endpoints_in,
    extract,
    files_text,
    first_sentence,
    gotcha_line,
    sentences,
)
from ctxward.compress.parse import parse_entries
from ctxward.compress.scoring import Preflight, Score, Tables
from ctxward.core.project import Project
from ctxward.core.scrub import scrub
from ctxward.core.text import cut_at_word, tokens_of_size


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
    endpoints = [
        e for e in endpoints_in(summary) if e.split()[-1] not in (found[0] if found else "")
    ]
    risky = [
        keyword
        for keyword in scoring.find_keywords(scoring.narrative(fields), tables)
        if keyword.risk is not None and keyword.risk == score.dimensions["risk"]
    ]
    return {
        "what": cut_at_word(found[0], 200).rstrip(" .") if found else "",
        "contract": endpoints[:2],
        "include": str(row.get("include", "")),
        "details": distinct_values(details),
        "gotcha": gotcha_line(fields, found),
        "risk_category": risky[0].category if risky and score.dimensions["risk"] > 0 else "",
        "risk_terms": [keyword.term for keyword in risky][:3],
    }


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
        what = scoring.text_of(masked["summary"]) if truncate else cut_at_word(summary, 2000)
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
        "files": files_text(scoring.file_list(masked)) if "files" in masked else "",
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
        text, tables, Route(sender, receiver, blocker), label, fallback_sender
    )
    return _with_stored_original(run, scrubbed, project)


def _compress(
    text: str, tables: Tables, route: Route, label: str, fallback_sender: str | None = None
) -> tuple[Run, str]:
    """`compress_text` without storing the original: (the run, the scrubbed text)."""
    scrubbed, redactions = scrub(text)
    results = [
        compress_entry(entry, tables, route, fallback_sender)
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
    results = tuple(with_original(r, path, stored.sha256) for r in run.results)
    return Run(run.label, run.bytes_before, results, run.redactions)


def with_original(result: Result, path: str, sha256: str) -> Result:
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


def assess(
    entry: Entry, tables: Tables, route: Route, fallback_sender: str | None = None
) -> Result:
    """Preflight and score one (scrubbed, Layer 1) entry; its text is left to render ('')."""
    sender, receiver = agents_for(entry.fields, route.sender, route.receiver, fallback_sender)
    score = scoring.score_entry(
        entry.fields, tables, sender=sender, receiver=receiver, blocker=route.blocker
    )
    check = scoring.preflight(entry.fields) if entry.structured else Preflight(True)
    return Result(entry, sender, receiver, check, score, "")


def compress_entry(
    entry: Entry, tables: Tables, route: Route, fallback_sender: str | None = None
) -> Result:
    """Preflight, score and render one (scrubbed, Layer 1) entry."""
    result = assess(entry, tables, route, fallback_sender)
    if not result.compressed:
        return result
    context = view(entry, result.score, result.sender, result.receiver, tables)
    return result.replace(text=render_entry(context))


def score_text(
    text: str,
    tables: Tables,
    *,
    sender: str | None = None,
    receiver: str | None = None,
    blocker: bool = False,
) -> list[tuple[Entry, Score]]:
    """Score every entry of `text` (scrubbed first; nothing is written)."""
    route = Route(sender, receiver, blocker)
    entries = parse_entries(scrub(text)[0], tables)
    return [(entry, assess(entry, tables, route).score) for entry in entries]


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
        "tokens_before": tokens_of_size(before),
        "tokens_after": tokens_of_size(after),
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
        done.append(_compress(text, tables, Route(sender, receiver, blocker), label))
        if progress is not None:
            progress(label)
    return [_with_stored_original(run, scrubbed, project) for run, scrubbed in done]
