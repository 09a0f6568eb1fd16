"""The scrubber's provider gate and contextual detectors (rules for `ctxward.core.scrub.RULES`).

- The provider gate: one scan per separator for the place where a token's prefix ends (`_`, `-`
  or `.` then 16 token characters, one of them a capital or a digit), then the provider table
  (`providers.PROVIDERS`, one alternation) is matched at the start of that token only. So
  ~30 formats cost three literal-led scans, not one each, and each character is looked at a
  bounded number of times (a run that matched nothing is skipped whole).
- Contextual detectors, for secrets that have no shape of their own: a token as URL userinfo
  (`scheme://TOKEN@host`), URL passwords holding `? # / ! $ % @`, command-line password flags
  (`-p VALUE`, `-p'VALUE'`, `--requirepass`), `.netrc` entries across lines, a name and its value
  in separate fields (k8s `name:`/`value:`, XML `key=`/`value=`, Postman, HAR), base64-wrapped PEM
  keys (kubeconfig `client-key-data`), UUID secrets known by context (Consul/Nomad SecretID,
  `heroku auth:token`), keyword-less credentials in code (`auth=("user", "pw")`), and
  `vet_prose`, which vets the generic rules' prose lookahead ("using token X").

Every pattern is bounded and anchored on a literal (linear, see `ctxward.core.scrub`). Standard
library only.
"""

from __future__ import annotations

from ctxward.core.scrub.assignments import acceptable, classify_key
from ctxward.core.scrub.providers import PROVIDERS, UNSEPARATED
from ctxward.core.scrub.rules import Rule, is_placeholder, looks_random, regex, word_before
from ctxward.core.scrub.tokens import (
    SCHEME_BEFORE,
    URL_PLACEHOLDERS,
    b64_text,
    token_vetter,
    url_type,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    import re
    from collections.abc import Iterator

    from ctxward.core.scrub.rules import Spans, Vetter

# -- the provider gate ---------------------------------------------------------------------------

# One gate per separator: a pattern that starts with one literal character is searched in C at
# memchr speed, where a class of three is tested at every position (10x slower on 1 MB). The dash
# skips UUID groups (`-9f3a-`), which are ids, not token prefixes.
_AHEAD = r"(?=[A-Za-z0-9_=-]{16})[a-z_=-]{0,15}[A-Z0-9]"
_GATES = ("_" + _AHEAD, r"-(?![0-9a-f]{4}-)" + _AHEAD, r"\." + _AHEAD)
_RUN = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"
# Where the token may start: the widest run first (`=` inside a token), then with dots, then plain.
_RUNS = (_RUN + ".=", _RUN + ".", _RUN)
_RUN_END = r"[A-Za-z0-9_-]*"
_PROVIDER_TABLE = "|".join(f"(?P<p{i}>{pattern})" for i, (_, _, pattern) in enumerate(PROVIDERS))
_BACK = 64  # a provider prefix ends at most this far before the gate's separator


def _gate_hit(text: str) -> bool:
    """Whether any gate finds a candidate token: the provider table (a ~3 ms compile, paid by
    every process that scrubs) is compiled only then."""
    return any(regex(gate).search(text) is not None for gate in _GATES)


def _gate_matches(pattern: re.Pattern[str], text: str) -> Iterator[re.Match[str]]:
    """The provider table's matches, tried only at the start of the token around a gate hit
    (each gate in turn: a token two gates find, `sk_live_…-…`, is matched twice and given once,
    as the same start gives the same match)."""
    given: set[int] = set()
    for gate in _GATES:
        for match in _one_gate(regex(gate), pattern, text):
            if match.start() not in given:
                given.add(match.start())
                yield match


def _one_gate(
    gate: re.Pattern[str], pattern: re.Pattern[str], text: str
) -> Iterator[re.Match[str]]:
    run_end = regex(_RUN_END)
    resume = 0
    tried = -1
    while (hit := gate.search(text, resume)) is not None:
        at = hit.start()
        floor = max(resume, at - _BACK, tried + 1)
        before = text[floor:at]
        match = None
        last = -1
        for chars in _RUNS:
            start = at - (len(before) - len(before.rstrip(chars)))
            if start != last:
                last = start
                match = pattern.match(text, start)
                if match is not None:
                    break
        tried = at
        if match is not None:
            yield match
            resume = max(match.end(), at + 1)
        else:
            skipped = run_end.match(text, at + 1)  # `*`: it always matches
            resume = max(skipped.end() if skipped else at + 1, at + 1)


def _vet_provider(match: re.Match[str], text: str, lowered: str) -> Spans:
    start, end = match.span()
    if word_before(text, start) and text[start - 1] not in "/":
        return ()
    index = int(match.lastgroup[1:]) if match.lastgroup else 0
    _, kind, _ = PROVIDERS[index]
    value = match.group(0)
    if is_placeholder(value) or not looks_random(value, 12):
        return ()
    return ((start, end, kind),)


_AZURE_NAMES = ("Account", "SharedAccess")  # what stands right before `Key=`


def _azure_vetter(kind: str) -> Vetter:
    """`Key=` after `Account` or `SharedAccess` (an Azure connection string): its value."""

    def vet(match: re.Match[str], text: str, lowered: str) -> Spans:
        if not text.endswith(_AZURE_NAMES, 0, match.start()):
            return ()
        return _generated_value(match, kind, 12)

    return vet


def _unseparated_vetter(kind: str, pattern: str) -> Vetter:
    """A prefix token's vetter (`token_vetter`), or the Azure key's: the one with a value."""
    return _azure_vetter(kind) if "(?P<value>" in pattern else token_vetter(kind, minimum=12)


# -- URLs -----------------------------------------------------------------------------------------

# scheme://TOKEN@host: userinfo with no `user:` part (a token stands in for both).
_URL_TOKEN = r"://(?P<value>[A-Za-z0-9_~+%.-]{16,512})@(?=[A-Za-z0-9\[])"
# scheme://user:PASSWORD@host where the password holds `? # / ! $ % @` (the url rule stops there).
_URL_USER = r"://(?P<user>[^\s:@/?#\"'<>\[\]\\]{0,128}):"
_URL_SEGMENT = r"[^\s\"'<>\\`]{1,256}"
_URL_HOST = r"[A-Za-z0-9][A-Za-z0-9.-]{0,253}(?::\d{1,5})?(?:[/?#]|\Z)"
_PORT_PATH = r"\d{1,5}(?:[/?#]|\Z)"
_URL_AT_TRIES = 4


# An Azure shared access signature: `sig=` in a SAS URL's query or a SAS token, after the
# service version (`sv=2022-11-02&…`). Whoever holds it has the access it signs until it expires.
_SAS_SIG = r"&sig=(?P<value>[A-Za-z0-9%+/]{16,256}={0,2})"
_SAS_PARAMS = r"sv=\d{4}-\d\d-\d\d(?:&[^\s\"'<>&]{1,256})*"  # from sv= to the &sig=
_SAS_REACH = 512  # how far before `sig=` its `sv=` may stand


def _vet_sas(match: re.Match[str], text: str, lowered: str) -> Spans:
    start = match.start()
    version = text.rfind("sv=", max(0, start - _SAS_REACH), start)
    if (
        version < 0
        or (version > 0 and text[version - 1].isalnum())  # `csv=`
        or not regex(_SAS_PARAMS).fullmatch(text, version, start)
    ):
        return ()
    return _generated_value(match, "azure_sas_token")


# A Telegram bot token, `BOT_ID:SECRET`: 8 to 10 digits, then 35 characters that start `AA`. The
# bot's id is public; the part after the colon is the secret.
_TELEGRAM = r":(?P<value>AA[A-Za-z0-9_-]{33})(?![A-Za-z0-9_-])"


def _vet_telegram(match: re.Match[str], text: str, lowered: str) -> Spans:
    start = match.start()
    before = text[max(0, start - 11) : start]
    digits = len(before) - len(before.rstrip("0123456789"))
    head = start - digits
    if not 8 <= digits <= 10 or (
        word_before(text, head) and not text.endswith("bot", 0, head)  # api.telegram.org/bot…
    ):
        return ()
    return _generated_value(match, "telegram_bot_token")


# A Discord webhook: whoever has its URL can post to the channel.
_DISCORD_WEBHOOK = r"/api/webhooks/\d{17,20}/(?P<value>[A-Za-z0-9_-]{60,80})(?![A-Za-z0-9_-])"
_DISCORD_HOSTS = ("discord.com", "discordapp.com")


def _vet_discord_webhook(match: re.Match[str], text: str, lowered: str) -> Spans:
    if not lowered.endswith(_DISCORD_HOSTS, 0, match.start()):
        return ()
    return _generated_value(match, "discord_webhook")


def _vet_url_token(match: re.Match[str], text: str, lowered: str) -> Spans:
    return _generated_value(match, "url_token")


def _generated_value(match: re.Match[str], kind: str, minimum: int = 16) -> Spans:
    """The match's `value`, as `kind`, when it looks generated (`looks_random`, from `minimum`
    characters) and stands for nothing else."""
    value = match.group("value")
    if is_placeholder(value) or not looks_random(value, minimum):
        return ()
    return ((match.start("value"), match.end("value"), kind),)


def _vet_url_special(match: re.Match[str], text: str, lowered: str) -> Spans:
    begin = match.end()
    segment_match = regex(_URL_SEGMENT).match(text, begin)
    if segment_match is None:
        return ()
    segment = segment_match.group(0)
    following = segment.find("://")  # the next URL: no password runs into it
    if following >= 0:
        segment = segment[:following]
    if "@" not in segment:
        return ()
    at = len(segment)
    host = regex(_URL_HOST)
    for _ in range(_URL_AT_TRIES):  # the last few @ only: bounded work per URL
        at = segment.rfind("@", 0, at)
        if at <= 0:
            return ()
        password = segment[:at]
        if not host.match(segment, at + 1):
            continue
        if not any(c in password for c in "?#/@!$%"):
            return ()  # the url rule's own case
        if regex(_PORT_PATH).match(password):
            return ()  # host:port/path?x=a@b, not a password
        query = password.find("?")
        if query >= 0 and "=" in password[query:]:
            continue  # a query string holding an @
        if password.lower() in URL_PLACEHOLDERS or is_placeholder(password):
            return ()
        scheme = regex(SCHEME_BEFORE).search(lowered, max(0, match.start() - 40), match.start())
        return ((begin, begin + at, url_type(scheme.group(0) if scheme else "")),)
    return ()


# -- command lines --------------------------------------------------------------------------------

# -p VALUE, -pVALUE, -p'VALUE', -a VALUE, --requirepass VALUE, --masterauth VALUE: a flag, not
# the inside of a word (`site-packages`: `\w` is `str.isalnum()` or `_`), and a value that is not
# the next flag (`--requirepass --requirepass VALUE`: the second one's).
_FLAG = (
    r"-(?<![\w-]-)(?:(?P<flag>[paP])(?P<sep>[ \t]{1,4}|(?=['\"A-Za-z0-9!@#%^&*+/]))"
    r"|-(?P<long>requirepass|masterauth)(?:[ \t]{1,4}|=))"
    r"(?:'(?P<single>[^'\n]{1,256})'|\"(?P<double>[^\"\n]{1,256})\"|(?P<bare>(?!-)[^\s'\"`;|&]{1,256}))"
)
_FLAG_COMMANDS = {
    "p": (
        "mysql",
        "mysqldump",
        "mysqladmin",
        "mysqlimport",
        "mysqlcheck",
        "mariadb",
        "sshpass",
        "mongo",
        "mongosh",
        "mongodump",
        "mongorestore",
        "mongoexport",
        "mongoimport",
        "docker login",
        "podman login",
        "nerdctl login",
        "buildah login",
        "helm registry login",
        "oras login",
        "skopeo login",
        "htpasswd",
        "ldapsearch",
    ),
    "a": ("redis-cli", "keydb-cli", "valkey-cli"),
    "P": ("zip", "7z", "unzip"),
}
_LINE_BACK = 240
# Commands whose -p takes its value attached only (-pVALUE, -p'VALUE').
_ATTACHED_ONLY = ("mysql", "mariadb")


def _vet_cli_password(match: re.Match[str], text: str, lowered: str) -> Spans:
    flag = match.group("flag") or "-"
    group = next(g for g in ("single", "double", "bare") if match.group(g) is not None)
    start, end = match.span(group)
    value = text[start:end]
    if flag.startswith("-"):
        pass  # --requirepass and friends name a password wherever they are
    else:
        line_start = max(text.rfind("\n", max(0, match.start() - _LINE_BACK), match.start()) + 1, 0)
        line = lowered[max(line_start, match.start() - _LINE_BACK) : match.start()]
        commands = [command for command in _FLAG_COMMANDS[flag] if command in line]
        if not commands:
            return ()
        spaced = bool(match.group("sep"))  # a space or a tab; empty when attached
        if spaced and all(command.startswith(_ATTACHED_ONLY) for command in commands):
            return ()  # `mysql -p shop`: -p then a space asks for the password; shop: the database
        if flag == "p" and match.group("sep").strip() and value.isdigit():
            return ()  # a port
    if group == "bare":
        value = value.rstrip(",)")
        end = start + len(value)
    if len(value) < 4 or is_placeholder(value) or value.lower() in URL_PLACEHOLDERS:
        return ()
    return ((start, end, "password"),)


# -- .netrc across lines --------------------------------------------------------------------------

_NETRC_LINES = (
    r"machine[ \t]+\S{1,256}(?:(?:\s|\\[nrt]){1,64}(?:login|account|port)[ \t]+\S{1,256}){0,3}"
    r"(?:\s|\\[nrt]){1,64}password[ \t]+(?P<value>[^\s\\\"']{1,512})"
)


def _vet_netrc(match: re.Match[str], text: str, lowered: str) -> Spans:
    start, end = match.span("value")
    if not is_placeholder(text[start:end]):
        return ((start, end, "password"),)
    return ()


# -- a name and its value in separate fields ------------------------------------------------------

# A quote as it stands in text, or JSON-escaped once or more (a transcript quotes a tool's JSON).
_Q = r"(?:\\{1,8}\"|[\"'])?"
_NL = r"(?:\r?\n|(?:\\r)?\\n)"
_QUOTED_OR_BARE = (
    r"(?:\\{1,8}\"(?P<escaped>[^\"\\\n]{1,1024})\\{1,8}\"|\"(?P<double>[^\"\n]{1,1024})\""
    r"|'(?P<single>[^'\n]{1,1024})'|(?P<bare>[^\s\"',}<>\\]{1,1024}))"
)
# Found from the value's side ("value" is rarer than "name" and "key"), the name looked for in
# the 200 characters before it.
_VALUE_FIELD = "value" + _Q + r"[ \t]{0,4}[:=][ \t]{0,4}" + _QUOTED_OR_BARE
_NAME_BEFORE = (
    r"(?:name|key)"
    + _Q
    + r"[ \t]{0,4}[:=][ \t]{0,4}"
    + _Q
    + r"(?P<name>[a-z0-9_.-]{1,64})"
    + _Q
    + r"(?:[ \t]{0,4},?[ \t]{0,4}(?:"
    + _NL
    + r"[ \t]{0,32}-?[ \t]{0,4})?|[ \t]{1,8})"
    + _Q
    + r"\Z"
)
_NAME_REACH = 200
_XML_PAIR = (
    r"<(?:name|key)>(?P<name>[a-z0-9_.-]{1,64})</(?:name|key)>(?:\s|\\[nrt]){0,64}"
    r"<value>(?P<bare>[^<\s]{1,1024})</value>"
)


def _vet_value_field(match: re.Match[str], text: str, lowered: str) -> Spans:
    at = match.start()
    named = regex(_NAME_BEFORE).search(lowered, max(0, at - _NAME_REACH), at)
    if named is None:
        return ()
    return _vet_name_value(match, text, text[named.start("name") : named.end("name")])


def _vet_xml_pair(match: re.Match[str], text: str, lowered: str) -> Spans:
    return _vet_name_value(match, text, text[match.start("name") : match.end("name")])


def _vet_name_value(match: re.Match[str], text: str, name: str) -> Spans:
    kind = classify_key(name)
    if kind is None:
        return ()
    groups = match.groupdict()
    group = next(g for g in ("escaped", "double", "single", "bare") if groups.get(g) is not None)
    start, end = match.span(group)
    value = text[start:end]
    if acceptable(value, kind, quoted=group != "bare"):
        return ((start, end, kind),)
    return ()


# -- base64-wrapped PEM ---------------------------------------------------------------------------

# "-----BEGIN " in base64, at each of the three alignments the encoder can give it.
_B64_PEM = r"LS0tLS1CRUdJTi[A-Za-z0-9+/]{20,87380}={0,2}"


def _vet_b64_pem(match: re.Match[str], text: str, lowered: str) -> Spans:
    head = b64_text(match.group(0)[:96])
    if "PRIVATE KEY" in head:
        return ((match.start(), match.end(), "private_key"),)
    if "CERTIFICATE" in head and "REQUEST" not in head:
        return ((match.start(), match.end(), "certificate"),)
    return ()


# -- UUID secrets known by their context ----------------------------------------------------------

_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
_ID_VALUE = r"[\"']?[ \t]{0,4}[:=][ \t]{0,8}[\"']?(?P<value>" + _UUID + ")"
_SECRET_ID = r"secret[ _-]?id" + _ID_VALUE
_TOKEN_HEADER = r"x-(?:consul|nomad)-token" + _ID_VALUE
_HEROKU_CLI = r"heroku[ \t]+auth:token(?:\s|\\[nr]){1,40}(?P<value>" + _UUID + ")"


def _uuid_vetter(kind: str) -> Vetter:
    def vet(match: re.Match[str], text: str, lowered: str) -> Spans:
        return ((match.start("value"), match.end("value"), kind),)

    return vet


# -- keyword-less credentials in code -------------------------------------------------------------

_AUTH_TUPLE = (
    r"auth[ \t]{0,4}=?[ \t]{0,4}[(\[][ \t]{0,4}\\{0,8}(?P<q1>[\"'])(?P<user>[^\"'\\\n]{1,128})"
    r"\\{0,8}(?P=q1)[ \t]{0,4},[ \t]{0,4}\\{0,8}(?P<q2>[\"'])(?P<value>[^\"'\\\n]{1,256})"
    r"\\{0,8}(?P=q2)"
)


def _vet_auth_tuple(match: re.Match[str], text: str, lowered: str) -> Spans:
    start, end = match.span("value")
    value = text[start:end]
    if len(value) >= 4 and not is_placeholder(value) and value.lower() not in URL_PLACEHOLDERS:
        return ((start, end, "password"),)
    return ()


# -- bare tokens in prose (the generic rules' lookahead, `scrub._PROSE_AHEAD`) -------------------

# The key word as written, and the type of what follows it.
_PROSE_KINDS = {
    "token": "token",
    "tokens": "token",
    "key": "api_key",
    "keys": "api_key",
    "password": "password",
    "passwords": "password",
    "passphrase": "password",
    "secret": "secret",
    "secrets": "secret",
}
_PROSE_TRAIL = ".,;:!?)'\"`"
_HEX = frozenset("0123456789abcdefABCDEF-")


def vet_prose(match: re.Match[str], text: str) -> Spans:
    """A value after "token", "key", "password" or "secret" in a sentence: redacted when it
    looks generated (capitals, small letters and digits; no path, no hex digest, no URL)."""
    kind = _PROSE_KINDS.get(text[match.start("word") : match.end()].lower())
    if kind is None or word_before(text, match.start("word")):
        return ()
    start, end = match.span("pvalue")
    value = text[start:end].rstrip(_PROSE_TRAIL)
    end = start + len(value)
    if (
        len(value) < 16
        or not any(c.isupper() for c in value)
        or not any(c.islower() for c in value)
        or not any(c.isdigit() for c in value)
        or set(value) <= _HEX
        or value.count("/") > 1
        or value.startswith(("/", "."))
        or "=" in value.rstrip("=")
        or is_placeholder(value)
    ):
        return ()
    return ((start, end, kind),)


def rules() -> tuple[Rule, ...]:
    """The rules this module adds to the table (`engine.RULES`; the anchors work as there)."""
    return (
        Rule("providers", _PROVIDER_TABLE, False, _vet_provider, None, _gate_matches, _gate_hit),
        *(
            Rule(rule_id, pattern, False, _unseparated_vetter(kind, pattern), literal)
            for literal, rule_id, kind, pattern in UNSEPARATED
        ),
        Rule("url_token", _URL_TOKEN, False, _vet_url_token, "://"),
        Rule("azure_sas", _SAS_SIG, False, _vet_sas, "&sig="),
        Rule("telegram_bot_token", _TELEGRAM, False, _vet_telegram, ":AA"),
        Rule("discord_webhook", _DISCORD_WEBHOOK, False, _vet_discord_webhook, "/api/webhooks/"),
        Rule("url_password_special", _URL_USER, False, _vet_url_special, "://"),
        Rule("cli_password_flag", _FLAG, False, _vet_cli_password, "-"),
        Rule("netrc_lines", _NETRC_LINES, True, _vet_netrc, "machine"),
        Rule("name_value_fields", _VALUE_FIELD, True, _vet_value_field, "value"),
        Rule("xml_name_value", _XML_PAIR, True, _vet_xml_pair, "<value>"),
        Rule("base64_pem", _B64_PEM, False, _vet_b64_pem, "LS0tLS1CRUdJTi"),
        Rule("consul_secret_id", _SECRET_ID, True, _uuid_vetter("consul_token"), "secret"),
        Rule("consul_token_header", _TOKEN_HEADER, True, _uuid_vetter("consul_token"), "x-"),
        Rule("heroku_cli_uuid", _HEROKU_CLI, True, _uuid_vetter("heroku_api_key"), "heroku"),
        Rule("auth_tuple", _AUTH_TUPLE, True, _vet_auth_tuple, "auth"),
    )
