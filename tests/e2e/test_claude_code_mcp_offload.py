"""An MCP tool's large output on the real Claude Code CLI: the PostToolUse hook stores it in
`.ctxward/offload/` and the model receives a preview and the path instead (seed 002: "Large
outputs (>8,000 chars) offloaded to scratch files with previews").

One run: `claude -p "E2E_MCP_CALL=mcp__e2e__dump" --mcp-config <e2e server> --allowedTools
mcp__e2e__dump`. `mcp_dump_server.py` (stdio, standard library) answers `dump` with 600 rows,
10,200 characters; the mock model calls it once, then quotes the tool result it received.
"""

from __future__ import annotations

import hashlib
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.e2e

SERVER = Path(__file__).with_name("mcp_dump_server.py")
TOOL = "mcp__e2e__dump"


@dataclass(frozen=True)
class Run:
    project: Path
    result: dict[str, Any]
    requests: list[Any]


@pytest.fixture(scope="module")
def run(sandbox: Any, project: Path) -> Run:
    config = project.parent / "mcp.json"
    server = {"type": "stdio", "command": sys.executable, "args": [str(SERVER)]}
    config.write_text(json.dumps({"mcpServers": {"e2e": server}}), encoding="utf-8")
    before = len(sandbox.requests())
    done = sandbox.claude(
        "-p",
        f"E2E_MCP_CALL={TOOL}",
        "--mcp-config",
        str(config),
        "--strict-mcp-config",
        "--allowedTools",
        TOOL,
        "--output-format",
        "json",
        cwd=project,
    )
    turns = [r for r in sandbox.requests()[before:] if r.path.startswith("/v1/messages?")]
    return Run(project, done.result(), turns)


def tool_result_text(request: Any) -> str:
    """The text of the last tool_result the request carries (what the model received)."""
    for message in reversed(request.messages):
        content = message.get("content")
        if message.get("role") != "user" or not isinstance(content, list):
            continue
        for block in reversed(content):
            if block.get("type") == "tool_result":
                inner = block.get("content")
                if isinstance(inner, str):
                    return inner
                return "\n".join(b.get("text", "") for b in inner if b.get("type") == "text")
    return ""


def test_the_model_called_the_mcp_tool(run):
    assert [r.reply for r in run.requests] == ["mcp_call", "after_tool_result"], run.result
    assert run.result.get("permission_denials") == []


def test_the_model_receives_a_preview_and_the_path_not_the_output(run):
    received = tool_result_text(run.requests[1])
    (stored,) = (run.project / ".ctxward" / "offload").glob("*.txt")
    data = stored.read_bytes()
    assert stored.name == hashlib.sha256(data).hexdigest() + ".txt"
    assert data.decode() == "".join(f"row {n:05d}: value\n" for n in range(600))
    assert received.startswith(
        f"[ctxward: this {TOOL} output was 10,200 characters; it is stored whole in "
        f".ctxward/offload/{stored.name} (sha256 {stored.name[:-4]}). The first 1,500 characters "
        "follow; Read that file with offset and limit for the rest.]\nrow 00000: value\n"
    ), received[:600]
    assert "row 00599" not in received and len(received) < 2_000


def test_the_fact_names_the_stored_file(run):
    prefix = f"PostToolUse:{TOOL} hook additional context: "
    facts = [t for t in run.requests[1].texts("system") if t.startswith(prefix)]
    assert len(facts) == 1, run.requests[1].texts("system")
    assert f"the `{TOOL}` output was 10,200 bytes" in facts[0]
    assert "ctxward stored it whole in .ctxward/offload/" in facts[0]
