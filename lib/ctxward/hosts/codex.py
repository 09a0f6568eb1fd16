"""Codex CLI (openai/codex): ctxward's hooks, in Codex's own hook contract.

Codex runs command hooks from `hooks.json` files next to its config layers
(`<repo>/.codex/hooks.json`, `~/.codex/hooks.json`), in Claude Code's shape: event -> matcher
groups -> `{"type": "command", "command": ...}` handlers, the payload as one JSON object on
stdin, the answer as JSON on stdout. ctxward's Codex hooks run `ctxward-hook --host codex`
(`ctxward install codex`, or the example in examples/codex/hooks.json), inside the fallback
wrapper of `ctxward.hosts.wiring` (Codex runs a command with `$SHELL -lc`). Sources: Codex's hooks
documentation (developers.openai.com/codex/hooks), the generated hook schemas in
openai/codex `codex-rs/hooks/schema/generated/`, and PRs openai/codex#19905 (PreCompact and
PostCompact) and #21272 (SessionStart source `compact`).

What ctxward handles, and why (seen with Codex CLI 0.169.0, tests/e2e/codex)
---------------------------------------------------------------------------

=============================  ====================================================  ==========
Codex event (matcher)          what ctxward does                                     stdout
=============================  ====================================================  ==========
PreCompact (manual|auto)       distills every plan's .compaction-payload.md          nothing
PostCompact (manual|auto)      survival report from the compacted history            nothing
SessionStart (compact|resume)  re-injects every active rule, as for Claude Code      JSON
UserPromptSubmit               restates, once, the rules the summary lost            JSON
PreToolUse (spawn_agent|       the G9 dispatch guard (fails closed), C9 offload      JSON
  multi_agent_v1send_input|
  send_input)
PostToolUse (every tool)       the drift observer (seed 002)                         JSON
=============================  ====================================================  ==========

- PreCompact: Codex's input is lifecycle metadata only (session_id, turn_id, transcript_path,
  cwd, hook_event_name, model, trigger). Its plain stdout is ignored and no custom compaction
  instructions are exposed (PR #19905), so the summarizer instructions that Claude Code gets are
  not printed: the hook's effect is the fresh payload on disk.
- PostCompact: Codex sends no summary in the payload (PR #19905), but its session file (the
  rollout JSONL at `transcript_path`) holds the compacted history: a `{"type": "compacted",
  "payload": {"message": ...}}` record whose message carries the summary the model wrote. The
  last such record is the `compact_summary` the survival check reads. Without one, no report
  is written (exit 1, one line): no report is better than one that calls every rule lost.
- SessionStart: Claude Code's output shape (`hookSpecificOutput.additionalContext`); Codex
  adds it to the next request as a `developer` message. Order around an auto compaction:
  PreCompact, the compaction request, PostCompact, SessionStart(resume), SessionStart(compact),
  UserPromptSubmit.
- UserPromptSubmit, PostToolUse: `hookSpecificOutput.additionalContext`, a `developer` message
  of the next request. A sub-agent's first prompt fires UserPromptSubmit too, with the parent's
  `session_id` and its own `agent_id`: it is keyed `<session>-agent-<agent id>`, so it never
  takes the restatement meant for the parent.
- PreToolUse: Codex's sub-agent tools are `spawn_agent` (a new agent: `message`, or `items` of
  `{type, text, name, path, ...}`, plus `model`, `reasoning_effort`, `fork_context`) and
  `send_input` (text for a running agent: `message` or `items`, `target`), whose payload
  `tool_name` is `multi_agent_v1send_input`. The guard measures
  the message as the prompt and every other string of the input (each item's text, names,
  paths) as other fields. A deny is `permissionDecision: "deny"` with the reason, which Codex
  returns to the model as the tool's output (`Tool call blocked by PreToolUse hook: <reason>`);
  no agent starts. An offload rewrites `message` through `updatedInput`, which Codex applies.
  The guard fails closed: a payload it cannot read or measure, or an error while handling it,
  is answered with a deny (exit 0), and the installed command turns any other failure into
  exit 2, which blocks.
- Session files: Codex's rollout JSONL is not a Claude Code transcript. The seed 001 session
  summary is not made from it (not available on Codex): the payload's transcript_path is
  passed on as `codex_rollout`, never as `transcript_path`, so no reader fails on it.
- Not available on Codex: summarizer instructions at PreCompact (above), SubagentStop reports
  and Stop blocks (not wired), PostToolUseFailure (Codex has no such event; a failed call is
  a PostToolUse), the size of a `fork_context: true` spawn's forked history (not in the
  payload; only its own text is measured).

The project root is searched from the payload's `cwd` (nearest `.git` or `.ctxward`):
$CLAUDE_PROJECT_DIR means nothing to Codex.

Standard library only at import, with the internal types loaded on first use: PreToolUse and
PostToolUse run for tool calls (`hookio` calls `translate` on its hot path).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ctxward.errors import HookInputError
from ctxward.hosts import event_name, optional_text

if TYPE_CHECKING:
    from ctxward.hooktypes import HookEvent, Outcome

PRE_COMPACT = "PreCompact"
SESSION_START = "SessionStart"
POST_COMPACT = "PostCompact"
PRE_TOOL_USE = "PreToolUse"
POST_TOOL_USE = "PostToolUse"
USER_PROMPT_SUBMIT = "UserPromptSubmit"
EVENTS = (PRE_COMPACT, SESSION_START, POST_COMPACT, PRE_TOOL_USE, POST_TOOL_USE, USER_PROMPT_SUBMIT)
# What `ctxward install codex` wires: every event above.
WIRED_EVENTS = EVENTS
# Codex's tools that carry text to a sub-agent, and the matcher that selects them. Codex 0.169.0
# names them `spawn_agent` and `multi_agent_v1send_input` in hook payloads (both live in its
# `multi_agent_v1` tool namespace); the plain `send_input` is kept for a Codex that drops the
# prefix.
DISPATCH_TOOLS = ("spawn_agent", "multi_agent_v1send_input", "send_input")
MATCHERS = {PRE_TOOL_USE: "|".join(DISPATCH_TOOLS)}
# `ctxward hook EVENT` names of the events (what an older install wrote, doctor's `_legacy`).
HOOK_ARGS = {
    PRE_COMPACT: "pre-compact",
    SESSION_START: "session-start",
    POST_COMPACT: "post-compact",
    PRE_TOOL_USE: "pre-tool-use",
    POST_TOOL_USE: "post-tool-use",
    USER_PROMPT_SUBMIT: "user-prompt-submit",
}
# The program and arguments Codex's hooks.json runs (every event: the payload names it).
PROGRAM_ARGS = ("--host", "codex")
# Events with a hookSpecificOutput.additionalContext that reaches the model.
_CONTEXT_EVENTS = frozenset({SESSION_START, USER_PROMPT_SUBMIT, POST_TOOL_USE, PRE_TOOL_USE})
MAX_ROLLOUT_BYTES = 64 * 1024 * 1024  # a session file larger than this is not read for a summary


def hook_args(event: str) -> list[str]:
    """The arguments of `ctxward-hook` that run `event` for Codex (KeyError for another one)."""
    if event not in EVENTS:
        raise KeyError(event)
    return list(PROGRAM_ARGS)


def command_for(event: str, baked: str | None = None) -> str:
    """The command a Codex hooks.json runs for `event`: `ctxward-hook --host codex`, from
    `baked` (an absolute path) or PATH, in the wrapper `ctxward.hosts.wiring` renders."""
    from ctxward.hosts.wiring import CODEX, render

    return render(CODEX, event, baked)


def read_event(raw: bytes, env: Mapping[str, str], expected: str | None = None) -> HookEvent:
    """Parse Codex's stdin bytes into the internal HookEvent; HookInputError if unusable."""
    from ctxward.hosts.claude_code import decode_payload

    return to_event(decode_payload(raw), expected)


def translate(payload: Mapping[str, Any]) -> dict[str, Any]:
    """Codex's payload in the internal (Claude Code) shape; standard library only.

    A dispatch (`spawn_agent`, `send_input`) gets a `tool_input` the guard measures: `prompt`
    is the message (or, without one, the text of the items), the rest as given. Codex's own
    input stays under `codex_tool_input`. A session file is passed on as `codex_rollout`.
    """
    data = dict(payload)
    name = data.get("hook_event_name")
    if name == PRE_TOOL_USE and data.get("tool_name") in DISPATCH_TOOLS:
        given = data.get("tool_input")
        data["codex_tool_input"] = given
        data["tool_input"] = dispatch_input(given)
    agent = data.get("agent_id")
    if name == USER_PROMPT_SUBMIT and isinstance(agent, str) and agent:
        # A sub-agent's prompt carries its parent's session_id: the rules waiting for the
        # parent's next prompt are not the sub-agent's to take.
        data["session_id"] = f"{data.get('session_id')}-agent-{agent}"
    if "transcript_path" in data:
        data["codex_rollout"] = data.pop("transcript_path")
        data["transcript_path"] = ""
    return data


def dispatch_input(given: object) -> object:
    """A spawn_agent / send_input input as the guard's tool_input (`prompt` + other fields)."""
    if not isinstance(given, dict):
        return given  # the guard names what it is, and denies
    rest = {key: value for key, value in given.items() if key != "message"}
    message = given.get("message")
    items = rest.get("items")
    if message is None and isinstance(items, list):
        # The items' text is the prompt; their other strings (names, paths, urls) still count.
        message = "\n\n".join(
            item["text"]
            for item in items
            if isinstance(item, dict) and isinstance(item.get("text"), str)
        )
        rest["items"] = [
            {k: v for k, v in item.items() if k != "text"} if isinstance(item, dict) else item
            for item in items
        ]
    return {"prompt": "" if message is None else message, **rest}


def to_event(payload: Mapping[str, Any], expected: str | None = None) -> HookEvent:
    """Codex's payload as the internal event (its field names are Claude Code's)."""
    from ctxward.core.project import find_project
    from ctxward.hooktypes import HookEvent

    name = event_name(payload, "Codex", EVENTS)
    if expected is not None and name != expected:
        raise HookInputError(f"this hook handles {expected}, but the Codex payload is for {name}")
    cwd = optional_text(payload, "cwd", "Codex")
    data = translate(payload)
    if name == POST_COMPACT:
        summary = payload.get("compact_summary")
        if not isinstance(summary, str) or not summary.strip():
            summary = compacted_summary(data.get("codex_rollout"))
        if not summary:
            raise HookInputError(
                "Codex gave PostCompact no compaction summary and its session file holds no "
                "compacted history: no survival report written"
            )
        data["compact_summary"] = summary
    return HookEvent(name=name, data=data, project=find_project({}, cwd or None))


def compacted_summary(rollout: object) -> str:
    """The message of the last `compacted` record of a Codex session file ('' when none)."""
    if not isinstance(rollout, str) or not rollout:
        return ""
    from ctxward.core.fsutil import read_regular

    try:
        raw = read_regular(rollout, follow_links=True, limit=MAX_ROLLOUT_BYTES)
    except (OSError, ValueError):
        return ""
    found = ""
    for line in raw.splitlines():
        if b'"compacted"' not in line:
            continue
        try:
            record = json.loads(line)
        except ValueError:
            continue
        body = record.get("payload") if isinstance(record, dict) else None
        if record.get("type") == "compacted" and isinstance(body, dict):
            message = body.get("message")
            if isinstance(message, str):
                found = message
    return found


def render_outcome(event: HookEvent, outcome: Outcome) -> str:
    """Codex's answer to `outcome` ('' when there is nothing Codex would use)."""
    body: dict[str, Any] = {}
    accepted = {"notice"}
    specific: dict[str, Any] = {}
    if event.name in _CONTEXT_EVENTS:
        accepted.add("context")
        if outcome.context:
            specific["additionalContext"] = outcome.context
    if event.name == PRE_TOOL_USE:
        accepted |= {"decision", "reason", "updated_input"}
        if outcome.decision is not None:
            specific["permissionDecision"] = outcome.decision
        if outcome.reason is not None:
            specific["permissionDecisionReason"] = outcome.reason
        if outcome.updated_input is not None:
            specific["updatedInput"] = codex_input(event, outcome.updated_input)
    elif event.name == PRE_COMPACT:
        # Codex ignores plain stdout and takes no custom instructions: nothing to print.
        accepted.add("plain")
    unused = [name for name in _set_fields(outcome) if name not in accepted]
    if unused:
        raise ValueError(f"{event.name} for Codex has no use for {', '.join(unused)}")
    if specific:
        body["hookSpecificOutput"] = {"hookEventName": event.name, **specific}
    if outcome.notice:
        body["systemMessage"] = outcome.notice
    return json.dumps(body, ensure_ascii=False) + "\n" if body else ""


def codex_input(event: HookEvent, updated: Mapping[str, Any]) -> dict[str, Any]:
    """The guard's rewritten tool_input back in Codex's shape: the prompt is the `message`."""
    given = event.data.get("codex_tool_input")
    original = dict(given) if isinstance(given, dict) else {}
    original.pop("items", None)  # the prompt replaces the items' text as one message
    return {**original, "message": updated.get("prompt", "")}


def _set_fields(outcome: Outcome) -> list[str]:
    names = ("context", "notice", "plain", "decision", "reason", "updated_input")
    return [name for name in names if getattr(outcome, name) is not None]
