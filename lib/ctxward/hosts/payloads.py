"""Synthetic hook payloads in each host's own shape, for `ctxward doctor` to run the wired hooks."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any


def claude_payload(event: str, root: Path) -> dict[str, Any]:
    base: dict[str, Any] = {
        "session_id": "ctxward-doctor",
        "transcript_path": "",
        "cwd": str(root),
        "hook_event_name": event,
    }
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
        "PreToolUse": {
            "tool_name": "Agent",
            "tool_use_id": "toolu_doctor",
            "tool_input": {
                "description": "doctor",
                "prompt": "Reply with OK.",
                "subagent_type": "general-purpose",
            },
        },
        "UserPromptSubmit": {"prompt": "ctxward doctor"},
        "PostToolUse": {
            "tool_name": "Read",
            "tool_use_id": "toolu_doctor",
            "tool_input": {"file_path": str(root / "README.md")},
            "tool_response": {"type": "text"},
        },
        "PostToolUseFailure": {
            "tool_name": "Bash",
            "tool_use_id": "toolu_doctor_failed",
            "tool_input": {"command": "false"},
            "error": "Exit code 1",
        },
    }
    return {**base, **extra.get(event, {})}


def codex_payload(event: str, root: Path) -> dict[str, Any]:
    """A synthetic payload of Codex CLI 0.169.0's shape (hosts/codex.py) for `event`."""
    payload: dict[str, Any] = {
        "session_id": "ctxward-doctor",
        "turn_id": "doctor",
        "transcript_path": None,
        "cwd": str(root),
        "hook_event_name": event,
        "model": "doctor",
        "permission_mode": "default",
    }
    extra: dict[str, dict[str, Any]] = {
        "SessionStart": {"source": "compact"},
        "PreCompact": {"trigger": "manual"},
        "PostCompact": {"trigger": "manual", "compact_summary": "ctxward doctor summary"},
        "UserPromptSubmit": {"prompt": "ctxward doctor"},
        "PreToolUse": {
            "tool_name": "spawn_agent",
            "tool_use_id": "call_doctor",
            "tool_input": {"message": "Reply with OK."},
        },
        "PostToolUse": {
            "tool_name": "exec_command",
            "tool_use_id": "call_doctor_tool",
            "tool_input": {"cmd": "true"},
            "tool_response": "",
        },
    }
    return {**payload, **extra.get(event, {})}


def gemini_payload(event: str, root: Path) -> dict[str, Any]:
    """What Gemini CLI 0.61.0 sends for `event` (tests/fixtures/gemini-cli-0.61.0/)."""
    payload: dict[str, Any] = {
        "session_id": "ctxward-doctor",
        "transcript_path": "",
        "cwd": str(root),
        "hook_event_name": event,
        "timestamp": "2026-01-01T00:00:00.000Z",
    }
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
    return {**payload, **extra.get(event, {})}


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
