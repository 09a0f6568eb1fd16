"""The `drift:` and `context:` sections of config.yaml: their defaults, ranges and validation.

Both are applied by the drift observer (`ctxward.drift`) on one per-call state: the `drift:`
section holds each signature's thresholds, the `context:` section the large-output and
context-pressure facts. Their schema lives in core because `core.config` is the one schema of
config.yaml and imports no feature. Standard library only: this is on the PostToolUse hot path.
"""

from __future__ import annotations

from ctxward.core import hotjson
from ctxward.errors import BadInput

# `typing.TYPE_CHECKING` without importing typing: this module is on the PostToolUse hot path.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping
    from typing import Any

SIGNATURES = (
    "repetition",
    "failure_spiral",
    "tool_cycling",
    "rework_churn",
    "excessive_searching",
    "silence",
)


# Each signature's thresholds: seed 002's table. `enabled` at the top switches the observer off.
DEFAULT_LIMITS: dict[str, Any] = {
    "enabled": True,
    "repetition": {"enabled": True, "count": 3, "window": 10},
    "failure_spiral": {"enabled": True, "count": 4},
    "tool_cycling": {"enabled": True, "calls": 6},
    "rework_churn": {"enabled": True, "writes": 3, "window": 10},
    "excessive_searching": {"enabled": True, "searches": 5},
    "silence": {"enabled": True, "calls": 15},
}


# (minimum, maximum) of each threshold: windows stay small, so the state stays small.
_RANGES = {
    ("repetition", "count"): (2, 50),
    ("repetition", "window"): (2, 50),
    ("failure_spiral", "count"): (2, 1000),
    ("tool_cycling", "calls"): (4, 50),
    ("rework_churn", "writes"): (2, 50),
    ("rework_churn", "window"): (2, 50),
    ("excessive_searching", "searches"): (2, 1000),
    ("silence", "calls"): (2, 10_000),
}

# The `context:` section (ctxward.drift.context).
LARGE_OUTPUT = "large_output"
PRESSURE = "pressure"
STAGES = (70, 80, 85, 90, 99)  # seed 002 ACC
DEFAULT_WINDOW = 200_000
DEFAULTS: dict[str, Any] = {
    LARGE_OUTPUT: {"enabled": True, "bytes": 2048, "offload_chars": 8000, "preview_chars": 1500},
    PRESSURE: {"enabled": True, "window_tokens": DEFAULT_WINDOW, "stages": list(STAGES)},
}
_CONTEXT_RANGES = {
    (LARGE_OUTPUT, "bytes"): (256, 10_000_000),
    (LARGE_OUTPUT, "offload_chars"): (1_000, 10_000_000),
    (LARGE_OUTPUT, "preview_chars"): (200, 5_000),
    (PRESSURE, "window_tokens"): (1_000, 10_000_000),
}


def context_defaults() -> dict[str, Any]:
    """A fresh copy of DEFAULTS (the `context:` section when config.yaml has none)."""
    return {
        LARGE_OUTPUT: dict(DEFAULTS[LARGE_OUTPUT]),
        PRESSURE: {**DEFAULTS[PRESSURE], "stages": list(STAGES)},
    }


def parse_context(value: object, where: str) -> dict[str, Any]:
    """Validate config.yaml's `context:` section over the defaults; BadInput names the key."""
    settings = context_defaults()
    for name, raw in _sections(value, where, tuple(settings)):
        section = settings[name]
        for key, setting in raw.items():
            at = f"{where}.{name}.{key}"
            if key == "enabled":
                section[key] = flag(setting, at)
            elif (name, key) in _CONTEXT_RANGES:
                section[key] = whole_number(setting, at, *_CONTEXT_RANGES[(name, key)])
            elif (name, key) == (PRESSURE, "stages"):
                section[key] = _stages(setting, at)
            else:
                known = sorted(["enabled", *(k for n, k in _CONTEXT_RANGES if n == name)])
                if name == PRESSURE:
                    known.append("stages")
                raise BadInput(f"{at}: unknown key (known: {', '.join(known)})")
    return settings


def _stages(value: object, where: str) -> list[int]:
    if not isinstance(value, list) or not value:
        raise BadInput(f"{where}: expected a list of percentages, e.g. [70, 80, 85, 90, 99]")
    stages = []
    for item in value:
        if isinstance(item, bool) or not isinstance(item, int) or not 1 <= item <= 100:
            raise BadInput(f"{where}: {item!r} is not a whole percentage (1..100)")
        stages.append(item)
    if stages != sorted(set(stages)):
        raise BadInput(f"{where}: the stages must rise, each once: {stages}")
    return stages


# --- the `drift:` section ----------------------------------------------------------------------


def default_limits() -> dict[str, Any]:
    """A fresh copy of DEFAULT_LIMITS (the `drift:` section when config.yaml has none), with the
    `context:` section's defaults under "context" (the drift observer applies both)."""
    copy: dict[str, Any] = hotjson.loads(hotjson.dumps(DEFAULT_LIMITS))
    copy["context"] = context_defaults()
    return copy


def parse_limits(value: object, where: str) -> dict[str, Any]:
    """Validate config.yaml's `drift:` section over the defaults; BadInput names the key."""
    limits = default_limits()
    for key, raw in _sections(value, where, ("enabled", *SIGNATURES), switch="enabled"):
        if key == "enabled":
            limits["enabled"] = flag(raw, f"{where}.enabled")
            continue
        section = limits[key]
        for name, setting in raw.items():
            at = f"{where}.{key}.{name}"
            if name == "enabled":
                section["enabled"] = flag(setting, at)
            elif (key, name) in _RANGES:
                section[name] = whole_number(setting, at, *_RANGES[(key, name)])
            else:
                allowed = ", ".join(sorted(["enabled", *(n for s, n in _RANGES if s == key)]))
                raise BadInput(f"{at}: unknown key (known: {allowed})")
    for key in ("repetition", "rework_churn"):
        count = "count" if key == "repetition" else "writes"
        if limits[key][count] > limits[key]["window"]:
            raise BadInput(
                f"{where}.{key}: {count} {limits[key][count]} is larger than its window "
                f"{limits[key]['window']}"
            )
    return limits


def _sections(
    value: object, where: str, known: tuple[str, ...], switch: str = ""
) -> Iterator[tuple[str, Any]]:
    """The `name: {key: setting}` entries of a config.yaml section, in order, each name known
    and each value a mapping (a null one skipped; `switch`'s value is passed as it is)."""
    if value is None:
        return
    if not isinstance(value, dict):
        raise BadInput(f"{where}: expected a mapping, got {type(value).__name__}")
    for name, raw in value.items():
        if name not in known:
            raise BadInput(f"{where}: unknown key {name!r} (known: {', '.join(known)})")
        if name == switch:
            yield name, raw
        elif raw is not None:
            if not isinstance(raw, dict):
                raise BadInput(f"{where}.{name}: expected a mapping, got {type(raw).__name__}")
            yield name, raw


def flag(value: object, where: str) -> bool:
    """A config.yaml switch: true or false; BadInput names `where` otherwise."""
    if not isinstance(value, bool):
        raise BadInput(f"{where}: expected true or false, got {value!r}")
    return value


def whole_number(value: object, where: str, low: int, high: int) -> int:
    """A config.yaml count within low..high; BadInput names `where` otherwise."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadInput(f"{where}: expected a whole number, got {value!r}")
    if not low <= value <= high:
        raise BadInput(f"{where}: {value} is outside {low}..{high}")
    return value


def window_size(limits: Mapping[str, Any]) -> int:
    """How many calls the window keeps: the longest look-back any signature needs."""
    size: int = max(
        limits["repetition"]["window"],
        limits["rework_churn"]["window"],
        limits["tool_cycling"]["calls"],
    )
    return size
