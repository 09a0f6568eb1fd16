"""Codex CLI hook trust: which of a hooks.json's handlers Codex will run, read from its config.

Codex runs a hook from a hooks.json only once the user trusted it (`/hooks` in the TUI), or
with `--dangerously-bypass-hook-trust` for one run; an untrusted or changed hook is skipped
without a word. The trust is recorded in the user's `$CODEX_HOME/config.toml` (default
`~/.codex/config.toml`), one table per handler (openai/codex `codex-rs/hooks/src/engine/
discovery.rs`, `config_rules.rs`; `config/src/fingerprint.rs`):

    [hooks.state."<absolute path of hooks.json>:<event label>:<group index>:<handler index>"]
    trusted_hash = "sha256:<hex>"
    enabled = false          # optional: the user switched the hook off

The hash is sha256 over the compact JSON, keys sorted, of the handler's normalized identity:
`{"event_name": label, "matcher": ..., "hooks": [{"type": "command", "command": ...,
"timeout": seconds (600 when unset), "async": false}]}`, with no `matcher` key when the group
has none (UserPromptSubmit and Stop ignore theirs). A hash that differs from the handler's
current one is a modified hook, which Codex skips like an untrusted one. Checked against Codex
CLI 0.169.0: a hooks.json trusted this way runs without the bypass flag (tests/e2e/codex).

Standard library only (`tomllib`, Python 3.11+; on 3.10 the state cannot be read).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

# Codex's label of each event in a state key (`hook_event_key_label`).
EVENT_LABELS = {
    "PreToolUse": "pre_tool_use",
    "PermissionRequest": "permission_request",
    "PostToolUse": "post_tool_use",
    "PreCompact": "pre_compact",
    "PostCompact": "post_compact",
    "SessionStart": "session_start",
    "SessionEnd": "session_end",
    "UserPromptSubmit": "user_prompt_submit",
    "SubagentStart": "subagent_start",
    "SubagentStop": "subagent_stop",
    "Stop": "stop",
}
# Events whose matcher Codex drops (`matcher_pattern_for_event`).
NO_MATCHER = frozenset({"UserPromptSubmit", "Stop"})
DEFAULT_TIMEOUT = 600  # seconds, when a handler sets none

TRUSTED, UNTRUSTED, MODIFIED, DISABLED = "trusted", "untrusted", "modified", "disabled"


def state_key(hooks_json: Path, event: str, group: int, handler: int) -> str:
    return f"{hooks_json}:{EVENT_LABELS[event]}:{group}:{handler}"


def handler_hash(event: str, matcher: object, handler: Mapping[str, Any]) -> str:
    """The `trusted_hash` Codex records for a command handler of `event` under `matcher`."""
    timeout = handler.get("timeout")
    seconds = timeout if isinstance(timeout, int) and not isinstance(timeout, bool) else None
    normalized: dict[str, Any] = {
        "type": "command",
        "command": handler.get("command"),
        "timeout": max(seconds if seconds is not None else DEFAULT_TIMEOUT, 1),
        "async": handler.get("async") is True,
    }
    status = handler.get("statusMessage")
    if isinstance(status, str):
        normalized["statusMessage"] = status
    identity: dict[str, Any] = {"event_name": EVENT_LABELS[event], "hooks": [normalized]}
    if isinstance(matcher, str) and event not in NO_MATCHER:
        identity["matcher"] = matcher
    text = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def codex_home(env: Mapping[str, str]) -> Path:
    home = env.get("HOME") or str(Path.home())
    return Path(env.get("CODEX_HOME") or Path(home) / ".codex")


def read_states(config_toml: Path) -> dict[str, dict[str, Any]]:
    """`[hooks.state]` of Codex's user config.toml ({} when the file is missing).

    OSError when it cannot be read; ValueError when it is not TOML (or on Python 3.10, where
    tomllib does not exist).
    """
    try:
        import tomllib
    except ImportError:  # Python 3.10
        raise ValueError("reading Codex's config.toml needs Python 3.11 (tomllib)") from None
    try:
        text = config_toml.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{config_toml}: not TOML: {exc}") from None
    hooks = data.get("hooks")
    states = hooks.get("state") if isinstance(hooks, dict) else None
    if not isinstance(states, dict):
        return {}
    return {key.strip(): value for key, value in states.items() if isinstance(value, dict)}


def trust_status(
    states: Mapping[str, Mapping[str, Any]],
    hooks_json: Path,
    event: str,
    group_index: int,
    handler_index: int,
    matcher: object,
    handler: Mapping[str, Any],
) -> str:
    """TRUSTED, UNTRUSTED, MODIFIED (trusted once, changed since) or DISABLED."""
    state = states.get(state_key(hooks_json, event, group_index, handler_index), {})
    if state.get("enabled") is False:
        return DISABLED
    recorded = state.get("trusted_hash")
    if not isinstance(recorded, str):
        return UNTRUSTED
    return TRUSTED if recorded == handler_hash(event, matcher, handler) else MODIFIED


def trusted_state_toml(hooks_json: Path, hooks: Mapping[str, Any]) -> str:
    """The `[hooks.state]` tables that trust every command handler of a hooks block, as the
    TOML text Codex's `/hooks` review writes (what the e2e suite puts in a scratch CODEX_HOME)."""
    lines = []
    for event, groups in hooks.items():
        if event not in EVENT_LABELS or not isinstance(groups, list):
            continue
        for g, group in enumerate(groups):
            for h, handler in enumerate(group.get("hooks") or []):
                key = json.dumps(state_key(hooks_json, event, g, h))
                digest = handler_hash(event, group.get("matcher"), handler)
                lines += [f"[hooks.state.{key}]", f'trusted_hash = "{digest}"', ""]
    return "\n".join(lines)
