"""What a plan is made of: skills, sections, plans, rule references, activations; slugs checked."""

from __future__ import annotations

import re
from pathlib import Path

from ctxward.core.fsutil import (
    read_regular,
)
from ctxward.core.values import Value
from ctxward.errors import BadInput

INVARIANTS_FILE = "invariants.md"


PAYLOAD_FILE = ".compaction-payload.md"


SLUG_PATTERN = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")


SKILL_NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,63}")


MAX_SKILL_BYTES = 1024 * 1024  # a skill file (front matter and prose); real ones are a few KB


# Characters str.splitlines() breaks on: a rule containing one is not a single line.
_LINE_BREAKS = frozenset("\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")


_PAYLOAD_SOURCE = re.compile(r"<!-- ctxward: distilled from .* sha256=([0-9a-f]{64}) ")


# A shipped pack's full rules, as a plan names them (the command prints its SKILL.md).
PACK_REFERENCE = "`ctxward packs {name}` (shipped with ctxward)"


SKILL_SEARCH_PATHS = (
    Path(".claude/skills/{name}/SKILL.md"),
    Path(".gemini/skills/{name}/SKILL.md"),  # Gemini CLI's workspace skills (0.61.0)
    Path(".opencode/skill/{name}/SKILL.md"),
    Path(".opencode/skills/{name}/SKILL.md"),
    # Codex CLI 0.169.0 lists the skills of both project folders (hosts/codex.py).
    Path(".codex/skills/{name}/SKILL.md"),
    Path(".agents/skills/{name}/SKILL.md"),
)


class Skill(Value):
    name: str
    rules: tuple[str, ...]
    path: Path
    priority: int = 0  # front matter `priority:`; a higher one gets the room first (rulesets)


class Section(Value):
    """One skill's block in a plan's invariants.md (or its distilled payload)."""

    skill: str
    rules: tuple[str, ...]
    full_rules: str = ""
    activated: str = ""
    branch: str = ""
    priority: str = ""  # the skill's `priority:` as the plan records it ('' = 0)

    @property
    def rank(self) -> int:
        """The section's priority as a number (0 when absent or not a whole number)."""
        try:
            return int(self.priority) if self.priority else 0
        except ValueError:
            return 0


class Plan(Value):
    slug: str
    folder: Path
    sections: tuple[Section, ...]
    source_sha256: str

    @property
    def invariants_path(self) -> Path:
        return self.folder / INVARIANTS_FILE

    @property
    def payload_path(self) -> Path:
        return self.folder / PAYLOAD_FILE

    @property
    def rule_count(self) -> int:
        return sum(len(section.rules) for section in self.sections)

    def payload_state(self) -> str:
        """'fresh' when the payload says it was distilled from the current invariants.md.

        For people (`plan list`, `doctor`, `watch`): the header is a claim, and nothing that
        reaches the model is read from a payload; PreCompact rewrites any that differs.
        """
        if not self.payload_path.exists():
            return "missing"
        return "stale" if self.fresh_payload() is None else "fresh"

    def fresh_payload(self) -> str | None:
        """The payload's text when its header names the current invariants.md's sha256."""
        from ctxward.core.limits import MAX_PLAN_BYTES

        try:  # a payload is its plan's rules again: one far larger than a plan is not ours
            text = read_regular(self.payload_path, limit=2 * MAX_PLAN_BYTES).decode("utf-8")
        except (OSError, UnicodeDecodeError):  # missing, unreadable, not ours, too large
            return None
        match = _PAYLOAD_SOURCE.match(text.split("\n", 1)[0])
        return text if match and match.group(1) == self.source_sha256 else None


class RuleRef(Value):
    slug: str
    skill: str
    rule: str

    @property
    def fingerprint(self) -> str:
        """The rule's normalised fingerprint (`ctxward.core.fingerprint`)."""
        from ctxward.core.fingerprint import fingerprint

        return fingerprint(self.rule)


class Activation(Value):
    """What `activate` wrote; `trusted`: whether the plan's new content is trusted here."""

    path: Path
    skill: Skill
    replaced: bool
    branch: str
    trusted: bool


def validate_slug(slug: str) -> str:
    """Return `slug` when it is a safe plan folder name, else raise BadInput."""
    if not SLUG_PATTERN.fullmatch(slug) or ".." in slug:
        raise BadInput(
            f"invalid slug {slug!r}: use 1-64 characters of a-z 0-9 . _ -, "
            "starting with a letter or digit, with no '..'"
        )
    return slug


def validate_rules(value: object, source: str) -> tuple[str, ...]:
    if value is None:
        raise BadInput(f"{source}: front matter has no 'invariants' list")
    if not isinstance(value, list) or not value:
        raise BadInput(f"{source}: 'invariants' must be a non-empty list of strings")
    rules = []
    for index, rule in enumerate(value):
        if not isinstance(rule, str):
            raise BadInput(
                f"{source}: invariants[{index}] is a {type(rule).__name__}, not a string"
            )
        if not rule.strip():
            raise BadInput(f"{source}: invariants[{index}] is empty")
        if _LINE_BREAKS.intersection(rule):
            raise BadInput(f"{source}: invariants[{index}] spans several lines; keep it to one")
        rules.append(rule)
    return tuple(rules)
