"""Synthetic hook payloads in each host's own shape, for `ctxward doctor` to run the wired hooks."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any


def _payload(
    event: str,
    root: Path,
    extra: dict[str, dict[str, Any]],
    *,
    transcript_path: str | None,
    **fields: Any,
) -> dict[str, Any]:
    """What every host's payload carries, the host's own `fields`, then `event`'s `extra`."""
    common = {
        "session_id": "ctxward-doctor",
        "transcript_path": transcript_path,
        "cwd": str(root),
        "hook_event_name": event,
    }
    return {**common, **fields, **extra.get(event, {})}


def _tool_call(name: str, ident: str, tool_input: dict[str, Any], **more: Any) -> dict[str, Any]:
    """A tool call's fields, as Claude Code and Codex both send them (`more`: the outcome)."""
    return {"tool_name": name, "tool_use_id": ident, "tool_input": tool_input, **more}


def claude_payload(event: str, root: Path) -> dict[str, Any]:
    """A synthetic payload of Claude Code 2.1.332's shape (hosts/claude_code.py) for `event`."""
    extra: dict[str, dict[str, Any]] = {
        # auto: after a manual one the model reads PreCompact's text, and SessionStart(compact)
        # of the same session then states no rule again (ctxward.invariants.ledger).
        "PreCompact": {"trigger": "auto", "custom_instructions": None},
        "SessionStart": {"source": "compact"},
        "PostCompact": {"trigger": "manual", "compact_summary": "ctxward doctor summary"},
        "SubagentStop": {
            "stop_hook_active": False,
            "agent_id": "doctor",
            "agent_type": "general-purpose",
            "last_assistant_message": "done",
        },
        "PreToolUse": _tool_call(
            "Agent",
            "toolu_doctor",
            {
                "description": "doctor",
                "prompt": "Reply with OK.",
                "subagent_type": "general-purpose",
            },
        ),
        "UserPromptSubmit": {"prompt": "ctxward doctor"},
        "PostToolUse": _tool_call(
            "Read",
            "toolu_doctor",
            {"file_path": str(root / "README.md")},
            tool_response={"type": "text"},
        ),
        "PostToolUseFailure": _tool_call(
            "Bash", "toolu_doctor_failed", {"command": "false"}, error="Exit code 1"
        ),
    }
    return _payload(event, root, extra, transcript_path="")


def codex_payload(event: str, root: Path) -> dict[str, Any]:
    """A synthetic payload of Codex CLI 0.169.0's shape (hosts/codex.py) for `event`."""
    extra: dict[str, dict[str, Any]] = {
        "SessionStart": {"source": "compact"},
        "PreCompact": {"trigger": "manual"},
        "PostCompact": {"trigger": "manual", "compact_summary": "ctxward doctor summary"},
        "UserPromptSubmit": {"prompt": "ctxward doctor"},
        "PreToolUse": _tool_call("spawn_agent", "call_doctor", {"message": "Reply with OK."}),
        "PostToolUse": _tool_call(
            "exec_command", "call_doctor_tool", {"cmd": "true"}, tool_response=""
        ),
    }
    return _payload(
        event,
        root,
        extra,
        transcript_path=None,
        turn_id="doctor",
        model="doctor",
        permission_mode="default",
    )


def gemini_payload(event: str, root: Path) -> dict[str, Any]:
    """What Gemini CLI 0.61.0 sends for `event` (tests/fixtures/gemini-cli-0.61.0/)."""
    extra: dict[str, dict[str, Any]] = {
        "SessionStart": {"source": "resume"},
        "BeforeAgent": {"prompt": "ctxward doctor"},
        "BeforeModel": {  # the first request after a compression (its summary, then the ack)
            "llm_request": {
                "model": "doctor",
                "messages": [
                    {"role": "user", "content": "ctxward doctor summary"},
                    {"role": "model", "content": "Got it. Thanks for the additional context!"},
                    {"role": "user", "content": "ctxward doctor"},
                ],
            }
        },
        "PreCompress": {"trigger": "manual"},
        "BeforeTool": {
            "tool_name": "invoke_agent",
            "tool_input": {"agent_name": "generalist", "prompt": "Reply with OK."},
        },
        "AfterTool": {
            "tool_name": "read_file",
            "tool_input": {"file_path": str(root / "README.md")},
            "tool_response": {"llmContent": "", "returnDisplay": ""},
        },
    }
    return _payload(event, root, extra, transcript_path="", timestamp="2026-01-01T00:00:00.000Z")


OPENCODE_RUNS: dict[str, tuple[str, Callable[[Path], dict[str, Any]]]] = {
    "pre-compact": (
        "PreCompact",
        lambda root: {
            "hook": "experimental.session.compacting",
            "input": {"sessionID": "ses_doctor"},
            "directory": str(root),
            "worktree": str(root),
        },
    ),
    "session-start": (
        "SessionStart",
        lambda root: {
            "hook": "experimental.chat.system.transform",
            "input": {"sessionID": "ses_doctor"},
            "directory": str(root),
            "worktree": str(root),
            "plugin": {"source": "compact"},
        },
    ),
    "pre-tool-use": (
        "PreToolUse",
        lambda root: {
            "hook": "tool.execute.before",
            "input": {"tool": "task", "sessionID": "ses_doctor", "callID": "call_doctor"},
            "output": {"args": {"description": "doctor", "prompt": "Reply with OK."}},
            "directory": str(root),
            "worktree": str(root),
        },
    ),
}
