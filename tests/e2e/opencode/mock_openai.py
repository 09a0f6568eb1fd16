"""A mock of the OpenAI chat-completions API, enough to drive the real OpenCode CLI headless.

Standard library only. Binds 127.0.0.1, answers ``GET /v1/models`` and
``POST /v1/chat/completions`` (SSE when the request says ``"stream": true``, which OpenCode
always does; one JSON body otherwise), and appends every request to the ``--log`` file as one
JSON line: ``{"n", "path", "reply", "body"}``, where ``reply`` names the rule that answered.

The reply is chosen from the request itself (OpenCode's requests are not numbered), first rule
that matches wins:

``title``
    No tools offered and the system prompt is OpenCode's title generator. Reply a short title.
``compaction``
    No tools offered otherwise: OpenCode's summarizer. The reply is ``MOCK-SUMMARY`` followed by
    the text of ``--summary-file``, read at request time; ``E2E_COPY_RULES`` in it is replaced
    by the rule lines (``  - <rule>``) of ctxward's instructions in the last user message, as
    ``- <rule>`` (a faithful summarizer).
``subagent``
    The first user message contains ``E2E_SUBAGENT_TASK``, which every prompt this mock
    dispatches starts with: a sub-agent's own request. Reply ``DONE``.
``after_tool_result``
    The last message is a ``tool`` message. Reply with a text that quotes it.
``dispatch``
    The last message is the user's, contains ``E2E_DISPATCH_BYTES=<n>`` or
    ``E2E_DISPATCH_PASTE=<n>``, and ``task`` is offered. Reply with a ``task`` tool call whose
    prompt is exactly n bytes (UTF-8): short paragraphs (nothing ctxward's C9 offload can move)
    for BYTES, one pasted block (which C9 moves to a file) for PASTE. Its arguments are streamed
    in four deltas, as real providers do.
``read``
    The last message is the user's, contains ``E2E_READ=<path>``, and ``read`` is offered.
    Reply with a ``read`` tool call of that file (an ordinary tool, not a dispatch).
``text``
    Anything else: a plain text reply.

``E2E_PROMPT_TOKENS=<n>`` in the last message, when that message is the user's, makes the
reply report n prompt tokens: OpenCode compares the provider's reported usage with the model's
context limit, so this forces an auto-compaction after that step. Every other reply reports
small usage, so the compaction does not repeat.

Run: ``python3 mock_openai.py --port 0 --port-file PORT --log requests.jsonl``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, NamedTuple

TITLE_MARKER = "title generator"
COPY_RULES = "E2E_COPY_RULES"  # in the summary file: replaced by the rules ctxward listed
INSTRUCTIONS_MARKER = "COMPACTION RESILIENCE: this session has active invariants"
SUBAGENT_MARKER = "E2E_SUBAGENT_TASK"
DISPATCH = re.compile(r"E2E_DISPATCH_(BYTES|PASTE)=(\d+)")
READ = re.compile(r"E2E_READ=(\S+)")
PARAGRAPH = "Check one more module and report what it exports.\n\n"
PROMPT_TOKENS = re.compile(r"E2E_PROMPT_TOKENS=(\d+)")
DEFAULT_PROMPT_TOKENS = 1000


class Reply(NamedTuple):
    rule: str  # logged as "reply"
    text: str  # assistant text ("" for a tool call)
    tool_call: dict[str, Any] | None  # {"id", "name", "arguments"} or None
    prompt_tokens: int  # reported in usage


def text_of(message: dict[str, Any]) -> str:
    """The text of one chat message (string content, or its text parts joined)."""
    content = message.get("content") or ""
    if isinstance(content, str):
        return content
    return "\n".join(p.get("text", "") for p in content if p.get("type") == "text")


def _tool_names(body: dict[str, Any]) -> set[str]:
    return {t.get("function", {}).get("name", "") for t in body.get("tools") or []}


def choose_reply(body: dict[str, Any], summary: str, ids: itertools.count[int]) -> Reply:
    """Return the reply for one request body (see the module docstring for the rules)."""
    messages = body.get("messages", [])
    system = "\n".join(text_of(m) for m in messages if m.get("role") == "system")
    users = [m for m in messages if m.get("role") == "user"]
    first = text_of(users[0]) if users else ""
    last = messages[-1] if messages else {}
    last_text = text_of(last) if last.get("role") == "user" else ""
    tokens_match = PROMPT_TOKENS.search(last_text)
    tokens = int(tokens_match.group(1)) if tokens_match else DEFAULT_PROMPT_TOKENS
    tools = _tool_names(body)

    if not tools and TITLE_MARKER in system:
        return Reply("title", "E2E session", None, DEFAULT_PROMPT_TOKENS)
    if not tools:
        if COPY_RULES in summary:  # a faithful summarizer: every rule ctxward's context lists
            _, _, listed = text_of(users[-1] if users else {}).partition(INSTRUCTIONS_MARKER)
            rules = [line.strip() for line in listed.splitlines() if line.startswith("  - ")]
            summary = summary.replace(COPY_RULES, "\n".join(rules))
        return Reply("compaction", f"MOCK-SUMMARY\n{summary}".rstrip(), None, DEFAULT_PROMPT_TOKENS)
    if SUBAGENT_MARKER in first:
        return Reply("subagent", "DONE", None, DEFAULT_PROMPT_TOKENS)
    if last.get("role") == "tool":
        quoted = text_of(last)[:500]
        text = f"MOCK-ACK-TOOL-RESULT: {last.get('tool_call_id')} content={quoted!r}"
        return Reply("after_tool_result", text, None, DEFAULT_PROMPT_TOKENS)
    if (dispatch := DISPATCH.search(last_text)) and "task" in tools:
        return Reply("dispatch", "", _task_call(dispatch[1], int(dispatch[2]), ids), tokens)
    if (read := READ.search(last_text)) and "read" in tools:
        call = {
            "id": f"call_mock{next(ids):06d}",
            "name": "read",
            "arguments": {"filePath": read[1]},
        }
        return Reply("read", "", call, tokens)
    return Reply("text", f"MOCK-REPLY to: {last_text[:200]!r}", None, tokens)


def _task_call(shape: str, size: int, ids: itertools.count[int]) -> dict[str, Any]:
    """A `task` call whose prompt is `size` bytes: short paragraphs (BYTES) or one block (PASTE)."""
    if shape == "PASTE":
        head = f"{SUBAGENT_MARKER}: reply DONE.\n"
        prompt = head + "x" * max(0, size - len(head.encode()))
    else:
        head = f"{SUBAGENT_MARKER}: reply DONE.\n\n"
        body = PARAGRAPH * (max(0, size - len(head)) // len(PARAGRAPH) + 1)
        prompt = head + body[: max(0, size - len(head))]
    arguments = {"description": "e2e dispatch", "prompt": prompt, "subagent_type": "general"}
    return {"id": f"call_mock{next(ids):06d}", "name": "task", "arguments": arguments}


def _usage(reply: Reply) -> dict[str, int]:
    return {
        "prompt_tokens": reply.prompt_tokens,
        "completion_tokens": 20,
        "total_tokens": reply.prompt_tokens + 20,
    }


def _chunk(model: str, cid: str, delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
    return {
        "id": cid,
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def stream_chunks(model: str, cid: str, reply: Reply) -> list[dict[str, Any]]:
    """Return the SSE data objects that stream one reply (before ``data: [DONE]``)."""
    chunks = [_chunk(model, cid, {"role": "assistant", "content": ""}, None)]
    if reply.tool_call is None:
        chunks.append(_chunk(model, cid, {"content": reply.text}, None))
        finish = "stop"
    else:
        call = reply.tool_call
        arguments = json.dumps(call["arguments"])
        step = max(1, -(-len(arguments) // 4))
        start = {
            "index": 0,
            "id": call["id"],
            "type": "function",
            "function": {"name": call["name"], "arguments": ""},
        }
        chunks.append(_chunk(model, cid, {"tool_calls": [start]}, None))
        for at in range(0, len(arguments), step):
            part = {"index": 0, "function": {"arguments": arguments[at : at + step]}}
            chunks.append(_chunk(model, cid, {"tool_calls": [part]}, None))
        finish = "tool_calls"
    chunks.append(_chunk(model, cid, {}, finish))
    usage = {**_chunk(model, cid, {}, None), "choices": [], "usage": _usage(reply)}
    chunks.append(usage)
    return chunks


def whole_completion(model: str, cid: str, reply: Reply) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    finish = "stop"
    if reply.tool_call is not None:
        call = reply.tool_call
        function = {"name": call["name"], "arguments": json.dumps(call["arguments"])}
        message["tool_calls"] = [{"id": call["id"], "type": "function", "function": function}]
        finish = "tool_calls"
    return {
        "id": cid,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": _usage(reply),
    }


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
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        """Keep stderr quiet: the request log is the record."""

    def do_GET(self) -> None:
        if self.path.split("?")[0] == "/v1/models":
            self.server.record(self.path, "models", None)
            model = {"id": "mock-model", "object": "model", "owned_by": "mock"}
            self._send_json(200, {"object": "list", "data": [model]})
        else:
            self._not_found(None)

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path.split("?")[0] != "/v1/chat/completions":
            self._not_found(raw.decode("utf-8", "replace"))
            return
        body = json.loads(raw)
        with self.server.lock:
            reply = choose_reply(body, self.server.summary(), self.server.ids)
            cid = f"chatcmpl-mock{next(self.server.ids):06d}"
        self.server.record(self.path, reply.rule, body)
        model = body.get("model", "mock-model")
        if body.get("stream", False):
            self._send_sse(stream_chunks(model, cid, reply))
        else:
            self._send_json(200, whole_completion(model, cid, reply))

    def _not_found(self, body: str | None) -> None:
        self.server.record(self.path, "not_found", body)
        self._send_json(404, {"error": {"message": "not found", "type": "not_found"}})

    def _send_json(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send_sse(self, chunks: list[dict[str, Any]]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        for chunk in chunks:
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--port-file", type=Path, required=True, help="where to write the port")
    parser.add_argument("--log", type=Path, required=True, help="JSONL request log (appended)")
    parser.add_argument("--summary-file", type=Path, help="text the compaction reply carries")
    args = parser.parse_args(argv)
    with MockServer(args.port, args.log, args.summary_file) as server:
        tmp = args.port_file.with_name(args.port_file.name + ".tmp")
        tmp.write_text(str(server.server_address[1]), encoding="utf-8")
        os.replace(tmp, args.port_file)  # readers never see a half-written port
        server.serve_forever()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
