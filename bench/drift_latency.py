#!/usr/bin/env python3
"""PostToolUse latency of the drift observer, as ratios to a bare `python -c pass`, and how it
changes as the session grows from 100 to 100,000 tool calls.

Runs the hook the way Claude Code does, one process per tool call, through both entry points:
`hooks/post_tool_use.py` (the plugin form) and the installed `ctxward-hook` (settings.example
.json). Each session size has its own project whose session log already holds that many calls
(written here, then the state rebuilt by one in-process call), so every timed call is call
N+1 of a long session:

- quiet: a PostToolUse that trips no signature (the path every tool call takes): budget ≤ 2.0×;
- fires: the third identical failing call of a fresh session, whose answer carries the
  repetition fact (renders a template: Jinja2 is imported only here). No budget; shown for scale.

Flatness: the quiet path's median at 100,000 calls over its median at 100, per entry point;
the per-call work reads the small state file, never the log, so it should stay near 1.0.

Runs are interleaved (one of each case per round) so that machine drift hits every case alike.
Bytecode caching is on (PYTHONDONTWRITEBYTECODE is dropped) and warm-up rounds write the caches.

    .venv/bin/python bench/drift_latency.py            # 30 rounds
    .venv/bin/python bench/drift_latency.py --runs 60 --check

Prints a Markdown table and writes it to bench/out/drift_latency.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "lib"))

from hook_latency import timed  # noqa: E402  (bench/ is on sys.path when run as a script)

from ctxward.drift import observe, signatures  # noqa: E402

SCRIPT = REPO / "hooks" / "post_tool_use.py"
FAILURE_SCRIPT = REPO / "hooks" / "post_tool_use_failure.py"
OUT = REPO / "bench" / "out" / "drift_latency.md"
SIZES = (100, 1_000, 10_000, 100_000)
BUDGET = 2.0  # quiet path, ratio of medians
FLAT = 1.15  # quiet path: median at the largest size / median at the smallest
TOOLS = ("Read", "Edit", "Bash", "Grep", "WebFetch")


def payload(project: Path, session: str, n: int, **fields: object) -> bytes:
    data = {
        "session_id": session,
        "transcript_path": str(project / "transcript.jsonl"),
        "cwd": str(project),
        "permission_mode": "default",
        "hook_event_name": "PostToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": f"python -m step_{n}", "description": "Run a step"},
        "tool_use_id": f"toolu_bench_{n:07d}",
        "tool_response": {"stdout": "ok", "stderr": "", "interrupted": False},
        **fields,
    }
    return json.dumps(data).encode("utf-8")


def grown_session(project: Path, session: str, calls: int) -> None:
    """A session log of `calls` varied calls (no pattern), then its state rebuilt from the
    log's tail by one in-process observation, as after a long real session."""
    folder = project / ".ctxward" / "sessions"
    folder.mkdir(parents=True)
    started = time.time() - calls
    with (folder / f"{session}{signatures.LOG_SUFFIX}").open("w", encoding="utf-8") as log:
        for n in range(1, calls + 1):
            tool = TOOLS[n % len(TOOLS)]
            line = {
                "n": n,
                "t": round(started + n, 3),
                "tool": tool,
                "args": f"{n:016x}",
                "ok": True,
                "id": f"toolu_old_{n}",
            }
            if tool in ("Read", "Edit"):
                line["file"] = f"src/mod{n}.py"
                line["kind"] = "search" if tool == "Read" else "write"
            log.write(json.dumps(line, separators=(",", ":")) + "\n")
    data = json.loads(payload(project, session, 0))
    observe.record(project, "PostToolUse", data)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=30, help="timed rounds (default 30)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed rounds first")
    parser.add_argument("--check", action="store_true", help="exit 1 when a budget is missed")
    args = parser.parse_args(argv)

    python = sys.executable
    installed = shutil.which("ctxward-hook", path=str(Path(python).parent))
    if installed is None:
        raise SystemExit(f"bench: no ctxward-hook next to {python}; run `make` first")
    entries = {"hooks/post_tool_use.py": [python, str(SCRIPT)], "ctxward-hook": [installed]}
    failure_entries = {
        "hooks/post_tool_use_failure.py": [python, str(FAILURE_SCRIPT)],
        "ctxward-hook": [installed],
    }
    env_base = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}

    with tempfile.TemporaryDirectory(prefix="ctxward-drift-bench-") as folder:
        base_dir = Path(folder).resolve()
        projects = {}
        for size in SIZES:
            project = base_dir / f"p{size}"
            (project / ".git").mkdir(parents=True)
            grown_session(project, "bench", size)
            projects[size] = project
        firing = base_dir / "fires"
        (firing / ".git").mkdir(parents=True)

        samples: dict[tuple[str, str], list[float]] = {}
        cpu: dict[tuple[str, str], list[float]] = {}
        counter = 0

        def record(key: tuple[str, str], seconds: float, used: float, keep: bool) -> None:
            if keep:
                samples.setdefault(key, []).append(seconds)
                cpu.setdefault(key, []).append(used)

        for round_ in range(args.warmup + args.runs):
            keep = round_ >= args.warmup
            seconds, used, _, _ = timed([python, "-c", "pass"], b"", env_base)
            record(("baseline", "python -c pass"), seconds, used, keep)
            for size, project in projects.items():
                env = {**env_base, "CLAUDE_PROJECT_DIR": str(project)}
                for entry, command in entries.items():
                    counter += 1
                    stdin = payload(project, "bench", 1_000_000 + counter)
                    seconds, used, code, out = timed(command, stdin, env)
                    if code != 0 or out:
                        raise SystemExit(f"bench: quiet path answered {code}: {out[:300]!r}")
                    record((f"quiet, {size:,} calls", entry), seconds, used, keep)
            env = {**env_base, "CLAUDE_PROJECT_DIR": str(firing)}
            for entry, command in failure_entries.items():
                counter += 1
                session = f"fires{counter}"
                fields = {
                    "hook_event_name": "PostToolUseFailure",
                    "tool_input": {"command": "ls missing", "description": "List"},
                    "error": "Exit code 2",
                }
                for n in range(2):  # two earlier identical failures, in-process
                    data = json.loads(payload(firing, session, n, **fields))
                    observe.record(firing, "PostToolUseFailure", data)
                stdin = payload(firing, session, 2, **fields)
                seconds, used, code, out = timed(command, stdin, env)
                if code != 0 or b"repetition loop" not in out:
                    raise SystemExit(f"bench: firing path answered {code}: {out[:300]!r}")
                record(("fires (renders the fact)", entry), seconds, used, keep)
        grown = {
            size: sum(1 for _ in (p / ".ctxward" / "sessions" / "bench.tools.jsonl").open("rb"))
            for size, p in projects.items()
        }

    base = statistics.median(samples[("baseline", "python -c pass")])
    base_cpu = statistics.median(cpu[("baseline", "python -c pass")])
    rows = []
    missed = []
    for (case, entry), values in samples.items():
        median = statistics.median(values)
        q1, _, q3 = statistics.quantiles(values, n=4)
        ratio = median / base
        budget = BUDGET if case.startswith("quiet") else None
        verdict = "" if budget is None else ("ok" if ratio <= budget else "OVER")
        if verdict == "OVER":
            missed.append(f"{case} via {entry}: {ratio:.2f}x > {budget}x")
        cpu_ratio = statistics.median(cpu[(case, entry)]) / base_cpu
        rows.append(
            f"| {case} | {entry} | {median * 1000:.1f} | {q1 * 1000:.1f}–{q3 * 1000:.1f} "
            f"| {min(values) * 1000:.1f} | **{ratio:.2f}×** | {cpu_ratio:.2f}× | "
            f"{'' if budget is None else f'≤ {budget}×'} {verdict} |"
        )
    flat_rows = []
    for entry in entries:
        small = statistics.median(samples[(f"quiet, {SIZES[0]:,} calls", entry)])
        large = statistics.median(samples[(f"quiet, {SIZES[-1]:,} calls", entry)])
        growth = large / small
        verdict = "ok" if growth <= FLAT else "NOT FLAT"
        if verdict != "ok":
            missed.append(f"quiet via {entry}: {growth:.2f}x from {SIZES[0]} to {SIZES[-1]} calls")
        flat_rows.append(
            f"| {entry} | {small * 1000:.1f} | {large * 1000:.1f} | **{growth:.2f}×** "
            f"| ≤ {FLAT}× {verdict} |"
        )
    report = "\n".join(
        [
            "# Drift observer latency (PostToolUse / PostToolUseFailure)",
            "",
            f"{args.runs} interleaved rounds after {args.warmup} warm-up rounds; "
            f"Python {platform.python_version()} on {platform.system()} {platform.machine()}, "
            f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at the end. "
            f"Ratio = median wall time / median wall time of `python -c pass` "
            f"({base * 1000:.1f} ms); the budget applies to it. CPU ratio = the same with the "
            f"child's user+system CPU time. Session logs at the end: "
            + ", ".join(f"{n:,} lines" for n in grown.values())
            + ".",
            "",
            "| path | entry point | median ms | IQR ms | min ms | ratio | CPU ratio | budget |",
            "|---|---|---:|---:|---:|---:|---:|---|",
            *rows,
            "",
            f"Flatness of the quiet path (median at {SIZES[-1]:,} calls / median at {SIZES[0]:,}):",
            "",
            "| entry point | median ms, 100 calls | median ms, 100,000 calls | growth | budget |",
            "|---|---:|---:|---:|---|",
            *flat_rows,
            "",
            "Reproduce: `.venv/bin/python bench/drift_latency.py --runs 30`.",
            "",
        ]
    )
    print(report)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(report, encoding="utf-8")
    if missed:
        print("over budget: " + "; ".join(missed), file=sys.stderr)
        return 1 if args.check else 0
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
