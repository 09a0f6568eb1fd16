"""The entity regexes (endpoints, tables, migrations, components, ...) and the semantic lines
built from an entry's own text: the one home of what L1 recognises in prose.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ctxward.compress import scoring
from ctxward.compress.entries import PROSE_FIELDS
from ctxward.compress.scoring import Tables
from ctxward.core.text import cut_at_word

_CODE_FENCE = re.compile(r"```.*?(?:```|\Z)", re.S)


_TRACEBACK = re.compile(
    r"^[ \t]*Traceback \(most recent call last\):.*?"
    r"(?:^[\w.]*(?:Error|Exception|Exit)\b[^\n]*$|\Z)",
    re.M | re.S,
)


_FRAME_LINES = re.compile(r"(?:^[ \t]+(?:File \"[^\n]*|at [\w.$<>]+\([^\n]*)\n?)+", re.M)


_TEST_COUNTS = re.compile(
    r"(\d+)\s+(passed|failed|errors?|skipped|xfailed|xpassed|warnings?)", re.IGNORECASE
)


def structural(raw: Mapping[str, Any], tables: Tables) -> dict[str, Any]:
    """Layer 1 (seed 000 §13): keep the allowed metadata fields; raw output never passes.

    Fields outside the allowed list (stdout, stderr, output, logs, traceback, env, config values)
    are dropped; pasted code blocks and stack traces inside prose become "(raw output omitted)";
    `tests` is reduced to its counts.
    """
    kept: dict[str, Any] = {}
    for key, value in raw.items():
        name = str(key).strip().lower()
        if name not in tables.allowed_fields or value is None:
            continue
        if name in PROSE_FIELDS:
            value = _prose(value)
        elif name == "tests":
            value = summarize_tests(value)
        kept[name] = value
    return kept


def _prose(value: Any) -> Any:
    if isinstance(value, list):
        return [_prose(item) for item in value]
    if not isinstance(value, str):
        return value
    text = _CODE_FENCE.sub("(raw output omitted)", value)
    text = _TRACEBACK.sub("(raw output omitted)", text)
    return _FRAME_LINES.sub("", text).strip()


def summarize_tests(value: Any) -> str:
    """A test result as "12 passed, 1 failed" (counts only; never the raw output)."""
    if isinstance(value, Mapping):
        return ", ".join(f"{v} {k}" for k, v in value.items() if isinstance(v, (int, str)))
    text = scoring.text_of(value)
    counts = _TEST_COUNTS.findall(text)
    if counts and ("\n" in text or len(text) > 80):
        return ", ".join(f"{n} {word.lower()}" for n, word in counts)
    first = text.splitlines()[0] if text else ""
    return cut_at_word(first, 80)


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9`\"'(\[])|\n+")


_ENDPOINT = re.compile(r"\b(GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS)\s+(/[\w\-./{}:<>]*)")


_API_PATH = re.compile(r"(?<![\w./])/(?:api|v\d+|auth|graphql)(?:/[\w\-.{}:<>]+)*")


_STATUS_CONTEXT = re.compile(
    r"(?i)status|http|return|respon|code|error|\b[1-5]\d\d\s+(?:ok|\w+ed)\b"
)


_STATUS_CODE = re.compile(r"\b([1-5]\d\d)\b(?!\s*(?:ms|%|files?|lines?|tests?|rows?|kb|mb|bytes))")


_SHAPE = re.compile(r"\{[^{}\n]{1,120}\}")


_TABLE = re.compile(
    r"(?i)\bcreate table (?:if not exists )?[`\"]?(\w+)|[`\"](\w+)[`\"] table\b|\btable [`\"](\w+)"
    r"|\b(\w+) table\b"
)


_NOT_TABLE = frozenset({"new", "the", "a", "an", "this", "that", "each", "one", "same", "join"})


_RELATION = re.compile(
    r"(?i)\b(?:foreign keys?|fk)\b[^.;\n]{0,60}"
    r"|\b(?:belongs to|has many|has one|references)\s+`?\w+"
)


_COLUMN = re.compile(
    r"(?i)\badd column (?:if not exists )?[`\"]?(\w+)|[`\"](\w+)[`\"] (?:column|field)\b"
    r"|\b(?:column|field) [`\"]?(\w+)"
)


# The folders migrations live in (one list: the memory bank's cross-references use it too).
MIGRATION_DIRS = r"(?:migrations?|alembic/versions|db/migrate)"
_MIGRATION_FILE = re.compile(r"(?:^|/)" + MIGRATION_DIRS + r"/([\w.-]+)")


_MIGRATION_VERSION = re.compile(r"(?i)\bmigration\s+#?(\d[\w-]*)")


_SQL_TYPE = re.compile(
    r"\b(VARCHAR(?:\(\d+\))?|TEXT|INTEGER|BIGINT|SMALLINT|UUID|BOOLEAN|TIMESTAMPTZ|TIMESTAMP|JSONB"
    r"|NUMERIC(?:\(\d+, ?\d+\))?|DECIMAL|FLOAT|ENUM|varchar(?:\(\d+\))?|bigint|uuid|jsonb"
    r"|timestamptz|boolean|integer)\b"
)


_DEFAULT = re.compile(r"(?i)\bdefaults? (?:to |= ?|: ?)?([`\"']?[\w.-]+[`\"']?)")


_COMPONENT = re.compile(
    r"\b([A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+)*(?:Form|Page|View|Modal|Button|List|Card|Component"
    r"|Dialog|Panel|Table|Provider|Screen|Layout|Widget|Menu|Bar|Hook))\b"
)


_COMPONENT_FILE = re.compile(r"([\w-]+)\.(?:tsx|jsx|vue|svelte)$")


_HANDLER = re.compile(r"\b((?:on|handle)[A-Z]\w+)\b")


_ENV_VAR = re.compile(r"\b([A-Z][A-Z0-9]*_[A-Z0-9_]*[A-Z0-9])\b")


_CONFIG_FILE = re.compile(
    r"(?i)(?:^|/)(?:dockerfile|docker-compose[\w.-]*|[\w.-]+\.(?:ya?ml|toml|ini|env|tf|conf|cfg))$"
)


_DEPLOY_TARGET = re.compile(
    r"(?i)\b(?:deploy(?:ed|s|ing)?|releas(?:ed|es|ing)|ship(?:ped|s)?)\s+(?:\w+\s+)?(?:to|on)\s+"
    r"([\w.:/-]+\w)"
)


_CAVEAT = re.compile(
    r"(?i)\b(?:but|however|note|must|never|instead|breaking|trade-?offs?|caveat|beware|careful"
    r"|requires?|only|no longer|deprecated|rollback|rollout|warning|no|without|cannot|can't"
    r"|won't|always|avoid)\b"
)


_GOTCHA_FIELDS = (
    "gotcha",
    "gotchas",
    "caveats",
    "trade_off",
    "tradeoffs",
    "decision",
    "decisions",
    "risks",
)


_EXTRACT_LIMIT = 4


def sentences(text: str) -> list[str]:
    """The sentences of `text` (markdown bullets and surrounding space removed)."""
    parts = (part.strip().lstrip("-*• ").strip() for part in _SENTENCE_END.split(text))
    return [part for part in parts if part]


def first_sentence(text: str, limit: int) -> str:
    found = sentences(text)
    return cut_at_word(found[0] if found else "", limit)


def distinct_values(values: Iterable[str]) -> list[str]:
    seen: dict[str, None] = {}
    for value in values:
        value = value.strip().strip("`\"'")
        if value and value.lower() not in (v.lower() for v in seen):
            seen[value] = None
    return list(seen)[:_EXTRACT_LIMIT]


def _groups(pattern: re.Pattern[str], text: str) -> list[str]:
    out = []
    for match in pattern.finditer(text):
        groups = [g for g in match.groups() if g]
        out.append(groups[0] if groups else match.group(0))
    return out


def endpoints_in(text: str) -> list[str]:
    found = [f"{m.group(1)} {m.group(2)}" for m in _ENDPOINT.finditer(text)]
    paths = {m.group(2) for m in _ENDPOINT.finditer(text)}
    found += [m.group(0) for m in _API_PATH.finditer(text) if m.group(0) not in paths]
    return distinct_values(found)


def _status_codes(text: str) -> list[str]:
    codes: list[str] = []
    for sentence in sentences(text):
        if _STATUS_CONTEXT.search(sentence):
            codes += _STATUS_CODE.findall(sentence)
    return distinct_values(codes)


def extract(kind: str, fields: Mapping[str, Any], text: str, files: Sequence[str]) -> list[str]:
    """The details of one §4 variant aspect found in the entry (deterministic, may be empty)."""
    if kind in ("verdict", "critical_issues", "coverage", "tests", "status"):
        value = scoring.text_of(fields.get(kind))
        return [f"{kind.replace('_', ' ')} {value}"] if value else []
    if kind == "endpoints":
        return endpoints_in(text)
    if kind == "status_codes":
        return _status_codes(text)
    if kind == "shapes":
        return distinct_values(m.group(0) for m in _SHAPE.finditer(text))
    if kind == "tables":
        return distinct_values(t for t in _groups(_TABLE, text) if t.lower() not in _NOT_TABLE)
    if kind == "relationships":
        return distinct_values(m.group(0) for m in _RELATION.finditer(text))
    if kind == "columns":
        return distinct_values(_groups(_COLUMN, text))
    if kind == "migrations":
        names = [m.group(1) for f in files if (m := _MIGRATION_FILE.search(f))]
        return distinct_values(names + _MIGRATION_VERSION.findall(text))
    if kind == "types":
        return distinct_values(_SQL_TYPE.findall(text))
    if kind == "defaults":
        return distinct_values(f"default {d}" for d in _DEFAULT.findall(text))
    if kind == "components":
        from_files = [m.group(1) for f in files if (m := _COMPONENT_FILE.search(f))]
        return distinct_values(_COMPONENT.findall(text) + from_files)
    if kind == "handlers":
        return distinct_values(_HANDLER.findall(text))
    if kind == "env_vars":
        return distinct_values(_ENV_VAR.findall(text))
    if kind == "config_files":
        return distinct_values(f for f in files if _CONFIG_FILE.search(f))
    if kind == "deploy_targets":
        return distinct_values(_DEPLOY_TARGET.findall(text))
    return []


def gotcha_line(fields: Mapping[str, Any], summary_sentences: Sequence[str]) -> str:
    for name in _GOTCHA_FIELDS:
        value = fields.get(name)
        if isinstance(value, list):
            value = next((item for item in value if not scoring.is_empty(item)), None)
        if not scoring.is_empty(value):
            return first_sentence(scoring.text_of(value), 200)
    for sentence in summary_sentences[1:]:
        if _CAVEAT.search(sentence):
            return cut_at_word(sentence, 200)
    return ""


def files_text(files: Sequence[str], shown: int = 3) -> str:
    if len(files) <= shown:
        return ", ".join(files)
    return ", ".join(files[:shown]) + f" (+{len(files) - shown})"
