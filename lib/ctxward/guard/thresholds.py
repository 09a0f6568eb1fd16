"""THE canonical G9 threshold table (seed 004 §G9): the only copy, in code.

The README's table, the CLI's `ctxward thresholds` and the tests are all generated from `TIERS`.
Changing a row here is changing the contract: the README drift test fails until the README is
regenerated (`ctxward thresholds --markdown`).

Sizes are UTF-8 bytes of the text being dispatched, measured against a capacity in bytes
(default 256 KiB, the seed's "256K"). A size is at or above a tier when

    size * 100 >= percent * capacity

in exact integer arithmetic, so a tier starts at ceil(percent * capacity / 100) bytes.
Configuration may lower the capacity (globally or per sub-agent type); the percentages are fixed.

What is measured (`input_problem`, `input_bytes`): a sub-agent tool input (Claude Code's Agent
or Task `tool_input`, OpenCode's `task` args) must be a JSON object with a string `prompt`, and
`description` / `subagent_type` strings when present; its size is the UTF-8 length of the
prompt plus that of every other string in the input (nested keys included; the top-level field
names are the tool's parameter names and do not count), so that a large text in another field
counts as much as the prompt.

Standard library only and no dataclasses: the PreToolUse hot path imports this module.
"""

from __future__ import annotations

DEFAULT_CAPACITY_BYTES = 262_144  # seed 004 G9: "256K default context capacity"

# Warning and error codes of the seed (peaks' threshold.ts, post-#F4).
CONTEXT_NEAR_LIMIT = "CONTEXT_NEAR_LIMIT"
PROMPT_TOO_LARGE = "PROMPT_TOO_LARGE"
PROMPT_EMERGENCY = "PROMPT_EMERGENCY"
FORCED_OVER_THRESHOLD = "FORCED_OVER_THRESHOLD"


class Tier:
    """One row of the table. Instances are the module's constants; compare them by identity."""

    __slots__ = ("cli", "code", "hook", "name", "percent", "summary", "warning")

    def __init__(
        self,
        name: str,
        percent: int,
        *,
        code: str | None,
        warning: str | None,
        hook: str,
        cli: str,
        summary: str,
    ) -> None:
        self.name = name
        self.percent = percent
        self.code = code  # set when the tier rejects
        self.warning = warning  # set when the tier carries a warning code
        self.hook = hook  # what the PreToolUse layer does
        self.cli = cli  # what `ctxward dispatch check` does
        self.summary = summary

    @property
    def rejects(self) -> bool:
        return self.code is not None

    @property
    def force_passes(self) -> bool:
        """Whether the CLI's --force lets this tier through (only hard-reject)."""
        return self.code == PROMPT_TOO_LARGE

    def threshold(self, capacity: int) -> int:
        """The smallest size, in bytes, that is in this tier or above at `capacity`."""
        return threshold_bytes(self.percent, capacity)

    def __repr__(self) -> str:
        return f"Tier({self.name!r}, {self.percent}%)"


OK = Tier(
    "ok",
    0,
    code=None,
    warning=None,
    hook="allow, no output",
    cli="allow (exit 0)",
    summary="Nothing to say.",
)
SOFT_WARN = Tier(
    "soft-warn",
    50,
    code=None,
    warning=None,
    hook="allow; tell the user and the model",
    cli="allow (exit 0)",
    summary="Soft warning: suggest trimming the prompt.",
)
NEAR_LIMIT = Tier(
    "near-limit",
    75,
    code=None,
    warning=CONTEXT_NEAR_LIMIT,
    hook="allow; tell the user and the model, with the warning",
    cli="allow (exit 0), with the warning",
    summary="The user's red line: trim or split the prompt.",
)
HARD_REJECT = Tier(
    "hard-reject",
    80,
    code=PROMPT_TOO_LARGE,
    warning=None,
    hook="deny (no override)",
    cli=f"reject (exit 3); `--force` passes with {FORCED_OVER_THRESHOLD}",
    summary="Rejected: offload, split or trim.",
)
EMERGENCY = Tier(
    "emergency",
    90,
    code=PROMPT_EMERGENCY,
    warning=None,
    hook="deny (no override)",
    cli="reject (exit 3); `--force` is still rejected",
    summary="Rejected with no override at any layer.",
)

TIERS: tuple[Tier, ...] = (OK, SOFT_WARN, NEAR_LIMIT, HARD_REJECT, EMERGENCY)
BY_NAME = {tier.name: tier for tier in TIERS}


def threshold_bytes(percent: int, capacity: int) -> int:
    """ceil(percent * capacity / 100): the first size at or above `percent` of `capacity`."""
    return -(-percent * capacity // 100)


def at_or_above(size: int, percent: int, capacity: int) -> bool:
    """Whether `size` bytes reach `percent` of `capacity` (exact integer arithmetic)."""
    return size * 100 >= percent * capacity


def tier_for(size: int, capacity: int = DEFAULT_CAPACITY_BYTES) -> Tier:
    """The highest tier that `size` bytes reach at `capacity`."""
    if capacity <= 0:
        raise ValueError(f"capacity must be positive, got {capacity}")
    if size < 0:
        raise ValueError(f"size must not be negative, got {size}")
    reached = OK
    for tier in TIERS:
        if at_or_above(size, tier.percent, capacity):
            reached = tier
    return reached


def next_tier(tier: Tier) -> Tier | None:
    """The tier after `tier`, None after the last."""
    index = TIERS.index(tier)
    return TIERS[index + 1] if index + 1 < len(TIERS) else None


def table(capacity: int = DEFAULT_CAPACITY_BYTES) -> list[dict[str, object]]:
    """The table as plain data at `capacity` (what `ctxward thresholds --json` prints)."""
    return [
        {
            "tier": tier.name,
            "percent": tier.percent,
            "thresholdBytes": tier.threshold(capacity),
            "code": tier.code,
            "warning": tier.warning,
            "hook": tier.hook,
            "cli": tier.cli,
            "summary": tier.summary,
        }
        for tier in TIERS
    ]


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def input_problem(tool_input: object) -> str | None:
    """Why a sub-agent tool input cannot be measured, or None when it can."""
    if not isinstance(tool_input, dict):
        return f"tool_input is a JSON {_json_type(tool_input)}, not an object"
    if "prompt" not in tool_input:
        return "tool_input has no 'prompt'"
    prompt = tool_input["prompt"]
    if not isinstance(prompt, str):
        return f"tool_input.prompt is a JSON {_json_type(prompt)}, not a string"
    for key in ("description", "subagent_type"):
        value = tool_input.get(key)
        if value is not None and not isinstance(value, str):
            return f"tool_input.{key} is a JSON {_json_type(value)}, not a string"
    return None


def text_bytes(value: object) -> int:
    """UTF-8 bytes of every string in a JSON value (nested keys included; numbers count 0)."""
    if isinstance(value, str):
        return len(value.encode("utf-8", "surrogatepass"))
    if isinstance(value, dict):
        return sum(text_bytes(key) + text_bytes(item) for key, item in value.items())
    if isinstance(value, list):
        return sum(text_bytes(item) for item in value)
    return 0


def input_bytes(tool_input: dict[str, object]) -> tuple[int, int]:
    """(prompt bytes, bytes of every other string) of a measurable tool input."""
    others = sum(text_bytes(value) for key, value in tool_input.items() if key != "prompt")
    return text_bytes(tool_input["prompt"]), others
