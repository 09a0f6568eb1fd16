"""settings.example.json, hooks/hooks.json and .claude-plugin/plugin.json stay true to the code."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from ctxward.events import HANDLERS

REPO = Path(__file__).resolve().parent.parent
EVENTS = {
    "PreCompact",
    "SessionStart",
    "PostCompact",
    "SubagentStop",
    "Stop",
    "PreToolUse",
    "UserPromptSubmit",
    "PostToolUse",
    "PostToolUseFailure",
    "SessionEnd",  # seed 001: compress at session end (wired by default since issue 21)
}
OPTIONAL: set[str] = set()
# What each event's matcher must let through, and what it must not (Claude Code matches the
# matcher as a regular expression against the trigger / source / tool name).
MATCHES = {
    "PreCompact": (["manual", "auto"], []),
    "SessionStart": (["compact", "resume"], ["startup", "clear"]),
    "PostCompact": (["manual", "auto"], []),
    "PreToolUse": (["Agent", "Task"], ["Bash", "Read", "Edit", "AgentX"]),
}


def load(relative: str) -> dict:
    return json.loads((REPO / relative).read_text(encoding="utf-8"))


def commands(config: dict, event: str) -> list[dict]:
    return [hook for group in config["hooks"][event] for hook in group["hooks"]]


def matcher_allows(matcher: str | None, value: str) -> bool:
    return matcher in (None, "", "*") or re.fullmatch(matcher, value) is not None


@pytest.fixture(params=["settings.example.json", "hooks/hooks.json"])
def config(request):
    return load(request.param)


def test_every_handled_event_is_wired(config):
    assert set(config["hooks"]) == EVENTS == set(HANDLERS) - OPTIONAL


@pytest.mark.parametrize("event", sorted(MATCHES))
def test_matchers(config, event):
    should, should_not = MATCHES[event]
    (group,) = config["hooks"][event]
    matcher = group.get("matcher")
    assert all(matcher_allows(matcher, value) for value in should), matcher
    assert not any(matcher_allows(matcher, value) for value in should_not), matcher


def test_exact_matchers_the_design_names(config):
    assert config["hooks"]["SessionStart"][0]["matcher"] == "compact|resume"
    assert config["hooks"]["PreToolUse"][0]["matcher"] == "Agent|Task"


@pytest.mark.parametrize(
    "event", ["SubagentStop", "UserPromptSubmit", "PostToolUse", "PostToolUseFailure"]
)
def test_events_without_a_matcher(config, event):
    (group,) = config["hooks"][event]
    assert group.get("matcher") in (None, "", "*")


def test_settings_example_calls_the_argv_free_entry_point():
    settings = load("settings.example.json")
    for event in EVENTS:
        for hook in commands(settings, event):
            assert hook == {
                "type": "command",
                "command": "ctxward-hook",
                "timeout": hook["timeout"],
            }
            assert 0 < hook["timeout"] <= 60


def test_the_install_page_shows_settings_example_json():
    page = (REPO / "docs" / "install.md").read_text(encoding="utf-8")
    found = re.search(r"merge `settings\.example\.json`.*?```json\n(.*?)```", page, re.DOTALL)
    assert found, "docs/install.md has no ```json block after 'merge `settings.example.json`'"
    assert json.loads(found.group(1)) == load("settings.example.json")


def test_ctxward_hook_is_a_declared_console_script():
    pyproject = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    assert 'ctxward-hook = "ctxward.hookio:main"' in pyproject


def test_plugin_hooks_run_existing_executable_scripts_pinned_to_their_event():
    plugin_hooks = load("hooks/hooks.json")
    for event in EVENTS:
        (hook,) = commands(plugin_hooks, event)
        assert hook["type"] == "command"
        assert hook["command"] == "python3"
        (arg,) = hook["args"]
        assert arg.startswith("${CLAUDE_PLUGIN_ROOT}/hooks/")
        script = REPO / arg.replace("${CLAUDE_PLUGIN_ROOT}/", "")
        assert script.is_file(), script
        assert os.access(script, os.X_OK)
        text = script.read_text(encoding="utf-8")
        assert text.startswith("#!/usr/bin/env python3\n")
        assert f'run_script("{event}")' in text  # the script handles the event it is wired to


def test_plugin_manifest():
    manifest = load(".claude-plugin/plugin.json")
    assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", manifest["name"])
    # The package's version is the git tag's: scripts/release_check.py refuses a tag not this
    assert re.fullmatch(r"\d+\.\d+\.\d+", manifest["version"])
    assert manifest["description"]
