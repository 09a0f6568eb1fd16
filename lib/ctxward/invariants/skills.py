"""Skills: a skill file's front matter read, found in the project or among the shipped packs."""

from __future__ import annotations

import re
from pathlib import Path

from ctxward.core.fsutil import (
    read_named,
    read_regular,
)
from ctxward.core.project import Project
from ctxward.errors import BadInput
from ctxward.invariants.model import (
    MAX_SKILL_BYTES,
    PACK_REFERENCE,
    SKILL_NAME_PATTERN,
    SKILL_SEARCH_PATHS,
    Skill,
    validate_rules,
)


def load_skill(path: Path) -> Skill:
    """Read a skill file's front matter into a Skill; BadInput names the file and the problem."""
    from ctxward.core import frontmatter

    source = str(path)
    try:
        raw = read_named(path, limit=MAX_SKILL_BYTES)  # a FIFO or a device: refused, not awaited
    except OSError as exc:  # no permission, say (missing, a folder, too large: BadInput already)
        raise BadInput(f"{source}: cannot read: {exc.strerror}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadInput(f"{source}: not UTF-8 (byte {exc.start})") from None
    meta = frontmatter.parse(text, source=source).meta
    name = meta.get("name")
    if not isinstance(name, str) or not SKILL_NAME_PATTERN.fullmatch(name):
        raise BadInput(f"{source}: 'name' must be a skill name like 'deep-review', got {name!r}")
    priority = meta.get("priority", 0)
    if isinstance(priority, bool) or not isinstance(priority, int):
        raise BadInput(f"{source}: 'priority' must be a whole number, got {priority!r}")
    rules = validate_rules(meta.get("invariants"), source)
    return Skill(name=name, rules=rules, path=path, priority=priority)


def find_skill(spec: str, project: Project) -> Path:
    """Resolve SKILL (a path, or a name looked up in the project, then the shipped packs)."""
    candidate = Path(spec)
    if candidate.suffix == ".md" or "/" in spec:
        return candidate if candidate.is_absolute() else Path.cwd() / candidate
    if not SKILL_NAME_PATTERN.fullmatch(spec):
        raise BadInput(f"{spec!r} is neither a skill file nor a skill name")
    from ctxward.core.paths import data_dir

    searched = [
        project.root / pattern.as_posix().format(name=spec) for pattern in SKILL_SEARCH_PATHS
    ]
    searched.append(data_dir("invariants") / spec / "SKILL.md")
    for path in searched:
        if path.is_file():
            return path
    raise BadInput(
        f"no skill named {spec!r} (looked in .claude/skills, .opencode/skill(s), .codex/skills, "
        ".agents/skills and the shipped packs; `ctxward packs` lists the shipped ones)"
    )


def shipped_packs() -> list[Skill]:
    """Every invariant pack shipped in invariants/."""
    from ctxward.core.paths import data_dir

    return [load_skill(path) for path in sorted(data_dir("invariants").glob("*/SKILL.md"))]


def pack_text(name: str) -> str:
    """The SKILL.md of the shipped pack `name` (BadInput when there is none)."""
    from ctxward.core.paths import data_dir

    if SKILL_NAME_PATTERN.fullmatch(name):
        path = data_dir("invariants") / name / "SKILL.md"
        if path.is_file():
            return read_regular(path, follow_links=True).decode("utf-8")
    raise BadInput(f"no shipped pack named {name!r} (`ctxward packs` lists them)")


def full_rules_reference(project: Project, skill: Skill) -> str:
    """Where a plan says the skill's full rules are: a project-relative path, or for a shipped
    pack the command that prints it — never a path into the installed package, which a
    reinstall moves and which names one machine's home folder in a committed plan."""
    from ctxward.core.paths import data_dir

    shipped = data_dir("invariants").resolve()
    if skill.path.resolve().is_relative_to(shipped):
        return PACK_REFERENCE.format(name=skill.name)
    return project.relative(skill.path)


def full_rules_path(project: Project, reference: str) -> Path | None:
    """The skill file a section's full-rules reference names (`full_rules_reference`)."""
    if not reference:
        return None
    before, _, after = PACK_REFERENCE.partition("{name}")
    named = f"{re.escape(before)}({SKILL_NAME_PATTERN.pattern}){re.escape(after)}"
    pack = re.fullmatch(named, reference)
    if pack:
        from ctxward.core.paths import data_dir

        return data_dir("invariants") / pack.group(1) / "SKILL.md"
    path = Path(reference)
    return (path if path.is_absolute() else project.root / path).resolve()
