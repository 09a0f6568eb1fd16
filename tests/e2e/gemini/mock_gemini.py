"""A mock of the Gemini API (v1beta), enough to drive the real Gemini CLI 0.61.0 headless.

Standard library only. Binds 127.0.0.1 and answers what Gemini CLI 0.61.0 calls with API-key
auth and ``GOOGLE_GEMINI_BASE_URL`` pointing here:

- ``POST /v1beta/models/<model>:streamGenerateContent?alt=sse`` (the agent's turns), SSE;
- ``POST /v1beta/models/<model>:generateContent`` (the compression summarizer and its
  verification pass, and any other utility call), one JSON body;
- ``POST /v1beta/models/<model>:countTokens``: ``{"totalTokens": n}``, n = characters / 4;
- ``GET /v1beta/models...``: an empty model list.

Every request is appended to the ``--log`` file as one JSON line: ``{"n", "path", "reply",
"body"}``, where ``reply`` names the rule that answered. First rule that matches wins:

``compression``
    The system instruction asks for a ``<state_snapshot>`` (Gemini CLI's compression prompt).
    The reply is ``<state_snapshot>MOCK-SUMMARY`` + the text of ``--summary-file`` (read at
    request time) + ``</state_snapshot>``.
``json``
    The request asks for a JSON answer (``responseMimeType`` application/json): a utility
    check. Reply ``{"next_speaker": "user", "reasoning": "mock"}``.
``subagent``
    The first user text contains ``E2E_SUBAGENT_TASK``: a sub-agent's own request. Reply with
    a ``complete_task`` call when that tool is offered, else the text ``DONE``.
``after_tool_result``
    The last part is a ``functionResponse``. Reply with a text that quotes it.
``dispatch``
    The last user text contains ``E2E_DISPATCH_BYTES=<n>`` or ``E2E_DISPATCH_PASTE=<n>`` and
    ``invoke_agent`` is offered: reply with an ``invoke_agent`` call (agent ``generalist``)
    whose ``prompt`` is exactly n bytes (UTF-8), starting with ``E2E_SUBAGENT_TASK``: short
    paragraphs for BYTES, one pasted block (which ctxward's C9 offload moves) for PASTE.
``repeat_read``
    A user text contains ``E2E_REPEAT_READ=<n>:<path>`` and ``read_file`` is offered: reply with
    a ``read_file`` call of that path until the contents hold n function responses (a model
    stuck on one failing call), then go on as below.
``read``
    The last user text contains ``E2E_READ=<path>`` and ``read_file`` is offered: reply with a
    ``read_file`` call of that path.
``text``
    Anything else: a plain text reply.

``E2E_PROMPT_TOKENS=<n>`` in the last user text makes the reply report n prompt tokens. Gemini
CLI compresses before a turn when the last reported prompt token count is at least
``model.compressionThreshold`` x the model's token limit, so this forces a compression at the
next turn. Every other reply reports small usage.

Run: ``python3 mock_gemini.py --port 0 --port-file PORT --log requests.jsonl``.
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

SNAPSHOT_MARKER = "<state_snapshot>"
SUBAGENT_MARKER = "E2E_SUBAGENT_TASK"
DISPATCH = re.compile(r"E2E_DISPATCH_(BYTES|PASTE)=(\d+)")
READ = re.compile(r"E2E_READ=(\S+)")
REPEAT = re.compile(r"E2E_REPEAT_READ=(\d+):(\S+)")
PROMPT_TOKENS = re.compile(r"E2E_PROMPT_TOKENS=(\d+)")
PARAGRAPH = "Check one more module and report what it exports.\n\n"
DEFAULT_PROMPT_TOKENS = 1000


class Reply(NamedTuple):
    rule: str  # logged as "reply"
    text: str  # model text ("" for a function call)
    call: dict[str, Any] | None  # {"name", "args"} or None
    prompt_tokens: int  # reported in usageMetadata


def part_texts(content: dict[str, Any]) -> str:
    """The text parts of one content, joined."""
    return "\n".join(
        p["text"] for p in content.get("parts") or [] if isinstance(p.get("text"), str)
    )


def _tool_names(body: dict[str, Any]) -> set[str]:
    names: set[str] = set()
    for tool in body.get("tools") or []:
        for declaration in tool.get("functionDeclarations") or []:
            names.add(str(declaration.get("name", "")))
    return names


def _system_text(body: dict[str, Any]) -> str:
    system = body.get("systemInstruction") or {}
    if isinstance(system, str):
        return system
    return part_texts(system)


def sized_prompt(size: int, shape: str = "BYTES") -> str:
    """A prompt of exactly `size` UTF-8 bytes: the marker, then short paragraphs (BYTES: nothing
    ctxward's C9 offload can move) or one pasted block (PASTE: which C9 moves to a file)."""
    head = f"{SUBAGENT_MARKER}: review the package.\n\n"
    if shape == "PASTE":
        return head + "x" * max(0, size - len(head.encode()))
    body = head + PARAGRAPH * (size // len(PARAGRAPH) + 1)
    return body.encode("utf-8")[:size].decode("utf-8", errors="ignore").ljust(size, ".")


def choose(body: dict[str, Any], summary_file: Path | None) -> Reply:
    contents = [c for c in body.get("contents") or [] if isinstance(c, dict)]
    last = contents[-1] if contents else {}
    last_text = part_texts(last) if last.get("role") == "user" else ""
    match = PROMPT_TOKENS.search(last_text)
    tokens = int(match.group(1)) if match else DEFAULT_PROMPT_TOKENS
    tools = _tool_names(body)
    config = body.get("generationConfig") or {}
    if SNAPSHOT_MARKER in _system_text(body) or "state_snapshot" in _system_text(body):
        extra = ""
        if summary_file is not None and summary_file.exists():
            extra = summary_file.read_text(encoding="utf-8")
        return Reply(
            "compression", f"{SNAPSHOT_MARKER}MOCK-SUMMARY\n{extra}</state_snapshot>", None, 100
        )
    if config.get("responseMimeType") == "application/json":
        return Reply("json", json.dumps({"next_speaker": "user", "reasoning": "mock"}), None, 100)
    first_user = next((part_texts(c) for c in contents if c.get("role") == "user"), "")
    if SUBAGENT_MARKER in first_user:
        if "complete_task" in tools:
            call = {"name": "complete_task", "args": {"result": {"response": "DONE"}}}
            return Reply("subagent", "", call, tokens)
        return Reply("subagent", "DONE", None, tokens)
    repeat = next((m for c in contents if (m := REPEAT.search(part_texts(c)))), None)
    reads = [p for c in contents for p in c.get("parts") or [] if "functionResponse" in p]
    if repeat and "read_file" in tools and len(reads) < int(repeat.group(1)):
        call = {"name": "read_file", "args": {"file_path": repeat.group(2)}}
        return Reply("repeat_read", "", call, tokens)
    parts = last.get("parts") or []
    responses = [
        p["functionResponse"] for p in parts if isinstance(p.get("functionResponse"), dict)
    ]
    if responses:
        quoted = json.dumps(responses[-1].get("response"), ensure_ascii=False)[:2000]
        return Reply("after_tool_result", f"TOOL RESULT SEEN: {quoted}", None, tokens)
    dispatch = DISPATCH.search(last_text)
    if dispatch and "invoke_agent" in tools:
        prompt = sized_prompt(int(dispatch.group(2)), dispatch.group(1))
        args = {"agent_name": "generalist", "prompt": prompt}
        return Reply("dispatch", "", {"name": "invoke_agent", "args": args}, tokens)
    read = READ.search(last_text)
    if read and "read_file" in tools:
        return Reply(
            "read", "", {"name": "read_file", "args": {"file_path": read.group(1)}}, tokens
        )
    return Reply("text", "MOCK-REPLY ok", None, tokens)


def response_body(reply: Reply) -> dict[str, Any]:
    part: dict[str, Any] = {"functionCall": reply.call} if reply.call else {"text": reply.text}
    return {
        "candidates": [
            {"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}
        ],
        "usageMetadata": {
            "promptTokenCount": reply.prompt_tokens,
            "candidatesTokenCount": 10,
            "totalTokenCount": reply.prompt_tokens + 10,
        },
        "modelVersion": "mock",
    }


class Handler(BaseHTTPRequestHandler):
    server_version = "mock-gemini"
    counter = itertools.count(1)
    lock = threading.Lock()
    log_path: Path
    summary_file: Path | None = None

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _log(self, reply: str, body: Any) -> None:
        with self.lock:
            entry = {"n": next(self.counter), "path": self.path, "reply": reply, "body": body}
            with self.log_path.open("a", encoding="utf-8") as log:
                log.write(json.dumps(entry) + "\n")

    def do_GET(self) -> None:
        self._log("models", None)
        self._send(200, {"models": []})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {"unparsed": raw.decode("utf-8", errors="replace")}
        if ":countTokens" in self.path:
            self._log("count_tokens", body)
            self._send(200, {"totalTokens": max(1, len(raw) // 4)})
            return
        reply = choose(body if isinstance(body, dict) else {}, self.summary_file)
        self._log(reply.rule, body)
        payload = response_body(reply)
        if ":streamGenerateContent" not in self.path:
            self._send(200, payload)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        self.wfile.write(f"data: {json.dumps(payload)}\r\n\r\n".encode())
        self.wfile.flush()
        self.close_connection = True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--port-file", type=Path, required=True)
    parser.add_argument("--log", type=Path, required=True)
    parser.add_argument("--summary-file", type=Path, default=None)
    args = parser.parse_args()
    Handler.log_path = args.log
    Handler.summary_file = args.summary_file
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    tmp = args.port_file.with_suffix(".tmp")
    tmp.write_text(str(server.server_address[1]))
    os.replace(tmp, args.port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
