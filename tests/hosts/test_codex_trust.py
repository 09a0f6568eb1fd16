"""Codex hook trust (ctxward.hosts.codex_trust): the state key, the hash, the status.

The hash algorithm was checked against the real Codex CLI 0.169.0 in tests/e2e/codex
(test_codex_wiring.py: hooks trusted this way run without --dangerously-bypass-hook-trust).
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest

from ctxward.hosts import codex_trust

HANDLER = {"type": "command", "command": "echo hi", "timeout": 10}


def test_the_hash_is_sha256_of_the_sorted_compact_identity():
    identity = {
        "event_name": "pre_tool_use",
        "hooks": [{"async": False, "command": "echo hi", "timeout": 10, "type": "command"}],
        "matcher": "spawn_agent",
    }
    text = json.dumps(identity, sort_keys=True, separators=(",", ":"))
    expected = "sha256:" + hashlib.sha256(text.encode()).hexdigest()
    assert codex_trust.handler_hash("PreToolUse", "spawn_agent", HANDLER) == expected


def test_an_unset_timeout_is_600_and_userpromptsubmit_drops_its_matcher():
    bare = {"type": "command", "command": "echo hi"}
    assert codex_trust.handler_hash("PreCompact", None, bare) == codex_trust.handler_hash(
        "PreCompact", None, {**bare, "timeout": 600}
    )
    assert codex_trust.handler_hash("UserPromptSubmit", "x", HANDLER) == codex_trust.handler_hash(
        "UserPromptSubmit", None, HANDLER
    )


@pytest.mark.skipif(sys.version_info < (3, 11), reason="tomllib")
def test_status_trusted_modified_untrusted_disabled(tmp_path: Path):
    hooks_json = tmp_path / "hooks.json"
    hooks = {"PreToolUse": [{"matcher": "spawn_agent", "hooks": [HANDLER]}]}
    config = tmp_path / "config.toml"
    config.write_text(codex_trust.trusted_state_toml(hooks_json, hooks), encoding="utf-8")
    states = codex_trust.read_states(config)

    def status(handler: dict, states: dict = states) -> str:
        return codex_trust.trust_status(
            states, hooks_json, "PreToolUse", 0, 0, "spawn_agent", handler
        )

    assert status(HANDLER) == codex_trust.TRUSTED
    assert status({**HANDLER, "command": "echo changed"}) == codex_trust.MODIFIED
    assert status(HANDLER, {}) == codex_trust.UNTRUSTED
    key = codex_trust.state_key(hooks_json, "PreToolUse", 0, 0)
    assert status(HANDLER, {key: {**states[key], "enabled": False}}) == codex_trust.DISABLED


@pytest.mark.skipif(sys.version_info < (3, 11), reason="tomllib")
def test_a_missing_config_has_no_state_and_a_broken_one_is_one_line(tmp_path: Path):
    assert codex_trust.read_states(tmp_path / "none.toml") == {}
    broken = tmp_path / "config.toml"
    broken.write_text("[hooks\n", encoding="utf-8")
    with pytest.raises(ValueError, match="not TOML"):
        codex_trust.read_states(broken)
