"""Recovery: the text injected after a resume or a compaction, and the summary's statistics."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from ctxward.core.project import Project
from ctxward.core.sessionfiles import summary_path
from ctxward.core.text import estimate_tokens
from ctxward.sessions.budget import Summary
from ctxward.sessions.extract import Extraction
from ctxward.sessions.patterns import CRITICAL, DONE, FIX_MARK, TOKEN_BUDGET
from ctxward.sessions.store import read


def _is_fixed(error: str) -> bool:
    return FIX_MARK.strip() in error


def _entries(summary: Summary) -> list[tuple[str, str]]:
    """Every entry of the summary and its overflow as (kind, text), in the order the recovery
    text gives them room: what is still to do first (the user's level, the open action items,
    the unresolved errors), then the decisions, then what is done, then the rest."""
    actions = summary.everything("action_items")
    errors = summary.everything("errors_and_fixes")
    entries = [("level", summary.level)] if summary.level else []
    entries += [("action", t) for t in actions if not t.endswith(DONE)]
    entries += [("error", t) for t in errors if not _is_fixed(t)]
    entries += [("decision", t) for t in summary.everything("decisions")]
    entries += [("done", t[: -len(DONE)]) for t in actions if t.endswith(DONE)]
    entries += [("fixed", t) for t in errors if _is_fixed(t)]
    entries += [("preference", t) for t in summary.preferences]
    if summary.pattern:
        entries.append(("pattern", summary.pattern))
    if summary.stack:
        entries.append(("stack", ", ".join(summary.stack)))
    entries += [("skill", t) for t in summary.skill_updates]
    entries += [("patterns", t) for t in summary.patterns]
    return entries


# How the "N more" line names what it counts.
_MORE_NAMES = {
    "action": ("action item", "action items"),
    "error": ("error", "errors"),
    "fixed": ("error", "errors"),
    "decision": ("decision", "decisions"),
    "done": ("action item", "action items"),
}


def _view(entries: list[tuple[str, str]], shown: int) -> dict[str, Any]:
    """The recovery text's data: the first `shown` entries, and what the others are."""
    kept: dict[str, list[str]] = {}
    for kind, text in entries[:shown]:
        kept.setdefault(kind, []).append(text)
    architecture = "; ".join(
        [*kept.get("pattern", []), *("stack: " + t for t in kept.get("stack", []))]
    )
    rest = Counter(
        _MORE_NAMES.get(kind, ("other entry", "other entries")) for kind, _ in entries[shown:]
    )
    more = [f"{count} {names[count != 1]}" for names, count in rest.items()]
    return {
        "architecture": architecture,
        "decisions": kept.get("decision", []),
        "fixed": kept.get("fixed", []),
        "completed": kept.get("done", []),
        "pending": kept.get("error", []),
        "open_items": kept.get("action", []),
        "level": (kept.get("level") or [""])[0],
        "preferences": kept.get("preference", []),
        "skill_updates": kept.get("skill", []),
        "patterns": kept.get("patterns", []),
        "more": len(entries) - min(shown, len(entries)),
        "more_kinds": more,
    }


def recovery_text(summary: Summary, where: str, source: str, room: int) -> str:
    """The seed's "Session Recovery" message as facts, at most `room` characters ('' if none).

    Its entries stay within the 200-token view; those that do not fit, lowest priority first,
    are counted in "N more in <where>".
    """
    from ctxward.core.render import render
    from ctxward.core.scrub import scrub

    entries = _entries(summary)
    total = len(entries)

    def text(shown: int) -> str:
        return scrub(
            render("sessions/recovery.md.j2", v=_view(entries, shown), path=where, source=source)
        )[0]

    def fits(shown: int) -> bool:
        body = text(shown)
        return len(body) <= room and estimate_tokens(_items_part(body)) <= TOKEN_BUDGET

    if fits(total):
        return text(total)
    low, high = 0, total
    while low < high:
        middle = (low + high + 1) // 2
        if fits(middle):
            low = middle
        else:
            high = middle - 1
    return text(low) if low and fits(low) else ""


def _items_part(text: str) -> str:
    """The lines of the recovery text that carry the summary (its header line excluded)."""
    return text.split("\n", 1)[1] if "\n" in text else ""


def pointer_text(summary: Summary, where: str, sha256: str) -> str:
    from ctxward.core.render import render

    counts = {name: len(summary.everything(name)) for name in CRITICAL}
    return render("sessions/recovery_pointer.md.j2", s=counts, path=where, sha256=sha256)


def has_summary(project: Project, session_id: str) -> bool:
    """One stat: whether SessionStart has a summary to recover from."""
    return summary_path(project, session_id).is_file()


def with_recovery(project: Project, session_id: str, head: str, limit: int, source: str) -> str:
    """`head` (the invariants, already within `limit`) plus the recovery text, within `limit`.

    The invariants come first and are never shortened for it: the recovery text shrinks, then
    becomes a pointer to the YAML file (path and sha256), then is left out.
    """
    summary = read(project, session_id)
    if summary is None or summary.is_empty():
        return head
    path = summary_path(project, session_id)
    where = project.relative(path)
    gap = "\n" if head else ""
    room = limit - len(head) - len(gap)
    text = recovery_text(summary, where, source, room)
    if not text:
        from ctxward.core.fsutil import read_regular, sha256_hex

        text = pointer_text(summary, where, sha256_hex(read_regular(path)))
        if len(text) > room:
            return head
    return head + gap + text


def stats(extraction: Extraction, summary: Summary, path: Path | None = None) -> dict[str, Any]:
    """Compression ratio and counts (seed 001 metrics) for `ctxward session stats`."""
    found = {
        "decisions": len(extraction.decisions),
        "errors_and_fixes": len(extraction.errors_and_fixes),
        "action_items": len(extraction.action_items),
        "preferences": len(extraction.preferences),
        "level": int(bool(extraction.level)),
        "architecture": int(bool(extraction.pattern)) + len(extraction.stack),
        "skill_updates": len(extraction.skill_updates),
        "patterns": len(extraction.patterns),
    }
    return {
        "session_id": summary.session_id,
        "transcript": str(path) if path is not None else None,
        "duration": summary.duration,
        "messages": {"user": extraction.user_messages, "assistant": extraction.assistant_messages},
        "token_count": summary.token_count,
        "compressed_tokens": summary.compressed_tokens,
        "tokens_saved": summary.tokens_saved,
        "ratio": summary.ratio,
        "budget": summary.budget,
        "within_budget": summary.compressed_tokens <= summary.budget,
        "found": found,
        "kept": summary.counts(),
        "dropped": {name: len(items) for name, items in summary.dropped.items()},
        "overflow": {name: len(items) for name, items in summary.overflow.items()},
        "redactions": extraction.redactions,
    }


def as_dict(summary: Summary) -> dict[str, Any]:
    """The summary in the seed's shape (what the YAML holds), for --json."""
    block: dict[str, Any] = {
        "session_id": summary.session_id,
        "duration": summary.duration,
        "token_count": summary.token_count,
        "compressed_tokens": summary.compressed_tokens,
        "tokens_saved": summary.tokens_saved,
        **({"overflow": summary.held_over()} if summary.overflow else {}),
        "decisions": list(summary.decisions),
        "errors_and_fixes": list(summary.errors_and_fixes),
        "action_items": list(summary.action_items),
    }
    user: dict[str, Any] = {}
    if summary.level:
        user["level"] = summary.level
    if summary.preferences:
        user["preferences"] = list(summary.preferences)
    if user:
        block["user"] = user
    architecture = {}
    if summary.pattern:
        architecture["pattern"] = summary.pattern
    if summary.stack:
        architecture["stack"] = ", ".join(summary.stack)
    if architecture:
        block["architecture"] = architecture
    for name in ("skill_updates", "patterns"):
        if getattr(summary, name):
            block[name] = list(getattr(summary, name))
    return block
