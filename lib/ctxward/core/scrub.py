"""Secret scrubbing: `scrub(text) -> (text, redactions)`, the project's one pattern table.

Every writer and injector calls `scrub` before text is persisted or shown to a model (seed 000
§13, Layer 2). Standard library only: hooks call it on their hot path.

The table: the rules below (keys, vendor tokens, connection strings, generic assignments), then
the provider formats as data (`scrub_providers.py`, behind one gate) and the contextual
detectors (`scrub_context.py`), then a second pass (`_repeats`) that removes every other
occurrence of a value already found, and the project's own `scrub:` config (`configure`, checked
by `scrub_config.py`). `explain` names the rule of each redaction (`ctxward scrub --explain`).

How it stays fast (bench/scrub_throughput.py: text with few secrets ~20-30 MB/s; dense secrets
are slower, each candidate being vetted in Python): every rule is one
regular expression that starts with a literal anchor (`-----BEGIN`, `ghp_`, `sk-`, `AKIA`, `eyJ`,
`://`, or a key word such as `token` followed by an assignment), so the regex engine skips
through the text in C and Python only sees real candidates. Each candidate is then checked by
the rule's validator (placeholders, masked values, documentation examples, code references),
overlapping spans are merged, and the spans are replaced from the left.

How it stays linear (a hook scrubs whatever a prompt or a transcript holds, within its time
budget): Python's `re` backtracks, and a rule that scans a bounded run after its anchor costs
that run again at every anchor inside it. Where nothing after the run could start inside it,
the run is matched atomically, `(?=(?P<name>[...]{0,n}))(?P=name)`, so a failed try gives none
of it back (the generic key tails, heroku, curl -u). Where the run is long (a JWT header: 8 KB),
a rule's own finder skips the starts that cannot match and yields exactly finditer's matches
(`Rule.matches`: `_jwt_matches`, `_flag_matches`). tests/test_scrub.py feeds every rule
repeats of its own prefix and alphabet at 100 KB and 1 MB, and bounds the time as a ratio.

How it stays cheap to import (hooks import it in a fresh interpreter each time): no regex is
compiled at import. A rule runs only when one of its anchors occurs in the text (a substring
search), and its regex, like the validators' helper regexes, is compiled on first use (`_regex`).

What is never redacted: placeholders and masked values (`<your-api-key>`, `${TOKEN}`, `********`,
`changeme`, `...EXAMPLE`), hashes, UUIDs and git SHAs outside a secret's context, base64 images,
public keys and already-redacted markers (scrubbing is idempotent).

Several patterns follow gitleaks' rules (config/gitleaks.toml at commit b58d3f1; MIT License,
Copyright (c) 2019 Zachary Rice), adapted to Python's backtracking `re` with bounded quantifiers.
"""

from __future__ import annotations

import functools
import math
import re
import sys

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

    Vetter = Callable[["re.Match[str]", str, str], Iterator[tuple[int, int, str]]]
    Matcher = Callable[["re.Pattern[str]", str], Iterator["re.Match[str]"]]

from ctxward.core.scrub_providers import TYPES as _PROVIDER_TYPES  # noqa: E402

REPLACEMENT = "[REDACTED:{type}]"

# The types a redaction can carry, most specific first (a lower rank wins an overlap).
SECRET_TYPES: dict[str, str] = {
    "ssh_private_key": "OpenSSH / PuTTY private key block",
    "private_key": "PEM or PGP private key block (RSA, EC, DSA, PKCS#8, encrypted)",
    "certificate": "PEM certificate block",
    "anthropic_key": "Anthropic API key (sk-ant-…)",
    "openai_key": "OpenAI API key (sk-…, sk-proj-…)",
    "github_token": "GitHub token (ghp_, gho_, ghu_, ghs_, ghr_, github_pat_)",
    "slack_token": "Slack token (xoxb-, xoxp-, xapp-, …)",
    "slack_webhook": "Slack incoming-webhook path",
    "google_api_key": "Google API key (AIza…)",
    "aws_access_key_id": "AWS access key id (AKIA…, ASIA…)",
    "aws_secret_access_key": "AWS secret access key",
    "heroku_api_key": "Heroku API key",
    **_PROVIDER_TYPES,
    "jwt": "JSON Web Token",
    "postgres_url": "password in a PostgreSQL connection string",
    "mysql_url": "password in a MySQL / MariaDB connection string",
    "redis_url": "password in a Redis connection string",
    "mongodb_url": "password in a MongoDB connection string",
    "url_password": "password in another URL (user:password@host)",
    "bearer_token": "Bearer token",
    "basic_auth": "HTTP Basic credentials",
    "env_export": "credential in a shell export statement",
    "api_key": "api_key assignment",
    "token": "token assignment",
    "secret": "secret assignment",
    "password": "password assignment",
}
_RANK = {name: index for index, name in enumerate(SECRET_TYPES)}


def scrub(text: str) -> tuple[str, list[Redaction]]:
    """Return `text` with every secret replaced by `[REDACTED:<type>]`, and the redactions."""
    redactions = find(text)
    if not redactions:
        return text, redactions
    pieces: list[str] = []
    cursor = 0
    for redaction in redactions:
        start, end = redaction["position"]
        pieces.append(text[cursor:start])
        pieces.append(redaction["replacement"])
        cursor = end
    pieces.append(text[cursor:])
    return "".join(pieces), redactions


def redact(text: str) -> str:
    """`scrub(text)`'s text alone."""
    return scrub(text)[0]


def find(text: str) -> list[Redaction]:
    """The redactions `scrub` would make, sorted and non-overlapping."""
    if not text:
        return []
    lowered = text.lower()
    if len(lowered) != len(text):  # a few non-ASCII letters change length when lowered
        lowered = text.translate(_ASCII_LOWER)
    spans: list[tuple[int, int, str]] = []
    present: dict[tuple[str, bool], bool] = {}
    for rule in RULES + _USER_RULES:
        spans.extend(rule.find(text, lowered, present))
    if _ALLOW and spans:
        spans = [span for span in spans if text[span[0] : span[1]] not in _ALLOW]
    if spans:
        spans.extend(_repeats(text, spans))
    return _merge(spans)


# The project's `scrub:` config section (scrub_config.py), once a config has been loaded.
_ALLOW: frozenset[str] = frozenset()
_USER_RULES: tuple[Rule, ...] = ()


def configure(*, allow: frozenset[str], rules: tuple[tuple[str, str, str], ...]) -> None:
    """Put a project's allowlist and extra rules `(id, type, pattern)` in force for `scrub()`.

    The patterns come checked by `scrub_config.unsafe` (bounded, anchored on a literal). A rule
    type is added to `SECRET_TYPES` ranked last, so a built-in type wins an overlap.
    """
    from ctxward.core.scrub_config import keyword_of

    global _ALLOW, _USER_RULES
    _ALLOW = allow
    built = []
    for rule_id, kind, pattern in rules:
        if kind not in _RANK:
            _RANK[kind] = len(_RANK)
        built.append(
            Rule(f"user:{rule_id}", pattern, False, _user_vetter(kind), keyword_of(pattern))
        )
    _USER_RULES = tuple(built)


def _user_vetter(kind: str) -> Vetter:
    def vet(match: re.Match[str], text: str, lowered: str) -> Iterator[tuple[int, int, str]]:
        group = "secret" if "secret" in match.re.groupindex else 0
        start, end = match.span(group)
        if end > start and not is_placeholder(text[start:end]):
            yield start, end, kind

    return vet


def explain(text: str) -> list[tuple[Redaction, str]]:
    """`find(text)`, each redaction with the id of the rule that made it (`repeat`: the second
    pass, a value some rule found elsewhere in the text)."""
    if not text:
        return []
    lowered = text.lower()
    if len(lowered) != len(text):
        lowered = text.translate(_ASCII_LOWER)
    named: list[tuple[int, int, str, str]] = []
    present: dict[tuple[str, bool], bool] = {}
    for rule in RULES + _USER_RULES:
        found = rule.find(text, lowered, present)
        named.extend((start, end, kind, rule.name) for start, end, kind in found)
    if _ALLOW:
        named = [n for n in named if text[n[0] : n[1]] not in _ALLOW]
    spans = [(start, end, kind) for start, end, kind, _ in named]
    if spans:
        named.extend((start, end, kind, "repeat") for start, end, kind in _repeats(text, spans))
        spans = [(start, end, kind) for start, end, kind, _ in named]
    named.sort()
    explained: list[tuple[Redaction, str]] = []
    index = 0
    for redaction in _merge(spans):
        start, end = redaction["position"]
        while index < len(named) and named[index][1] <= start:
            index += 1
        # The first rule of the winning type inside the redaction; `repeat` only when no rule
        # found this occurrence itself (the second pass finds the first occurrences again).
        rule_id = "repeat"
        for n in named[index:]:
            if n[0] >= end:
                break
            if n[2] == redaction["type"] and n[3] != "repeat" and n[1] > start:
                rule_id = n[3]
                break
        explained.append((redaction, rule_id))
    return explained


_REPEAT_MAX = 4096
_REPEAT_MIN = 8  # a shorter value could be a word that happens to be a password elsewhere
_REPEAT_RUN = r"[A-Za-z0-9]{8,}"
_FIND_EACH = 16  # up to this many values, one `str.find` scan each; past it, one run scan


def _repeats(text: str, spans: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """Every other occurrence of a value already found: once a secret is known, it goes
    everywhere (`--password X` on one line, X bare in a log line later).

    Linear in practice: with few values, one substring scan each; with many, one count of the
    runs of letters and digits, and a scan only for the values whose first run the text holds
    more often than they were found (an occurrence of a value holds that run, whole, wherever
    the value stands as a token of its own).
    """
    values: dict[str, str] = {}
    seen: dict[str, int] = {}  # how often each value was found already
    for start, end, kind in spans:
        if not _REPEAT_MIN <= end - start <= _REPEAT_MAX:
            continue  # a key block is not repeated token by token
        value = text[start:end]
        if "\n" not in value:
            values.setdefault(value, kind)
            seen[value] = seen.get(value, 0) + 1
    found: list[tuple[int, int, str]] = []
    if len(values) > _FIND_EACH:
        # Many values: count the runs of letters and digits once (in C), and look again only
        # for a value whose first run occurs more often than the value was found.
        from collections import Counter

        run = _regex(_REPEAT_RUN)
        counts = Counter(run.findall(text))
        wanted: dict[str, str] = {}
        for value, kind in values.items():
            first = run.search(value)
            if first is None or counts[first.group(0)] > seen[value]:
                wanted[value] = kind
        values = wanted
    for value, kind in values.items():
        at = text.find(value)
        while at >= 0:
            found.append((at, at + len(value), kind))
            at = text.find(value, at + len(value))
    return found


# --------------------------------------------------------------------------------------------
# The rule table


class Rule:
    """One detector: a regex anchored on a literal, and the function that vets its matches.

    `anchor`, when set, is a literal that every match of `pattern` contains: `find` returns at
    once when the text lacks it, so a rule's regex is only compiled (`_regex`) once a text could
    hold a match. The anchor is looked for with a one-literal regex (cheap to compile), not
    `in`: `re`'s literal-prefix scan is as fast as the rule's own, where `str.__contains__` is
    up to 3x slower on two- or three-character needles (bench/scrub_throughput.py).
    """

    __slots__ = ("_anchor_pattern", "anchor", "matches", "name", "on_lowered", "pattern", "vet")

    def __init__(
        self,
        name: str,
        pattern: str,
        on_lowered: bool,
        vet: Vetter,
        anchor: str | None,
        matches: Matcher | None = None,
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

    def __repr__(self) -> str:
        return f"Rule({self.name!r})"

    def _anchored(self, haystack: str, present: dict[tuple[str, bool], bool] | None) -> bool:
        anchor = self.anchor
        assert anchor is not None and self._anchor_pattern is not None
        if present is None:
            return _regex(self._anchor_pattern).search(haystack) is not None
        key = (anchor, self.on_lowered)
        known = present.get(key)
        if known is not None:
            return known
        if any(
            not held and lowered == self.on_lowered and part in anchor
            for (part, lowered), held in present.items()
        ):
            present[key] = False
            return False
        # A long literal: `in` skips ahead (2x faster than re's scan); a short one: re's scan
        # (up to 3x faster than `in` on two or three characters).
        if len(anchor) >= _LONG_ANCHOR:
            held = anchor in haystack
        else:
            held = _regex(self._anchor_pattern).search(haystack) is not None
        present[key] = held
        return held

    def find(
        self, text: str, lowered: str, present: dict[tuple[str, bool], bool] | None = None
    ) -> Iterator[tuple[int, int, str]]:
        """The spans this rule redacts. `present` (one per text) remembers which anchors the
        text holds: several rules share one (`://`, `heroku`, `secret`, `auth`), and an anchor
        that holds an absent one (`sk-ant-`, `sk-`) is absent too, so it is looked for once."""
        haystack = lowered if self.on_lowered else text
        if self.anchor is not None and not self._anchored(haystack, present):
            return
        pattern = _regex(self.pattern)
        found = (
            pattern.finditer(haystack) if self.matches is None else self.matches(pattern, haystack)
        )
        for match in found:
            yield from self.vet(match, text, lowered)


_LONG_ANCHOR = 10


@functools.cache
def _regex(source: str) -> re.Pattern[str]:
    """`source` compiled, once per process and only when first used.

    Compiling the whole table at import took ~5 ms, paid by every hook that imports this module
    (a fresh interpreter each time, bench/hook_latency.py), though most texts have a candidate
    for few rules. Our own cache, not `re`'s: that one is shared and evicts.
    """
    return re.compile(source)


def _words(text: str) -> list[str]:
    return text.split()


_ASCII_LOWER = {code: code + 32 for code in range(ord("A"), ord("Z") + 1)}
_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"

# -- placeholders, masks, references ---------------------------------------------------------

_PLACEHOLDER_WORDS = frozenset(
    _words(
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
# Every mark as it is looked for, spelled out once (each candidate a rule finds is vetted).
_MARKS = (
    *_MARK_SYMBOLS,
    *(form for word in _MARK_WORDS for form in (word, word.upper(), word.capitalize())),
)
_REFERENCE_PREFIXES = ("%", "@", "!", "&", "*", "vault:", "ref+", "arn:", "secretsmanager:")
# `$VAR`, `$VAR/path`, `${VAR}`, `$(cmd)`, `$1`: a shell or template reference, where `$ecr3t!x`
# is a password that starts with a dollar sign.
_SHELL_REFERENCE = r"\$(?:[{(]|[A-Za-z_][A-Za-z0-9_]*(?:[/.:@-]|\Z)|\d|\$|\Z)"
_SEQUENCES = "0123456789abcdefghijklmnopqrstuvwxyz"


# The marks split for speed (every candidate is vetted): the ones with a symbol are looked for
# only in a value that has a symbol; each word is looked for once, lower-cased, and only when
# found, in the cases that count.
_SYMBOL_MARKS = tuple(mark for mark in _MARKS if not mark.isalnum())
_ALNUM_MARKS = tuple(mark for mark in _MARKS if mark.isalnum())
_MARKS_BY_LOWER: dict[str, tuple[str, ...]] = {}
for _mark in _ALNUM_MARKS:
    _MARKS_BY_LOWER[_mark.lower()] = (*_MARKS_BY_LOWER.get(_mark.lower(), ()), _mark)
del _mark


_LOWER_MARKS = tuple(_MARKS_BY_LOWER)
_SHORT_WORDS = ("your", "fake", "dummy")  # `_MARK_SHORT`'s words, lower-cased


def _has_mark(stripped: str, lowered: str) -> bool:
    # `map` over a bound `__contains__`: each test runs in C, with no generator frame (every
    # candidate is vetted; this was a third of the time on secret-dense text).
    if not stripped.isalnum() and any(map(stripped.__contains__, _SYMBOL_MARKS)):
        return True
    if not any(map(lowered.__contains__, _LOWER_MARKS)):
        return False  # no word in any case: none in the cases that count
    return any(
        low in lowered and any(mark in stripped for mark in forms)
        for low, forms in _MARKS_BY_LOWER.items()
    )


def is_placeholder(value: str) -> bool:
    """True for values that only stand for a secret: masks, templates, references, examples."""
    stripped = value.strip().strip("\"'`")
    lowered = stripped.lower()
    if len(stripped) < 3 or lowered in _PLACEHOLDER_WORDS:
        return True
    if _has_mark(stripped, lowered) or (
        any(map(lowered.__contains__, _SHORT_WORDS)) and _regex(_MARK_SHORT).search(stripped)
    ):
        return True
    if lowered.startswith(_REFERENCE_PREFIXES) or (
        stripped.startswith("$") and _regex(_SHELL_REFERENCE).match(stripped)
    ):
        return True
    if len(set(lowered)) <= 2:  # xxxxxxxx, ********, aaaa-aaaa
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


def _word_before(text: str, start: int) -> bool:
    """True when the character before `start` would make the match part of a longer word.

    The `n` of an escaped newline (`\\n` in JSON-encoded text) does not count.
    """
    if start == 0:
        return False
    char = text[start - 1]
    if char in "ntr" and start >= 2 and text[start - 2] == "\\":
        return False
    return char.isalnum() or char in "_-+/"


# -- private keys and certificates ------------------------------------------------------------

_PEM_HEADER = (
    r"----(?P<dash>-?) ?BEGIN (?P<label>(?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?"
    r"|(?:TRUSTED |X509 )?CERTIFICATE) ?----(?P=dash)"
)
# A truncated block (no END line): base64 runs separated by whitespace, quotes, commas or
# escaped newlines, plus the encrypted-PEM headers.
_PEM_TRUNCATED_BODY = (
    r"(?:(?:\\[rn]|[\s\"',])*"
    r"(?:[A-Za-z0-9+/=]{8,}|Proc-Type:[^\n]{0,80}|DEK-Info:[^\n]{0,120})){0,2000}"
)
_PEM_MAX_BODY = 65_536


def _vet_pem(match: re.Match[str], text: str, lowered: str) -> Iterator[tuple[int, int, str]]:
    label = match.group("label")
    header = match.group(0)
    end_marker = header.replace("BEGIN", "END", 1)
    # A block ends before the next one begins: each header's search stops at the next BEGIN, so
    # a text of headers alone is scanned once, not once per header (64 KB each).
    start = match.end()
    following = text.find("BEGIN ", start, start + _PEM_MAX_BODY)
    end = text.find(end_marker, start, following if following >= 0 else start + _PEM_MAX_BODY)
    if end >= 0:
        stop = end + len(end_marker)
    else:
        body = _regex(_PEM_TRUNCATED_BODY).match(text, match.end())
        stop = body.end() if body else match.end()
    if "CERTIFICATE" in label:
        kind = "certificate"
    elif label.startswith(("OPENSSH", "SSH2")):
        kind = "ssh_private_key"
    else:
        kind = "private_key"
    yield match.start(), stop, kind


_PUTTY = r"PuTTY-User-Key-File-\d: [^\n]{0,200}"
_PUTTY_END = r"Private-MAC: [0-9a-fA-F]{16,128}"


def _vet_putty(match: re.Match[str], text: str, lowered: str) -> Iterator[tuple[int, int, str]]:
    end = _regex(_PUTTY_END).search(text, match.end(), match.end() + 16_384)
    yield match.start(), end.end() if end else match.end(), "ssh_private_key"


# -- vendor tokens ----------------------------------------------------------------------------


def _token_vetter(kind: str, body_from: int = 0, minimum: int = 8) -> Vetter:
    """A vetter for prefix tokens: whole-word, not a placeholder, random-looking body."""

    def vet(match: re.Match[str], text: str, lowered: str) -> Iterator[tuple[int, int, str]]:
        start, end = match.span()
        if _word_before(text, start):
            return
        body = match.group(0)[body_from:]
        if is_placeholder(body) or not looks_random(body, minimum):
            return
        yield start, end, kind

    return vet


_GITHUB = r"gh[pousr]_[A-Za-z0-9_]{30,1024}(?:\.[A-Za-z0-9_-]{2,2048}){0,4}"
_GITHUB_PAT = r"github_pat_[A-Za-z0-9_]{30,255}"
_ANTHROPIC = r"sk-ant-[A-Za-z0-9_-]{20,512}"
_OPENAI = r"sk-(?!ant-)[A-Za-z0-9_-]{20,512}"
_GOOGLE = r"AIza[A-Za-z0-9_-]{35,60}"
_SLACK = r"xox(?:[abposr]|e(?:\.xox[bp])?)-[A-Za-z0-9-]{10,512}|xapp-\d-[A-Za-z0-9-]{10,512}"
_SLACK_WEBHOOK = (
    r"hooks\.slack\.com/(?P<path>(?:services|workflows|triggers)/[A-Za-z0-9+/_-]{16,512})"
)
_HEROKU_V2 = r"HRKU-[A-Za-z0-9_-]{20,512}"
_AWS_KEY_ID = r"A(?:KIA|SIA|BIA|CCA|3T[A-Z0-9])[A-Z0-9]{16}(?![A-Za-z0-9])"
_AWS_SECRET_NEARBY = r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])"
_JWT = r"eyJ[A-Za-z0-9_-]{8,8192}\.eyJ[A-Za-z0-9_-]{8,16384}\.?[A-Za-z0-9_-]{0,8192}"
_JWT_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"
_JWT_HEADER_MAX = 3 + 8192  # `eyJ` and the longest header body _JWT takes
# Where a token's payload starts: the dot after its header, preceded by `eyJ` and 8 more header
# characters, followed by `eyJ` and 8 payload characters (the lookbehind keeps a dense run of
# `.eyJ` from reaching Python).
_JWT_PAYLOAD = r"\.eyJ[A-Za-z0-9_-]{8}(?<=[A-Za-z0-9_-]{11}\.eyJ[A-Za-z0-9_-]{8})"


def _vet_slack_webhook(
    match: re.Match[str], text: str, lowered: str
) -> Iterator[tuple[int, int, str]]:
    path = match.group("path")
    if not is_placeholder(path.split("/", 1)[1]):
        yield match.start("path"), match.end("path"), "slack_webhook"


def _vet_aws_key_id(
    match: re.Match[str], text: str, lowered: str
) -> Iterator[tuple[int, int, str]]:
    start, end = match.span()
    if _word_before(text, start) or is_placeholder(match.group(0)):
        return
    yield start, end, "aws_access_key_id"
    # A secret access key printed next to its id (credentials.csv, `aws configure list`).
    nearby = _regex(_AWS_SECRET_NEARBY).search(text, end, min(len(text), end + 240))
    if nearby and _is_aws_secret(nearby.group(0)):
        yield nearby.start(), nearby.end(), "aws_secret_access_key"


def _is_aws_secret(value: str) -> bool:
    return (
        len(value) == 40
        and any(c.isupper() for c in value)
        and any(c.islower() for c in value)
        and any(c.isdigit() or c in "/+" for c in value)
        and not is_placeholder(value)
    )


def _jwt_matches(pattern: re.Pattern[str], text: str) -> Iterator[re.Match[str]]:
    """`pattern.finditer(text)` for `_JWT`, in linear time.

    The regex engine tries `_JWT` at every `eyJ`, and at each it runs through up to 8,192 header
    characters before it finds no dot: `eyJ` repeated over 1 MB took 15 s. The header's class
    holds no dot, so the header of a match starting at `s` ends where the run of that class from
    `s` ends; every start in one run shares that end. So look for the ends instead: each dot
    that opens a payload (`_JWT_PAYLOAD`), and in the run before it the first `eyJ` no further
    than the longest header. Only there can finditer's next match start, and the regex is
    matched there (its remaining parts are optional, so it matches). Each character is looked at
    a bounded number of times; test_scrub checks the matches are finditer's own.
    """
    seek = _regex(_JWT_PAYLOAD)
    resume = 0  # where finditer would search next: no match starts before it
    look = 11  # where the next payload's dot may be (a header takes 11 characters at least)
    floor = 0  # the header run before a dot starts after the previous dot
    while (dot := seek.search(text, look)) is not None:
        at = dot.start()
        before = text[max(resume, floor, at - _JWT_HEADER_MAX) : at]
        run_start = at - (len(before) - len(before.rstrip(_JWT_CHARS)))
        start = text.find("eyJ", run_start, at - 8)
        match = pattern.match(text, start) if start >= 0 else None
        look = floor = at + 1
        if match is not None:
            yield match
            resume = match.end()
            look = resume + 11


def _vet_jwt(match: re.Match[str], text: str, lowered: str) -> Iterator[tuple[int, int, str]]:
    start, end = match.span()
    if _word_before(text, start):
        return
    if text[end - 1] == ".":
        end -= 1
    parts = text[start:end].split(".")
    if _is_documentation_jwt(parts[1]) or is_placeholder(parts[1]):
        return
    yield start, end, "jwt"


def _is_documentation_jwt(payload: str) -> bool:
    """The jwt.io sample token (sub 1234567890, name John Doe) is published, not a secret."""
    import base64
    import json

    try:
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except (ValueError, UnicodeDecodeError):
        return False
    return isinstance(claims, dict) and claims.get("name") == "John Doe"


# -- connection strings and HTTP credentials ----------------------------------------------------

_URL_CREDENTIALS = (
    r"://(?P<user>[^\s:@/?#\"'<>\[\]\\]{0,256}):(?P<password>[^\s@/?#\"'<>\\]{1,512})@"
    r"(?=[A-Za-z0-9\[._%-])"
)
_SCHEME_BEFORE = r"[A-Za-z][A-Za-z0-9+.-]{0,39}\Z"
_URL_PLACEHOLDERS = frozenset({"pass", "password", "passwd", "pwd", "secret", "pw", "p", "x"})


def _vet_url(match: re.Match[str], text: str, lowered: str) -> Iterator[tuple[int, int, str]]:
    password = match.group("password")
    if password.lower() in _URL_PLACEHOLDERS or is_placeholder(password):
        return
    start = match.start()
    scheme_match = _regex(_SCHEME_BEFORE).search(lowered, max(0, start - 40), start)
    scheme = scheme_match.group(0) if scheme_match else ""
    yield match.start("password"), match.end("password"), _url_type(scheme)


def _url_type(scheme: str) -> str:
    scheme = scheme.rsplit(".", 1)[-1]  # jdbc.postgresql is not a thing, but be lenient
    if scheme.startswith(("postgres", "postgis", "timescale", "cockroach")):
        return "postgres_url"
    if scheme.startswith(("mysql", "mariadb")):
        return "mysql_url"
    if scheme.startswith("redis"):
        return "redis_url"
    if scheme.startswith("mongodb"):
        return "mongodb_url"
    return "url_password"


_BEARER = r"bearer[ \t]+(?P<value>[a-z0-9._~+/-]{8,8192}=*)"
_AUTHORIZATION = (
    r"authorization[\"']?[ \t]*[:=][ \t]*[\"']?(?P<scheme>basic|token|apikey|api-key|sso-key)"
    r"[ \t]+(?P<value>[^\s\"',;]{6,4096})"
)


def _vet_bearer(match: re.Match[str], text: str, lowered: str) -> Iterator[tuple[int, int, str]]:
    if _word_before(text, match.start()):
        return
    start, end = match.span("value")
    value = text[start:end]
    if is_placeholder(value) or not looks_random(value.rstrip("="), 12):
        return
    yield start, end, "bearer_token"


def _vet_authorization(
    match: re.Match[str], text: str, lowered: str
) -> Iterator[tuple[int, int, str]]:
    start, end = match.span("value")
    value = text[start:end]
    if is_placeholder(value):
        return
    if match.group("scheme") == "basic":
        if looks_random(value.rstrip("="), 6) or ":" in _b64_text(value):
            yield start, end, "basic_auth"
    elif looks_random(value, 8):
        yield start, end, "token"


def _b64_text(value: str) -> str:
    import base64

    try:
        return base64.b64decode(value + "=" * (-len(value) % 4), validate=True).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        return ""


# -- heroku (needs its name nearby) -------------------------------------------------------------

_HEROKU = (
    r"heroku(?=(?P<key>[a-z0-9_.-]{0,30}))(?P=key)"  # atomic (module doc)
    r"[\"']?[ \t]{0,3}(?::=|=>|[:=])[ \t]{0,3}[\"']?(?P<value>" + _UUID + ")"
)


def _vet_heroku(match: re.Match[str], text: str, lowered: str) -> Iterator[tuple[int, int, str]]:
    name = lowered[match.start() : match.start("value")].rstrip(" \t:=>\"'")
    if name.endswith(("id", "app", "name", "region", "url", "team")):
        return
    yield match.start("value"), match.end("value"), "heroku_api_key"


# -- generic assignments: api_key / token / secret / password ------------------------------------

# Strong words: a key name holding one of these (as a word, or as the tail of a compound such as
# `dbpassword`) names a credential.
_KEY_QUALIFIERS = frozenset(
    _words(
        """
    api access secret private auth client signing encryption encrypt master app account service
    consumer hmac jwt session webhook deploy sas storage subscription license admin root
        """
    )
)
# A key name whose last word is one of these describes the credential, it does not hold it.
_DESCRIPTIVE_TAILS = frozenset(
    _words(
        """
    url urls uri uris endpoint host hostname port id ids name names type types file filename
    files path paths dir directory folder count counts length len size limit limits max min
    num number hash hashed digest checksum sha sha1 sha256 sha512 md5 format expiry expires
    expiration expire exp ttl timeout lifetime age version header headers field fields prefix
    suffix env var vars variable ref kind policy policies usage enabled enable disabled required
    provider providers method methods mode manager store rotation label description desc help
    hint regex pattern algorithm alg scope scopes audience issuer location source arn param
    parameter index position pos budget rate tokens secrets passwords keys reset strength
    validator validation input form placeholder prompt error errors message msg status state
    date time timestamp at in by created updated bucket region user username login email table
    column schema class cls fn func callback handler factory generator manager service endpoint
    list map set dict hint policy command cmd script flag flags option options config settings
    len width height color colour style mask length min_length rule rules check reference
        """
    )
)
_LEADING_NON_SECRETS = frozenset(
    _words(
        """
    max min num total is has use enable enabled disable show hide allow require validate check
    verify forgot reset n no count
        """
    )
)
# Tokens that are cursors or anti-forgery nonces, not credentials.
_HARMLESS_TOKENS = frozenset(
    _words("page next continuation sync cursor pagination csrf xsrf cancellation idempotency")
)
_NAME_PARTS = r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+"
_COMPOUND_TAILS = (
    "password",
    "passwd",
    "passphrase",
    "secret",
    "token",
    "apikey",
    "credentials",
    "credential",
)


def classify_key(name: str) -> str | None:
    """The redaction type a value assigned to key `name` gets, or None for a harmless key.

    `DB_PASSWORD`, `apiKey`, `x-api-key`, `aws_secret_access_key`, `GITHUB_TOKEN` name credentials;
    `max_tokens`, `token_count`, `secret_name`, `password_hash`, `keyboard` do not.
    """
    words: list[str] = []
    for part in _regex(_NAME_PARTS).findall(name):
        word = part.lower()
        for tail in _COMPOUND_TAILS:
            if word != tail and word.endswith(tail) and len(word) > len(tail) + 1:
                words.extend((word[: -len(tail)], tail))
                break
        else:
            if word.endswith("key") and word[:-3] in _KEY_QUALIFIERS:
                words.extend((word[:-3], "key"))
            else:
                words.append(word)
    if not words or words[-1] in _DESCRIPTIVE_TAILS or words[0] in _LEADING_NON_SECRETS:
        return None
    kind: str | None = None
    for index, word in enumerate(words):
        if word in ("password", "passwd", "passphrase", "passcode", "pwd", "pass"):
            kind = "password"
        elif word in ("secret", "credential", "credentials"):
            kind = "secret"
        elif word in ("token", "auth"):
            kind = "token"
        elif word == "apikey":
            kind = "api_key"
        elif word == "key" and index > 0 and words[index - 1] in _KEY_QUALIFIERS:
            kind = "api_key" if words[index - 1] == "api" else "secret"
    if words[-1] == "token" and len(words) > 1 and words[-2] in _HARMLESS_TOKENS:
        return None
    if "secret" in words and "access" in words and words[-1] == "key":
        return "aws_secret_access_key"
    return kind


_classify_cached = functools.lru_cache(maxsize=4096)(classify_key)

# The value after an assignment: JSON/YAML/INI/env/TOML/CLI forms.
_VALUE = (
    r"[ \t]{0,8}(?:"
    r"(?P<esc>\\{1,8})\"(?P<escaped>[^\"\\\n]{1,4096})(?=\\)"  # closed in _vet_value
    r"|\"(?P<double>(?:[^\"\\\n]|\\[^\n]){1,4096})\""
    r"|'(?P<single>(?:[^'\\\n]|\\[^\n]){1,4096})'"
    r"|`(?P<back>[^`\n]{1,4096})`"
    r"|(?P<bare>[^\s\"'`\\]{1,1024}))"
)
# The separator after a key name: `=`, `:`, `:=`, `=>`, `: <type> =` (annotated default).
_SEPARATOR = (
    r"\\{0,8}[\"'`]?\]?[ \t]{0,8}"
    r"(?::=|=>|:[ \t]*[a-z_][a-z0-9_.\[\], |]{0,40}?[ \t]+=[ \t]|=(?![=~>])|:(?![:/\\]))"
)
_NAME_TAIL = r"(?=(?P<tail>[a-z0-9_.-]{0,48}))(?P=tail)"  # atomic (module doc)
_GENERIC_WORDS = ("pass", "pwd", "secret", "token", "key", "auth", "credential")
# Or, with no separator, a generated-looking value in a sentence ("using token X", "the key is
# X"): looked at, not consumed (a lookahead), so a match further on is found as before.
_PROSE_AHEAD = (
    r"(?=[ \t]{1,4}(?:(?:is|was|of)[ \t]{1,4})?[`'\"]?(?P<pvalue>[a-z0-9_./+=-]{16,256}))"
)
_PROSE_WORDS = ("pass", "secret", "token", "key")
_GENERIC = tuple(
    f"(?P<word>{word}){_NAME_TAIL}(?:{_SEPARATOR}{_VALUE}"
    + (f"|{_PROSE_AHEAD})" if word in _PROSE_WORDS else ")")
    for word in _GENERIC_WORDS
)
_CLI_FLAG = (
    # First a cheap look for what the key word search would scan in vain: 41 name characters
    # that start none of its words (a run of dashes).
    r"--(?![-0-9_bd-jlmnoq-ru-z]{41})"
    r"(?P<name>[a-z0-9_-]{0,40}(?:pass|pwd|secret|token|key|auth|credential)[a-z0-9_-]{0,40})"
    r"(?:=|[ \t]+)" + _VALUE
)
# A flag's name is the rest of its run of name characters, so a match starts at most this far
# from that run's end: `--`, 40, the longest key word (`credential`), 40.
_FLAG_REACH = 2 + 40 + 10 + 40
# A `--` too far from the end of its run, to that end (the search jumps from `--` to `--`).
_DEAD_FLAG = f"--[a-z0-9_-]{{{_FLAG_REACH - 1},}}"
_XML = (
    r"<(?P<name>[a-z0-9_.:-]{0,40}(?:pass|pwd|secret|token|key|credential)[a-z0-9_.:-]{0,40})>"
    r"(?P<bare>[^<\s]{1,1024})</"
)
_KEY_CHARS_TEXT = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-"
_IDENTIFIER = r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*"
_CALL = r"[A-Za-z_][A-Za-z0-9_.]*[(\[]"
_CODE_STOP = r"[,;)}\]&|<>(\[]"
_LINE_PREFIXES = ("", "export", "-", "set", "setenv", "$env:", "env")


def _vet_generic(match: re.Match[str], text: str, lowered: str) -> Iterator[tuple[int, int, str]]:
    if match.lastgroup == "pvalue":  # the prose lookahead (the value groups close otherwise)
        yield from _scrub_context.vet_prose(match, text)
        return
    word_start = match.start("word")
    before = text[max(0, word_start - 64) : word_start]
    key_start = word_start - (len(before) - len(before.rstrip(_KEY_CHARS_TEXT)))
    if (
        key_start < word_start
        and text[key_start] in "ntr"
        and text[key_start - 1 : key_start] == "\\"
    ):
        key_start += 1  # the n of an escaped newline starts no key name
    kind = _classify_cached(text[key_start : match.end("tail")].strip(".-"))
    if kind is None or text.startswith("://", key_start - 3):
        return  # (a URL's user name: its password is the url rule's, without the host after @)
    if _hopeless(match, text):
        return
    floor = max(0, key_start - 200)
    newline = text.rfind("\n", floor, key_start)
    escaped = text.rfind("\\n", floor, key_start)  # a line break inside JSON-encoded text
    line_start = max(newline + 1, escaped + 2 if escaped >= 0 else 0)
    if newline < 0 and escaped < 0 and key_start > 200:
        prefix = "?"  # a very long line: not an env/INI/YAML assignment
    else:
        prefix = text[line_start:key_start].strip().strip("\"'")
    if prefix.startswith(("export ", "setenv ", "set -x ")) or prefix in ("export", "$env:"):
        kind = kind if kind == "aws_secret_access_key" else "env_export"
        prefix = ""
    yield from _vet_value(match, text, kind, at_line_start=prefix in _LINE_PREFIXES)


# A bare value that starts so is refused by `_vet_value` wherever it stands (trimmed or not, it
# keeps that start, a mark of `is_placeholder`, or `$(` stops it as a call).
_NEVER_BARE = ("${", "$(", "****")


def _hopeless(match: re.Match[str], text: str) -> bool:
    """True for a value `_vet_value` refuses whatever the line before it holds: a reference, a
    mask, a call, a quoted placeholder. Looked at before that line is (`${VAR}`, `****` and
    `get_token()` are the common case of a key word followed by a value)."""
    group = match.lastgroup
    if group == "bare":
        value = text[match.start(group) : match.end(group)]
        return value.startswith(_NEVER_BARE) or _regex(_CALL).match(value) is not None
    if group in ("double", "single", "back"):
        return is_placeholder(text[match.start(group) : match.end(group)])
    return False


def _flag_matches(pattern: re.Pattern[str], text: str) -> Iterator[re.Match[str]]:
    """`pattern.finditer(text)` for `_CLI_FLAG`, in linear time.

    The regex engine tries `_CLI_FLAG` at every `--`; in a run of dashes (or of any name
    characters) each try walks 40 characters back and forth for a key word, 1 MB of `-` took
    1.5 s. A start further than `_FLAG_REACH` from the end of its run cannot match, so from
    the first such `--` of a run (`_DEAD_FLAG`) to `_FLAG_REACH` before the run's end, the
    characters are replaced by NUL before the search: no try starts there. That changes no
    match: a name never reaches them, and everywhere else in the pattern (the separator, the
    value) NUL and the name characters are alike (none is a space, a quote or a backslash).
    `_vet_flag` reads the name group (never masked) and the value from the original text.
    """
    dead = [found.span() for found in _regex(_DEAD_FLAG).finditer(text)]
    if not dead:
        return pattern.finditer(text)
    pieces = []
    cursor = 0
    for start, end in dead:
        pieces.append(text[cursor:start])
        cursor = end - _FLAG_REACH
        pieces.append("\0" * (cursor - start))
    pieces.append(text[cursor:])
    return pattern.finditer("".join(pieces))


def _vet_flag(match: re.Match[str], text: str, lowered: str) -> Iterator[tuple[int, int, str]]:
    kind = classify_key(match.group("name"))
    if kind is not None:
        yield from _vet_value(match, text, kind, at_line_start=False)


def _vet_value(
    match: re.Match[str], text: str, kind: str, *, at_line_start: bool
) -> Iterator[tuple[int, int, str]]:
    # The value's group closes last in every pattern that comes here (`_VALUE` ends them, `_XML`
    # ends with its `bare`): no dict of every group per candidate.
    group = match.lastgroup
    if group not in _VALUE_GROUPS:
        return
    start, end = match.span(group)
    if group == "escaped":
        closed = _escaped_end(text, end, len(match.group("esc")))
        if closed is None:
            return
        end = closed
    value = text[start:end]
    if group == "bare":
        if _regex(_CALL).match(value):
            return  # `get_token()`, `os.environ["X"]`, `request.form.get(...)`: code
        if not at_line_start:
            stop = _regex(_CODE_STOP).search(value)
            if stop:
                if value[stop.start()] in "([":
                    return  # a call or a subscript: code, not a literal
                end = start + stop.start()
                value = value[: stop.start()]
        if end < len(text) and text[end] in "([":
            return
        trimmed = value.rstrip(",;")
        end -= len(value) - len(trimmed)
        value = trimmed
        if _regex(_IDENTIFIER).fullmatch(value) and (
            "." in value
            or (
                ("_" in value or not at_line_start)
                and not (looks_random(value, 12) and any(map(str.isdigit, value)))
            )
        ):
            return  # a variable, attribute or constant name (not a generated value)
    if not _acceptable(value, kind, quoted=group != "bare"):
        return
    yield start, end, kind


_VALUE_GROUPS = frozenset(("escaped", "double", "single", "back", "bare"))
_ESCAPED_RUN = r"[^\"\\\n]{0,4096}"
_ESCAPED_HOPS = 8


def _escaped_end(text: str, at: int, depth: int) -> int | None:
    """Where a string quoted as `\\"…\\"` (JSON inside JSON, `depth` backslashes) ends, from
    `at`, the first backslash after its opening; None when it does not close there. An inner
    escaped quote (`2 * depth + 1` backslashes) is part of the value: at most a few of them."""
    closing = "\\" * depth + '"'
    inner = "\\" * (2 * depth + 1) + '"'
    for _ in range(_ESCAPED_HOPS):
        if text.startswith(closing, at):
            return at
        if not text.startswith(inner, at):
            return None
        run = _regex(_ESCAPED_RUN).match(text, at + len(inner))
        at = run.end() if run else at + len(inner)
    return None


def _acceptable(value: str, kind: str, *, quoted: bool) -> bool:
    if is_placeholder(value):
        return False
    if kind == "aws_secret_access_key":
        return _is_aws_secret(value) or looks_random(value, 16)
    if kind == "password":
        if len(value) < 4 or (" " in value and (not quoted or _is_ui_text(value))):
            return False
        return not value.isdigit() or len(value) >= 6
    if " " in value:
        return False
    return looks_random(value, 8) or ":" in _b64_text(value)  # docker's base64 "auth": user:pass


_UI_WORDS = ("enter", "please", "must", "invalid", "incorrect", "forgot", "confirm", "should")


def _is_ui_text(value: str) -> bool:
    """A label or message about a password ("Enter a password"), not a passphrase."""
    lowered = value.lower()
    return len(value) > 64 or any(word in lowered for word in _UI_WORDS)


# curl -u user:password, and .netrc lines.
_CURL_USER = (
    r"-(?:u|-user)[ =][\"']?(?=(?P<user>[^\s:\"'/$]{1,64}))(?P=user)"  # atomic (module doc)
    r":(?P<value>[^\s\"'@]{4,256})"
)
_NETRC = (
    r"machine[ \t]+\S{1,256}[ \t]+login[ \t]+\S{1,256}[ \t]+password[ \t]+"
    r"(?P<value>[^\s\\\"']{1,512})"
)


def _vet_curl_user(match: re.Match[str], text: str, lowered: str) -> Iterator[tuple[int, int, str]]:
    start = match.start()
    if start > 0 and not text[start - 1].isspace():
        return
    value = match.group("value")
    if not is_placeholder(value) and value.lower() not in _URL_PLACEHOLDERS:
        yield match.start("value"), match.end("value"), "basic_auth"


def _vet_netrc(match: re.Match[str], text: str, lowered: str) -> Iterator[tuple[int, int, str]]:
    if not is_placeholder(match.group("value")):
        yield match.start("value"), match.end("value"), "password"


# -- the table ------------------------------------------------------------------------------------

# The last column is each rule's anchor: a literal its pattern cannot match without (test_scrub
# checks each against its pattern). One literal or none: a search for an absent anchor costs
# what the regex's own literal-prefix scan would, and one that is present stops at its first
# hit; several anchors would mean several scans, and one combined alternation of them all
# tests every position of the text. No anchor: the rule always runs.
RULES: tuple[Rule, ...] = (
    Rule("pem", _PEM_HEADER, False, _vet_pem, "BEGIN "),
    Rule("putty", _PUTTY, False, _vet_putty, "PuTTY-User-Key-File-"),
    Rule("openai_key", _OPENAI, False, _token_vetter("openai_key", 3), "sk-"),
    Rule("anthropic_key", _ANTHROPIC, False, _token_vetter("anthropic_key", 7), "sk-ant-"),
    Rule("github_token", _GITHUB, False, _token_vetter("github_token", 4), "gh"),
    Rule("github_pat", _GITHUB_PAT, False, _token_vetter("github_token", 11), "github_pat_"),
    Rule("slack_token", _SLACK, False, _token_vetter("slack_token", 5), None),  # xox, xapp-
    Rule("slack_webhook", _SLACK_WEBHOOK, False, _vet_slack_webhook, "hooks.slack.com/"),
    Rule("google_api_key", _GOOGLE, False, _token_vetter("google_api_key", 4), "AIza"),
    Rule("aws_access_key_id", _AWS_KEY_ID, False, _vet_aws_key_id, None),  # AKIA, ASIA, ...
    Rule("heroku_v2", _HEROKU_V2, False, _token_vetter("heroku_api_key", 5), "HRKU-"),
    Rule("heroku", _HEROKU, True, _vet_heroku, "heroku"),
    Rule("jwt", _JWT, False, _vet_jwt, ".eyJ", _jwt_matches),  # `eyJ` is in base64 images
    Rule("url", _URL_CREDENTIALS, False, _vet_url, "://"),
    Rule("bearer", _BEARER, True, _vet_bearer, "bearer"),
    Rule("authorization", _AUTHORIZATION, True, _vet_authorization, "authorization"),
    Rule("curl_user", _CURL_USER, False, _vet_curl_user, "-u"),  # -u and --user
    Rule("netrc", _NETRC, True, _vet_netrc, "machine"),
    Rule("cli_flag", _CLI_FLAG, True, _vet_flag, "--", _flag_matches),
    Rule("xml", _XML, True, _vet_flag, "</"),
    *(
        Rule(f"generic_{w}", p, True, _vet_generic, w)
        for w, p in zip(_GENERIC_WORDS, _GENERIC, strict=True)
    ),
)


# The provider gate and the contextual detectors (scrub_context.py; it needs the helpers above).
from ctxward.core import scrub_context as _scrub_context  # noqa: E402

RULES = (*RULES, *_scrub_context.rules(sys.modules[__name__]))


def _merge(spans: list[tuple[int, int, str]]) -> list[Redaction]:
    """Sort spans, merge overlapping ones (the most specific type wins), build redactions."""
    redactions: list[Redaction] = []
    if not spans:
        return redactions
    spans.sort()
    cur_start, cur_end, cur_type = spans[0]
    for start, end, kind in spans[1:]:
        if start < cur_end:
            cur_end = max(cur_end, end)
            if _RANK[kind] < _RANK[cur_type]:
                cur_type = kind
            continue
        redactions.append(_redaction(cur_start, cur_end, cur_type))
        cur_start, cur_end, cur_type = start, end, kind
    redactions.append(_redaction(cur_start, cur_end, cur_type))
    return redactions


def _redaction(start: int, end: int, kind: str) -> Redaction:
    return {"type": kind, "position": (start, end), "replacement": REPLACEMENT.format(type=kind)}
