"""`.ctxward/config.yaml` (optional) merged over the defaults, validated into frozen values.

Unknown keys and wrong types are errors naming the file and the key: a typo must not silently
leave a default in force. YAML is only imported when the file exists.

The values are `core.values.Value`s, not dataclasses: the hooks import this module on their hot
path, and `dataclasses` (through `inspect`) plus generating each class's methods cost more than
the rest of the module. `Config.as_dict()` keeps the field order the classes annotate.
"""

from __future__ import annotations

import errno
from pathlib import Path
from typing import Any

from ctxward.core import drift_settings
from ctxward.core.drift_settings import whole_number
from ctxward.core.project import Project
from ctxward.core.values import Value, field
from ctxward.errors import BadInput, digits_problem

CONFIG_FILE = "config.yaml"
PRESETS = ("pantheon", "peaks")


class DispatchConfig(Value):
    capacity_bytes: int = 262_144  # seed 004 G9: 256K by default
    capacity_by_agent: dict[str, int] = field(default_factory=dict)
    offload: bool = True


class InjectionConfig(Value):
    # Claude Code cuts hook output strings at 10,000 characters; leave room for the prefix it
    # adds ("SessionStart hook additional context: "): 9,000 by default.
    limit_chars: int = 9_000


REPORT_ENFORCE = ("block", "offload", "off")


class ReportsConfig(Value):
    # G0: a sub-agent report over 40 lines / 2 KB is saved as an artifact; `block` also sends
    # the sub-agent back to summarise it, `offload` only saves it, `off` does nothing.
    enforce: str = "block"


class ScoringConfig(Value):
    """Project extensions of the shipped scoring tables (lib/ctxward/data/scoring.yaml).

    keywords: entries {term, impact, risk, novelty, category, forms}; one whose term matches a
    shipped keyword (case-insensitively) replaces it. ignore: extra phrases that score nothing.
    relevance: {from_agent: {to_agent: 0.0..1.0}} merged over the seed's table.
    """

    keywords: tuple[dict[str, Any], ...] = ()
    ignore: tuple[str, ...] = ()
    relevance: dict[str, dict[str, float]] = field(default_factory=dict)


class BankConfig(Value):
    """The L2 memory bank (seed 000 §6, §18): the `## Completed Phases` budget, in lines; and
    whether a sub-agent dispatch is given the previous phase's context (§8, §15)."""

    total_budget: int = 100  # TOTAL_BUDGET
    phases: int = 8  # estimated phases of a feature when `bank promote --phases` is not given
    inject_context: bool = True  # PreToolUse adds the ZZ block to a dispatch prompt (bank.inject)


class DebateConfig(Value):
    """Consensus debates (seed 002): where every verdict is filed, relative to the project."""

    wiki_dir: str = "docs/wiki/consensus"


class Config(Value):
    """The settings in force; a sub-config left out gets its defaults (fresh dicts each time)."""

    # as_dict() (`config show`) lists the fields in this order.
    preset: str | None = None
    dispatch: DispatchConfig = field(default_factory=DispatchConfig)
    injection: InjectionConfig = field(default_factory=InjectionConfig)
    reports: ReportsConfig = field(default_factory=ReportsConfig)
    scoring: ScoringConfig = field(default_factory=ScoringConfig)
    bank: BankConfig = field(default_factory=BankConfig)
    debate: DebateConfig = field(default_factory=DebateConfig)
    # Drift detection (seed 002): thresholds per signature (drift_settings.parse_limits).
    drift: dict[str, Any] = field(default_factory=drift_settings.default_limits)
    source: str | None = None  # the file it was read from, if any


def _mapping(value: object, where: str, allowed: set[str]) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise BadInput(f"{where}: expected a mapping, got {type(value).__name__}")
    unknown = sorted(set(value) - allowed)
    if unknown:
        raise BadInput(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(sorted(allowed))})")
    return value


def parse(data: object, source: str) -> Config:
    """Validate a parsed config mapping into a Config; BadInput names `source` and the key."""
    if data is None:
        return Config(source=source)
    top = _mapping(
        data,
        source,
        {
            "preset",
            "dispatch",
            "injection",
            "reports",
            "scoring",
            "bank",
            "debate",
            "drift",
            "context",
            "scrub",
        },
    )
    from ctxward.core.scrub import userrules as scrub_config

    scrub_config.parse(top.get("scrub"), f"{source}: scrub")  # refused here; in force at load
    preset = top.get("preset")
    if preset is not None and preset not in PRESETS:
        raise BadInput(f"{source}: preset: {preset!r} is not one of {', '.join(PRESETS)}")

    raw_dispatch = _mapping(
        top.get("dispatch", {}),
        f"{source}: dispatch",
        {"capacity_bytes", "capacity_by_agent", "offload"},
    )
    dispatch = DispatchConfig()
    capacity = whole_number(
        raw_dispatch.get("capacity_bytes", dispatch.capacity_bytes),
        f"{source}: dispatch.capacity_bytes",
        1024,
        dispatch.capacity_bytes,  # config may lower the capacity, never lift it
    )
    by_agent = {}
    raw_by_agent = raw_dispatch.get("capacity_by_agent") or {}
    if not isinstance(raw_by_agent, dict):
        raise BadInput(
            f"{source}: dispatch.capacity_by_agent: expected a mapping of agent type to bytes, "
            f"got {type(raw_by_agent).__name__}"
        )
    for agent, value in raw_by_agent.items():
        where = f"{source}: dispatch.capacity_by_agent.{agent}"
        by_agent[str(agent)] = whole_number(value, where, 1024, capacity)
    offload = raw_dispatch.get("offload", True)
    if not isinstance(offload, bool):
        raise BadInput(f"{source}: dispatch.offload: expected true or false, got {offload!r}")

    raw_injection = _mapping(top.get("injection", {}), f"{source}: injection", {"limit_chars"})
    limit = whole_number(
        raw_injection.get("limit_chars", InjectionConfig().limit_chars),
        f"{source}: injection.limit_chars",
        1_000,
        9_500,
    )
    raw_reports = _mapping(top.get("reports", {}), f"{source}: reports", {"enforce"})
    enforce = raw_reports.get("enforce", ReportsConfig().enforce)
    if enforce is False:  # YAML 1.1 reads a bare `off` as false
        enforce = "off"
    if enforce not in REPORT_ENFORCE:
        raise BadInput(
            f"{source}: reports.enforce: {enforce!r} is not one of {', '.join(REPORT_ENFORCE)}"
        )
    return Config(
        preset=preset,
        dispatch=DispatchConfig(
            capacity_bytes=capacity, capacity_by_agent=by_agent, offload=offload
        ),
        injection=InjectionConfig(limit_chars=limit),
        reports=ReportsConfig(enforce=enforce),
        scoring=_parse_scoring(top.get("scoring", {}), f"{source}: scoring"),
        bank=_parse_bank(top.get("bank", {}), f"{source}: bank"),
        debate=_parse_debate(top.get("debate", {}), f"{source}: debate"),
        drift=_drift_and_context(top, source),
        source=source,
    )


def _drift_and_context(top: dict[str, Any], source: str) -> dict[str, Any]:
    """The `drift:` limits, carrying the `context:` section (large outputs, pressure stages),
    which the drift observer applies on the same per-call state (core.drift_settings)."""
    limits = drift_settings.parse_limits(top.get("drift"), f"{source}: drift")
    limits["context"] = drift_settings.parse_context(top.get("context"), f"{source}: context")
    return limits


def config_path(project: Project) -> Path:
    return project.state_dir / CONFIG_FILE


# The parsed config of each file this process has read, under the file's identity (device,
# inode, size, mtime, ctime): a PreCompact asks for it from a dozen places (`Project.bank_dir`,
# `sub_agents_dir`, each feature's settings) and reads and parses it once; a rewrite changes
# the identity, so the next `load` reads the new text.
_loaded: dict[str, tuple[tuple[int, ...], Config, object]] = {}


def load(project: Project) -> Config:
    """The project's config: defaults when there is no file; BadInput for a bad one.

    Read and parsed once per version of the file in a process (`_loaded`); a later call costs
    one `stat`. A file larger than `limits.MAX_CONFIG_BYTES` is refused unread: every sub-agent
    call reads the config, and YAML this large takes seconds to parse (a committed 4 MB file:
    14 s, past the host's timeout for the dispatch guard).
    """
    path = config_path(project)
    if not path.is_file():
        return Config()
    try:
        info = path.stat()
    except OSError:  # gone since the check above: read it as before, and fail there
        identity: tuple[int, ...] = ()
    else:
        identity = (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
    known = _loaded.get(str(path))
    if identity and known is not None and known[0] == identity:
        if known[2] is not None:  # put the scrub section back in force, as a fresh load would
            from ctxward.core.scrub import userrules as scrub_config

            scrub_config.apply(known[2], f"{project.relative(path)}: scrub")
        return known[1]
    config, scrub_section = _read(project, path)
    if identity:
        _loaded[str(path)] = (identity, config, scrub_section)
    return config


def _read(project: Project, path: Path) -> tuple[Config, object]:
    """Read, parse and validate `path`; apply its scrub section. (config, that section)."""
    import yaml

    source = project.relative(path)
    from ctxward.core.fsutil import read_regular
    from ctxward.core.limits import MAX_CONFIG_BYTES

    try:
        text = read_regular(path, limit=MAX_CONFIG_BYTES).decode("utf-8")
    except OSError as exc:  # too large; replaced by a FIFO since the check above, say
        if exc.errno == errno.EFBIG:
            raise BadInput(f"{source}: refused: {exc.strerror} (a config is a few lines)") from None
        raise BadInput(f"{source}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise BadInput(f"{source}: not UTF-8 (byte {exc.start})") from None
    try:
        data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = " ".join(str(getattr(exc, "problem", None) or exc).split())
        raise BadInput(f"{source}: YAML error{where}: {problem}") from None
    except ValueError:  # the only other error: an integer too long to convert
        raise BadInput(f"{source}: has {digits_problem()}") from None
    from ctxward.core.limits import problem as unsafe

    refused = unsafe(data, max_nodes=2 * len(text) + 100)  # a YAML alias bomb, say
    if refused is not None:
        raise BadInput(f"{source}: {refused}")
    config = parse(data, source)
    scrub_section = data.get("scrub") if isinstance(data, dict) else None
    if scrub_section is not None:
        from ctxward.core.scrub import userrules as scrub_config

        scrub_config.apply(scrub_section, f"{source}: scrub")
    return config, scrub_section


_KEYWORD_KEYS = {"term", "impact", "risk", "novelty", "category", "forms"}


def _check_weight(value: object, where: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise BadInput(f"{where}: expected a number from 0 to 1 (or null), got {value!r}")
    return float(value)


def _check_text(value: object, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise BadInput(f"{where}: expected a non-empty string, got {value!r}")
    return value.strip()


def _parse_scoring(value: object, where: str) -> ScoringConfig:
    """The `scoring:` section: extensions of the keyword map, ignore list and relevance table."""
    raw = _mapping(value or {}, where, {"keywords", "ignore", "relevance"})
    raw_keywords = raw.get("keywords") or []
    if not isinstance(raw_keywords, list):
        raise BadInput(f"{where}.keywords: expected a list")
    keywords = []
    for index, item in enumerate(raw_keywords):
        at = f"{where}.keywords[{index}]"
        entry = _mapping(item, at, _KEYWORD_KEYS)
        term = _check_text(entry.get("term"), f"{at}.term")
        forms = entry.get("forms", [term])
        if not isinstance(forms, list) or not forms:
            raise BadInput(f"{at}.forms: expected a non-empty list of words or phrases")
        keywords.append(
            {
                "term": term,
                "impact": _check_weight(entry.get("impact"), f"{at}.impact"),
                "risk": _check_weight(entry.get("risk"), f"{at}.risk"),
                "novelty": _check_weight(entry.get("novelty"), f"{at}.novelty"),
                "category": _check_text(entry.get("category", "custom"), f"{at}.category"),
                "forms": [_check_text(form, f"{at}.forms") for form in forms],
            }
        )
    raw_ignore = raw.get("ignore") or []
    if not isinstance(raw_ignore, list):
        raise BadInput(f"{where}.ignore: expected a list of phrases")
    ignore = tuple(_check_text(phrase, f"{where}.ignore") for phrase in raw_ignore)
    raw_relevance = raw.get("relevance") or {}
    if not isinstance(raw_relevance, dict):
        raise BadInput(f"{where}.relevance: expected a mapping of from-agent to mappings")
    relevance: dict[str, dict[str, float]] = {}
    for sender, row in raw_relevance.items():
        if not isinstance(row, dict):
            raise BadInput(f"{where}.relevance.{sender}: expected a mapping of to-agent to 0..1")
        relevance[str(sender).lower()] = {
            str(receiver).lower(): _check_weight(score, f"{where}.relevance.{sender}.{receiver}")
            or 0.0
            for receiver, score in row.items()
        }
    return ScoringConfig(keywords=tuple(keywords), ignore=ignore, relevance=relevance)


def _parse_bank(value: object, where: str) -> BankConfig:
    """The `bank:` section: total_budget (10..10000 lines), phases (1..100), inject_context."""
    raw = _mapping(value or {}, where, {"total_budget", "phases", "inject_context"})
    defaults = BankConfig()
    inject = raw.get("inject_context", defaults.inject_context)
    if not isinstance(inject, bool):
        raise BadInput(f"{where}.inject_context: expected true or false")
    return BankConfig(
        inject_context=inject,
        total_budget=whole_number(
            raw.get("total_budget", defaults.total_budget), f"{where}.total_budget", 10, 10_000
        ),
        phases=whole_number(raw.get("phases", defaults.phases), f"{where}.phases", 1, 100),
    )


def _parse_debate(value: object, where: str) -> DebateConfig:
    """The `debate:` section: wiki_dir, a folder inside the project (no `..`, not absolute)."""
    raw = _mapping(value or {}, where, {"wiki_dir"})
    if "wiki_dir" not in raw:
        return DebateConfig()
    folder = _check_text(raw["wiki_dir"], f"{where}.wiki_dir").strip("/")
    parts = folder.split("/")
    if (
        raw["wiki_dir"].startswith("/")
        or "\\" in folder
        or any(p in ("", ".", "..") for p in parts)
    ):
        raise BadInput(
            f"{where}.wiki_dir: {raw['wiki_dir']!r} must be a relative folder inside the project "
            "(no '.', '..' or empty parts)"
        )
    return DebateConfig(wiki_dir=folder)
