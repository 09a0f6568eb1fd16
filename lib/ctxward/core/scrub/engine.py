"""Secret scrubbing: `scrub(text) -> (text, redactions)`, the project's one pattern table.

Every writer and injector calls `scrub` before text is persisted or shown to a model (seed 000
§13, Layer 2). Standard library only: hooks call it on their hot path.

The table: the rules of `tokens` (keys, vendor tokens, connection strings), the provider
formats as data (`providers.py`, behind one gate) and the contextual detectors (`context.py`),
then the rules of a value named by its key (generic assignments, `--flags`, XML elements), which
defer to the token formats (`Rule.defers`); then a second pass (`_repeats`) that removes every
other occurrence of a value already found, and the project's own `scrub:` config (`configure`,
checked by `userrules.py`). `explain` names the rule of each redaction (`ctxward scrub --explain`).

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
(`Rule.matches`: `jwt_matches`, `flag_matches`). tests/core/scrub/test_scrub.py feeds every rule
repeats of its own prefix and alphabet at 100 KB and 1 MB, and bounds the time as a ratio.

How it stays cheap to import (hooks import it in a fresh interpreter each time): no regex is
compiled at import. A rule runs only when one of its anchors occurs in the text (a substring
search), and its regex, like the validators' helper regexes, is compiled on first use (`regex`).

What is never redacted: placeholders and masked values (`<your-api-key>`, `${TOKEN}`, `********`,
`changeme`, `...EXAMPLE`), hashes, UUIDs and git SHAs outside a secret's context, base64 images,
public keys and already-redacted markers (scrubbing is idempotent).

Several patterns follow gitleaks' rules (config/gitleaks.toml at commit b58d3f1; MIT License,
Copyright (c) 2019 Zachary Rice), adapted to Python's backtracking `re` with bounded quantifiers.
"""

from __future__ import annotations

import re

from ctxward.core.scrub.assignments import (
    CLI_FLAG,
    CURL_USER,
    GENERIC,
    GENERIC_WORDS,
    NETRC,
    XML,
    flag_matches,
    vet_curl_user,
    vet_flag,
    vet_generic,
    vet_netrc,
)

# The provider gate and the contextual detectors (context.py).
from ctxward.core.scrub.context import rules as context_rules
from ctxward.core.scrub.providers import TYPES as _PROVIDER_TYPES
from ctxward.core.scrub.rules import ASCII_LOWER, Rule, is_placeholder, link_parts, regex
from ctxward.core.scrub.tokens import (
    ANTHROPIC,
    AUTHORIZATION,
    AWS_KEY_ID,
    BEARER,
    GITHUB,
    GITHUB_PAT,
    GOOGLE,
    HEROKU,
    HEROKU_V2,
    JWT,
    OPENAI,
    PEM_HEADER,
    PUTTY,
    SLACK,
    SLACK_WEBHOOK,
    URL_CREDENTIALS,
    jwt_matches,
    token_vetter,
    vet_authorization,
    vet_aws_key_id,
    vet_bearer,
    vet_heroku,
    vet_jwt,
    vet_pem,
    vet_putty,
    vet_slack_webhook,
    vet_url,
)

# typing.TYPE_CHECKING without importing typing: hooks import this module on their hot path.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator

    from ctxward.core.scrub.rules import Redaction, Spans, Vetter


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
    "heroku_api_key": "Heroku API key",
    **_PROVIDER_TYPES,
    # The types below are not a token's shape but what a key name or a context says: a rule
    # of theirs defers to the token formats above (`Rule.defers`).
    "aws_secret_access_key": "AWS secret access key",
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


_DEFERRED_RANK = _RANK["aws_secret_access_key"]  # the first type named by a key, not a shape


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
    spans: list[tuple[int, int, str]] = []
    for _, found in _found_by_rule(text):
        spans.extend(found)
    if _ALLOW and spans:
        spans = [span for span in spans if text[span[0] : span[1]] not in _ALLOW]
    if spans:
        spans.extend(_repeats(text, spans))
    return _merge(spans)


def _found_by_rule(text: str) -> Iterator[tuple[Rule, list[tuple[int, int, str]]]]:
    """Each rule of the table, in order, with the spans it redacts in `text`.

    The token formats come first: where one of them redacted a value, the rules that defer
    (`Rule.defers`) do not vet it again.
    """
    lowered = text.lower()
    if len(lowered) != len(text):  # a few non-ASCII letters change length when lowered
        lowered = text.translate(ASCII_LOWER)
    present: dict[tuple[str, bool], bool] = {}
    covered: dict[int, int] = {}
    for rule in RULES + _USER_RULES:
        found = rule.find(text, lowered, present, covered)
        if not rule.defers:
            for start, end, kind in found:
                if (
                    _RANK[kind] < _DEFERRED_RANK
                    and covered.get(start, -1) < end
                    and (not _ALLOW or text[start:end] not in _ALLOW)  # allowed: covers nothing
                ):
                    covered[start] = end
        yield rule, found


# The project's `scrub:` config section (userrules.py), once a config has been loaded.
_ALLOW: frozenset[str] = frozenset()


_USER_RULES: tuple[Rule, ...] = ()


def configure(*, allow: frozenset[str], rules: tuple[tuple[str, str, str], ...]) -> None:
    """Put a project's allowlist and extra rules `(id, type, pattern)` in force for `scrub()`.

    The patterns come checked by `scrub_config.unsafe` (bounded, anchored on a literal). A rule
    type is added to `SECRET_TYPES` ranked last, so a built-in type wins an overlap.
    """
    from ctxward.core.scrub.userrules import keyword_of

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
    link_parts(RULES + _USER_RULES)


def _user_vetter(kind: str) -> Vetter:
    def vet(match: re.Match[str], text: str, lowered: str) -> Spans:
        group = "secret" if "secret" in match.re.groupindex else 0
        start, end = match.span(group)
        if end > start and not is_placeholder(text[start:end]):
            return ((start, end, kind),)
        return ()

    return vet


def explain(text: str) -> list[tuple[Redaction, str]]:
    """`find(text)`, each redaction with the id of the rule that made it (`repeat`: the second
    pass, a value some rule found elsewhere in the text)."""
    if not text:
        return []
    named = [
        (start, end, kind, rule.name)
        for rule, found in _found_by_rule(text)
        for start, end, kind in found
    ]
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

        run = regex(_REPEAT_RUN)
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


# The last column is each rule's anchor: a literal its pattern cannot match without (test_scrub
# checks each against its pattern). One literal or none: a search for an absent anchor costs
# what the regex's own literal-prefix scan would, and one that is present stops at its first
# hit; several anchors would mean several scans, and one combined alternation of them all
# tests every position of the text. Anchors that start with the same character share one scan
# that says whether any of them is there (`Rule.kin`). No anchor: the rule always runs.
RULES: tuple[Rule, ...] = (
    Rule("pem", PEM_HEADER, False, vet_pem, "BEGIN "),
    Rule("putty", PUTTY, False, vet_putty, "PuTTY-User-Key-File-"),
    Rule("openai_key", OPENAI, False, token_vetter("openai_key", 3), "sk-"),
    Rule("anthropic_key", ANTHROPIC, False, token_vetter("anthropic_key", 7), "sk-ant-"),
    Rule("github_token", GITHUB, False, token_vetter("github_token", 4), "gh"),
    Rule("github_pat", GITHUB_PAT, False, token_vetter("github_token", 11), "github_pat_"),
    Rule("slack_token", SLACK, False, token_vetter("slack_token", 5), None),  # xox, xapp-
    Rule("slack_webhook", SLACK_WEBHOOK, False, vet_slack_webhook, "hooks.slack.com/"),
    Rule("google_api_key", GOOGLE, False, token_vetter("google_api_key", 4), "AIza"),
    Rule("aws_access_key_id", AWS_KEY_ID, False, vet_aws_key_id, None),  # AKIA, ASIA, ...
    Rule("heroku_v2", HEROKU_V2, False, token_vetter("heroku_api_key", 5), "HRKU-"),
    Rule("heroku", HEROKU, True, vet_heroku, "heroku"),
    Rule("jwt", JWT, False, vet_jwt, ".eyJ", jwt_matches),  # `eyJ` is in base64 images
    Rule("url", URL_CREDENTIALS, False, vet_url, "://"),
    Rule("bearer", BEARER, True, vet_bearer, "bearer"),
    Rule("authorization", AUTHORIZATION, True, vet_authorization, "authorization"),
    Rule("curl_user", CURL_USER, False, vet_curl_user, "-u"),  # -u and --user
    Rule("netrc", NETRC, True, vet_netrc, "machine"),
    *context_rules(),
    # Last, the rules of a value named by its key: they defer to the token formats above.
    Rule("cli_flag", CLI_FLAG, True, vet_flag, "--", flag_matches, defers=True),
    Rule("xml", XML, True, vet_flag, "</", defers=True),
    *(
        Rule(f"generic_{w}", p, True, vet_generic, w, defers=True)
        for w, p in zip(GENERIC_WORDS, GENERIC, strict=True)
    ),
)
link_parts(RULES)


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
