"""OpenCode: the JSON that the plugin (hooks/opencode/ctxward.js) and ctxward exchange.

OpenCode (npm `opencode-ai` 1.x, V1 plugin API; checked against 1.18.33) runs no command hooks.
Its plugin calls `ctxward hook EVENT --host opencode` with one JSON object on stdin and applies
the JSON object ctxward prints. This module is the only place that knows both shapes: it turns
the plugin's object into the internal event (the keys Claude Code sends, so `events/*` run
unchanged) and the handler's Outcome into the plugin's answer.

Plugin -> ctxward (stdin)
-------------------------

    {"hook": "<OpenCode hook>", "input": {...}, "output": {...},
     "directory": "/abs/dir", "worktree": "/abs/dir", "plugin": {...}}

- `hook`, `input`: the OpenCode hook's name and its `input`, as OpenCode passed them.
- `output`: the part of the hook's `output` ctxward reads (only `args` of tool.execute.before).
- `directory`: PluginInput.directory; the project root is searched from there (nearest `.git`
  or `.ctxward`). `worktree`: PluginInput.worktree, informational.
- `plugin`: what only the plugin knows, because it watches the session across hooks.

=====================================  ============  ============  ==============================
OpenCode hook (what the plugin sends)  EVENT         handler       plugin facts
=====================================  ============  ============  ==============================
tool.execute.before, tool ``task``     pre-tool-use  PreToolUse    (none)
  input {tool, sessionID, callID},
  output {args}
experimental.session.compacting        pre-compact   PreCompact    (none)
  input {sessionID}
experimental.chat.system.transform     session-start SessionStart  source
  input {sessionID} (model left out)
event, type ``session.compacted``      post-compact  PostCompact   trigger, summary
  input {event: {id, type, properties: {sessionID}}}
tool.execute.after, every tool         post-tool-use PostToolUse   failed, quiet
  input {tool, sessionID, callID, args}  (-failure:
                                       when failed)  (Failure)
event, type ``message.part.updated``   post-tool-    PostToolUse-  quiet
  of a tool part whose state.status is use-failure   Failure
  "error": input {event: {type, properties: {part: {tool, sessionID, callID,
  state: {status, input}}}}} (the plugin leaves out the rest of the part)
=====================================  ============  ============  ==============================

The internal events: PreToolUse gets `tool_name` "Task" (OpenCode's `task`, whose arguments
`description`, `prompt`, `subagent_type` are Claude Code's Task input) and `tool_input` = args;
SessionStart gets `source`; PostCompact gets `trigger` and `compact_summary`; PostToolUse and
PostToolUseFailure (the drift observer, drift/observe.py) get `tool_name` (OpenCode's tool id as
is), `tool_input` = args, `tool_use_id` = callID and, from the plugin, `calls_since_text`. Every
event gets `session_id` (OpenCode's sessionID) and `cwd` (the directory).

The plugin facts:

- `source` (system transform): "compact" once this OpenCode process has seen the session
  compacted; "startup" for a session it saw created and not yet compacted; "resume" for one it
  saw neither created nor compacted (`opencode run --session ID` reopening an older session).
  SessionStart re-injects the invariants for compact and resume, as it does for Claude Code.
- `trigger` (session.compacted): "auto" when `experimental.compaction.autocontinue` fired for
  the session first (OpenCode fires it only after an automatic compaction), else "manual".
- `summary` (session.compacted): the text of the session's newest assistant message marked
  `summary: true`, read back with the SDK client; null when the plugin could not read it.
- `failed` (tool.execute.after): true when the tool ran but reports a failure, which OpenCode
  does not count as one (the bash tool's `metadata.exit` is not 0); the plugin then calls
  post-tool-use-failure. A tool that threw never reaches tool.execute.after: the plugin sees it
  as a tool part turning to `status: "error"` (message.part.updated).
- `quiet` (both): tool calls of the session since the model's last text part
  (`experimental.text.complete`), counted by the plugin since it loaded: silence drift.

ctxward -> plugin (stdout, exit 0)
----------------------------------

Empty stdout: nothing to do. Otherwise one JSON object; the plugin applies each key it finds:

- `deny` (tool.execute.before): throw `new Error(deny)`. OpenCode makes the message, verbatim,
  the tool result the model reads; no sub-agent starts.
- `args` (tool.execute.before): assign each key into `output.args` in place (OpenCode keeps
  the object it passed; reassigning `output.args` has no effect). The C9 offload's new prompt.
- `note` (tool.execute.before): text for the model, appended to this call's result in
  `tool.execute.after` (the channel that reaches the model after an allowed call).
  (post-tool-use, post-tool-use-failure): the drift facts. The plugin observes without
  delaying the tool (not awaited) and puts the note in the session's next request as a system
  message (experimental.chat.system.transform waits for the observations still running).
- `context` (experimental.session.compacting): strings pushed onto `output.context`, which
  OpenCode appends to the summarizer's prompt (or appended to `output.prompt` when another
  plugin has replaced the prompt, since OpenCode then ignores `output.context`).
- `system` (experimental.chat.system.transform): strings pushed onto `output.system` (1.18.33
  sends OpenCode's own system prompt as one system message and the plugin's strings joined as
  a second). The system prompt is rebuilt for every request, so what is put there is present
  in every request after a compaction: the rules the summary of this segment lacks (what it
  kept is in the session's ledger, `invariants.ledger`, written by post-compact), or every rule
  when there is no ledger (no compaction seen, or its summary could not be read).
- `watch` (experimental.chat.system.transform): absolute paths the answer depends on (the
  session's ledger among them). The plugin reuses the answer, per session after a compaction
  or on resume, without starting ctxward, until one of them changes (mtime, size, inode).
- `restate` (event session.compacted): strings for the session's next request, once, as system
  messages: the rules the summary lost or altered (graded by `ctxward.invariants.verdicts`) that the
  system prompt has no room for (so no rule is in both). The plugin holds them until that
  request (experimental.chat.system.transform waits for the post-compact call still running)
  and then forgets them; nothing is left on disk.
- `notice`: for the user, not the model; the plugin logs it (service "ctxward").

Exit codes and failures
-----------------------

0 as above; 1 for bad input, an expected failure or an internal error, with one line on stderr
(`hookio.run`); 2 for a usage error of `ctxward hook`. The plugin treats a non-zero exit, a
timeout, a failure to start `ctxward` and unreadable stdout alike:

- pre-tool-use fails CLOSED: the task call is blocked, and the error says why (the G9 guard may
  not let through what it could not measure);
- pre-compact, session-start and post-compact fail OPEN: nothing is injected, the line is logged.

What OpenCode does not give
---------------------------

- `session.compacted` carries only the session id; the summary text comes from the plugin
  reading the session back. Without it there is no survival report: post-compact exits 1 with
  a line saying so, rather than reporting every rule as missing.
- The compacting hook says nothing of auto or manual; PreCompact gets no `trigger`.
- The model's request never passes through a hook: the plugin cannot see what the model finally
  received, only what it added.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ctxward.core.project import Project, find_project
from ctxward.errors import HookInputError
from ctxward.hooktypes import HookEvent, Outcome
from ctxward.hosts import optional_text
from ctxward.hosts.claude_code import decode_payload

PRE_TOOL_USE = "PreToolUse"
PRE_COMPACT = "PreCompact"
SESSION_START = "SessionStart"
POST_COMPACT = "PostCompact"
POST_TOOL_USE = "PostToolUse"
POST_TOOL_USE_FAILURE = "PostToolUseFailure"

# OpenCode hook (events as "event:<type>") -> internal event name
HOOKS = {
    "tool.execute.before": PRE_TOOL_USE,
    "experimental.session.compacting": PRE_COMPACT,
    "experimental.chat.system.transform": SESSION_START,
    "event:session.compacted": POST_COMPACT,
    "tool.execute.after": POST_TOOL_USE,  # PostToolUseFailure when the plugin says `failed`
    "event:message.part.updated": POST_TOOL_USE_FAILURE,  # a tool part that errored
}
# OpenCode tool names whose internal name differs (the rest pass through unchanged)
TOOL_NAMES = {"task": "Task"}
SOURCES = frozenset({"startup", "compact", "resume"})
TRIGGERS = frozenset({"auto", "manual"})


def read_event(raw: bytes, env: Mapping[str, str], expected: str | None = None) -> HookEvent:
    """Parse the plugin's stdin bytes into the internal HookEvent; HookInputError if malformed."""
    return to_event(decode_payload(raw), expected)


def to_event(payload: Mapping[str, Any], expected: str | None = None) -> HookEvent:
    """Translate the plugin's object (module docstring) into the internal HookEvent."""
    hook = _text(payload, "hook", "the payload")
    inputs = _object(payload, "input", hook)
    event = _object(inputs, "event", "event input") if hook == "event" else {}
    key = f"event:{_text(event, 'type', 'event')}" if hook == "event" else hook
    name = HOOKS.get(key)
    facts = payload.get("plugin")
    if name == POST_TOOL_USE and isinstance(facts, dict) and facts.get("failed") is True:
        name = POST_TOOL_USE_FAILURE
    if name is None:
        raise HookInputError(
            f"OpenCode hook {key!r} is not handled (handled: {', '.join(sorted(HOOKS))})"
        )
    if expected is not None and name != expected:
        raise HookInputError(f"this hook handles {expected}, but the OpenCode {key} is {name}")
    directory = optional_text(payload, "directory", "OpenCode")
    if directory and ("\x00" in directory or not Path(directory).is_absolute()):
        raise HookInputError(
            f"OpenCode payload field 'directory' is not an absolute path: {directory!r}"
        )
    plugin = _object(payload, "plugin", hook, required=False)
    data: dict[str, Any] = {"hook_event_name": name, "cwd": directory or ""}
    if name == PRE_TOOL_USE:
        tool = _text(inputs, "tool", hook)
        args = _object(_object(payload, "output", hook), "args", f"{hook} output")
        data |= {
            "session_id": _text(inputs, "sessionID", hook, required=False),
            "tool_name": TOOL_NAMES.get(tool, tool),
            "tool_input": args,
            "tool_use_id": _text(inputs, "callID", hook, required=False),
        }
    elif name in (POST_TOOL_USE, POST_TOOL_USE_FAILURE):
        data |= _tool_result(inputs, event, plugin, key)
    elif name == POST_COMPACT:
        properties = _object(event, "properties", key)
        summary = plugin.get("summary")
        if summary is not None and not isinstance(summary, str):
            raise HookInputError(f"{key}: plugin field 'summary' is not a string")
        session = _text(properties, "sessionID", key, required=False)
        if not summary:
            raise HookInputError(
                f"OpenCode gave no summary text for session {session or '?'}: "
                "no survival report written (the plugin could not read the summary back)"
            )
        data |= {
            "session_id": session,
            "trigger": _choice(plugin, "trigger", TRIGGERS, key, default="manual"),
            "compact_summary": summary,
        }
    else:
        data["session_id"] = _text(inputs, "sessionID", hook, required=False)
        if name == SESSION_START:
            data["source"] = _choice(plugin, "source", SOURCES, hook, default="startup")
    if name in (SESSION_START, POST_COMPACT):
        # The system prompt is rebuilt for every request: what it carries is never stacked. It
        # states what the segment's summary lacks (post-compact records what it kept in the
        # ledger); what does not fit goes in the next request once (`restate`).
        data["per_request"] = True
    project = find_project({}, directory or None)  # $CLAUDE_PROJECT_DIR means nothing to it
    return HookEvent(name=name, data=data, project=project)


# The one Outcome field each of these events passes on, and where the plugin's answer carries it:
# (field, key, as a list of one).
_PASSED_ON = {
    PRE_COMPACT: ("plain", "context", True),
    POST_COMPACT: ("context", "restate", True),
    POST_TOOL_USE: ("context", "note", False),
    POST_TOOL_USE_FAILURE: ("context", "note", False),
    SESSION_START: ("context", "system", True),
}


def render_outcome(event: HookEvent, outcome: Outcome) -> str:
    """The plugin's answer to `outcome` (module docstring); '' when there is nothing to do."""
    body: dict[str, Any] = {}
    accepted = {"notice"}
    if event.name == PRE_TOOL_USE:
        accepted |= {"decision", "reason", "updated_input", "context"}
        if outcome.decision not in (None, "allow"):
            # "deny", and "ask", which OpenCode cannot put to the user from a plugin: deny.
            body["deny"] = outcome.reason or f"ctxward: dispatch {outcome.decision}"
        else:
            if outcome.updated_input is not None:
                body["args"] = dict(outcome.updated_input)
            if outcome.context:
                body["note"] = outcome.context
    elif event.name in _PASSED_ON:
        field, key, listed = _PASSED_ON[event.name]
        accepted.add(field)
        value = getattr(outcome, field)
        if value:
            body[key] = [value] if listed else value
    if event.name == SESSION_START:
        watch = watched_paths(event.project)
        if event.session_id:  # what the summary kept (post-compact writes it: invariants.ledger)
            from ctxward.invariants.ledger import path_of

            watch.append(path_of(event.project, event.session_id))
        body["watch"] = [str(path) for path in watch]
    unused = [name for name in _set_fields(outcome) if name not in accepted]
    if unused:
        raise ValueError(f"{event.name} for OpenCode has no use for {', '.join(unused)}")
    if outcome.notice:
        body["notice"] = outcome.notice
    return json.dumps(body, ensure_ascii=False) + "\n" if body else ""


def _tool_result(
    inputs: Mapping[str, Any], event: Mapping[str, Any], plugin: Mapping[str, Any], key: str
) -> dict[str, Any]:
    """The drift observer's fields: from tool.execute.after's input, or an errored tool part."""
    if event:
        part = _object(_object(event, "properties", key), "part", key)
        state = _object(part, "state", f"{key} part")
        if state.get("status") != "error":
            raise HookInputError(f"{key}: the tool part's state is not an error")
        source, args = part, _object(state, "input", f"{key} part state", required=False)
    else:
        source, args = inputs, _object(inputs, "args", key, required=False)
    quiet = plugin.get("quiet")
    if quiet is not None and (isinstance(quiet, bool) or not isinstance(quiet, int) or quiet < 0):
        raise HookInputError(f"{key}: plugin field 'quiet' is not a count: {quiet!r}")
    fields: dict[str, Any] = {
        "session_id": _text(source, "sessionID", key, required=False),
        "tool_name": _text(source, "tool", key),
        "tool_input": dict(args),
        "tool_use_id": _text(source, "callID", key, required=False),
    }
    if quiet is not None:
        fields["calls_since_text"] = quiet
    return fields


def watched_paths(project: Project) -> list[Path]:
    """What SessionStart's answer depends on: the plans folder, each plan, the config file,
    and this user's trust records (`ctxward trust` changes the answer)."""
    from ctxward.core.config import config_path
    from ctxward.invariants.model import INVARIANTS_FILE
    from ctxward.invariants.trust import records_dir

    plans = project.plans_dir
    paths = [plans]
    if plans.is_dir():
        for folder in sorted(p for p in plans.iterdir() if p.is_dir()):
            paths += [folder, folder / INVARIANTS_FILE]
    paths += [config_path(project), records_dir()]
    return paths


def _set_fields(outcome: Outcome) -> list[str]:
    names = ("context", "notice", "plain", "decision", "reason", "updated_input")
    return [name for name in names if getattr(outcome, name) is not None]


def _object(
    parent: Mapping[str, Any], key: str, where: str, *, required: bool = True
) -> Mapping[str, Any]:
    value = parent.get(key)
    if value is None and not required:
        return {}
    if not isinstance(value, dict):
        got = "missing" if value is None else f"a JSON {type(value).__name__}"
        raise HookInputError(f"OpenCode {where}: {key!r} should be an object, is {got}")
    return value


def _text(parent: Mapping[str, Any], key: str, where: str, *, required: bool = True) -> str:
    value = parent.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value):
        got = "missing" if value is None else f"{value!r}"
        raise HookInputError(f"OpenCode {where}: {key!r} should be a non-empty string, is {got}")
    return value


def _choice(
    parent: Mapping[str, Any], key: str, allowed: frozenset[str], where: str, *, default: str
) -> str:
    value = parent.get(key, default)
    if not isinstance(value, str) or value not in allowed:
        raise HookInputError(
            f"OpenCode {where}: plugin field {key!r} is {value!r}, not one of "
            f"{', '.join(sorted(allowed))}"
        )
    return str(value)
