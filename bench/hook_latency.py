#!/usr/bin/env python3
"""Hook latency (PreToolUse, and the compaction hooks' injection), as ratios to a bare
`python -c pass` of the same interpreter.

Runs each hook the way the hosts do, one process per call, through both entry points:

- `hooks/<event>.py`, started by the venv's python (the Claude Code plugin form);
- the installed `ctxward-hook` console script (what settings.example.json calls).

Six paths, each checked for the right answer before it is timed. PreToolUse:

- no-op: PreToolUse for `Bash` (a user matching every tool pays this on each call);
- allow: a 10 KB `Agent` prompt (tier ok, no output);
- deny: a 240 KB `Agent` prompt made of small paragraphs (PROMPT_EMERGENCY, nothing to offload);
- offload: a 240 KB `Agent` prompt whose bulk is in fenced blocks (C9 moves them, allow with
  updatedInput).

The injection, with one active plan of 12 rules (`ctxward activate`, before the first round):

- pre-compact: PreCompact (manual): the rules for the summarizer on stdout;
- session-start: SessionStart (compact): the rules in additionalContext.

Their payloads name a transcript that does not exist: the seed 001 session summary is skipped
(nothing to summarize, nothing to recover) and what is timed is the rules' injection.

Budgets (ratio of medians): no-op <= 2.0, allow <= 2.5, deny, offload and inject <= 6.

Runs are interleaved (one of each case per round) so that machine drift hits every case alike.
Bytecode caching is on for the hook processes (PYTHONDONTWRITEBYTECODE is dropped from their
environment) and warm-up rounds write the caches, as an installed package would have them.

    .venv/bin/python bench/hook_latency.py            # 40 rounds
    .venv/bin/python bench/hook_latency.py --runs 100 --check
    git worktree add /tmp/before REV && .venv/bin/python bench/hook_latency.py --against /tmp/before

`--against` runs another checkout's hooks/*.py in the same rounds (each checkout activates its
own project) and adds a table of each case's time here as a ratio to its time there: how a
change moved the hooks, on one machine in one run.

Prints a Markdown table and writes it to bench/out/hook_latency.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
HOOKS = REPO / "hooks"
OUT = REPO / "bench" / "out" / "hook_latency.md"
BUDGETS = {
    "no-op": 2.0,
    "allow": 2.5,
    "deny": 6.0,
    "offload": 6.0,
    "pre-compact": 6.0,
    "session-start": 6.0,
}
# The hooks/*.py script of each case's event.
SCRIPTS = {
    "no-op": "pre_tool_use.py",
    "allow": "pre_tool_use.py",
    "deny": "pre_tool_use.py",
    "offload": "pre_tool_use.py",
    "pre-compact": "pre_compact.py",
    "session-start": "session_start.py",
}
LINE = "filler text standing in for pasted context; lorem ipsum dolor sit amet, consectetur.\n"
RULES = [
    f"rule {index}: never edit generated file number {index} by hand; rerun its generator and "
    f"the tests"
    for index in range(1, 13)
]


def paragraphs(total: int, size: int = 1500) -> str:
    """About `total` bytes of paragraphs of about `size` bytes (each under the 2 KB G0 line)."""
    block = LINE * (size // len(LINE))
    return "\n".join(block for _ in range(total // len(block) + 1))[:total]


def payload(tool: str, tool_input: dict[str, object], cwd: Path) -> bytes:
    return event(
        "PreToolUse", cwd, tool_name=tool, tool_input=tool_input, tool_use_id="toolu_bench"
    )


def event(name: str, cwd: Path, **fields: object) -> bytes:
    """A payload of event `name` as Claude Code sends it (its transcript does not exist)."""
    common = {
        "session_id": "bench",
        "transcript_path": str(cwd / "transcript.jsonl"),
        "cwd": str(cwd),
        "permission_mode": "default",
        "hook_event_name": name,
    }
    return json.dumps({**common, **fields}).encode("utf-8")


def activate_plan(project: Path, ctxward: list[str], env: dict[str, str] | None = None) -> None:
    """One active plan, `bench`, of the 12 RULES (a skill file in the project, then activate)."""
    skill = project / ".claude" / "skills" / "bench" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    bullets = "".join(f"  - {json.dumps(rule)}\n" for rule in RULES)
    skill.write_text(f"---\nname: bench\ninvariants:\n{bullets}---\n\n# bench\n", "utf-8")
    subprocess.run(
        [*ctxward, "-C", str(project), "activate", str(skill), "--slug", "bench"],
        capture_output=True,
        check=True,
        env=env,
    )


def fresh_project(parent: Path, name: str) -> Path:
    project = parent / name
    (project / ".git").mkdir(parents=True)
    return project


def cases(project: Path) -> dict[str, bytes]:
    fenced = "".join(
        f"File {index}:\n\n```text\n{LINE * 700}```\n\n" for index in range(4)
    )  # 4 x ~60 KB fenced blocks
    return {
        "no-op": payload("Bash", {"command": "ls -la", "description": "List files"}, project),
        "allow": payload(
            "Agent",
            {"description": "Review module", "prompt": paragraphs(10 * 1024)},
            project,
        ),
        "deny": payload(
            "Agent",
            {"description": "Review module", "prompt": paragraphs(240 * 1024)},
            project,
        ),
        "offload": payload(
            "Agent",
            {"description": "Review files", "prompt": "Review these files.\n\n" + fenced},
            project,
        ),
        "pre-compact": event("PreCompact", project, trigger="manual", custom_instructions=None),
        "session-start": event("SessionStart", project, source="compact"),
    }


def check(case: str, code: int, out: bytes) -> None:
    """Fail loudly when a path does not give the answer it is supposed to time."""
    if case == "pre-compact":  # plain text, appended to the summarizer's prompt
        expected = all(rule in out.decode("utf-8") for rule in RULES)
    else:
        specific = json.loads(out)["hookSpecificOutput"] if out.strip() else {}
        expected = {
            "no-op": not out,
            "allow": not out,
            "deny": specific.get("permissionDecision") == "deny"
            and "PROMPT_EMERGENCY" in specific.get("permissionDecisionReason", ""),
            "offload": specific.get("permissionDecision") == "allow" and "updatedInput" in specific,
            "session-start": all(rule in specific.get("additionalContext", "") for rule in RULES),
        }[case]
    if code != 0 or not expected:
        raise SystemExit(f"bench: the {case} path answered exit {code}: {out[:300]!r}")


def timed(command: list[str], stdin: bytes, env: dict[str, str]) -> tuple[float, float, int, bytes]:
    """(wall seconds, CPU seconds of the child, exit code, stdout) of one hook process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    result = subprocess.run(command, input=stdin, capture_output=True, env=env, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, result.returncode, result.stdout


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=40, help="timed rounds (default 40)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed rounds first")
    parser.add_argument("--check", action="store_true", help="exit 1 when a budget is missed")
    parser.add_argument(
        "--against",
        type=Path,
        metavar="CHECKOUT",
        help="another checkout of ctxward (say, `git worktree add /tmp/old REV`): its "
        "hooks/*.py run in the same rounds, each in a project it activated itself, and each "
        "case is also given as a ratio to its time there",
    )
    args = parser.parse_args(argv)

    python = sys.executable
    installed = shutil.which("ctxward-hook", path=str(Path(python).parent))
    ctxward = shutil.which("ctxward", path=str(Path(python).parent))
    if installed is None or ctxward is None:
        raise SystemExit(f"bench: no ctxward-hook or ctxward next to {python}; run `make` first")
    other = args.against.resolve() if args.against else None
    if other is not None and not (other / "hooks" / "pre_tool_use.py").is_file():
        raise SystemExit(f"bench: {other} is no ctxward checkout (no hooks/pre_tool_use.py)")

    with tempfile.TemporaryDirectory(prefix="ctxward-bench-") as folder:
        project = fresh_project(Path(folder).resolve(), "project")
        activate_plan(project, [ctxward])
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["CLAUDE_PROJECT_DIR"] = str(project)
        stdins = cases(project)
        Job = tuple[list[str], bytes, dict[str, str]]
        jobs: dict[tuple[str, str], Job] = {
            ("baseline", "python -c pass"): ([python, "-c", "pass"], b"", env)
        }
        for script in (True, False):  # the scripts' rows first, as in the README
            for case, stdin in stdins.items():
                if script:
                    command = [python, str(HOOKS / SCRIPTS[case])]
                    jobs[(case, f"hooks/{SCRIPTS[case]}")] = (command, stdin, env)
                else:
                    jobs[(case, "ctxward-hook")] = ([installed], stdin, env)
        if other is not None:
            theirs = fresh_project(Path(folder).resolve(), "other")
            their_env = {**env, "CLAUDE_PROJECT_DIR": str(theirs)}
            activate_plan(
                theirs, [python, "-m", "ctxward"], {**env, "PYTHONPATH": str(other / "lib")}
            )
            for case, stdin in cases(theirs).items():
                command = [python, str(other / "hooks" / SCRIPTS[case])]
                jobs[(case, f"{other.name}: hooks/{SCRIPTS[case]}")] = (command, stdin, their_env)
        samples: dict[tuple[str, str], list[float]] = {key: [] for key in jobs}
        cpu: dict[tuple[str, str], list[float]] = {key: [] for key in jobs}
        for round_ in range(args.warmup + args.runs):
            for index, (key, (command, stdin, job_env)) in enumerate(jobs.items()):
                # A session of its own per call: the inject-once ledger of one session would
                # make its second SessionStart(compact) state only what the first did not.
                session = f'"session_id": "bench-{round_}-{index}"'.encode()
                stdin = stdin.replace(b'"session_id": "bench"', session)
                seconds, used, code, out = timed(command, stdin, job_env)
                if key[0] != "baseline":
                    check(key[0], code, out)
                if round_ >= args.warmup:
                    samples[key].append(seconds)
                    cpu[key].append(used)
        offloaded = len(list((project / ".ctxward" / "offload").glob("*")))

    base = statistics.median(samples[("baseline", "python -c pass")])
    base_cpu = statistics.median(cpu[("baseline", "python -c pass")])
    rows = []
    missed = []
    for (case, entry), values in samples.items():
        median = statistics.median(values)
        q1, _, q3 = statistics.quantiles(values, n=4)
        ratio = median / base
        budget = BUDGETS.get(case) if entry.startswith(("hooks/", "ctxward-hook")) else None
        verdict = "" if budget is None else ("ok" if ratio <= budget else "OVER")
        if verdict == "OVER":
            missed.append(f"{case} via {entry}: {ratio:.2f}x > {budget}x")
        cpu_ratio = statistics.median(cpu[(case, entry)]) / base_cpu
        rows.append(
            f"| {case} | {entry} | {median * 1000:.1f} | {q1 * 1000:.1f}–{q3 * 1000:.1f} "
            f"| {min(values) * 1000:.1f} | **{ratio:.2f}×** | {cpu_ratio:.2f}× | "
            f"{'' if budget is None else f'≤ {budget}×'} {verdict} |"
        )
    report = "\n".join(
        [
            "# Hook latency",
            "",
            f"{args.runs} interleaved rounds after {args.warmup} warm-up rounds; "
            f"Python {platform.python_version()} on {platform.system()} {platform.machine()}, "
            f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at the end. "
            f"Ratio = median wall time / median wall time of `python -c pass` "
            f"({base * 1000:.1f} ms); the budget applies to it. CPU ratio = the same with the "
            f"child's user+system CPU time (steadier on a busy machine). "
            f"Offload files written: {offloaded}.",
            "",
            "| path | entry point | median ms | IQR ms | min ms | ratio | CPU ratio | budget |",
            "|---|---|---:|---:|---:|---:|---:|---|",
            *rows,
            "",
            *(versus(samples, other.name) if other is not None else []),
            "Reproduce: `.venv/bin/python bench/hook_latency.py --runs 40` (or `make bench`).",
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


def versus(samples: dict[tuple[str, str], list[float]], name: str) -> list[str]:
    """Each case through hooks/*.py here, as a ratio of medians to the same case in `name`."""
    lines = [
        f"Against the checkout {name}, the same rounds (ratio of medians; below 1: faster here):",
        "",
        "| path | here ms | there ms | here / there |",
        "|---|---:|---:|---:|",
    ]
    for (case, entry), values in samples.items():
        if not entry.startswith("hooks/"):
            continue
        here = statistics.median(values)
        there = statistics.median(samples[(case, f"{name}: {entry}")])
        lines.append(f"| {case} | {here * 1000:.1f} | {there * 1000:.1f} | {here / there:.3f} |")
    return [*lines, ""]


if __name__ == "__main__":
    raise SystemExit(main())
