#!/usr/bin/env python3
"""Throughput of `ctxward audit` on a generated 200 MB Claude Code transcript.

Reports MB/s and peak RSS of the audit, and its time as a ratio to a bare
`for line in f: json.loads(line)` loop over the same file. Targets: ratio ≤ 1.5, peak RSS
≤ 100 MB. The transcript is generated into a temporary folder (removed afterwards) in the
record format of Claude Code 2.1.332: assistant tool calls with usage and requestId, tool
results of realistic sizes, attachments, prompt snapshots, api-request bookkeeping, progress
lines, and an auto-compaction whenever the context passes 160K tokens.

    .venv/bin/python bench/audit_throughput.py [--mb 200] [--keep DIR] [--runs 3]

Each measurement runs in a fresh subprocess, so peak RSS (ru_maxrss) is that run's own; the
two loops alternate, and the best of --runs of each is reported.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LIB = Path(__file__).resolve().parent.parent / "lib"
SESSION = "b3c1e0d2-5f7a-4c1e-9d2b-0a1b2c3d4e5f"
CWD = "/home/dev/project"
_FILES = [f"src/pkg/module_{i:03d}.py" for i in range(180)] + ["README.md", "docs/design.md"]
_COMMANDS = [
    "pytest -q",
    "git status --short",
    "git diff",
    "ruff check lib tests",
    "peaks memory reindex --json",
    "npm test -- --silent",
    "ls -la src/pkg",
    "python -m mypy lib",
]


def _dump(record: dict[str, object]) -> str:
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"


def _envelope(kind: str, uuid: int, parent: int | None, stamp: str) -> dict[str, object]:
    return {
        "parentUuid": None if parent is None else f"u-{parent:08d}",
        "isSidechain": False,
        "type": kind,
        "uuid": f"u-{uuid:08d}",
        "timestamp": stamp,
        "userType": "external",
        "entrypoint": "sdk-cli",
        "cwd": CWD,
        "sessionId": SESSION,
        "version": "2.1.332",
        "gitBranch": "main",
    }


def _text(rng: random.Random, size: int) -> str:
    words = ("def", "return", "self", "value", "import", "class", "for", "in", "if", "None")
    out: list[str] = []
    length = 0
    while length < size:
        line = " ".join(rng.choice(words) for _ in range(rng.randint(3, 14)))
        out.append(line)
        length += len(line) + 1
    return "\n".join(out)[:size]


def generate(path: Path, target_bytes: int, seed: int = 7) -> dict[str, int]:
    """Write a transcript of about `target_bytes` to `path`; return what it contains."""
    rng = random.Random(seed)
    counts = {"lines": 0, "requests": 0, "tool_calls": 0, "compactions": 0}
    uuid = 0
    context = 20_000
    second = 0
    snapshot = _text(rng, 40_000)
    blob = _text(rng, 6_000)
    with open(path, "w", encoding="utf-8") as out:

        def write(record: dict[str, object]) -> None:
            out.write(_dump(record))
            counts["lines"] += 1

        while out.tell() < target_bytes:
            second += 7
            hours, minutes = (second // 3600) % 24, (second // 60) % 60
            stamp = f"2026-11-30T{hours:02d}:{minutes:02d}:{second % 60:02d}.000Z"
            uuid += 1
            if rng.random() < 0.08:
                prompt = _envelope("user", uuid, uuid - 1, stamp)
                prompt["message"] = {"role": "user", "content": _text(rng, rng.randint(40, 600))}
                write(prompt)
                uuid += 1
                snap = _envelope("attachment", uuid, uuid - 1, stamp)
                snap["attachment"] = {"type": "prompt_snapshot", "systemPrompt": [snapshot]}
                write(snap)
                write({"type": "last-prompt", "lastPrompt": "x", "sessionId": SESSION})
            write(
                {
                    "type": "api-request-blob",
                    "sessionId": SESSION,
                    "hash": f"{uuid:064x}",
                    "message": {"role": "user", "content": [{"type": "text", "text": blob}]},
                }
            )
            write({"type": "api-request", "sessionId": SESSION, "id": f"r-{uuid}", "keep": 2})
            request = f"req_{uuid:010d}"
            counts["requests"] += 1
            calls = rng.choice((1, 1, 1, 2, 3))
            uses = []
            for _ in range(calls):
                uuid += 1
                tool = rng.choices(
                    ("Read", "Bash", "Grep", "Edit", "Agent"), weights=(45, 30, 12, 10, 3)
                )[0]
                if tool == "Read":
                    params: dict[str, object] = {"file_path": f"{CWD}/{rng.choice(_FILES)}"}
                elif tool == "Bash":
                    params = {"command": rng.choice(_COMMANDS), "description": "run"}
                elif tool == "Grep":
                    params = {
                        "pattern": rng.choice(("TODO", "def main", "import os")),
                        "path": "src",
                    }
                elif tool == "Edit":
                    params = {
                        "file_path": f"{CWD}/{rng.choice(_FILES)}",
                        "old_string": _text(rng, 200),
                        "new_string": _text(rng, 260),
                    }
                else:
                    params = {
                        "description": "review",
                        "prompt": _text(rng, 3000),
                        "subagent_type": rng.choice(("Explore", "general-purpose")),
                    }
                ident = f"toolu_{uuid:012d}"
                uses.append((ident, tool))
                record = _envelope("assistant", uuid, uuid - 1, stamp)
                record["requestId"] = request
                record["message"] = {
                    "id": f"msg_{request}",
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-opus-5-5",
                    "content": [{"type": "tool_use", "id": ident, "name": tool, "input": params}],
                    "stop_reason": "tool_use",
                    "usage": {
                        "input_tokens": 3,
                        "cache_creation_input_tokens": rng.randint(100, 4000),
                        "cache_read_input_tokens": context,
                        "output_tokens": rng.randint(20, 900),
                    },
                }
                write(record)
                counts["tool_calls"] += 1
            for ident, tool in uses:
                uuid += 1
                size = {
                    "Read": rng.choice((800, 3_000, 9_000, 24_000)),
                    "Bash": rng.choice((200, 1_500, 6_000, 40_000)),
                    "Grep": rng.choice((300, 2_000)),
                    "Edit": 180,
                    "Agent": rng.choice((1_200, 4_000, 9_000)),
                }[tool]
                body = _text(rng, size)
                result = _envelope("user", uuid, uuid - 1, stamp)
                result["message"] = {
                    "role": "user",
                    "content": [{"tool_use_id": ident, "type": "tool_result", "content": body}],
                }
                result["toolUseResult"] = {
                    "stdout": body[:2000],
                    "stderr": "",
                    "interrupted": False,
                }
                result["sourceToolAssistantUUID"] = f"u-{uuid - 1:08d}"
                write(result)
                context += size // 4
                if rng.random() < 0.3:
                    write(
                        {
                            "type": "progress",
                            "data": {"type": "hook_progress", "hookEvent": "PostToolUse"},
                            "toolUseID": ident,
                            "sessionId": SESSION,
                        }
                    )
            if rng.random() < 0.15:
                uuid += 1
                hook = _envelope("attachment", uuid, uuid - 1, stamp)
                hook["attachment"] = {
                    "type": "hook_additional_context",
                    "content": ["note"],
                    "hookName": "PostToolUse",
                }
                hook["rendered"] = [
                    {"content": "<system-reminder>\n" + _text(rng, 400) + "\n</system-reminder>"}
                ]
                write(hook)
            if context > 160_000:
                uuid += 1
                boundary = _envelope("system", uuid, None, stamp)
                boundary.update(
                    subtype="compact_boundary",
                    content="Conversation compacted",
                    compactMetadata={"trigger": "auto", "preTokens": context, "postTokens": 9_000},
                )
                write(boundary)
                uuid += 1
                summary = _envelope("user", uuid, uuid - 1, stamp)
                summary["isCompactSummary"] = True
                summary["message"] = {"role": "user", "content": _text(rng, 8_000)}
                write(summary)
                counts["compactions"] += 1
                context = 20_000
    counts["bytes"] = path.stat().st_size
    return counts


_BARE = """
import json, resource, sys, time
started = time.perf_counter()
with open(sys.argv[1]) as f:
    for line in f:
        json.loads(line)
seconds = time.perf_counter() - started
rss_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"seconds": seconds, "rss_kb": rss_kb}))
"""

_AUDIT = """
import json, resource, sys, time
sys.path.insert(0, sys.argv[2])
from pathlib import Path
from ctxward.transcript.audit import audit
started = time.perf_counter()
result = audit(Path(sys.argv[1]), top=10)
seconds = time.perf_counter() - started
print(json.dumps({"seconds": seconds, "rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                  "requests": len(result.requests), "segments": len(result.segments),
                  "malformed": result.stats.malformed, "top": result.top[0]}))
"""


def _measure(script: str, path: Path) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", script, str(path), str(LIB)],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    result: dict[str, object] = json.loads(done.stdout)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=200, help="size of the generated transcript")
    parser.add_argument("--runs", type=int, default=5, help="best of N runs for each loop")
    parser.add_argument("--keep", type=Path, help="write the transcript here and keep it")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="ctxward-bench-") as folder:
        path = (args.keep or Path(folder)) / "bench-transcript.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        started = time.perf_counter()
        counts = generate(path, args.mb * 1_000_000)
        print(
            f"generated {counts['bytes'] / 1e6:.1f} MB in {time.perf_counter() - started:.1f}s: "
            f"{counts['lines']:,} lines, {counts['requests']:,} requests, "
            f"{counts['tool_calls']:,} tool calls, {counts['compactions']} compactions"
        )
        bares, audits = [], []
        for _ in range(args.runs):  # interleaved, so that a busy machine slows both alike
            bares.append(_measure(_BARE, path))
            audits.append(_measure(_AUDIT, path))
        bare = min(bares, key=_seconds)
        audited = min(audits, key=_seconds)
    size_mb = counts["bytes"] / 1e6
    ratio = _seconds(audited) / _seconds(bare)
    print(
        f"bare json.loads loop: {_seconds(bare):.2f}s ({size_mb / _seconds(bare):.0f} MB/s), "
        f"peak RSS {int(str(bare['rss_kb'])) / 1024:.0f} MB"
    )
    print(
        f"ctxward audit:        {_seconds(audited):.2f}s ({size_mb / _seconds(audited):.0f} MB/s), "
        f"peak RSS {int(str(audited['rss_kb'])) / 1024:.0f} MB; "
        f"{audited['requests']:,} requests, {audited['segments']} segments"
    )
    rss_mb = int(str(audited["rss_kb"])) / 1024
    verdict = "OK" if ratio <= 1.5 and rss_mb <= 100 else "OVER TARGET"
    print(f"ratio audit/bare: {ratio:.2f} (target ≤ 1.5); peak RSS target ≤ 100 MB: {verdict}")
    return 0 if verdict == "OK" else 1


def _seconds(result: dict[str, object]) -> float:
    return float(str(result["seconds"]))


if __name__ == "__main__":
    raise SystemExit(main())
