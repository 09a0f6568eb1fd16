"""The rule type, and what every rule's vetting shares: placeholders and masks, randomness."""

from __future__ import annotations

import functools
import math
import re

# typing.TYPE_CHECKING without importing typing: hooks import this module on their hot path.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import TypedDict

    class Redaction(TypedDict):
        """One replaced span; `position` refers to the input text."""

        type: str
        position: tuple[int, int]
        replacement: str

    # What a vetter returns: the spans it redacts, `(start, end, type)`. A tuple, not a
    # generator: most candidates are refused in a few steps, and a generator for each was a
    # measurable share of that (bench/scrub_throughput.py, clean text: 28.0 -> 29.2 MB/s).
    Spans = tuple[tuple[int, int, str], ...]
    Vetter = Callable[["re.Match[str]", str, str], Spans]
    Matcher = Callable[["re.Pattern[str]", str], Iterator["re.Match[str]"]]


class Rule:
    """One detector: a regex anchored on a literal, and the function that vets its matches.

    `anchor`, when set, is a literal that every match of `pattern` contains: `find` returns at
    once when the text lacks it, so a rule's regex is only compiled (`regex`) once a text could
    hold a match. The anchor is looked for with a one-literal regex (cheap to compile), not
    `in`: `re`'s literal-prefix scan is as fast as the rule's own, where `str.__contains__` is
    up to 3x slower on two- or three-character needles (bench/scrub_throughput.py).
    """

    __slots__ = (
        "_anchor_pattern",
        "anchor",
        "defers",
        "kin",
        "matches",
        "name",
        "on_lowered",
        "parts",
        "pattern",
        "prefilter",
        "vet",
    )

    def __init__(
        self,
        name: str,
        pattern: str,
        on_lowered: bool,
        vet: Vetter,
        anchor: str | None,
        matches: Matcher | None = None,
        prefilter: Callable[[str], bool] | None = None,
        *,
        defers: bool = False,
    ) -> None:
        self.name = name
        self.pattern = pattern  # the source; compiled on first use
        self.on_lowered = on_lowered  # run on the lower-cased text (case-insensitive key words)
        self.vet = vet
        self.anchor = anchor  # looked for in the text the pattern runs on (lowered or not)
        self._anchor_pattern = re.escape(anchor) if anchor is not None else None
        # `pattern.finditer(haystack)`, or a function that yields exactly the same matches in
        # linear time where the regex engine alone would not (`_jwt_matches`).
        self.matches = matches
        # For a rule with no anchor: whether a text may hold a match at all, asked before the
        # pattern is compiled (the provider table's gates: `context._gate_hit`).
        self.prefilter = prefilter
        # The other anchors of the table that `anchor` contains (`link_parts`): one of them
        # absent from a text means this one is absent too.
        self.parts: tuple[str, ...] = ()
        # One regex for this anchor and the table's others that start with the same character
        # in the same text (`link_parts`), or None: one scan says whether any of them is there.
        self.kin: str | None = None
        # A rule named by a key (a generic assignment, a flag): its types rank below every
        # token format's, so a value a token rule already redacted (`covered`) is not vetted
        # again (`GITHUB_TOKEN=ghp_…`: the GitHub rule's). What it would add is inside that span.
        self.defers = defers

    def __repr__(self) -> str:
        return f"Rule({self.name!r})"

    def _anchored(self, haystack: str, present: dict[tuple[str, bool], bool] | None) -> bool:
        anchor = self.anchor
        assert anchor is not None and self._anchor_pattern is not None
        if present is None:
            return regex(self._anchor_pattern).search(haystack) is not None
        key = (anchor, self.on_lowered)
        known = present.get(key)
        if known is not None:
            return known
        on_lowered = self.on_lowered
        if any(present.get((part, on_lowered)) is False for part in self.parts):
            present[key] = False
            return False
        if self.kin is not None:
            kin_key = (self.kin, on_lowered)
            if kin_key not in present:  # one scan for them all; a hit leaves each to its own
                present[kin_key] = regex(self.kin).search(haystack) is not None
            if not present[kin_key]:
                present[key] = False
                return False
        # A long literal: `in` skips ahead (2x faster than re's scan); a short one: re's scan
        # (up to 3x faster than `in` on two or three characters).
        if len(anchor) >= _LONG_ANCHOR:
            held = anchor in haystack
        else:
            held = regex(self._anchor_pattern).search(haystack) is not None
        present[key] = held
        return held

    def find(
        self,
        text: str,
        lowered: str,
        present: dict[tuple[str, bool], bool] | None = None,
        covered: dict[int, int] | None = None,
    ) -> list[tuple[int, int, str]]:
        """The spans this rule redacts. `present` (one per text) remembers which anchors the
        text holds: several rules share one (`://`, `heroku`, `secret`, `auth`), and an anchor
        that holds an absent one (`sk-ant-`, `sk-`) is absent too, so it is looked for once.
        `covered` maps where a token rule's redaction starts to where it ends (`defers`)."""
        spans: list[tuple[int, int, str]] = []
        haystack = lowered if self.on_lowered else text
        if self.anchor is not None and not self._anchored(haystack, present):
            return spans
        if self.prefilter is not None and not self.prefilter(haystack):
            return spans
        pattern = regex(self.pattern)
        found = (
            pattern.finditer(haystack) if self.matches is None else self.matches(pattern, haystack)
        )
        add = spans.extend
        vet = self.vet
        if not self.defers:
            for match in found:
                add(vet(match, text, lowered))
        elif not covered:
            # A key-word rule's value that is refused wherever it stands (a reference, a mask, a
            # call: `assignments._REFUSED`) is not vetted.
            for match in found:
                if match.lastgroup != "refused":
                    add(vet(match, text, lowered))
        else:
            for match in found:
                # The value's group closes last (`assignments._vet_value`); an escaped value
                # may end past its group, so it is always vetted.
                group = match.lastgroup
                if group == "refused":
                    continue
                if group is not None and group != "escaped":
                    start, end = match.span(group)
                    if covered.get(start, -1) >= end:
                        continue
                add(vet(match, text, lowered))
        return spans


_LONG_ANCHOR = 10


def link_parts(rules: tuple[Rule, ...]) -> None:
    """Give each rule of a table the other anchors its own contains (`Rule.parts`), and its
    anchor's kin (`Rule.kin`): the anchors of two characters or more that start with the same
    character in the same text. Absent anchors cost a scan of the whole text each, and most
    texts hold few of them: `AIza` and `ATATT3`, `://` and `:AA`, `</` and `<value>` are
    looked for in one scan (`A(?:Iza|TATT3)` keeps `re`'s literal-prefix search)."""
    anchors = {rule.anchor for rule in rules if rule.anchor is not None}
    kin: dict[tuple[str, bool], set[str]] = {}
    for rule in rules:
        if rule.anchor is not None and len(rule.anchor) > 1:
            kin.setdefault((rule.anchor[0], rule.on_lowered), set()).add(rule.anchor)
    for rule in rules:
        anchor = rule.anchor
        if anchor is not None:
            rule.parts = tuple(sorted(a for a in anchors if a != anchor and a in anchor))
            group = kin.get((anchor[0], rule.on_lowered), set())
            rule.kin = None
            if anchor in group and len(group) > 1:  # (a one-character anchor is in none)
                rests = sorted({a[1:] for a in group}, key=lambda rest: (-len(rest), rest))
                rule.kin = re.escape(anchor[0]) + "(?:" + "|".join(map(re.escape, rests)) + ")"


@functools.cache
def regex(source: str) -> re.Pattern[str]:
    """`source` compiled, once per process and only when first used.

    Compiling the whole table at import took ~5 ms, paid by every hook that imports this module
    (a fresh interpreter each time, bench/hook_latency.py), though most texts have a candidate
    for few rules. Our own cache, not `re`'s: that one is shared and evicts.
    """
    return re.compile(source)


def split_words(text: str) -> list[str]:
    return text.split()


ASCII_LOWER = {code: code + 32 for code in range(ord("A"), ord("Z") + 1)}


UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"


_PLACEHOLDER_WORDS = frozenset(
    split_words(
        """
    password passwd pass pwd passphrase secret secrets token tokens apikey api_key api-key key
    changeme change_me change-me changeit none null nil undefined true false yes no on off
    required optional string str int bool boolean number any bytes object secretstr hidden
    masked redacted empty unset todo tbd test testing example sample dummy foo bar baz foobar
    admin root guest user username default env value values secret_value my_secret mysecret
    mypassword my_password your_password yourpassword letmein hunter2
        """
    )
)


# Marks of a placeholder inside a value. Words count only in one case (example, EXAMPLE,
# Example), so that a random token cannot spell one by chance (`yOUr`); the short ones must also
# start a word (`sk-your-key`, `YOUR_TOKEN`, not `abcyour`).
_MARK_WORDS = (
    "example",
    "sample",
    "placeholder",
    "changeme",
    "change_me",
    "change-me",
    "replace_me",
    "replace-me",
    "replaceme",
    "redacted",
    "insert",
    "notreal",
    "not-real",
    "not_real",
)


_MARK_SYMBOLS = (
    "xxxxx",
    "XXXXX",
    "****",
    "••",
    "…",
    "...",
    "<",
    ">",
    "{{",
    "}}",
    "${",
    "$(",
    "#{",
    "_here",
    "-here",
    "_HERE",
    "1234567890",
    "0123456789",
    "abcdefghij",
    "0000000000",
)


_MARK_SHORT = r"(?:^|[^A-Za-z0-9])(?:your|Your|YOUR|fake|Fake|FAKE|dummy|Dummy|DUMMY)"


# Every mark as it is looked for, spelled out once.
_MARKS = (
    *_MARK_SYMBOLS,
    *(form for word in _MARK_WORDS for form in (word, word.upper(), word.capitalize())),
)


_REFERENCE_PREFIXES = ("%", "@", "!", "&", "*", "vault:", "ref+", "arn:", "secretsmanager:")


# `$VAR`, `$VAR/path`, `${VAR}`, `$(cmd)`, `$1`: a shell or template reference, where `$ecr3t!x`
# is a password that starts with a dollar sign.
_SHELL_REFERENCE = r"\$(?:[{(]|[A-Za-z_][A-Za-z0-9_]*(?:[/.:@-]|\Z)|\d|\$|\Z)"


_SEQUENCES = "0123456789abcdefghijklmnopqrstuvwxyz"


def _alternation(literals: tuple[str, ...]) -> str:
    """One regex for "any of `literals`", grouped by first character (`a(?:bc|d)|x`).

    `re` has no multi-literal search: a flat alternation tries every branch at every position,
    where the grouped one lets the engine skip, in C, the positions whose character starts no
    literal (twice as fast on a 40-character token; each candidate a rule finds is vetted).
    """
    by_first: dict[str, list[str]] = {}
    for literal in literals:
        by_first.setdefault(literal[0], []).append(literal[1:])
    branches = []
    for first, rests in sorted(by_first.items()):
        tails = sorted(set(rests), key=len, reverse=True)
        if "" in tails:  # the character alone is a mark: the longer ones add nothing
            branches.append(re.escape(first))
        else:
            branches.append(re.escape(first) + "(?:" + "|".join(map(re.escape, tails)) + ")")
    return "|".join(branches)


_MARK = _alternation(_MARKS)


_SHORT_WORDS = ("your", "fake", "dummy")  # `_MARK_SHORT`'s words, lower-cased


def is_placeholder(value: str) -> bool:
    """True for values that only stand for a secret: masks, templates, references, examples."""
    stripped = value.strip().strip("\"'`")
    lowered = stripped.lower()
    if len(stripped) < 3 or lowered in _PLACEHOLDER_WORDS:
        return True
    if regex(_MARK).search(stripped) or (
        any(map(lowered.__contains__, _SHORT_WORDS)) and regex(_MARK_SHORT).search(stripped)
    ):
        return True
    if lowered.startswith(_REFERENCE_PREFIXES) or (
        stripped.startswith("$") and regex(_SHELL_REFERENCE).match(stripped)
    ):
        return True
    # xxxxxxxx, ********, aaaa-aaaa: two characters at most (the first 8 tell most tokens apart)
    if len(set(lowered[:8])) <= 2 and len(set(lowered)) <= 2:
        return True
    return len(lowered) >= 6 and lowered in _SEQUENCES


def looks_random(value: str, minimum: int = 8) -> bool:
    """True when `value` looks machine-generated rather than a word, a name or a number."""
    if len(value) < minimum:
        return False
    # No character is two of these, so each test is one scan in C (this runs on every candidate).
    has_digit = any(map(str.isdigit, value))
    has_lower = any(map(str.islower, value))
    has_upper = any(map(str.isupper, value))
    if has_digit and (has_lower or has_upper):
        return True
    if has_lower and has_upper and len(value) >= 16:
        return _entropy(value) >= 3.5
    return has_digit and len(value) >= 24 and _entropy(value) >= 3.0  # long numeric tokens


def _entropy(value: str) -> float:
    counts: dict[str, int] = {}
    for char in value:
        counts[char] = counts.get(char, 0) + 1
    size = len(value)
    return -sum(n / size * math.log2(n / size) for n in counts.values())


def word_before(text: str, start: int) -> bool:
    """True when the character before `start` would make the match part of a longer word.

    The `n` of an escaped newline (`\\n` in JSON-encoded text) does not count.
    """
    if start == 0:
        return False
    char = text[start - 1]
    if char in "ntr" and start >= 2 and text[start - 2] == "\\":
        return False
    return char.isalnum() or char in "_-+/"
