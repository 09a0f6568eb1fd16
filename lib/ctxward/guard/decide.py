"""Dispatch guard (G9) decisions for the hook layer and the CLI layer, and C9 offload planning.

Everything here is pure: no files, no clock unless given, no printing. The PreToolUse handler
(`events/pre_tool_use.py`) and `ctxward dispatch check` (`commands/dispatch.py`) do the I/O.

- `measure(tool_input)` turns a sub-agent tool call's input into a byte count, or raises
  `Unmeasurable` (the hook then denies: the guard fails closed).
- `decide(size, capacity, force=...)` applies the canonical table (`thresholds`). Only the CLI
  passes `force`; the hook layer has no override.
- `plan_offload(prompt)` finds the fenced blocks and pasted chunks larger than 2 KB (the G0
  line) that C9 moves to files; `splice` puts one-line pointers in their place.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

from ctxward.core.values import Value
from ctxward.errors import CtxwardError
from ctxward.guard import thresholds
from ctxward.guard.thresholds import Tier

if TYPE_CHECKING:
    from datetime import datetime

OFFLOAD_MIN_BYTES = 2048  # G0: a block larger than 2 KB does not belong inline
DEFAULT_AGENT_TYPE = "general-purpose"  # what Claude Code runs when subagent_type is omitted

# Patterns as strings, compiled by `re` on first use (and cached): the deny path of a prompt
# with no fence and no per-agent capacity needs neither.
_FENCE_OPEN = r"^ {0,3}(?P<fence>`{3,}|~{3,})(?P<info>.*)$"
_SEPARATORS = r"[\s_\-]+"


class Unmeasurable(CtxwardError):
    """The dispatch cannot be measured (wrong JSON types); the hook layer denies it."""


# The value types below are `core.values.Value`s rather than dataclasses: the hook builds them in
# a fresh interpreter on every dispatch, where creating a dataclass costs ~0.6 ms.


class Measurement(Value):
    """What a sub-agent call would send: its prompt and the bytes of every text in its input."""

    prompt: str
    prompt_bytes: int
    other_bytes: int  # description and every other string in the tool input
    agent_type: str | None

    @property
    def size(self) -> int:
        return self.prompt_bytes + self.other_bytes


def measure(tool_input: object) -> Measurement:
    """Measure a sub-agent tool input (Agent/Task `tool_input`, OpenCode `task` args).

    The rules are `thresholds.input_problem` and `thresholds.input_bytes`: the UTF-8 length of
    `prompt` plus every other string in the input, so a large text hidden in another field counts
    as much as the prompt. Raises Unmeasurable when the input is not an object, the prompt is
    not a string, or description / subagent_type are not strings.
    """
    problem = thresholds.input_problem(tool_input)
    if problem is not None or not isinstance(tool_input, dict):
        raise Unmeasurable(problem or "tool_input is not an object")
    prompt_bytes, other_bytes = thresholds.input_bytes(tool_input)
    agent_type = tool_input.get("subagent_type")
    return Measurement(
        prompt=tool_input["prompt"],
        prompt_bytes=prompt_bytes,
        other_bytes=other_bytes,
        agent_type=agent_type if isinstance(agent_type, str) else None,
    )


def _agent_key(name: str) -> str:
    return re.sub(_SEPARATORS, "-", name.strip().casefold())


def capacity_for(capacity: int, by_agent: Mapping[str, int], agent_type: str | None = None) -> int:
    """The capacity for `agent_type`: its own entry (matched case- and separator-insensitively,
    as Claude Code matches agent types), else the global one. Omitted means general-purpose."""
    if not by_agent:
        return capacity
    wanted = _agent_key(agent_type or DEFAULT_AGENT_TYPE)
    for name, value in by_agent.items():
        if _agent_key(name) == wanted:
            return min(value, capacity)
    return capacity


class Decision(Value):
    """The table applied to one size at one capacity."""

    tier: Tier
    size: int
    capacity: int
    allowed: bool
    code: str | None  # PROMPT_TOO_LARGE / PROMPT_EMERGENCY when rejected
    warnings: tuple[str, ...]
    forced: bool = False
    forced_at: str | None = None  # ISO-8601 UTC, set when --force let a hard-reject through

    @property
    def threshold(self) -> int:
        """Bytes at which the reached tier starts."""
        return self.tier.threshold(self.capacity)

    @property
    def next_tier(self) -> Tier | None:
        return thresholds.next_tier(self.tier)

    @property
    def next_threshold(self) -> int | None:
        following = self.next_tier
        return following.threshold(self.capacity) if following else None

    @property
    def reject_at(self) -> int:
        """Bytes at which a dispatch is rejected at this capacity (the hard-reject line)."""
        return thresholds.HARD_REJECT.threshold(self.capacity)

    @property
    def over_by(self) -> int:
        """Bytes to remove to get under the hard-reject line (0 when already under)."""
        return max(self.size - self.reject_at + 1, 0)

    def envelope(self) -> dict[str, object]:
        """The `ctxward dispatch check --json` envelope."""
        return {
            "ok": self.allowed,
            "tier": self.tier.name,
            "code": self.code,
            "warnings": list(self.warnings),
            "sizeBytes": self.size,
            "capacityBytes": self.capacity,
            "thresholdBytes": self.threshold,
            "forced": self.forced,
            "forcedAt": self.forced_at,
        }


def decide(
    size: int, capacity: int, *, force: bool = False, now: datetime | None = None
) -> Decision:
    """Apply the G9 table to `size` bytes at `capacity`.

    `force` is the CLI layer's override: it lets a hard-reject through with the warning
    FORCED_OVER_THRESHOLD and the time in `forced_at`; it never passes the emergency tier.
    The hook layer never passes `force`.
    """
    tier = thresholds.tier_for(size, capacity)
    warnings = (tier.warning,) if tier.warning else ()
    if not tier.rejects:
        return Decision(tier, size, capacity, allowed=True, code=None, warnings=warnings)
    if force and tier.force_passes:
        from datetime import datetime, timezone

        stamp = (now or datetime.now(timezone.utc)).astimezone(timezone.utc)
        return Decision(
            tier,
            size,
            capacity,
            allowed=True,
            code=None,
            warnings=(*warnings, thresholds.FORCED_OVER_THRESHOLD),
            forced=True,
            forced_at=stamp.isoformat(timespec="seconds").replace("+00:00", "Z"),
        )
    return Decision(tier, size, capacity, allowed=False, code=tier.code, warnings=warnings)


# --- C9 offload planning -------------------------------------------------------------------


class Block(Value):
    """A run of lines of the prompt: lines[start:end] of prompt.split("\\n")."""

    start: int
    end: int
    kind: str  # "fenced" (a fenced code block, fences included) or "pasted" (a paragraph)
    text: str

    @property
    def size(self) -> int:
        return thresholds.text_bytes(self.text)

    @property
    def ext(self) -> str:
        return "md" if self.kind == "fenced" else "txt"

    @property
    def first_line(self) -> str:
        return headline(self.text, self.kind)


def headline(text: str, kind: str) -> str:
    """The line a pointer shows: the first non-blank line (inside the fences when fenced)."""
    lines = text.split("\n")
    opening = _opens(lines[0]) if kind == "fenced" else None
    if opening:
        lines = lines[1:]
        if lines and _closes(lines[-1], opening["fence"]):
            lines = lines[:-1]
    return next((line for line in lines if line.strip()), "")


class OffloadPlan(Value):
    """Which blocks of a prompt C9 moves to files, and what stays inline."""

    movable: tuple[Block, ...]  # larger than the G0 line
    kept: tuple[Block, ...]  # blocks at or under it (instructions, short snippets)

    @property
    def movable_bytes(self) -> int:
        return sum(block.size for block in self.movable)

    @property
    def kept_bytes(self) -> int:
        return sum(block.size for block in self.kept)


def _closes(line: str, fence: str) -> bool:
    stripped = line.lstrip(" ")
    if not stripped.startswith(fence) or len(line) - len(stripped) > 3:
        return False
    body = stripped.rstrip()
    return len(body) >= len(fence) and set(body) == {fence[0]}


def _opens(line: str) -> re.Match[str] | None:
    """The fence opening `line`, if it is one (a cheap test first: most lines are not)."""
    head = line.lstrip(" ")[:3]
    if head != "```" and head != "~~~":
        return None
    opening = re.match(_FENCE_OPEN, line)
    if opening and opening["fence"][0] == "`" and "`" in opening["info"]:
        return None  # CommonMark: a backtick fence's info string has no backtick
    return opening


def _never(line: str) -> None:
    return None


def blocks(prompt: str) -> Iterator[Block]:
    """The prompt's fenced code blocks and paragraphs (runs of non-blank lines), in order.

    Fences follow CommonMark: ``` or ~~~ (3 or more, up to 3 spaces of indent), closed by the
    same character at least as long; an unclosed fence runs to the end of the prompt.
    """
    lines = prompt.split("\n")
    count = len(lines)
    # A prompt with no fence mark has only paragraphs: no line of it needs `_opens`.
    opens = _opens if "```" in prompt or "~~~" in prompt else _never
    index = 0
    while index < count:
        line = lines[index]
        opening = opens(line)
        if opening:
            fence = opening["fence"]
            # `fence in line` first: a cheap necessary condition of `_closes`, which the hook
            # would otherwise call on each of a large dispatch's thousands of fenced lines.
            end = next(
                (
                    i
                    for i in range(index + 1, count)
                    if fence in lines[i] and _closes(lines[i], fence)
                ),
                count,
            )
            end = min(end + 1, count)
            yield Block(index, end, "fenced", "\n".join(lines[index:end]))
            index = end
        elif line.strip():
            end = index + 1
            while end < count and lines[end].strip() and not opens(lines[end]):
                end += 1
            yield Block(index, end, "pasted", "\n".join(lines[index:end]))
            index = end
        else:
            index += 1


def plan_offload(prompt: str, min_bytes: int = OFFLOAD_MIN_BYTES) -> OffloadPlan:
    """Split the prompt's blocks into those larger than `min_bytes` (moved) and the rest."""
    movable: list[Block] = []
    kept: list[Block] = []
    for block in blocks(prompt):
        (movable if block.size > min_bytes else kept).append(block)
    return OffloadPlan(movable=tuple(movable), kept=tuple(kept))


def splice(prompt: str, replacements: Sequence[tuple[Block, str]]) -> str:
    """The prompt with each block's lines replaced by its one-line pointer (blocks do not overlap).

    One pass over the lines: replacing each block in place moved every line after it, once per
    block (thousands of blocks in a prompt of millions of lines).
    """
    lines = prompt.split("\n")
    spliced: list[str] = []
    cursor = 0
    for block, pointer in sorted(replacements, key=lambda pair: pair[0].start):
        if "\n" in pointer:
            raise ValueError("a pointer must be one line")
        spliced.extend(lines[cursor : block.start])
        spliced.append(pointer)
        cursor = block.end
    spliced.extend(lines[cursor:])
    return "\n".join(spliced)
