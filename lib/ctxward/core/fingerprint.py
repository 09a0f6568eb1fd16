"""Content fingerprints (seed 002, "Fingerprint Generation"): a rule's identity across edits.

`normalise` lowercases and strips whitespace and punctuation, as the seed's `normalize()` does,
so a fingerprint survives a re-indented, re-cased or re-punctuated copy of a rule and changes
with any other edit (a word, a number, an identifier; symbols such as `<` or `=` are kept: they
carry meaning). `fingerprint` is the sha256 of that, hex; `short` its first 12 digits, as
`plan list` and the survival reports show it. A plan's fingerprint is that of its rules' sorted
fingerprints: the same rules in another order or another section layout are the same plan.

Standard library only (the compaction hooks fingerprint every rule on every run).
"""

from __future__ import annotations

import functools
import hashlib
import unicodedata
from collections.abc import Iterable

SHORT = 12


# ASCII text (nearly every rule) takes one str.translate: its punctuation (category P) and
# whitespace and control characters deleted; $+<=>^`|~ are symbols (S) and stay.
_ASCII_DROPPED = {code: None for code in range(128) if unicodedata.category(chr(code))[0] in "PZC"}


def normalise(text: str) -> str:
    """`text` casefolded, without whitespace or punctuation (Unicode categories Z*, C*, P*)."""
    if text.isascii():
        return text.lower().translate(_ASCII_DROPPED)
    return "".join(
        char
        for char in unicodedata.normalize("NFKC", text).casefold()
        if not char.isspace() and unicodedata.category(char)[0] not in "PZC"
    )


# Remembered: a compaction hook fingerprints each rule several times (dedupe, the channels, the
# ledger), and the same skill activated in many plans repeats the same rules.
@functools.lru_cache(maxsize=65_536)
def fingerprint(text: str) -> str:
    """The hex sha256 of `normalise(text)`."""
    return hashlib.sha256(normalise(text).encode("utf-8", "surrogatepass")).hexdigest()


def short(digest: str) -> str:
    return digest[:SHORT]


def of_rules(rules: Iterable[str]) -> str:
    """A set of rules' fingerprint: order-free, a rule stated twice counted once."""
    prints = sorted({fingerprint(rule) for rule in rules})
    return hashlib.sha256("\n".join(prints).encode("ascii")).hexdigest()
