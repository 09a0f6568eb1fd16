"""`.ctxward/config.yaml` (optional) merged over the defaults, validated into frozen dataclasses.

Unknown keys and wrong types are errors naming the file and the key: a typo must not silently
leave a default in force. YAML is only imported when the file exists.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ctxward.errors import BadInput
from ctxward.project import Project

CONFIG_FILE = "config.yaml"
PRESETS = ("pantheon", "peaks")


@dataclass(frozen=True, slots=True)
class DispatchConfig:
    capacity_bytes: int = 262_144  # seed 004 G9: 256K
    capacity_by_agent: dict[str, int] = field(default_factory=dict)
    offload: bool = True


@dataclass(frozen=True, slots=True)
class InjectionConfig:
    # Claude Code cuts hook output strings at 10,000 characters; leave room for the prefix it
    # adds ("SessionStart hook additional context: ").
    limit_chars: int = 9_000


@dataclass(frozen=True, slots=True)
class Config:
    preset: str | None = None
    dispatch: DispatchConfig = field(default_factory=DispatchConfig)
    injection: InjectionConfig = field(default_factory=InjectionConfig)
    source: str | None = None  # the file it was read from, if any

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _check_int(value: object, where: str, minimum: int, maximum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadInput(f"{where}: expected a whole number, got {value!r}")
    if not minimum <= value <= maximum:
        raise BadInput(f"{where}: {value} is outside {minimum}..{maximum}")
    return value


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
    top = _mapping(data, source, {"preset", "dispatch", "injection"})
    preset = top.get("preset")
    if preset is not None and preset not in PRESETS:
        raise BadInput(f"{source}: preset: {preset!r} is not one of {', '.join(PRESETS)}")

    raw_dispatch = _mapping(
        top.get("dispatch", {}),
        f"{source}: dispatch",
        {"capacity_bytes", "capacity_by_agent", "offload"},
    )
    dispatch = DispatchConfig()
    capacity = _check_int(
        raw_dispatch.get("capacity_bytes", dispatch.capacity_bytes),
        f"{source}: dispatch.capacity_bytes",
        1024,
        dispatch.capacity_bytes,  # config may lower the capacity, never lift it
    )
    by_agent = {}
    for agent, value in (raw_dispatch.get("capacity_by_agent") or {}).items():
        where = f"{source}: dispatch.capacity_by_agent.{agent}"
        by_agent[str(agent)] = _check_int(value, where, 1024, capacity)
    offload = raw_dispatch.get("offload", True)
    if not isinstance(offload, bool):
        raise BadInput(f"{source}: dispatch.offload: expected true or false, got {offload!r}")

    raw_injection = _mapping(top.get("injection", {}), f"{source}: injection", {"limit_chars"})
    limit = _check_int(
        raw_injection.get("limit_chars", InjectionConfig().limit_chars),
        f"{source}: injection.limit_chars",
        1_000,
        9_500,
    )
    return Config(
        preset=preset,
        dispatch=DispatchConfig(
            capacity_bytes=capacity, capacity_by_agent=by_agent, offload=offload
        ),
        injection=InjectionConfig(limit_chars=limit),
        source=source,
    )


def config_path(project: Project) -> Path:
    return project.state_dir / CONFIG_FILE


def load(project: Project) -> Config:
    """The project's config: defaults when there is no file; BadInput for a bad one."""
    path = config_path(project)
    if not path.is_file():
        return Config()
    import yaml

    source = project.relative(path)
    try:
        data = yaml.load(path.read_bytes(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise BadInput(f"{source}: YAML error{where}: {getattr(exc, 'problem', exc)}") from None
    except UnicodeDecodeError:
        raise BadInput(f"{source}: not UTF-8") from None
    return parse(data, source)
