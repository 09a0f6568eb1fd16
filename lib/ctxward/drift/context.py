"""Two facts about the context window, told from PostToolUse next to a tool result.

Large tool outputs (seed 004 G0: "Tool output > 2 KB MUST NOT be dumped into the orchestrator's
context"; seed 002: "Large outputs (>8,000 chars) offloaded to scratch files with previews").
When a tool's output is over `context.large_output.bytes` (default 2,048: 2 KB), the model is
told once per tool and session how large it was and what to do instead: the command's summary
flag, or a file and a slice of it (Read with offset/limit), or a filter. For an MCP tool
(`mcp__<server>__<tool>`), whose output a PostToolUse hook may replace
(`hookSpecificOutput.updatedMCPToolOutput`), an output over `context.large_output.offload_chars`
(default 8,000) is also written to `.ctxward/offload/` (scrubbed, on disk first, named by its
sha256) and the model gets a preview and the path instead (`events.post_tool_use`).

Context pressure (seed 002 "Adaptive Context Compaction": five graduated stages, 70, 80, 85, 90
and 99%). The transcript records the real token usage of every request (`transcripttail`):
input + cache read + cache creation tokens of the newest one, over the model's window
(`context.pressure.window_tokens`, default 200,000; a usage above it means the 1M window). Each
stage is told once per context segment, with the stage's advice; a compaction (or a usage back
under the first stage) starts a new segment. Silent below the first stage.

Both ride on the drift observer's per-call state (`drift.Tracker.context`): no other file, no
other lock. Standard library only: this runs on every tool call.
"""

from __future__ import annotations

from ctxward.core.drift_settings import LARGE_OUTPUT, PRESSURE

# `typing.TYPE_CHECKING` without importing typing: this module is on the PostToolUse hot path.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ctxward.transcript.tail import Tail

OFFLOAD = "offload"  # not a fact: the handler replaces the MCP output (events.post_tool_use)
KINDS = (LARGE_OUTPUT, PRESSURE)
# The seed's name of each stage (the advice is in templates/drift/pressure.md.j2).
STAGE_NAMES = {
    70: "warning",
    80: "observation masking",
    85: "fast pruning",
    90: "aggressive masking",
    99: "full compaction",
}
LARGE_WINDOW = 1_000_000  # Claude's 1M context: a request above DEFAULT_WINDOW implies it
MAX_TOLD_TOOLS = 64  # tools told about a large output, per session (the state stays small)
MCP_PREFIX = "mcp__"
_WALK_NODES = 10_000  # a tool response is walked this far to measure it

# --- large outputs ---------------------------------------------------------------------------


def output_size(response: object) -> int:
    """The UTF-8 bytes of the text in a tool response (its strings, walked; keys aside)."""
    total = 0
    stack = [response]
    visited = 0
    while stack and visited < _WALK_NODES:
        item = stack.pop()
        visited += 1
        if isinstance(item, str):
            total += len(item) if item.isascii() else len(item.encode("utf-8", "surrogatepass"))
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return total


# Tools whose response echoes what the model sent (a file written, a patch): their answer to
# the model is one line, so their size says nothing about the context.
_ECHOING_TOOLS = frozenset({"write", "edit", "multiedit", "notebookedit", "todowrite"})


def visible(tool: str, response: object) -> object:
    """The part of a Claude Code tool response that reaches the model: a sub-agent's `content`
    (its response also echoes the prompt), a shell's stdout and stderr, a Read's file content;
    None for the tools that echo their input. Any other response is taken whole."""
    folded = tool.casefold()
    if folded in _ECHOING_TOOLS:
        return None
    if is_mcp(tool):
        return output_text(response)  # its text blocks, their labels aside
    if not isinstance(response, dict):
        return response
    if folded in ("agent", "task"):
        return response.get("content")
    if folded == "bash" and ("stdout" in response or "stderr" in response):
        return [response.get("stdout"), response.get("stderr")]
    file = response.get("file")
    if folded == "read" and isinstance(file, dict):
        return file.get("content")
    return response


def output_text(response: object) -> str:
    """An MCP response as the text to store: its text blocks (or strings) joined, else JSON."""
    if isinstance(response, str):
        return response
    blocks = response.get("content") if isinstance(response, dict) else response
    if isinstance(blocks, list):
        texts = [
            block["text"]
            if isinstance(block, dict) and isinstance(block.get("text"), str)
            else block
            if isinstance(block, str)
            else None
            for block in blocks
        ]
        if texts and all(text is not None for text in texts):
            return "\n".join(str(text) for text in texts)
    import json

    return json.dumps(response, ensure_ascii=False, indent=1, default=str)


def is_mcp(tool: str) -> bool:
    return tool.startswith(MCP_PREFIX)


def large_output(
    state: dict[str, Any], tool: str, response: object, settings: dict[str, Any]
) -> list[dict[str, Any]]:
    """The reports for one tool result: the fact (once per tool and session) and, for an MCP
    tool over `offload_chars`, the offload for the handler to do. Updates `state`."""
    section = settings[LARGE_OUTPUT]
    response = visible(tool, response)
    if not section["enabled"] or response is None:
        return []
    size = output_size(response)
    if size <= section["bytes"]:
        return []
    mcp = is_mcp(tool)
    offload = mcp and isinstance(response, str) and len(response) > section["offload_chars"]
    found: list[dict[str, Any]] = []
    told: list[str] = state.setdefault("told", [])
    if tool not in told:
        told.append(tool)
        del told[: max(0, len(told) - MAX_TOLD_TOOLS)]
        evidence = {"tool": tool, "bytes": size, "limit": section["bytes"], "mcp": mcp}
        evidence["offloaded"] = offload
        found.append({"signature": LARGE_OUTPUT, "evidence": evidence})
    if offload:
        found.append({"signature": OFFLOAD, "evidence": {"tool": tool}})
    return found


# --- context pressure ------------------------------------------------------------------------


def window_for(tokens: int, model: str, configured: int) -> int:
    """The context window: the configured one, unless the model or the usage says 1M."""
    if "[1m]" in model.lower() or tokens > configured:
        return max(configured, LARGE_WINDOW)
    return configured


def pressure(
    state: dict[str, Any], tail: Tail | None, settings: dict[str, Any]
) -> dict[str, Any] | None:
    """The stage the newest request's usage reached, when not yet told in this segment."""
    section = settings[PRESSURE]
    if tail is None or not section["enabled"]:
        return None
    told: list[int] = state.setdefault("stages", [])
    if tail.compacted:
        told.clear()  # a new context segment
    tokens = tail.context_tokens
    if tokens is None:
        return None
    window = window_for(tokens, tail.model, section["window_tokens"])
    percent = tokens * 100 / window
    state["tokens"] = tokens
    reached = [stage for stage in section["stages"] if percent >= stage]
    if not reached:
        told.clear()  # back under the first stage: the context was reset
        return None
    top = reached[-1]
    if top in told:
        return None
    told[:] = reached
    evidence = {
        "stage": top,
        "name": STAGE_NAMES.get(top, ""),
        "percent": int(percent),
        "tokens": tokens,
        "window": window,
    }
    return {"signature": PRESSURE, "evidence": evidence}
