"""Rules for formats with a shape of their own: private keys, vendor tokens, JWTs, URLs with
credentials, HTTP authorization headers.
"""

from __future__ import annotations

import re

from ctxward.core.scrub.rules import UUID, is_placeholder, looks_random, regex, word_before

# typing.TYPE_CHECKING without importing typing: hooks import this module on their hot path.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator

    from ctxward.core.scrub.rules import Spans, Vetter


PEM_HEADER = (
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


def vet_pem(match: re.Match[str], text: str, lowered: str) -> Spans:
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
        body = regex(_PEM_TRUNCATED_BODY).match(text, match.end())
        stop = body.end() if body else match.end()
    if "CERTIFICATE" in label:
        kind = "certificate"
    elif label.startswith(("OPENSSH", "SSH2")):
        kind = "ssh_private_key"
    else:
        kind = "private_key"
    return ((match.start(), stop, kind),)


PUTTY = r"PuTTY-User-Key-File-\d: [^\n]{0,200}"


_PUTTY_END = r"Private-MAC: [0-9a-fA-F]{16,128}"


def vet_putty(match: re.Match[str], text: str, lowered: str) -> Spans:
    end = regex(_PUTTY_END).search(text, match.end(), match.end() + 16_384)
    return ((match.start(), end.end() if end else match.end(), "ssh_private_key"),)


def token_vetter(kind: str, body_from: int = 0, minimum: int = 8) -> Vetter:
    """A vetter for prefix tokens: whole-word, not a placeholder, random-looking body."""

    def vet(match: re.Match[str], text: str, lowered: str) -> Spans:
        start, end = match.span()
        if word_before(text, start):
            return ()
        body = match.group(0)[body_from:]
        if is_placeholder(body) or not looks_random(body, minimum):
            return ()
        return ((start, end, kind),)

    return vet


GITHUB = r"gh[pousr]_[A-Za-z0-9_]{30,1024}(?:\.[A-Za-z0-9_-]{2,2048}){0,4}"


GITHUB_PAT = r"github_pat_[A-Za-z0-9_]{30,255}"


ANTHROPIC = r"sk-ant-[A-Za-z0-9_-]{20,512}"


OPENAI = r"sk-(?!ant-)[A-Za-z0-9_-]{20,512}"


GOOGLE = r"AIza[A-Za-z0-9_-]{35,60}"


SLACK = r"xox(?:[abposr]|e(?:\.xox[bp])?)-[A-Za-z0-9-]{10,512}|xapp-\d-[A-Za-z0-9-]{10,512}"


SLACK_WEBHOOK = (
    r"hooks\.slack\.com/(?P<path>(?:services|workflows|triggers)/[A-Za-z0-9+/_-]{16,512})"
)


HEROKU_V2 = r"HRKU-[A-Za-z0-9_-]{20,512}"


AWS_KEY_ID = r"A(?:KIA|SIA|BIA|CCA|3T[A-Z0-9])[A-Z0-9]{16}(?![A-Za-z0-9])"


_AWS_SECRET_NEARBY = r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])"


JWT = r"eyJ[A-Za-z0-9_-]{8,8192}\.eyJ[A-Za-z0-9_-]{8,16384}\.?[A-Za-z0-9_-]{0,8192}"


_JWT_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"


_JWT_HEADER_MAX = 3 + 8192  # `eyJ` and the longest header body JWT takes


# Where a token's payload starts: the dot after its header, preceded by `eyJ` and 8 more header
# characters, followed by `eyJ` and 8 payload characters (the lookbehind keeps a dense run of
# `.eyJ` from reaching Python).
_JWT_PAYLOAD = r"\.eyJ[A-Za-z0-9_-]{8}(?<=[A-Za-z0-9_-]{11}\.eyJ[A-Za-z0-9_-]{8})"


def vet_slack_webhook(match: re.Match[str], text: str, lowered: str) -> Spans:
    path = match.group("path")
    if not is_placeholder(path.split("/", 1)[1]):
        return ((match.start("path"), match.end("path"), "slack_webhook"),)
    return ()


def vet_aws_key_id(match: re.Match[str], text: str, lowered: str) -> Spans:
    start, end = match.span()
    if word_before(text, start) or is_placeholder(match.group(0)):
        return ()
    # A secret access key printed next to its id (credentials.csv, `aws configure list`).
    nearby = regex(_AWS_SECRET_NEARBY).search(text, end, min(len(text), end + 240))
    if nearby and is_aws_secret(nearby.group(0)):
        return (
            (start, end, "aws_access_key_id"),
            (nearby.start(), nearby.end(), "aws_secret_access_key"),
        )
    return ((start, end, "aws_access_key_id"),)


def is_aws_secret(value: str) -> bool:
    return (
        len(value) == 40
        and any(c.isupper() for c in value)
        and any(c.islower() for c in value)
        and any(c.isdigit() or c in "/+" for c in value)
        and not is_placeholder(value)
    )


def jwt_matches(pattern: re.Pattern[str], text: str) -> Iterator[re.Match[str]]:
    """`pattern.finditer(text)` for `JWT`, in linear time.

    The regex engine tries `JWT` at every `eyJ`, and at each it runs through up to 8,192 header
    characters before it finds no dot: `eyJ` repeated over 1 MB took 15 s. The header's class
    holds no dot, so the header of a match starting at `s` ends where the run of that class from
    `s` ends; every start in one run shares that end. So look for the ends instead: each dot
    that opens a payload (`_JWT_PAYLOAD`), and in the run before it the first `eyJ` no further
    than the longest header. Only there can finditer's next match start, and the regex is
    matched there (its remaining parts are optional, so it matches). Each character is looked at
    a bounded number of times; test_scrub checks the matches are finditer's own.
    """
    seek = regex(_JWT_PAYLOAD)
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


def vet_jwt(match: re.Match[str], text: str, lowered: str) -> Spans:
    start, end = match.span()
    if word_before(text, start):
        return ()
    if text[end - 1] == ".":
        end -= 1
    parts = text[start:end].split(".")
    if _is_documentation_jwt(parts[1]) or is_placeholder(parts[1]):
        return ()
    return ((start, end, "jwt"),)


def _is_documentation_jwt(payload: str) -> bool:
    """The jwt.io sample token (sub 1234567890, name John Doe) is published, not a secret."""
    import base64
    import json

    try:
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except (ValueError, UnicodeDecodeError):
        return False
    return isinstance(claims, dict) and claims.get("name") == "John Doe"


URL_CREDENTIALS = (
    r"://(?P<user>[^\s:@/?#\"'<>\[\]\\]{0,256}):(?P<password>[^\s@/?#\"'<>\\]{1,512})@"
    r"(?=[A-Za-z0-9\[._%-])"
)


SCHEME_BEFORE = r"[A-Za-z][A-Za-z0-9+.-]{0,39}\Z"


URL_PLACEHOLDERS = frozenset({"pass", "password", "passwd", "pwd", "secret", "pw", "p", "x"})


def vet_url(match: re.Match[str], text: str, lowered: str) -> Spans:
    password = match.group("password")
    if password.lower() in URL_PLACEHOLDERS or is_placeholder(password):
        return ()
    start = match.start()
    scheme_match = regex(SCHEME_BEFORE).search(lowered, max(0, start - 40), start)
    scheme = scheme_match.group(0) if scheme_match else ""
    return ((match.start("password"), match.end("password"), url_type(scheme)),)


def url_type(scheme: str) -> str:
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


BEARER = r"bearer[ \t]+(?P<value>[a-z0-9._~+/-]{8,8192}=*)"


AUTHORIZATION = (
    r"authorization[\"']?[ \t]*[:=][ \t]*[\"']?(?P<scheme>basic|token|apikey|api-key|sso-key|ssws)"
    r"[ \t]+(?P<value>[^\s\"',;]{6,4096})"
)


def vet_bearer(match: re.Match[str], text: str, lowered: str) -> Spans:
    if word_before(text, match.start()):
        return ()
    start, end = match.span("value")
    value = text[start:end]
    if is_placeholder(value) or not looks_random(value.rstrip("="), 12):
        return ()
    return ((start, end, "bearer_token"),)


def vet_authorization(match: re.Match[str], text: str, lowered: str) -> Spans:
    start, end = match.span("value")
    value = text[start:end]
    if is_placeholder(value):
        return ()
    if match.group("scheme") == "basic":
        if looks_random(value.rstrip("="), 6) or ":" in b64_text(value):
            return ((start, end, "basic_auth"),)
    elif looks_random(value, 8):
        return ((start, end, "token"),)
    return ()


def b64_text(value: str) -> str:
    import base64

    try:
        return base64.b64decode(value + "=" * (-len(value) % 4), validate=True).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        return ""


HEROKU = (
    r"heroku(?=(?P<key>[a-z0-9_.-]{0,30}))(?P=key)"  # atomic (module doc)
    r"[\"']?[ \t]{0,3}(?::=|=>|[:=])[ \t]{0,3}[\"']?(?P<value>" + UUID + ")"
)


def vet_heroku(match: re.Match[str], text: str, lowered: str) -> Spans:
    name = lowered[match.start() : match.start("value")].rstrip(" \t:=>\"'")
    if name.endswith(("id", "app", "name", "region", "url", "team")):
        return ()
    return ((match.start("value"), match.end("value"), "heroku_api_key"),)
