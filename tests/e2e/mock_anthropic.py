"""A mock of the Anthropic Messages API, enough to drive the real Claude Code CLI headless.

Standard library only. Binds 127.0.0.1, answers ``POST /v1/messages`` (SSE, or one JSON body
when the request says ``"stream": false``) and ``HEAD /``, and appends every request to the
``--log`` file as one JSON line: ``{"n", "path", "reply", "body"}``, where ``reply`` names the
rule below that produced the answer.

The reply is chosen from the conversation, first rule that matches wins:

``compact_summary``
    The last user message contains the CLI's compaction prompt. The reply is
    ``<analysis>…</analysis><summary>MOCK_SUMMARY …</summary>``; the text of ``--summary-file``,
    read at request time, goes inside the summary; ``E2E_COPY_RULES`` in it is replaced by the
    rule lines (``  - <rule>``) of the prompt's ``Additional Instructions:``, as ``- <rule>``.
``subagent``
    The first user message contains ``E2E_SUBAGENT_TASK``, which every prompt this mock
    dispatches starts with: a sub-agent's own request. Reply ``DONE``.
``repeat_bash``
    The first user message contains ``E2E_REPEAT_BASH=<n>`` and the conversation has fewer than
    n ``Bash`` tool_use blocks so far: reply with the same ``Bash`` call again (REPEAT_COMMAND,
    which fails), a stuck model's loop. Once n calls were made the next rule answers.
``silent_read``
    The first user message contains ``E2E_SILENT_READ=<n>:<absolute path>`` and the conversation
    has fewer than n ``Read`` tool_use blocks so far: reply with a ``Read`` of that file and no
    text, a model working silently. The first reads the whole file; each later one reads one
    line (offset k, limit 1: no two calls alike). Once n reads were made the next rule answers.
``mcp_call``
    The first user message contains ``E2E_MCP_CALL=<tool>`` and the conversation has no
    tool_use yet: reply with a call of that tool (e.g. ``mcp__e2e__dump``), no text.
``after_tool_result``
    The last user message carries a ``tool_result``. Reply with a text that quotes it.
``dispatch``
    The last user message contains ``E2E_DISPATCH_BYTES=<n>``. Reply with an ``Agent`` tool_use
    whose prompt is exactly n bytes (UTF-8) and runs in the foreground. The prompt is made of
    short paragraphs (under 1 KB, blank lines between), which no offload can move to a file;
    ``E2E_DISPATCH_SHAPE=paste`` makes it the first line, a blank line, then one pasted chunk;
    ``E2E_DISPATCH_SHAPE=eyj`` makes it 300,000 bytes of ``eyJ`` paragraphs, then ``eyJ``
    repeated as one chunk (what made the scrubber's JWT rule backtrack as C9 moved it).
``text``
    Anything else: a plain text reply.

``E2E_INPUT_TOKENS=<n>`` in the last user message makes the reply report n input tokens (to
push the CLI into auto-compaction); otherwise usage is small. In an ``E2E_SILENT_READ`` session
the first message's ``E2E_INPUT_TOKENS=<n>`` holds for every reply, plus
``E2E_TOKENS_PER_CALL=<m>`` for each Read made so far (a context that grows call by call).

Run: ``python3 mock_anthropic.py --port 0 --port-file PORT --log requests.jsonl``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, NamedTuple

COMPACT_MARKER = "Your task is to create a detailed summary of the conversation so far"
COPY_RULES = "E2E_COPY_RULES"  # in the summary file: replaced by the rules PreCompact listed
SUBAGENT_MARKER = "E2E_SUBAGENT_TASK"
DISPATCH_BYTES = re.compile(r"E2E_DISPATCH_BYTES=(\d+)")
INPUT_TOKENS = re.compile(r"E2E_INPUT_TOKENS=(\d+)")
PASTE_SHAPE = "E2E_DISPATCH_SHAPE=paste"
EYJ_SHAPE = "E2E_DISPATCH_SHAPE=eyj"
REPEAT_BASH = re.compile(r"E2E_REPEAT_BASH=(\d+)")
SILENT_READ = re.compile(r"E2E_SILENT_READ=(\d+):(/\S+)")
TOKENS_PER_CALL = re.compile(r"E2E_TOKENS_PER_CALL=(\d+)")
MCP_CALL = re.compile(r"E2E_MCP_CALL=(mcp__\w+)")
# Fails (exit 2, file not found) and is a read-only command Claude Code runs without asking.
REPEAT_COMMAND = "ls missing-ctxward-e2e"
DEFAULT_INPUT_TOKENS = 1000


class Reply(NamedTuple):
    rule: str  # logged as "reply"
    blocks: list[dict[str, Any]]  # assistant content blocks
    input_tokens: int  # reported in usage


def _text_of(message: dict[str, Any]) -> str:
    content = message.get("content", "")
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") for b in content if b.get("type") == "text")


def _prompt_of(message: dict[str, Any]) -> str:
    """The user's own words: the last text block that is not a CLI-added <system-reminder>."""
    content = message.get("content", "")
    if isinstance(content, str):
        return content
    typed = [b.get("text", "") for b in content if b.get("type") == "text"]
    own = [t for t in typed if not t.lstrip().startswith("<system-reminder>")]
    return own[-1] if own else ""


def _tool_results(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content", "")
    if isinstance(content, str):
        return []
    return [b for b in content if b.get("type") == "tool_result"]


def _result_text(block: dict[str, Any]) -> str:
    content = block.get("content", "")
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") for b in content if b.get("type") == "text")


def _text(text: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": text}]


def choose_reply(body: dict[str, Any], summary: str, ids: itertools.count[int]) -> Reply:
    """Return the reply for one request body (see the module docstring for the rules)."""
    users = [m for m in body.get("messages", []) if m.get("role") == "user"]
    first = _text_of(users[0]) if users else ""
    last = users[-1] if users else {}
    last_text = _text_of(last)
    prompt = _prompt_of(last)
    tokens_match = INPUT_TOKENS.search(prompt)
    tokens = int(tokens_match.group(1)) if tokens_match else DEFAULT_INPUT_TOKENS
    if (silent := SILENT_READ.search(first)) and not tokens_match:  # a growing context
        base, per = INPUT_TOKENS.search(first), TOKENS_PER_CALL.search(first)
        tokens = int(base.group(1)) if base else DEFAULT_INPUT_TOKENS
        tokens += int(per.group(1)) * _tool_calls(body, "Read") if per else 0

    if COMPACT_MARKER in last_text:
        if COPY_RULES in summary:  # a faithful summarizer: every rule the instructions list
            _, _, instructions = last_text.partition("Additional Instructions:")
            listed = [line.strip() for line in instructions.splitlines() if line.startswith("  - ")]
            summary = summary.replace(COPY_RULES, "\n".join(listed))
        summary_text = f"MOCK_SUMMARY\n{summary}".rstrip()
        reply = f"<analysis>mock analysis</analysis>\n<summary>{summary_text}</summary>"
        return Reply("compact_summary", _text(reply), DEFAULT_INPUT_TOKENS)
    if SUBAGENT_MARKER in first:
        return Reply("subagent", _text("DONE"), tokens)
    if (repeat := REPEAT_BASH.search(first)) and _bash_calls(body) < int(repeat.group(1)):
        call = {
            "type": "tool_use",
            "id": f"toolu_mock{next(ids):06d}",
            "name": "Bash",
            "input": {"command": REPEAT_COMMAND, "description": "List the e2e folder"},
        }
        return Reply("repeat_bash", [call], tokens)
    if silent and (done := _tool_calls(body, "Read")) < int(silent.group(1)):
        params: dict[str, Any] = {"file_path": silent.group(2)}
        if done:
            params.update(offset=done, limit=1)
        call = {"type": "tool_use", "id": f"toolu_mock{next(ids):06d}", "name": "Read"}
        return Reply("silent_read", [{**call, "input": params}], tokens)
    if (mcp := MCP_CALL.search(first)) and not _tool_results(last):
        call = {"type": "tool_use", "id": f"toolu_mock{next(ids):06d}", "name": mcp.group(1)}
        return Reply("mcp_call", [{**call, "input": {"table": "rows"}}], tokens)
    if results := _tool_results(last):
        result = results[-1]
        quoted = _result_text(result)[:500]
        text = (
            f"MOCK_ACK_TOOL_RESULT: {result.get('tool_use_id')} "
            f"is_error={bool(result.get('is_error'))} content={quoted!r}"
        )
        return Reply("after_tool_result", _text(text), tokens)
    if dispatch := DISPATCH_BYTES.search(prompt):
        size = int(dispatch.group(1))
        if EYJ_SHAPE in prompt:
            task = eyj_prompt(size)
        else:
            task = dispatch_prompt(size, paste=PASTE_SHAPE in prompt)
        call = {
            "type": "tool_use",
            "id": f"toolu_mock{next(ids):06d}",
            "name": "Agent",
            "input": {
                "description": "e2e dispatch",
                "prompt": task,
                "subagent_type": "general-purpose",
                "run_in_background": False,
            },
        }
        return Reply("dispatch", [call], tokens)
    return Reply("text", _text(f"MOCK_REPLY to: {prompt[:200]!r}"), tokens)


def _bash_calls(body: dict[str, Any]) -> int:
    """How many Bash tool_use blocks the assistant turns of this conversation hold."""
    return _tool_calls(body, "Bash")


def _tool_calls(body: dict[str, Any], name: str) -> int:
    """How many `name` tool_use blocks the assistant turns of this conversation hold."""
    count = 0
    for message in body.get("messages", []):
        content = message.get("content") if message.get("role") == "assistant" else None
        if isinstance(content, list):
            count += sum(
                1 for b in content if b.get("type") == "tool_use" and b.get("name") == name
            )
    return count


def dispatch_prompt(size: int, *, paste: bool) -> str:
    """An ASCII prompt of exactly `size` bytes that starts with the sub-agent marker."""
    head = f"{SUBAGENT_MARKER}: reply DONE.\n\n"
    if paste:
        return head + "x" * max(0, size - len(head))
    paragraph = "filler line for a large dispatch prompt, lorem ipsum dolor sit amet.\n" * 12
    body = (paragraph + "\n") * (size // (len(paragraph) + 1) + 1)
    return (head + body)[:size]


def eyj_prompt(size: int) -> str:
    """`size` bytes: the marker, 300,000 bytes of `eyJ` paragraphs, then one `eyJ` chunk."""
    head = f"{SUBAGENT_MARKER}: reply DONE.\n\n"
    kept = ("eyJ" * 300 + "\n\n") * (300_000 // 902)
    return (head + kept + "eyJ" * size)[:size]


def _stop_reason(reply: Reply) -> str:
    return "tool_use" if any(b["type"] == "tool_use" for b in reply.blocks) else "end_turn"


def _usage(input_tokens: int) -> dict[str, Any]:
    return {
        "input_tokens": input_tokens,
        "output_tokens": 20,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "service_tier": "standard",
    }


def sse_events(model: str, message_id: str, reply: Reply) -> list[tuple[str, dict[str, Any]]]:
    """Return the SSE (event, data) pairs that stream one reply."""
    stop_reason = _stop_reason(reply)
    message = {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": _usage(reply.input_tokens),
    }
    events: list[tuple[str, dict[str, Any]]] = [("message_start", {"message": message})]
    for index, block in enumerate(reply.blocks):
        if block["type"] == "text":
            start = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            start = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        events += [
            ("content_block_start", {"index": index, "content_block": start}),
            ("content_block_delta", {"index": index, "delta": delta}),
            ("content_block_stop", {"index": index}),
        ]
    events += [
        (
            "message_delta",
            {
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": _usage(reply.input_tokens),
            },
        ),
        ("message_stop", {}),
    ]
    return [(name, {"type": name, **data}) for name, data in events]


class MockServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, port: int, log: Path, summary_file: Path | None) -> None:
        super().__init__(("127.0.0.1", port), Handler)
        self.log = log
        self.summary_file = summary_file
        self.lock = threading.Lock()
        self.requests = itertools.count()
        self.ids = itertools.count(1)

    def summary(self) -> str:
        if self.summary_file is None or not self.summary_file.exists():
            return ""
        return self.summary_file.read_text(encoding="utf-8")

    def record(self, path: str, reply: str, body: Any) -> None:
        with self.lock:
            entry = {"n": next(self.requests), "path": path, "reply": reply, "body": body}
            with self.log.open("a", encoding="utf-8") as log:
                log.write(json.dumps(entry) + "\n")


class Handler(BaseHTTPRequestHandler):
    server: MockServer

    def log_message(self, format: str, *args: Any) -> None:
        """Keep stderr quiet: the request log is the record."""

    def do_HEAD(self) -> None:
        self.server.record(self.path, "head", None)
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self) -> None:
        self._not_found(None)

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path.split("?")[0] != "/v1/messages":
            self._not_found(raw.decode("utf-8", "replace"))
            return
        body = json.loads(raw)
        with self.server.lock:
            reply = choose_reply(body, self.server.summary(), self.server.ids)
            message_id = f"msg_mock{next(self.server.ids):06d}"
        self.server.record(self.path, reply.rule, body)
        model = body.get("model", "mock-model")
        if body.get("stream", False):
            self._send_sse(sse_events(model, message_id, reply))
        else:
            self._send_json(200, _whole_message(model, message_id, reply))

    def _not_found(self, body: str | None) -> None:
        self.server.record(self.path, "not_found", body)
        self._send_json(404, {"type": "error", "error": {"type": "not_found_error"}})

    def _send_json(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send_sse(self, events: list[tuple[str, dict[str, Any]]]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        for name, data in events:
            self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
        self.wfile.flush()


def _whole_message(model: str, message_id: str, reply: Reply) -> dict[str, Any]:
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": reply.blocks,
        "stop_reason": _stop_reason(reply),
        "stop_sequence": None,
        "usage": _usage(reply.input_tokens),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--port-file", type=Path, required=True, help="where to write the port")
    parser.add_argument("--log", type=Path, required=True, help="JSONL request log (appended)")
    parser.add_argument("--summary-file", type=Path, help="text put inside <summary>")
    args = parser.parse_args(argv)
    with MockServer(args.port, args.log, args.summary_file) as server:
        tmp = args.port_file.with_name(args.port_file.name + ".tmp")
        tmp.write_text(str(server.server_address[1]), encoding="utf-8")
        os.replace(tmp, args.port_file)  # readers never see a half-written port
        server.serve_forever()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
