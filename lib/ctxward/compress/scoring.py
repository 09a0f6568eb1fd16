"""Priority scoring (seed 000 §3), field masks (§5), variants (§4) and the safety preflight (§9–10).

Deterministic and keyword-driven: no model is called. The tables are data files shipped in the
package (lib/ctxward/data/scoring.yaml, compression.yaml); a project may extend the keyword map,
the ignore list and the relevance table in `.ctxward/config.yaml` under `scoring:`.

    score = 0.30·impact + 0.25·risk + 0.20·novelty + 0.15·blockers + 0.10·downstream
    CRITICAL ≥ 0.75 | HIGH ≥ 0.50 | MEDIUM ≥ 0.25 | LOW
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ctxward.core.config import ScoringConfig
from ctxward.core.paths import DATA
from ctxward.core.text import cut

DATA_DIR = DATA
DIMENSIONS = ("impact", "risk", "novelty", "blockers", "downstream")
BANDS = ("CRITICAL", "HIGH", "MEDIUM", "LOW")
# Fields whose text is searched for keywords (the seed: "keywords found in the summary").
NARRATIVE_FIELDS = ("summary", "details", "changes", "decisions", "decision", "gotcha", "gotchas")
_EMPTY = frozenset({"", "none", "no", "n/a", "na", "-", "null", "nil", "false", "0"})


@dataclass(frozen=True, slots=True)
class Keyword:
    term: str
    category: str
    impact: float | None
    risk: float | None
    novelty: float | None
    forms: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Rule:
    """One row of a (from, to) table; `*` matches any agent."""

    sender: str
    receiver: str
    values: Mapping[str, Any]

    def specificity(self, sender: str, receiver: str) -> int | None:
        """3 for an exact pair, 2 for (*, to), 1 for (from, *), 0 for (*, *); None if no match."""
        if self.sender not in ("*", sender) or self.receiver not in ("*", receiver):
            return None
        return (self.receiver != "*") * 2 + (self.sender != "*")


@dataclass(frozen=True)
class Tables:
    weights: Mapping[str, float]
    bands: tuple[tuple[str, float], ...]
    keywords: tuple[Keyword, ...]
    ignore: tuple[str, ...]
    novelty_by_files: tuple[tuple[int, float], ...]
    relevance: Mapping[str, Mapping[str, float]]
    unknown_relevance: float
    masks: tuple[Rule, ...]
    variants: tuple[Rule, ...]
    allowed_fields: frozenset[str]
    matcher: re.Pattern[str] = field(repr=False, compare=False)
    # matcher group g<i> belongs to keyword index owners[i], or -1 for an ignored phrase
    owners: tuple[int, ...] = field(repr=False, compare=False, default=())


@dataclass(frozen=True, slots=True)
class Score:
    dimensions: Mapping[str, float]
    score: float
    band: str
    keywords: tuple[str, ...]
    adjustments: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        """The `ctxward inline score` JSON: dimensions, score, band, keywords."""
        return {
            "dimensions": dict(self.dimensions),
            "score": self.score,
            "band": self.band,
            "keywords": list(self.keywords),
        }


@dataclass(frozen=True, slots=True)
class Preflight:
    """Whether an entry may be compressed (seed 000 §9 can_compress, §10 NEVER compress)."""

    allowed: bool
    reason: str = ""
    partial: bool = False


# -- tables ------------------------------------------------------------------------------------


def _read_yaml(name: str) -> Any:
    import yaml

    text = (DATA_DIR / name).read_text(encoding="utf-8")
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


@functools.cache
def _shipped() -> tuple[dict[str, Any], dict[str, Any]]:
    return _read_yaml("scoring.yaml"), _read_yaml("compression.yaml")


def _weight(value: Any) -> float | None:
    return None if value is None else float(value)


def _keyword(raw: Mapping[str, Any]) -> Keyword:
    term = str(raw["term"])
    return Keyword(
        term=term,
        category=str(raw.get("category", "custom")),
        impact=_weight(raw.get("impact")),
        risk=_weight(raw.get("risk")),
        novelty=_weight(raw.get("novelty")),
        forms=tuple(str(form) for form in raw.get("forms") or [term]),
    )


def _rules(rows: Iterable[Mapping[str, Any]]) -> tuple[Rule, ...]:
    return tuple(Rule(str(row["from"]).lower(), str(row["to"]).lower(), dict(row)) for row in rows)


_CACHE: dict[str, Tables] = {}


def load_tables(extra: ScoringConfig | None = None) -> Tables:
    """The shipped tables, extended by a project's `scoring:` config when given."""
    extra = extra or ScoringConfig()
    key = json.dumps(extra.as_dict(), sort_keys=True)
    if key not in _CACHE:
        _CACHE[key] = _tables(extra)
    return _CACHE[key]


def _tables(extra: ScoringConfig) -> Tables:
    scoring, compression = _shipped()
    keywords = {kw.term.lower(): kw for kw in map(_keyword, scoring["keywords"])}
    for raw in extra.keywords:
        keyword = _keyword(raw)
        keywords[keyword.term.lower()] = keyword
    ignore = (*scoring.get("ignore", ()), *extra.ignore)
    relevance = {
        str(sender).lower(): {str(k).lower(): float(v) for k, v in row.items()}
        for sender, row in scoring["relevance"].items()
    }
    for sender, row in extra.relevance.items():
        relevance.setdefault(sender, {}).update(row)
    matcher, owners = _compile(tuple(keywords.values()), ignore)
    return Tables(
        weights={k: float(v) for k, v in scoring["weights"].items()},
        bands=tuple((str(b["band"]), float(b["min"])) for b in scoring["bands"]),
        keywords=tuple(keywords.values()),
        ignore=tuple(str(phrase) for phrase in ignore),
        novelty_by_files=tuple(
            (int(rule["more_than"]), float(rule["novelty"])) for rule in scoring["novelty_by_files"]
        ),
        relevance=relevance,
        unknown_relevance=float(scoring["unknown_relevance"]),
        masks=_rules(compression["masks"]),
        variants=_rules(compression["variants"]),
        allowed_fields=frozenset(compression["allowed_fields"]),
        matcher=matcher,
        owners=owners,
    )


def _form_pattern(form: str) -> str:
    stem = form.endswith("*")
    words = form.rstrip("*").lower().split()
    pattern = r"[\s_-]+".join(re.escape(word) for word in words)
    return pattern + (r"[a-z0-9]*" if stem else "")


def _compile(
    keywords: Sequence[Keyword], ignore: Iterable[str]
) -> tuple[re.Pattern[str], tuple[int, ...]]:
    """One regex over every form, longest first; group `k<i>` is keyword i, `ignored` the rest.

    Whole words only: a form may not touch a letter or digit on either side, so "author" is not
    `auth` and "reindex" is not `index`; `_`, `-`, `.` and `/` separate words (auth_service).
    """
    forms: list[tuple[str, int]] = []
    for index, keyword in enumerate(keywords):
        forms.extend((form, index) for form in keyword.forms)
    forms.extend((phrase, -1) for phrase in ignore)
    forms.sort(key=lambda item: (-len(item[0].rstrip("*")), item[0]))
    alternatives = [f"(?P<g{i}>{_form_pattern(form)})" for i, (form, _) in enumerate(forms)]
    pattern = re.compile(
        r"(?<![a-z0-9])(?:" + "|".join(alternatives) + r")(?![a-z0-9])", re.IGNORECASE
    )
    return pattern, tuple(owner for _, owner in forms)


def find_keywords(text: str, tables: Tables) -> list[Keyword]:
    """The keywords `text` mentions, in order of first mention, each once."""
    found: dict[str, Keyword] = {}
    for match in tables.matcher.finditer(text):
        group = match.lastgroup
        owner = tables.owners[int(group[1:])] if group else -1
        if owner >= 0:
            keyword = tables.keywords[owner]
            found.setdefault(keyword.term, keyword)
    return list(found.values())


# -- entry fields ------------------------------------------------------------------------------


def text_of(value: Any) -> str:
    """A field as one string: lists are joined with ", ", None is ''."""
    if value is None:
        return ""
    if isinstance(value, (list, tuple)):
        return ", ".join(text_of(item) for item in value)
    if isinstance(value, Mapping):
        return ", ".join(f"{k}: {text_of(v)}" for k, v in value.items())
    return str(value).strip()


def is_empty(value: Any) -> bool:
    """True for None, '', [], and the words that mean "nothing" (none, n/a, -, …)."""
    if isinstance(value, (list, tuple, dict)):
        return all(is_empty(item) for item in value)
    return text_of(value).lower() in _EMPTY


def file_list(entry: Mapping[str, Any]) -> list[str]:
    """`files_changed` or `files`, as a list (a comma-separated string is split)."""
    for key in ("files_changed", "files"):
        value = entry.get(key)
        if isinstance(value, (list, tuple)):
            return [text_of(item) for item in value if not is_empty(item)]
        if isinstance(value, str) and value.strip():
            return [part.strip() for part in value.split(",") if part.strip()]
    return []


def file_count(entry: Mapping[str, Any]) -> int:
    for key in ("files_changed", "files"):
        value = entry.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return len(file_list(entry))


def status_of(entry: Mapping[str, Any]) -> str:
    status = text_of(entry.get("status")).lower().replace("-", "_").replace(" ", "_")
    return "complete" if status in ("completed", "done", "finished") else status


def narrative(entry: Mapping[str, Any]) -> str:
    """The text searched for keywords: the summary and the other prose fields."""
    return "\n".join(text_of(entry.get(key)) for key in NARRATIVE_FIELDS if entry.get(key))


def has_blockers(entry: Mapping[str, Any]) -> bool:
    """The seed's Blockers dimension: the entry has blockers, or it unblocked another entry."""
    if any(not is_empty(entry.get(key)) for key in ("blockers", "blocked_by")):
        return True
    if any(not is_empty(entry.get(key)) for key in ("unblocks", "unblocked")):
        return True
    return _UNBLOCKED.search(text_of(entry.get("summary"))) is not None


_UNBLOCKED = re.compile(r"(?<![a-z])unblock(?:s|ed|ing)?(?![a-z])", re.IGNORECASE)


# -- scoring -----------------------------------------------------------------------------------


def relevance(sender: str | None, receiver: str | None, tables: Tables) -> float:
    """table[from][to]; the seed's 0.5 when either agent is unknown."""
    row = tables.relevance.get((sender or "").lower())
    if row is None:
        return tables.unknown_relevance
    return row.get((receiver or "").lower(), tables.unknown_relevance)


def band_of(score: float, tables: Tables) -> str:
    for band, minimum in tables.bands:
        if score >= minimum:
            return band
    return tables.bands[-1][0]


def score_entry(
    entry: Mapping[str, Any],
    tables: Tables,
    *,
    sender: str | None = None,
    receiver: str | None = None,
    blocker: bool = False,
) -> Score:
    """Score one subtask_summary (or free text as `summary`) for the (sender, receiver) pair."""
    keywords = find_keywords(narrative(entry), tables)
    dims = {name: 0.0 for name in DIMENSIONS}
    for keyword in keywords:
        for name in ("impact", "risk", "novelty"):
            value = getattr(keyword, name)
            if value is not None:
                dims[name] = max(dims[name], value)
    count = file_count(entry)
    for more_than, novelty in tables.novelty_by_files:
        if count > more_than:
            dims["novelty"] = max(dims["novelty"], novelty)
            break
    dims["blockers"] = 1.0 if blocker or has_blockers(entry) else 0.0
    dims["downstream"] = relevance(sender, receiver, tables)
    total = round(sum(tables.weights[name] * dims[name] for name in DIMENSIONS), 2)
    band = band_of(total, tables)
    adjustments: list[str] = []
    if status_of(entry) == "partial" and BANDS.index(band) > BANDS.index("MEDIUM"):
        band = "MEDIUM"
        adjustments.append("status partial: band raised to MEDIUM (seed 000 §10)")
    return Score(
        dimensions={name: round(value, 2) for name, value in dims.items()},
        score=total,
        band=band,
        keywords=tuple(keyword.term for keyword in keywords),
        adjustments=tuple(adjustments),
    )


# -- masks and variants ------------------------------------------------------------------------


def best_rule(rules: Sequence[Rule], sender: str | None, receiver: str | None) -> Rule:
    """The most specific rule for the pair (exact, then *→to, then from→*, then *→*)."""
    sender, receiver = (sender or "").lower(), (receiver or "").lower()
    ranked = [
        (rank, -index, rule)
        for index, rule in enumerate(rules)
        if (rank := rule.specificity(sender, receiver)) is not None
    ]
    if not ranked:
        raise LookupError(f"no rule for {sender or '?'} → {receiver or '?'} and no (*, *) row")
    return max(ranked, key=lambda item: (item[0], item[1]))[2]


def field_mask(
    sender: str | None, receiver: str | None, tables: Tables
) -> tuple[tuple[str, ...], Mapping[str, int]]:
    """(fields kept, {field: max characters}) for the pair (seed 000 §5)."""
    rule = best_rule(tables.masks, sender, receiver)
    return tuple(rule.values["fields"]), dict(rule.values.get("truncate") or {})


def apply_mask(
    entry: Mapping[str, Any], sender: str | None, receiver: str | None, tables: Tables
) -> dict[str, Any]:
    """The entry's fields the pair keeps, truncated where the mask says so."""
    fields, truncate = field_mask(sender, receiver, tables)
    kept: dict[str, Any] = {}
    for name in fields:
        value = entry.get(name)
        if value is None and name == "files":
            value = file_list(entry) or None
        if value is None or (isinstance(value, str) and not value.strip()):
            continue
        if name in truncate:
            value = cut(text_of(value), int(truncate[name]), strip=True)
        kept[name] = value
    return kept


def variant(sender: str | None, receiver: str | None, tables: Tables) -> Mapping[str, Any]:
    """The §4 row for the pair: `include` (what the next agent needs) and `extract`."""
    return best_rule(tables.variants, sender, receiver).values


# -- safety preflight --------------------------------------------------------------------------

_NEVER_SUBTASK = {"in_progress": "in progress", "escalated": "escalated", "blocked": "blocked"}
# A blocker whose text says it is over (seed 000 §9 skips only the *active* ones).
_RESOLVED = re.compile(
    r"\b(?:resolved|fixed|unblocked|cleared|worked around|no longer|was|were|waited|had been"
    r"|done|closed)\b",
    re.IGNORECASE,
)
_RESOLVED_STATUS = ("resolved", "complete", "fixed", "closed", "cleared")


def active_blockers(value: Any) -> list[str]:
    """The blockers in `value` (a `blockers:` field) still in force.

    A blocker is over when its text says so (resolved, fixed, unblocked, cleared, worked around,
    no longer, was/were, waited, had been, done, closed) or, written as a mapping, when it has
    `resolved: true` or a status such as resolved/done; "none", "n/a" and the like are empty.
    """
    items = value if isinstance(value, (list, tuple)) else [value]
    active = []
    for item in items:
        if isinstance(item, Mapping):
            if item.get("resolved") is True or status_of(item) in _RESOLVED_STATUS:
                continue
            text = text_of(item.get("what") or item.get("blocker") or item.get("name") or item)
        else:
            text = text_of(item)
        if is_empty(text) or _RESOLVED.search(text):
            continue
        active.append(text)
    return active


_NEVER_REVIEW = ("NEEDS_REVISION", "FAILED")


def preflight(entry: Mapping[str, Any]) -> Preflight:
    """seed 000 §9–10: may this entry be compressed?

    Never: a subtask_summary in_progress / escalated / blocked or with active blockers, a review
    NEEDS_REVISION / FAILED, the active plan, an ADR. `partial` is allowed and flagged (⚠️,
    banded MEDIUM at least). Free text (no type, no status) is allowed.
    """
    kind = text_of(entry.get("type")).lower().replace("-", "_") or "subtask_summary"
    status = status_of(entry)
    verdict = text_of(entry.get("verdict")).upper().replace(" ", "_")
    if kind in ("adr", "decision_record") or "adr" in text_of(entry.get("title")).lower().split():
        return Preflight(False, "ADRs are permanent: never compressed (seed 000 §10)")
    if verdict in _NEVER_REVIEW:
        return Preflight(False, f"review verdict {verdict}: left in place (seed 000 §10)")
    if kind == "review" and verdict != "APPROVED":
        return Preflight(False, "review not APPROVED: left in place (seed 000 §9)")
    if kind == "plan":
        active = entry.get("active")
        if active is True or status in ("active", "in_progress", ""):
            return Preflight(False, "the active plan is archived only at feature completion")
    if kind == "disc" and entry.get("user_approved") is not True:
        return Preflight(False, "discussion not approved by the user (seed 000 §9)")
    if status in _NEVER_SUBTASK:
        return Preflight(False, f"status {_NEVER_SUBTASK[status]}: not compressed (seed 000 §10)")
    any_blockers = not is_empty(entry.get("blockers")) or not is_empty(entry.get("blocked_by"))
    if any_blockers and status not in ("complete", "partial"):
        return Preflight(False, "active blockers: not compressed (seed 000 §10)")
    still = active_blockers(entry.get("blockers"))
    if still and kind != "review":
        return Preflight(
            False,
            f"status {status or 'complete'} but blockers still active ({still[0]}): "
            "skipped until they are resolved (seed 000 §9)",
        )
    return Preflight(True, partial=status == "partial")
