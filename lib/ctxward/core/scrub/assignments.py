"""Rules for a secret named by its key: generic assignments, command-line flags, XML attributes,
`curl -u`, `.netrc`.
"""

from __future__ import annotations

import functools
import re

from ctxward.core.scrub.rules import is_placeholder, looks_random, regex, split_words
from ctxward.core.scrub.tokens import URL_PLACEHOLDERS, b64_text, is_aws_secret

# typing.TYPE_CHECKING without importing typing: hooks import this module on their hot path.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator

    from ctxward.core.scrub.rules import Spans


# Strong words: a key name holding one of these (as a word, or as the tail of a compound such as
# `dbpassword`) names a credential.
_KEY_QUALIFIERS = frozenset(
    split_words(
        """
    api access secret private auth client signing encryption encrypt master app account service
    consumer hmac jwt session webhook deploy sas storage subscription license admin root
        """
    )
)


# A key name whose last word is one of these describes the credential, it does not hold it.
_DESCRIPTIVE_TAILS = frozenset(
    split_words(
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
    split_words(
        """
    max min num total is has use enable enabled disable show hide allow require validate check
    verify forgot reset n no count
        """
    )
)


# Tokens that are cursors or anti-forgery nonces, not credentials.
_HARMLESS_TOKENS = frozenset(
    split_words("page next continuation sync cursor pagination csrf xsrf cancellation idempotency")
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
    for part in regex(_NAME_PARTS).findall(name):
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


def _last_word_describes(last: str) -> bool:
    """Whether a key ending in `last`, after a `_`, `.` or `-`, is one `classify_key` calls no
    credential whatever comes before (`max_tokens`): read before the whole key is. Only where
    `last` is that function's last word as it stands, one word of ASCII letters in one case or
    capitalised (`toKens` is two words there, and the Kelvin sign none)."""
    return (
        last.isascii()
        and last.isalpha()
        and (last.islower() or last.isupper() or last.istitle())
        and last.lower() in _DESCRIPTIVE_TAILS
    )


# What starts a bare value `_vet_value` refuses wherever it stands: a reference (`${VAR}`,
# `$(cmd)`), a mask (`****`), a call or a subscript (`get_token()`, `os.environ["X"]`). Such a
# value is matched as `refused`, the span `bare` would take, and the rule skips it before any
# vetting (`Rule.find`): the common case of a key word followed by a value costs no Python. A
# shortcut only: `_vet_value` refuses the same values (tests compare both). Decided on the
# lower-cased text, as the key words are (the Kelvin sign counts as `k` there).
_REFUSED = r"(?=\$[{(]|\*\*\*\*|[a-z_][a-z0-9_.]{0,1022}[(\[])"


# The value after an assignment: JSON/YAML/INI/env/TOML/CLI forms.
_VALUE = (
    r"[ \t]{0,8}(?:"
    r"(?P<esc>\\{1,8})\"(?P<escaped>[^\"\\\n]{1,4096})(?=\\)"  # closed in _vet_value
    r"|\"(?P<double>(?:[^\"\\\n]|\\[^\n]){1,4096})\""
    r"|'(?P<single>(?:[^'\\\n]|\\[^\n]){1,4096})'"
    r"|`(?P<back>[^`\n]{1,4096})`"
    r"|(?P<refused>" + _REFUSED + r"[^\s\"'`\\]{1,1024})"
    r"|(?P<bare>[^\s\"'`\\]{1,1024}))"
)


# The separator after a key name: `=`, `:`, `:=`, `=>`, `: <type> =` (annotated default).
_SEPARATOR = (
    r"\\{0,8}[\"'`]?\]?[ \t]{0,8}"
    r"(?::=|=>|:[ \t]*[a-z_][a-z0-9_.\[\], |]{0,40}?[ \t]+=[ \t]|=(?![=~>])|:(?![:/\\]))"
)


_NAME_TAIL = r"(?=(?P<tail>[a-z0-9_.-]{0,48}))(?P=tail)"  # atomic (module doc)


GENERIC_WORDS = ("pass", "pwd", "secret", "token", "key", "auth", "credential")


# Or, with no separator, a generated-looking value in a sentence ("using token X", "the key is
# X"): looked at, not consumed (a lookahead), so a match further on is found as before.
_PROSE_AHEAD = (
    r"(?=[ \t]{1,4}(?:(?:is|was|of)[ \t]{1,4})?[`'\"]?(?P<pvalue>[a-z0-9_./+=-]{16,256}))"
)


_PROSE_WORDS = ("pass", "secret", "token", "key")


# What can stand before a separator's `:` or `=` (`_SEPARATOR`'s backslashes, quote, bracket and
# blanks): where neither follows, the separator is not tried (a key word in a sentence).
_SEPARATOR_AHEAD = r"(?=[\\\"'`\] \t]{0,18}[:=])"


GENERIC = tuple(
    f"(?P<word>{word}){_NAME_TAIL}(?:{_SEPARATOR_AHEAD}{_SEPARATOR}{_VALUE}"
    + (f"|{_PROSE_AHEAD})" if word in _PROSE_WORDS else ")")
    for word in GENERIC_WORDS
)


CLI_FLAG = (
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


XML = (
    r"<(?P<name>[a-z0-9_.:-]{0,40}(?:pass|pwd|secret|token|key|credential)[a-z0-9_.:-]{0,40})>"
    r"(?:(?P<refused>" + _REFUSED + r"[^<\s]{1,1024})|(?P<bare>[^<\s]{1,1024}))</"
)


_KEY_CHARS_TEXT = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-"


_KEY_CHARS = frozenset(_KEY_CHARS_TEXT)


_IDENTIFIER = r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*"


_CALL = r"[A-Za-z_][A-Za-z0-9_.]*[(\[]"


_CODE_STOP = r"[,;)}\]&|<>(\[]"


_LINE_PREFIXES = ("", "export", "-", "set", "setenv", "$env:", "env")


def vet_generic(match: re.Match[str], text: str, lowered: str) -> Spans:
    group = match.lastgroup
    if group == "pvalue":  # the prose lookahead (the value groups close otherwise)
        from ctxward.core.scrub.context import vet_prose  # context builds on these rules

        return vet_prose(match, text)
    # The key name first: most candidates are harmless keys (`"max_tokens": 4096`). A bare value
    # `_vet_value` would refuse wherever it stands never gets here (`_VALUE`'s `refused`).
    word_start = match.start("word")
    key_start = word_start
    if word_start and (prior := text[word_start - 1]) in _KEY_CHARS:  # the key starts before
        if prior in "_.-" and _last_word_describes(text[word_start : match.end("tail")]):
            return ()  # `max_tokens`, `input_tokens`: every usage record of a transcript
        before = text[max(0, word_start - 64) : word_start]
        key_start -= len(before) - len(before.rstrip(_KEY_CHARS_TEXT))
        if text[key_start] in "ntr" and text[key_start - 1 : key_start] == "\\":
            key_start += 1  # the n of an escaped newline starts no key name
    kind = _classify_cached(text[key_start : match.end("tail")].strip(".-"))
    if kind is None or text.startswith("://", key_start - 3):
        return ()  # (a URL's user name: its password is the url rule's, without the host after @)
    floor = max(0, key_start - 200)
    newline = text.rfind("\n", floor, key_start)
    # A line break inside JSON-encoded text, after the last real one (one before it starts no
    # later line).
    escaped = text.rfind("\\n", newline + 1 if newline >= 0 else floor, key_start)
    line_start = escaped + 2 if escaped >= 0 else newline + 1
    if newline < 0 and escaped < 0 and key_start > 200:
        prefix = "?"  # a very long line: not an env/INI/YAML assignment
    else:
        prefix = text[line_start:key_start].strip().strip("\"'")
    if prefix.startswith(("export ", "setenv ", "set -x ")) or prefix in ("export", "$env:"):
        kind = kind if kind == "aws_secret_access_key" else "env_export"
        prefix = ""
    return _vet_value(match, text, kind, at_line_start=prefix in _LINE_PREFIXES)


def flag_matches(pattern: re.Pattern[str], text: str) -> Iterator[re.Match[str]]:
    """`pattern.finditer(text)` for `CLI_FLAG`, in linear time.

    The regex engine tries `CLI_FLAG` at every `--`; in a run of dashes (or of any name
    characters) each try walks 40 characters back and forth for a key word, 1 MB of `-` took
    1.5 s. A start further than `_FLAG_REACH` from the end of its run cannot match, so from
    the first such `--` of a run (`_DEAD_FLAG`) to `_FLAG_REACH` before the run's end, the
    characters are replaced by NUL before the search: no try starts there. That changes no
    match: a name never reaches them, and everywhere else in the pattern (the separator, the
    value) NUL and the name characters are alike (none is a space, a quote or a backslash).
    `vet_flag` reads the name group (never masked) and the value from the original text.
    """
    dead = [found.span() for found in regex(_DEAD_FLAG).finditer(text)]
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


def vet_flag(match: re.Match[str], text: str, lowered: str) -> Spans:
    kind = classify_key(match.group("name"))
    return () if kind is None else _vet_value(match, text, kind, at_line_start=False)


def _vet_value(match: re.Match[str], text: str, kind: str, *, at_line_start: bool) -> Spans:
    # The value's group closes last in every pattern that comes here (`_VALUE` ends them, `XML`
    # ends with its `bare`): no dict of every group per candidate.
    group = match.lastgroup
    if group not in _VALUE_GROUPS:
        return ()
    start, end = match.span(group)
    if group == "escaped":
        closed = _escaped_end(text, end, len(match.group("esc")))
        if closed is None:
            return ()
        end = closed
    value = text[start:end]
    if group == "bare":
        if regex(_CALL).match(value):
            return ()  # `get_token()`, `os.environ["X"]`: code (refused sooner: `_REFUSED`)
        if not at_line_start:
            stop = regex(_CODE_STOP).search(value)
            if stop:
                if value[stop.start()] in "([":
                    return ()  # a call or a subscript: code, not a literal
                end = start + stop.start()
                value = value[: stop.start()]
        if end < len(text) and text[end] in "([":
            return ()
        trimmed = value.rstrip(",;")
        end -= len(value) - len(trimmed)
        value = trimmed
        if regex(_IDENTIFIER).fullmatch(value) and (
            "." in value
            or (
                ("_" in value or not at_line_start)
                and not (looks_random(value, 12) and any(map(str.isdigit, value)))
            )
        ):
            return ()  # a variable, attribute or constant name (not a generated value)
    if not acceptable(value, kind, quoted=group != "bare"):
        return ()
    return ((start, end, kind),)


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
        run = regex(_ESCAPED_RUN).match(text, at + len(inner))
        at = run.end() if run else at + len(inner)
    return None


def acceptable(value: str, kind: str, *, quoted: bool) -> bool:
    if is_placeholder(value):
        return False
    if kind == "aws_secret_access_key":
        return is_aws_secret(value) or looks_random(value, 16)
    if kind == "password":
        if len(value) < 4 or (" " in value and (not quoted or _is_ui_text(value))):
            return False
        return not value.isdigit() or len(value) >= 6
    if " " in value:
        return False
    return looks_random(value, 8) or ":" in b64_text(value)  # docker's base64 "auth": user:pass


_UI_WORDS = ("enter", "please", "must", "invalid", "incorrect", "forgot", "confirm", "should")


def _is_ui_text(value: str) -> bool:
    """A label or message about a password ("Enter a password"), not a passphrase."""
    lowered = value.lower()
    return len(value) > 64 or any(word in lowered for word in _UI_WORDS)


# curl -u user:password, and .netrc lines.
CURL_USER = (
    r"-(?:u|-user)[ =][\"']?(?=(?P<user>[^\s:\"'/$]{1,64}))(?P=user)"  # atomic (module doc)
    r":(?P<value>[^\s\"'@]{4,256})"
)


NETRC = (
    r"machine[ \t]+\S{1,256}[ \t]+login[ \t]+\S{1,256}[ \t]+password[ \t]+"
    r"(?P<value>[^\s\\\"']{1,512})"
)


def vet_curl_user(match: re.Match[str], text: str, lowered: str) -> Spans:
    start = match.start()
    if start > 0 and not text[start - 1].isspace():
        return ()
    value = match.group("value")
    if not is_placeholder(value) and value.lower() not in URL_PLACEHOLDERS:
        return ((match.start("value"), match.end("value"), "basic_auth"),)
    return ()


def vet_netrc(match: re.Match[str], text: str, lowered: str) -> Spans:
    if not is_placeholder(match.group("value")):
        return ((match.start("value"), match.end("value"), "password"),)
    return ()
