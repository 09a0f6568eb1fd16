#!/usr/bin/env python3
"""PreCompact and SessionStart(compact) with 1, 10, 100 and 1,000 active plans.

Each plan holds one skill of 12 rules (`ctxward activate`, before the first round). Per count:

- PreCompact, warm: every payload already fresh (the hook may fire several times for one
  compaction; also every compaction after one that changed nothing): it checks and rewrites
  nothing;
- PreCompact, cold: every payload removed before the run: each plan is distilled and its
  payload written (atomic: temporary file, fsync, rename, fsync of the folder);
- SessionStart(compact): the rules re-injected from the trusted invariants.md files (the
  injection stays under its 9,000-character limit; the rest goes to .ctxward/offload/ and a
  preview names it).

Every plan is trusted (activate records it under $XDG_STATE_HOME, a temporary folder here):
each hook checks each plan's trust record, one stat.

One process per call through the installed `ctxward-hook`; the transcript named does not exist
(no session summary: bench/hook_latency.py shows the one-plan case). Budget (the issue's):
PreCompact with 1,000 active plans under 1 s.

    .venv/bin/python bench/precompact_plans.py [--runs 7] [--counts 1,10,100,1000]

Writes bench/out/precompact_plans.md (and `--json FILE` for bench/report.py).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "lib"))

from hook_latency import RULES, event, timed

OUT = Path(__file__).resolve().parent / "out" / "precompact_plans.md"
BUDGET_SECONDS = 1.0


def make_project(root: Path, plans: int) -> None:
    from ctxward.core.project import Project
    from ctxward.invariants.activate import activate

    (root / ".git").mkdir(parents=True)
    skill = root / ".claude" / "skills" / "bench" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    bullets = "".join(f"  - {json.dumps(rule)}\n" for rule in RULES)
    skill.write_text(f"---\nname: bench\ninvariants:\n{bullets}---\n\n# bench\n", "utf-8")
    project = Project(root)
    for n in range(plans):
        activate(project, str(skill), f"plan-{n:04d}")


def measure(counts: list[int], runs: int) -> dict[str, object]:
    python = sys.executable
    hook = shutil.which("ctxward-hook", path=str(Path(python).parent))
    if hook is None:
        raise SystemExit(f"bench: no ctxward-hook next to {python}; run `make` first")
    rows = []
    baseline: list[float] = []
    with tempfile.TemporaryDirectory(prefix="ctxward-plans-") as folder:
        # `activate` trusts each plan it writes: keep those records out of the real user's state.
        os.environ["XDG_STATE_HOME"] = str(Path(folder).resolve() / "state")
        for count in counts:
            root = Path(folder).resolve() / f"p{count}"
            make_project(root, count)
            env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
            env["CLAUDE_PROJECT_DIR"] = str(root)
            pre = event("PreCompact", root, trigger="manual", custom_instructions=None)
            start = event("SessionStart", root, source="compact")
            samples: dict[str, list[float]] = {"warm": [], "cold": [], "session-start": []}
            timed([hook], pre, env)  # distil once: warm from here on
            for run in range(runs):
                baseline.append(timed([python, "-c", "pass"], b"", env)[0])
                for case in ("warm", "cold", "session-start"):
                    if case == "cold":
                        for payload in (root / "docs" / "plans").glob("*/.compaction-payload.md"):
                            payload.unlink()
                    # A session of its own per call: one session's ledger (invariants.ledger) would
                    # make its second SessionStart(compact) state only what the first did not.
                    session = {"session_id": f"bench-{count}-{run}-{case}"}
                    payload = json.loads(start if case == "session-start" else pre)
                    seconds, _, code, out = timed(
                        [hook], json.dumps({**payload, **session}).encode("utf-8"), env
                    )
                    if code != 0 or RULES[0] not in out.decode("utf-8"):
                        raise SystemExit(f"bench: {case} with {count} plans: exit {code}")
                    samples[case].append(seconds)
            for case, values in samples.items():
                q1, _, q3 = statistics.quantiles(values, n=4) if len(values) > 1 else (0, 0, 0)
                rows.append(
                    {
                        "case": case,
                        "plans": count,
                        "median_ms": statistics.median(values) * 1000,
                        "q1_ms": q1 * 1000,
                        "q3_ms": q3 * 1000,
                        "min_ms": min(values) * 1000,
                    }
                )
            shutil.rmtree(root)
    return {"runs": runs, "baseline_ms": statistics.median(baseline) * 1000, "rows": rows}


def markdown(result: dict[str, object]) -> str:
    rows = result["rows"]
    assert isinstance(rows, list)
    names = {
        "warm": "PreCompact, payloads fresh",
        "cold": "PreCompact, every payload written",
        "session-start": "SessionStart(compact)",
    }
    lines = [
        "# PreCompact and SessionStart with many active plans",
        "",
        f"{result['runs']} runs per case through `ctxward-hook`, 12 rules per plan; "
        f"`python -c pass` = {float(str(result['baseline_ms'])):.1f} ms. "
        f"Budget: PreCompact with 1,000 plans under {BUDGET_SECONDS:.0f} s.",
        "",
        "| case | plans | median ms | IQR ms | min ms | budget |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for row in rows:
        verdict = ""
        if row["plans"] == 1000 and row["case"] != "session-start":
            ok = row["median_ms"] < BUDGET_SECONDS * 1000
            verdict = f"< {BUDGET_SECONDS:.0f} s {'met' if ok else 'MISSED'}"
        lines.append(
            f"| {names[row['case']]} | {row['plans']:,} | {row['median_ms']:.1f} | "
            f"{row['q1_ms']:.1f}–{row['q3_ms']:.1f} | {row['min_ms']:.1f} | {verdict} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7, help="runs per case (default 7)")
    parser.add_argument("--counts", default="1,10,100,1000", help="plan counts")
    parser.add_argument("--json", type=Path, help="also write the figures as JSON here")
    args = parser.parse_args(argv)
    result = measure([int(c) for c in args.counts.split(",")], args.runs)
    text = markdown(result)
    print(text)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(text, encoding="utf-8")
    if args.json:
        args.json.write_text(json.dumps(result, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
