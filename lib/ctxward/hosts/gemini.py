"""Gemini CLI (npm `@google/gemini-cli`, checked against 0.61.0): its hooks, in its own contract.

Gemini CLI runs command hooks from the `hooks` block of `settings.json` (project
`.gemini/settings.json`, user `~/.gemini/settings.json`): event -> groups of
`{matcher, hooks: [{type: "command", command, name, timeout}]}`, `timeout` in MILLISECONDS.
It runs each command with `bash -c` in the project folder (`$GEMINI_PROJECT_DIR` and
`$CLAUDE_PROJECT_DIR` set), writes one JSON object on stdin and parses stdout as JSON on exit 0;
exit 2 blocks (stderr is the reason); any other exit is a warning and the CLI goes on. ctxward's
hooks run `ctxward-hook --host gemini` inside the fallback wrapper of `ctxward.hosts.wiring`
(`ctxward install gemini`). Sources: the package's `bundle/docs/hooks/reference.md` and its
bundled source; every fact below was seen with the real 0.61.0 driven headless (`gemini -p`)
against tests/e2e/gemini/mock_gemini.py (payloads: tests/fixtures/gemini-cli-0.61.0/).

=====================  ===========================================  ========================
Gemini event           what ctxward does                            answer
=====================  ===========================================  ========================
BeforeModel            after a compression, while the request does  llm_request: the rules
                       not carry the rules: adds them to the        appended to the summary
                       summary's turn (this request only)           message
BeforeAgent            after a compression whose history does not   additionalContext (kept
                       carry the rules yet: every active rule       in the history)
PreCompress            distils every plan's .compaction-payload.md  nothing
SessionStart           tells the user of untrusted plans            systemMessage
BeforeTool             the dispatch guard (G9), FAILS CLOSED        decision "deny" + reason,
(invoke_agent)                                                      or tool_input (C9)
AfterTool (every tool) the drift observer (seed 002)                additionalContext
=====================  ===========================================  ========================

Facts that shape this (0.61.0, seen):

- PreCompress fires before EVERY turn (trigger "auto"), compression or not: the CLI fires it
  before comparing the context with `model.compressionThreshold`; `/compress` fires "manual".
  It cannot reach the summarizer, and no SessionStart follows a compression. So PreCompress does
  not say that a compression happened: the history does. A compression leaves the summary as a
  user turn followed by the model turn COMPRESSION_ACK (a fixed text of the CLI), in the
  requests and in the session file (`transcript_path`, JSONL, rewritten with the new history).
- A compression runs inside a turn, AFTER that turn's BeforeAgent, so BeforeAgent cannot put
  the rules in the first request after it; BeforeModel, which sees every outgoing request, can.
  Its change is not kept in the history, so the next prompt's BeforeAgent adds the rules to the
  history (an appended `<hook_context>` part, which a resume keeps); from then on the requests
  carry them and BeforeModel adds nothing. Both look for AFTER_COMPRESSION's marker line: no
  state of ctxward's own, and never two copies.
- SessionStart's additionalContext is prepended to the prompt, and a later `--resume` drops
  every recorded user turn that starts with `<hook_context>`, the user's own words with it
  (`isIgnoredUserContent`): so ctxward puts nothing there.
- The sub-agent tool is `invoke_agent` (`agent_name`, `prompt`); BeforeTool's `decision: "deny"`
  and `reason` stop it, the reason is the tool result the model reads, and the turn goes on.
- AfterTool's additionalContext is appended to a tool's result; a failed call's result is an
  error object, to which Gemini appends nothing: drift on failures is recorded, not told.
- Gemini replaces < and > with &lt; &gt; in every hook's additionalContext (not in a BeforeModel
  request override).
- Not available on Gemini CLI: a hook that reaches the summarizer (PreCompress is advisory), a
  summary in a hook payload (no survival report), SubagentStop (no such event).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from ctxward.core.project import find_project
from ctxward.errors import HookInputError
from ctxward.hooktypes import HookEvent, Outcome
from ctxward.hosts import event_name, optional_text
from ctxward.hosts.claude_code import decode_payload

SESSION_START = "SessionStart"
BEFORE_AGENT = "BeforeAgent"
BEFORE_MODEL = "BeforeModel"
PRE_COMPRESS = "PreCompress"
BEFORE_TOOL = "BeforeTool"
AFTER_TOOL = "AfterTool"
DISPATCH_TOOL = "invoke_agent"
# Gemini event -> (the internal event it normally is, the `ctxward hook` argument, matcher).
# BeforeAgent and BeforeModel become SessionStart(compact) when they bring the rules back.
EVENTS: dict[str, tuple[str, str, str]] = {
    SESSION_START: ("SessionStart", "session-start", ""),
    BEFORE_AGENT: ("UserPromptSubmit", "user-prompt-submit", ""),
    BEFORE_MODEL: ("UserPromptSubmit", "user-prompt-submit", ""),
    PRE_COMPRESS: ("PreCompact", "pre-compact", ""),
    BEFORE_TOOL: ("PreToolUse", "pre-tool-use", DISPATCH_TOOL),
    AFTER_TOOL: ("PostToolUse", "post-tool-use", "*"),
}
# What Gemini may wait for each hook: the host timeout (`ctxward.core.limits`) of the internal event
# whose work it can do (BeforeAgent and BeforeModel render every rule, as SessionStart does).
TIMEOUT_EVENT = {
    SESSION_START: "SessionStart",
    BEFORE_AGENT: "SessionStart",
    BEFORE_MODEL: "SessionStart",
    PRE_COMPRESS: "PreCompact",
    BEFORE_TOOL: "PreToolUse",
    AFTER_TOOL: "PostToolUse",
}
# The model turn Gemini CLI 0.61 puts after a compression's summary (chatCompressionService).
COMPRESSION_ACK = "Got it. Thanks for the additional context!"
_ACK_JSON = json.dumps(COMPRESSION_ACK).encode()
# The first line of what ctxward adds after a compression
# (templates/hosts/gemini_after_compression.md.j2).
RULES_MARKER = "[ctxward: the rules in force, restated after this session's compression]"
AFTER_COMPRESSION = "hosts/gemini_after_compression.md.j2"
MAX_TRANSCRIPT_BYTES = 64 * 1024 * 1024  # past this, only the tail is searched
# Whether to say the rules is decided here, from RULES_MARKER in the request or the history, and
# then every rule is said: the session's inject-once ledger (invariants.ledger) is not consulted. It
# would count BeforeModel's override, which the history does not keep, as said for good.
_OWN_DEDUPE = {"per_request": True}


def hook_args(event: str) -> list[str]:
    """The arguments of `ctxward-hook` that run Gemini's `event` (KeyError for another event).

    The argv-free entry point, as for Codex: BeforeModel runs before every model request and
    AfterTool after every tool call, where loading the click CLI would cost ~70 ms a time."""
    if event not in EVENTS:
        raise KeyError(event)
    return ["--host", "gemini"]


def timeout_ms(event: str) -> int:
    """The `timeout` install writes for Gemini's `event`, in milliseconds."""
    from ctxward.core.limits import HOST_TIMEOUT_SECONDS

    return int(HOST_TIMEOUT_SECONDS[TIMEOUT_EVENT[event]] * 1000)


def wiring(command_for: Any) -> dict[str, list[dict[str, Any]]]:
    """The `hooks` block `ctxward install gemini` writes; `command_for(event)` the command."""
    block: dict[str, list[dict[str, Any]]] = {}
    for name, (_, _, matcher) in EVENTS.items():
        handler = {
            "name": f"ctxward {name}",
            "type": "command",
            "command": command_for(name),
            "timeout": timeout_ms(name),
        }
        block[name] = [{"matcher": matcher, "hooks": [handler]}]
    return block


def read_event(raw: bytes, env: Mapping[str, str], expected: str | None = None) -> HookEvent:
    """Parse Gemini's stdin bytes into the internal HookEvent; HookInputError if unusable."""
    return to_event(decode_payload(raw), expected, compressed=_ACK_JSON in raw)


def to_event(
    payload: Mapping[str, Any], expected: str | None = None, compressed: bool = True
) -> HookEvent:
    """Gemini's payload as the internal event. `expected` is the internal event the command
    was installed for (`ctxward hook ARG`): UserPromptSubmit for BeforeAgent and BeforeModel,
    even when they become SessionStart(compact). `compressed` False: the payload's bytes do not
    hold COMPRESSION_ACK (a BeforeModel request without a compression, the common case)."""
    name = event_name(payload, "Gemini CLI", EVENTS)
    nominal = EVENTS[name][0]
    if expected is not None and nominal != expected:
        raise HookInputError(f"this hook handles {expected}, but the Gemini payload is {name}")
    cwd = optional_text(payload, "cwd", "Gemini CLI")
    data: dict[str, Any] = {
        key: payload[key] for key in ("session_id", "transcript_path", "cwd") if key in payload
    }
    data["hook_event_name"] = nominal
    if name == SESSION_START:
        data["source"] = "startup"  # nothing is injected there (module docstring)
    elif name == BEFORE_AGENT:
        prompt = payload.get("prompt")
        data["prompt"] = prompt if isinstance(prompt, str) else ""
        if rules_lost(data.get("transcript_path")):
            data |= {"hook_event_name": "SessionStart", "source": "compact", **_OWN_DEDUPE}
    elif name == BEFORE_MODEL:
        at = summary_index(payload.get("llm_request")) if compressed else None
        if at is None:  # nothing to add: and no pending restatement is taken from here
            data.pop("session_id", None)
        else:
            data |= {
                "hook_event_name": "SessionStart",
                "source": "compact",
                **_OWN_DEDUPE,
                "llm_request": payload["llm_request"],
                "summary_index": at,
            }
    elif name == PRE_COMPRESS:
        # Gemini's session file is no Claude Code transcript: no seed 001 summary from it.
        data.pop("transcript_path", None)
        trigger = payload.get("trigger")
        data["trigger"] = trigger if trigger in ("auto", "manual") else "auto"
    else:
        data |= _tool_call(name, payload)
    return HookEvent(name=data["hook_event_name"], data=data, project=find_project({}, cwd or None))


def _tool_call(name: str, payload: Mapping[str, Any]) -> dict[str, Any]:
    tool = payload.get("tool_name")
    if not isinstance(tool, str):
        raise HookInputError(f"Gemini CLI {name} payload has no 'tool_name'")
    tool_input = payload.get("tool_input")
    if name == BEFORE_TOOL and tool == DISPATCH_TOOL:
        return {"tool_name": "Task", "tool_input": dispatch_input(tool_input)}
    data = {"tool_name": tool, "tool_input": tool_input}
    if name == AFTER_TOOL:
        response = payload.get("tool_response")
        data["tool_response"] = response
        if isinstance(response, dict) and response.get("error"):
            data["hook_event_name"] = "PostToolUseFailure"
    return data


def dispatch_input(tool_input: object) -> object:
    """invoke_agent's arguments as the guard measures a Task input: `prompt` as is, the agent's
    name as `subagent_type`, every other argument kept (and counted)."""
    if not isinstance(tool_input, dict):
        return tool_input
    mapped = {key: value for key, value in tool_input.items() if key != "agent_name"}
    if "agent_name" in tool_input:
        mapped["subagent_type"] = tool_input["agent_name"]
    return mapped


def render_outcome(event: HookEvent, outcome: Outcome) -> str:
    """Gemini's answer to `outcome` ('' when there is nothing Gemini would use)."""
    body: dict[str, Any] = {}
    if event.name == "PreToolUse":
        if outcome.decision not in (None, "allow"):
            body["decision"] = "deny"  # "ask" too: a hook cannot put a question to the user
            body["reason"] = outcome.reason or f"ctxward: dispatch {outcome.decision}"
        elif outcome.updated_input is not None:
            new = dict(outcome.updated_input)
            if "subagent_type" in new:
                new["agent_name"] = new.pop("subagent_type")
            body["hookSpecificOutput"] = {"hookEventName": BEFORE_TOOL, "tool_input": new}
    elif outcome.context and event.name == "SessionStart" and "llm_request" in event.data:
        request = _with_rules(event.data, _after_compression(outcome.context))
        body["hookSpecificOutput"] = {"hookEventName": BEFORE_MODEL, "llm_request": request}
    elif outcome.context and event.name == "SessionStart":
        text = _after_compression(outcome.context)
        body["hookSpecificOutput"] = {"hookEventName": BEFORE_AGENT, "additionalContext": text}
    elif outcome.context and event.name == "UserPromptSubmit":
        body["hookSpecificOutput"] = {
            "hookEventName": BEFORE_AGENT,
            "additionalContext": outcome.context,
        }
    elif outcome.context and event.name in ("PostToolUse", "PostToolUseFailure"):
        body["hookSpecificOutput"] = {
            "hookEventName": AFTER_TOOL,
            "additionalContext": outcome.context,
        }
    restated = event.name == "SessionStart" and event.data.get("source") == "compact"
    if outcome.notice and not restated:  # SessionStart says it once a run; not every request
        body["systemMessage"] = outcome.notice
    return json.dumps(body, ensure_ascii=False) + "\n" if body else ""


def _after_compression(context: str) -> str:
    from ctxward.core.render import render

    return render(AFTER_COMPRESSION, marker=RULES_MARKER, text=context).strip()


def _with_rules(data: Mapping[str, Any], rules: str) -> dict[str, Any]:
    """The BeforeModel override: the request's own messages (Gemini merges them back by index
    into the contents that carry text, keeping every other part), the summary's with the rules
    appended."""
    request = data["llm_request"]
    messages = [dict(m) for m in request["messages"]]
    at = data["summary_index"]
    messages[at]["content"] = f"{messages[at]['content']}\n\n{rules}"
    return {"messages": messages}


# --- the compression a request or the session file shows -------------------------------------


def summary_index(request: object) -> int | None:
    """In a BeforeModel `llm_request`: the index of the newest compression's summary message
    when no message from it on carries ctxward's rules; None otherwise."""
    if not isinstance(request, dict) or not isinstance(request.get("messages"), list):
        return None
    messages = request["messages"]
    if not all(isinstance(m, dict) and isinstance(m.get("content"), str) for m in messages):
        return None
    acks = [i for i, m in enumerate(messages) if i and m["content"] == COMPRESSION_ACK]
    if not acks or messages[acks[-1]].get("role") != "model":
        return None
    at = acks[-1] - 1
    if any(RULES_MARKER in m["content"] for m in messages[at:]):
        return None
    return at


def rules_lost(transcript: object) -> bool:
    """Whether the session file shows a compression after which the history does not carry
    ctxward's rules (Gemini CLI 0.61's JSONL: a compression rewrites the history as one
    `{"$set": {"messages": [...]}}` record holding COMPRESSION_ACK; later turns follow it)."""
    if not isinstance(transcript, str) or not os.path.isabs(transcript):
        return False
    try:
        with open(transcript, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            handle.seek(max(0, size - MAX_TRANSCRIPT_BYTES))
            data = handle.read(MAX_TRANSCRIPT_BYTES)
    except (OSError, ValueError):
        return False
    at = data.rfind(_ACK_JSON)
    if at < 0:
        return False
    marker = json.dumps(RULES_MARKER, ensure_ascii=False)[1:-1].encode()
    return data.find(marker, data.rfind(b"\n", 0, at) + 1) < 0
