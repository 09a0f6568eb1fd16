"""`ctxward audit`: text, --json, --summary, --html, the default transcript, fail-soft."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from ctxward.cli import cli
from ctxward.transcript.reader import project_folder_name

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "claude_code" / "transcripts"
COMPACTED = FIXTURES / "7de73c29-a9cd-4608-aa26-55358a7f7df9.jsonl"
WITH_AGENT = FIXTURES / "876f70ae-3637-4f57-b055-c61867a928f5.jsonl"
AGENT = FIXTURES / "876f70ae-3637-4f57-b055-c61867a928f5_subagents_agent-a85995de1c25d0350.jsonl"


@pytest.fixture(autouse=True)
def _no_session(monkeypatch):
    monkeypatch.delenv("CLAUDE_CODE_SESSION_ID", raising=False)
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)


@pytest.fixture
def invoke(project):
    def run(*args: str, env: dict | None = None):
        return CliRunner().invoke(cli, ["-C", str(project), "audit", *args], env=env)

    return run


@pytest.fixture
def installed(tmp_path, project) -> Path:
    """The captured session laid out as Claude Code stores it, under this project's folder."""
    folder = tmp_path / "home" / ".claude" / "projects" / project_folder_name(project)
    folder.mkdir(parents=True)
    main = folder / WITH_AGENT.name
    shutil.copy(WITH_AGENT, main)
    subagents = main.with_suffix("") / "subagents"
    subagents.mkdir(parents=True)
    shutil.copy(AGENT, subagents / "agent-a85995de1c25d0350.jsonl")
    return main


def test_text_report(invoke):
    done = invoke(str(COMPACTED), "--top", "3")
    assert done.exit_code == 0
    lines = done.stdout.splitlines()
    assert lines[0] == f"context audit of {COMPACTED}"
    assert (
        "3 requests, context peak 21,376 tokens, last 13,140; 2 segments (1 compaction)" in lines[1]
    )
    assert "top 3 of" in done.stdout and "Agent  general-purpose" in done.stdout
    assert (
        "segment 1 (from line 42, after a manual compaction, 21,449 → 2,719 tokens)" in done.stdout
    )


def test_json_report(invoke):
    body = json.loads(invoke(str(COMPACTED), "--json").stdout)
    assert body["available"] is True
    assert [r["contextTokens"] for r in body["requests"]] == [12_556, 21_376, 13_140]
    assert [s["index"] for s in body["segments"]] == [0, 1]
    for group in body["top"]:
        assert set(group) == {"tool", "key", "bytes", "pctOfTotal", "count"}


def test_summary_is_small_and_additive(invoke, installed):
    summary = invoke(str(installed), "--summary", "--json", "--top", "5")
    full = json.loads(invoke(str(installed), "--json").stdout)

    assert len(summary.stdout.encode()) <= 2048
    body = json.loads(summary.stdout)
    assert (body["requests"], body["segments"], body["subagents"]) == (2, 1, 1)
    assert len(body["top"]) == 5
    assert body["top"][0].startswith("system prompt + tool schemas: ")
    assert full["subagents"][0]["agentType"] == "general-purpose"
    assert full["groups"] == body["groups"]
    text = invoke(str(installed), "--summary")
    assert text.exit_code == 0 and len(text.stdout.encode()) <= 2048


def test_default_transcript_is_the_sessions_then_the_newest(invoke, installed):
    by_session = invoke("--summary", "--json", env={"CLAUDE_CODE_SESSION_ID": installed.stem})
    assert json.loads(by_session.stdout)["transcript"] == str(installed)
    newest = invoke("--summary", "--json")
    assert json.loads(newest.stdout)["transcript"] == str(installed)


@pytest.mark.parametrize("kind", ["missing", "foreign", "folder", "none"])
def test_fail_soft(invoke, tmp_path, kind):
    target = {
        "missing": tmp_path / "nope.jsonl",
        "foreign": tmp_path / "notes.txt",
        "folder": tmp_path,
    }.get(kind)
    (tmp_path / "notes.txt").write_text("hello\nworld\n")
    args = [str(target)] if target else []

    as_json = invoke(*args, "--json")
    as_text = invoke(*args)

    assert (as_json.exit_code, as_text.exit_code) == (0, 0)
    body = json.loads(as_json.stdout)
    assert body["available"] is False and body["reason"]
    assert as_text.stdout == f"ctxward audit: not available: {body['reason']}\n"
    assert as_text.stdout.count("\n") == 1


def test_html_page(invoke, installed, tmp_path):
    page = tmp_path / "out" / "audit.html"
    done = invoke(str(installed), "--html", str(page), "--summary")
    assert done.exit_code == 0
    html = page.read_text()
    assert html.startswith("<!DOCTYPE html>") and html.rstrip().endswith("</html>")
    assert "<svg" in html and "Top offenders" in html and "general-purpose" in html
    assert "http://" not in html.replace("http://www.w3.org", "") and "https://" not in html
