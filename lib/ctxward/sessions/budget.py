"""The budget: the summary block held under its token limit, what is cut kept under `dropped:`."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from ctxward.core.text import estimate_tokens
from ctxward.core.values import Value, field
from ctxward.sessions.extract import Extraction
from ctxward.sessions.patterns import CRITICAL, MAX_TOKENS, budget_for


class Summary(Value):
    """The seed's summary after the budget; `dropped` keeps what the budget cut."""

    session_id: str
    duration: str
    token_count: int
    decisions: tuple[str, ...] = ()
    errors_and_fixes: tuple[str, ...] = ()
    action_items: tuple[str, ...] = ()
    level: str = ""
    preferences: tuple[str, ...] = ()
    pattern: str = ""
    stack: tuple[str, ...] = ()
    skill_updates: tuple[str, ...] = ()
    patterns: tuple[str, ...] = ()
    compressed_tokens: int = 0
    dropped: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # Critical items kept in the file, not the block.
    overflow: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def tokens_saved(self) -> int:
        return max(self.token_count - self.compressed_tokens, 0)

    @property
    def ratio(self) -> float:
        return round(self.token_count / self.compressed_tokens, 1) if self.compressed_tokens else 0

    @property
    def architecture(self) -> tuple[str, ...]:
        """The architecture's entries in truncation order: the pattern, then the stack."""
        return ((self.pattern,) if self.pattern else ()) + self.stack

    def counts(self) -> dict[str, int]:
        return {
            "decisions": len(self.decisions),
            "errors_and_fixes": len(self.errors_and_fixes),
            "action_items": len(self.action_items),
            "preferences": len(self.preferences),
            "level": int(bool(self.level)),
            "architecture": len(self.architecture),
            "skill_updates": len(self.skill_updates),
            "patterns": len(self.patterns),
        }

    def is_empty(self) -> bool:
        return not any(self.counts().values()) and not self.held_over()

    @property
    def budget(self) -> int:
        return budget_for(self.token_count)

    def held_over(self) -> int:
        """How many decisions, errors and action items are in the file's `overflow:` only."""
        return sum(len(items) for items in self.overflow.values())

    def everything(self, name: str) -> tuple[str, ...]:
        """A critical category whole: the block's items, then the file's overflow."""
        items: tuple[str, ...] = getattr(self, name)
        return items + tuple(self.overflow.get(name, ()))


def yaml_quoted(text: str) -> str:
    """`text` as a YAML double-quoted scalar (JSON's escapes, plus YAML's line breaks)."""
    quoted = json.dumps(text, ensure_ascii=False)
    if quoted.isprintable():
        return quoted
    return "".join(ch if ch.isprintable() else _escape(ch) for ch in quoted)


def _escape(ch: str) -> str:
    code = ord(ch)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def _model(summary: Summary) -> dict[str, Any]:
    """The template's view of a summary: every string already quoted for YAML."""
    return {
        "session_id": yaml_quoted(summary.session_id),
        "duration": yaml_quoted(summary.duration),
        "token_count": summary.token_count,
        "compressed_tokens": summary.compressed_tokens,
        "tokens_saved": summary.tokens_saved,
        "decisions": [yaml_quoted(t) for t in summary.decisions],
        "errors_and_fixes": [yaml_quoted(t) for t in summary.errors_and_fixes],
        "action_items": [yaml_quoted(t) for t in summary.action_items],
        "level": yaml_quoted(summary.level) if summary.level else "",
        "preferences": [yaml_quoted(t) for t in summary.preferences],
        "pattern": yaml_quoted(summary.pattern) if summary.pattern else "",
        "stack": yaml_quoted(", ".join(summary.stack)) if summary.stack else "",
        "skill_updates": [yaml_quoted(t) for t in summary.skill_updates],
        "patterns": [yaml_quoted(t) for t in summary.patterns],
        "overflow": summary.held_over(),
    }


def render_block(summary: Summary) -> str:
    """The `session_summary:` block as written to disk."""
    from ctxward.core.render import render

    return render("sessions/summary_block.yaml.j2", s=_model(summary))


def _tokens(summary: Summary) -> int:
    return estimate_tokens(render_block(summary))


def _category_tokens(summary: Summary, name: str) -> int:
    """The estimated tokens of one lower category's content (the seed's "Max Tokens")."""
    if name == "architecture":
        items: tuple[str, ...] = (summary.pattern, ", ".join(summary.stack))
    elif name == "level":
        items = (summary.level,)
    else:
        items = getattr(summary, name)
    return estimate_tokens("".join(items))


class _Budget:
    """Applies the caps and the seed's truncation loop, remembering what it cut."""

    def __init__(self, summary: Summary) -> None:
        self.summary = summary
        self.dropped: dict[str, list[str]] = {}

    def _drop(self, name: str, items: Iterable[str]) -> None:
        kept = [item for item in items if item]
        if kept:
            self.dropped.setdefault(name, [])[:0] = kept

    def cut(self, name: str, *, whole: bool = False) -> bool:
        """Remove one entry of a lower category (its last), or all of it when `whole`.

        False when the category is already empty.
        """
        s = self.summary
        if name == "patterns" and s.patterns:
            cut = s.patterns if whole else s.patterns[-1:]
            self._drop(name, cut)
            self.summary = s.replace(patterns=s.patterns[: len(s.patterns) - len(cut)])
        elif name == "architecture" and s.stack:
            self._drop("architecture", ["stack: " + s.stack[-1]])
            self.summary = s.replace(stack=s.stack[:-1])
        elif name == "architecture" and s.pattern:
            self._drop("architecture", ["pattern: " + s.pattern])
            self.summary = s.replace(pattern="")
        elif name in ("skill_updates", "preferences") and getattr(s, name):
            items = getattr(s, name)
            self._drop(name, items[-1:])
            self.summary = s.replace(**{name: items[:-1]})
        elif name == "level" and s.level:
            self._drop(name, [s.level])
            self.summary = s.replace(level="")
        else:
            return False
        return True

    def over(self) -> bool:
        self.summary = _settle(self.summary)
        return self.summary.compressed_tokens > self.summary.budget

    def refill(self) -> None:
        """Bring back, category by category, the first held-over item while it fits: a long
        error moved out can leave room for a short action item."""
        moved = True
        while moved:
            moved = False
            for name in CRITICAL:
                held = self.summary.overflow.get(name, ())
                if not held:
                    continue
                overflow = {**self.summary.overflow, name: held[1:]}
                if not overflow[name]:
                    del overflow[name]
                back = getattr(self.summary, name) + held[:1]
                candidate = _settle(self.summary.replace(overflow=overflow, **{name: back}))
                if candidate.compressed_tokens <= candidate.budget:
                    self.summary, moved = candidate, True

    def hold_over(self) -> bool:
        """Move one critical item from the block to the file's overflow: the last of the
        category with the most items left (the lower priority on a tie), so each keeps its
        first items in the block. False when the block holds none."""
        s = self.summary
        left = [(len(getattr(s, name)), rank, name) for rank, name in enumerate(CRITICAL)]
        count, _, name = max(left)
        if not count:
            return False
        items: tuple[str, ...] = getattr(s, name)
        overflow = dict(s.overflow)
        overflow[name] = items[-1:] + tuple(overflow.get(name, ()))
        self.summary = _settle(s.replace(overflow=overflow, **{name: items[:-1]}))
        return True

    def apply(self) -> Summary:
        for name in ("patterns", "skill_updates", "architecture", "level", "preferences"):
            while _category_tokens(self.summary, name) > MAX_TOKENS[name] and self.cut(name):
                pass
        while self.over():  # seed 001: patterns, then architecture and skill updates by turns
            progressed = self.cut("patterns", whole=True)  # the seed empties the lowest
            if self.over():
                progressed = self.cut("architecture") or progressed
            if self.over():
                progressed = self.cut("skill_updates") or progressed
            if not progressed:
                break
        while self.over() and self.cut("preferences"):  # then the user's preferences
            pass
        while self.over() and self.hold_over():  # then critical items move to the file
            pass
        self.refill()
        while self.over() and self.cut("level"):  # the level (≤ 10 tokens) only if all else
            pass
        dropped = {name: tuple(items) for name, items in self.dropped.items()}
        return _settle(self.summary.replace(dropped=dropped))


def _settle(summary: Summary) -> Summary:
    """Fill in compressed_tokens, which counts itself (a fixed point after a step or two)."""
    for _ in range(4):
        tokens = _tokens(summary)
        if tokens == summary.compressed_tokens:
            break
        summary = summary.replace(compressed_tokens=tokens)
    return summary


def compress(extraction: Extraction) -> Summary:
    """The extraction within the seed's budget (decisions, errors and actions never cut)."""
    carried = [name for name in Summary.__slots__ if hasattr(extraction, name)]  # not the budget's
    summary = Summary(**{name: getattr(extraction, name) for name in carried})
    return _Budget(summary).apply()
