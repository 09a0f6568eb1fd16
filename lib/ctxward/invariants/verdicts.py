"""Graded survival verdicts: did a compaction summary keep a rule, alter it, or lose it?

- **kept**: the rule's words, in order, are in the part of the summary the model keeps, with
  differences of case, spacing or punctuation only, and nothing around them takes it back.
- **altered**: the words are there but the sentence goes on after them (a qualifier appended:
  "… unless the reviewer waives it"), or a negation or revocation stands before or after them
  in the same sentence ("no longer true that …", "the rule '…' was revoked"); or the words are
  not all there but most are, in order (a changed number or identifier, a word swapped).
- **lost**: not there at all, or only inside `<analysis>` (which Claude Code strips).

What is not certainly kept is restated: the false-certify rate on summaries that weaken,
mutate, contradict or drop a rule must stay 0, so every doubt goes to altered. A rule is kept
only when all of its words are in the summary (tests/invariants/test_verdicts.py, a property test).

Standard library only (and ctxward.core.scrub): PostCompact and SubagentStop grade every rule of
every trusted plan.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from ctxward.core.values import Value

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ctxward.invariants.model import RuleRef

KEPT, ALTERED, LOST = "kept", "altered", "lost"
_TOKEN = re.compile(r"\w+|[^\w\s]")
_SENTENCE_END = re.compile(r"[.!?;](?=\s|$)|\n")
# Words that, next to a quoted rule, take it back or weaken it: the weak ones only in the
# rule's own clause ("No tags at all: never push to main." keeps it), the strong ones in its
# whole sentence ("Revoked: never push to main." does not).
_WEAK = frozenset(["not", "no", "never", "isn", "t", "don", "doesn", "aren", "wasn"])
_STRONG = frozenset(
    [
        "longer",
        "revoked",
        "revoke",
        "revokes",
        "rescinded",
        "rescind",
        "waived",
        "waive",
        "waives",
        "waiver",
        "cancelled",
        "canceled",
        "cancel",
        "obsolete",
        "lifted",
        "suspended",
        "ignore",
        "ignored",
        "disregard",
        "disregarded",
        "dropped",
        "retired",
        "superseded",
        "replaced",
        "false",
        "untrue",
        "formerly",
        "previously",
        "unless",
        "except",
        "optional",
        "optionally",
        "exempt",
    ]
)
_NEGATION = _WEAK | _STRONG
_NEAR_MATCH = 0.6  # share of a rule's words, in order, that makes a near copy "altered"
_LOOK_BACK = 400  # characters before a quote searched for its sentence's start


class Verdict(Value):
    ref: RuleRef
    verdict: str  # kept | altered | lost
    why: str


class _Text:
    """A text's words (casefolded, punctuation left out) with where each one is."""

    __slots__ = ("first", "spans", "text", "words")

    def __init__(self, text: str) -> None:
        self.text = text
        self.words: list[str] = []
        self.spans: list[tuple[int, int]] = []
        for match in _TOKEN.finditer(text):
            word = match.group()
            if len(word) == 1 and unicodedata.category(word)[0] == "P":
                continue
            self.words.append(unicodedata.normalize("NFKC", word).casefold())
            self.spans.append(match.span())
        self.first: dict[str, list[int]] = {}
        for index, word in enumerate(self.words):
            self.first.setdefault(word, []).append(index)

    def find(self, words: Sequence[str]) -> list[int]:
        """Every index where `words` occur in a row."""
        if not words:
            return []
        size = len(words)
        return [i for i in self.first.get(words[0], ()) if self.words[i : i + size] == list(words)]


def words_of(text: str) -> list[str]:
    return _Text(text).words


def grade(rules: Sequence[RuleRef], compact_summary: str) -> list[Verdict]:
    """One verdict per rule, in order, against the summary the model keeps.

    The summary is scrubbed first: a verdict's `why` quotes its words, and a report is written.
    """
    from ctxward.core.scrub import redact
    from ctxward.invariants.summary import analysis_text, summary_text

    compact_summary = redact(compact_summary)
    kept = _Text(summary_text(compact_summary))
    analysis: _Text | None = None
    lines: list[list[str]] | None = None
    verdicts = []
    others = {tuple(words_of(ref.rule)) for ref in rules}
    for ref in rules:
        words = words_of(ref.rule)
        verdict = _verbatim(ref, words, kept, others)
        if verdict is None:
            if lines is None:
                lines = _unclaimed(kept.text, others)
            verdict = _near(ref, words, lines)
        if verdict is None:
            if analysis is None:
                analysis = _Text(analysis_text(compact_summary))
            where = " (it is only inside <analysis>, which the model never sees)"
            why = "not in the summary" + (where if analysis.find(words) else "")
            verdict = Verdict(ref, LOST, why)
        verdicts.append(verdict)
    return verdicts


def _verbatim(
    ref: RuleRef, words: list[str], text: _Text, others: set[tuple[str, ...]]
) -> Verdict | None:
    hits = text.find(words)
    if not hits:
        return None
    for hit in hits:
        start = text.spans[hit][0]
        end = text.spans[hit + len(words) - 1][1]
        problem = _taken_back(text.text, start, end, others)
        if problem:
            return Verdict(ref, ALTERED, problem)
    exact = ref.rule.strip().rstrip(".") in text.text
    return Verdict(ref, KEPT, "verbatim" if exact else "differs in case, spacing or punctuation")


def _taken_back(text: str, start: int, end: int, others: set[tuple[str, ...]]) -> str:
    """Why the quote text[start:end] does not stand as the rule ('' when it does).

    `others`: every rule's words; a sentence that goes on with "and <another rule>" is a list.
    """
    window = text[max(0, start - _LOOK_BACK) : start]
    ends = list(_SENTENCE_END.finditer(window))
    before = window[ends[-1].end() :] if ends else window
    stop = _SENTENCE_END.search(text, end)
    after = text[end : stop.start() if stop else len(text)]
    clause = _unlisted(words_of(before[before.rfind(":") + 1 :]), others)
    said = [w for w in _unlisted(words_of(before), others) if w in _STRONG] or [
        w for w in clause if w in _WEAK
    ]
    if said:
        return f"{said[-1]!r} stands before the rule in its sentence"
    appended = words_of(re.sub(r"\([^()]*(?:\)|$)|\[[^\[\]]*(?:\]|$)", " ", after))
    listed = appended[1:] if appended[:1] == ["and"] else appended
    if any(tuple(listed[: len(rule)]) == rule for rule in others if rule):
        appended = []  # "<rule> and <another rule>": a list, the other one graded on its own
    if appended:
        return f"the sentence goes on after the rule: {' '.join(appended[:8])!r}"
    aside = [w for w in words_of(after) if w in _NEGATION]
    if aside:
        return f"{aside[0]!r} follows the rule in its sentence"
    if stop is not None and stop.group() != "\n":  # the next sentence, on the same line
        line_end = text.find("\n", stop.end())
        following = text[stop.end() : line_end if line_end >= 0 else len(text)]
        nxt = _SENTENCE_END.search(following)
        said = [w for w in words_of(following[: nxt.start() if nxt else None]) if w in _NEGATION]
        if said:
            return f"the next sentence says {said[0]!r}"
    return ""


def _unlisted(words: list[str], others: set[tuple[str, ...]]) -> list[str]:
    """`words` before a quote without the rules listed ahead of it ("<rule> and <quote>")."""
    trimmed = True
    while trimmed and words:
        trimmed = False
        if words[-1] == "and":
            words, trimmed = words[:-1], True
        for rule in others:
            if rule and tuple(words[-len(rule) :]) == rule:
                words, trimmed = words[: -len(rule)], True
                break
    return words


def _unclaimed(text: str, rules: set[tuple[str, ...]]) -> list[list[str]]:
    """The summary's lines as words, less those that carry another rule verbatim: a line that
    is rule B is not a near copy of rule A, however alike the two are."""
    joined = [" " + " ".join(rule) + " " for rule in rules if rule]
    lines = []
    for line in text.splitlines():
        words = words_of(line)
        padded = " " + " ".join(words) + " "
        if words and not any(rule in padded for rule in joined):
            lines.append(words)
    return lines


def _near(ref: RuleRef, words: list[str], lines: list[list[str]]) -> Verdict | None:
    """Altered when one line holds most of the rule's words in order; None when none does."""
    from difflib import SequenceMatcher

    if len(words) < 2:
        return None
    wanted = set(words)
    best: tuple[float, list[str]] | None = None
    for line in lines:
        if len(wanted.intersection(line)) < _NEAR_MATCH * len(wanted):
            continue
        matcher = SequenceMatcher(None, words, line, autojunk=False)
        share = sum(block.size for block in matcher.get_matching_blocks()) / len(words)
        if share >= _NEAR_MATCH and (best is None or share > best[0]):
            best = (share, line)
    if best is None:
        return None
    matcher = SequenceMatcher(None, words, best[1], autojunk=False)
    changes = []
    blocks = matcher.get_matching_blocks()
    first, last = blocks[0].b, blocks[-2].b + blocks[-2].size if len(blocks) > 1 else 0
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal" or (tag == "insert" and not first <= j1 <= last):
            continue
        was, now = " ".join(words[i1:i2]), " ".join(best[1][j1:j2])
        if was and now:
            changes.append(f"{was!r} became {now!r}")
        else:
            changes.append(f"dropped {was!r}" if was else f"added {now!r}")
    detail = "; ".join(changes[:4]) or "reworded"
    return Verdict(ref, ALTERED, f"a near copy ({best[0]:.0%} of its words): {detail}")
