"""Codex CLI (openai/codex): the compaction hooks, in Codex's own hook contract.

Codex runs command hooks from `hooks.json` files next to its config layers
(`<repo>/.codex/hooks.json`, `~/.codex/hooks.json`), in Claude Code's shape: event -> matcher
groups -> `{"type": "command", "command": ...}` handlers, the payload as one JSON object on
stdin, the answer as JSON on stdout. ctxward's Codex hooks run `ctxward hook EVENT --host codex`
(`ctxward install codex`, or the example in examples/codex/hooks.json), inside the fallback
wrapper of `ctxward.hookcommand` (Codex runs a command with `$SHELL -lc`). Sources: Codex's hooks
documentation (developers.openai.com/codex/hooks), the generated hook schemas in
openai/codex `codex-rs/hooks/schema/generated/`, and PRs openai/codex#19905 (PreCompact and
PostCompact) and #21272 (SessionStart source `compact`).

What ctxward handles, and why
-----------------------------

=============================  ====================================================  ==========
Codex event (matcher)          what ctxward does                                     stdout
=============================  ====================================================  ==========
PreCompact (manual|auto)       distills every plan's .compaction-payload.md          nothing
SessionStart (compact|resume)  re-injects every active rule, as for Claude Code      JSON
PostCompact (manual|auto)      survival report, only if Codex ever sends a summary   nothing
=============================  ====================================================  ==========

- PreCompact: Codex's input is lifecycle metadata only (session_id, turn_id, transcript_path,
  cwd, hook_event_name, model, trigger). Its plain stdout is ignored as debug output and no
  custom compaction instructions are exposed (PR #19905), so the summarizer instructions that
  Claude Code gets are not printed: the hook's effect is the fresh payload on disk. Its output
  schema allows only continue / stopReason / suppressOutput / systemMessage.
- SessionStart: the output schema is Claude Code's (`hookSpecificOutput.hookEventName` =
  "SessionStart" plus `additionalContext`), which Codex adds to the next model turn. Source
  `compact` runs after a compaction (PR #21272); a known bug defers it to a later turn
  (openai/codex#28736).
- PostCompact: Codex sends no summary (PR #19905: "compact summaries ... are not exposed"), so
  there is nothing to check rules against. A payload without `compact_summary` is refused
  (exit 1, one line: no report is better than a report that calls every rule lost). The
  example config does not wire PostCompact for that reason.
- Not handled: PreToolUse (Codex's sub-agent tool is `spawn_agent`, with `Agent` accepted as a
  matcher alias, PR #23789, but its tool_input shape is not in the references ctxward was
  checked against, so the G9 guard is not wired for Codex), SubagentStop, UserPromptSubmit.

The project root is searched from the payload's `cwd` (nearest `.git` or `.ctxward`):
$CLAUDE_PROJECT_DIR means nothing to Codex.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ctxward.errors import HookInputError
from ctxward.hookio import HookEvent, Outcome, decode_payload
from ctxward.project import find_project

PRE_COMPACT = "PreCompact"
SESSION_START = "SessionStart"
POST_COMPACT = "PostCompact"
EVENTS = (PRE_COMPACT, SESSION_START, POST_COMPACT)
# What `ctxward install codex` wires (PostCompact is left out: Codex sends no summary).
WIRED_EVENTS = (PRE_COMPACT, SESSION_START)
# `ctxward hook EVENT` names of the events above.
HOOK_ARGS = {
    PRE_COMPACT: "pre-compact",
    SESSION_START: "session-start",
    POST_COMPACT: "post-compact",
}


def hook_args(event: str) -> list[str]:
    """The arguments of `ctxward` that run `event` for Codex (KeyError for another event)."""
    return ["hook", HOOK_ARGS[event], "--host", "codex"]


def command_for(event: str, baked: str | None = None) -> str:
    """The command a Codex hooks.json runs for `event`: `ctxward hook EVENT --host codex`, from
    `baked` (an absolute path) or PATH, in the wrapper `ctxward.hookcommand` renders."""
    from ctxward.hookcommand import CODEX, render

    return render(CODEX, event, baked)


def read_event(raw: bytes, env: Mapping[str, str], expected: str | None = None) -> HookEvent:
    """Parse Codex's stdin bytes into the internal HookEvent; HookInputError if unusable."""
    return to_event(decode_payload(raw), expected)


def to_event(payload: Mapping[str, Any], expected: str | None = None) -> HookEvent:
    """Codex's payload as the internal event (its field names are Claude Code's)."""
    name = payload.get("hook_event_name")
    if not isinstance(name, str) or not name:
        raise HookInputError("Codex payload has no 'hook_event_name'")
    if name not in EVENTS:
        raise HookInputError(
            f"Codex event {name!r} is not handled by ctxward (handled: {', '.join(EVENTS)})"
        )
    if expected is not None and name != expected:
        raise HookInputError(f"this hook handles {expected}, but the Codex payload is for {name}")
    cwd = payload.get("cwd")
    if cwd is not None and not isinstance(cwd, str):
        raise HookInputError("Codex payload field 'cwd' is not a string")
    if name == POST_COMPACT:
        summary = payload.get("compact_summary")
        if not isinstance(summary, str) or not summary.strip():
            raise HookInputError(
                "Codex gives PostCompact no compaction summary: no survival report written "
                "(leave PostCompact out of .codex/hooks.json; SessionStart compact re-injects "
                "the rules)"
            )
    return HookEvent(name=name, data=dict(payload), project=find_project({}, cwd or None))


def render_outcome(event: HookEvent, outcome: Outcome) -> str:
    """Codex's answer to `outcome` ('' when there is nothing Codex would use)."""
    body: dict[str, Any] = {}
    accepted = {"notice"}
    if event.name == SESSION_START:
        accepted.add("context")
        if outcome.context:
            body["hookSpecificOutput"] = {
                "hookEventName": SESSION_START,
                "additionalContext": outcome.context,
            }
    elif event.name == PRE_COMPACT:
        # Codex ignores plain stdout and takes no custom instructions: nothing to print.
        accepted.add("plain")
    unused = [name for name in _set_fields(outcome) if name not in accepted]
    if unused:
        raise ValueError(f"{event.name} for Codex has no use for {', '.join(unused)}")
    if outcome.notice:
        body["systemMessage"] = outcome.notice
    return json.dumps(body, ensure_ascii=False) + "\n" if body else ""


def _set_fields(outcome: Outcome) -> list[str]:
    names = ("context", "notice", "plain", "decision", "reason", "updated_input")
    return [name for name in names if getattr(outcome, name) is not None]
