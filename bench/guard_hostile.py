#!/usr/bin/env python3
"""The dispatch guard on hostile inputs, as ratios to its normal path timed alongside.

A cloned repository or a prompt the model copied from one could make PreToolUse outlast the
host's 10 s timeout, and a timed-out hook does not block: the dispatch ran unmeasured. Each case
here is one `Agent` call through the installed `ctxward-hook`, one process per call:

- deny (the normal path): 240 KB of short paragraphs, denied PROMPT_EMERGENCY;
- offload (the normal path of a pasted chunk): 10 MB of prose as one block, moved by C9;
- config 4 MB: the deny case in a project that commits a 4 MB `.ctxward/config.yaml` of the
  YAML slowest to load (15 s before the size limit); refused unread, the call denied;
- eyJ 10 MB, one block: `eyJ` repeated (the JWT rule took 15 s a MB as C9 scrubbed it);
- eyJ 10 MB, paragraphs: the same, in paragraphs nothing can move (denied as is);
- eyJ, paragraphs + block: 300 KB of `eyJ` paragraphs and a 9.7 MB `eyJ` block (denied after
  the block is scrubbed and stored);
- slow-regex 1 MB: 300 KB of paragraphs and a 1 MB block of a unit that costs the scrubber most
  (a run of 90 dashes for the flag rule; `token="` for the assignment rules), denied.

Each case is checked for its answer before it is timed; rounds are interleaved. Ratio = the
median wall time over the deny case's (hostile cases against the guard's normal path), and, for
the 10 MB cases, over the offload case's (the same size of prose). Budget: every run of every
case answered within the PreToolUse budget (`ctxward.core.limits.BUDGET_SECONDS`, 5 s of 10 s).

    .venv/bin/python bench/guard_hostile.py [--runs 5] [--json bench/out/guard_hostile.json]

Writes bench/out/guard_hostile.md (and the JSON that bench/report.py reads).
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

from hook_latency import paragraphs, payload, timed

from ctxward.core.limits import BUDGET_SECONDS

OUT = Path(__file__).resolve().parent / "out" / "guard_hostile.md"
MB = 1_000_000
PROSE = "The build failed on the token refresh test; the fix was to rotate the key first. "
NORMAL = ("deny", "offload")


def repeated(unit: str, size: int) -> str:
    return (unit * (size // len(unit) + 1))[:size]


def unit_paragraphs(unit: str, size: int) -> str:
    """`size` bytes of ~900-byte paragraphs of `unit` (each under the 2 KB offload line)."""
    paragraph = (unit * (900 // len(unit)) + "\n\n")[:902]
    return repeated(paragraph, size)


def slowest_yaml(size: int) -> str:
    """A config of the YAML slowest to load per byte: a flow list of one-item lists."""
    return "scoring:\n  ignore: [" + ", ".join(["[0]"] * ((size - 30) // 5)) + "]\n"


# case -> (prompt, project, expected decision; "offload": allowed with updatedInput)
def cases() -> dict[str, tuple[str, str, str]]:
    kept = unit_paragraphs(PROSE, 300_000) + "\n\n"
    return {
        "deny": (paragraphs(240_000), "clean", "deny"),
        "offload": ("Review this log.\n\n" + repeated(PROSE, 10 * MB), "clean", "offload"),
        "config 4 MB": (paragraphs(240_000), "config", "deny"),
        "eyJ 10 MB, one block": (
            "Review this log.\n\n" + repeated("eyJ", 10 * MB),
            "clean",
            "offload",
        ),
        "eyJ 10 MB, paragraphs": (unit_paragraphs("eyJ", 10 * MB), "clean", "deny"),
        "eyJ, paragraphs + block": (
            unit_paragraphs("eyJ", 300_000) + "\n\n" + repeated("eyJ", 10 * MB - 300_002),
            "clean",
            "deny",
        ),
        "slow-regex 1 MB, dashes": (kept + repeated("-" * 90 + " ", MB), "clean", "deny"),
        'slow-regex 1 MB, token="': (kept + repeated('token="', MB), "clean", "deny"),
    }


def answered(expected: str, code: int, out: bytes) -> bool:
    specific = json.loads(out).get("hookSpecificOutput", {}) if out.strip() else {}
    if code != 0:
        return False
    if expected == "offload":
        return specific.get("permissionDecision") == "allow" and "updatedInput" in specific
    return specific.get("permissionDecision") == "deny"


def measure(runs: int, warmup: int) -> dict[str, object]:
    python = sys.executable
    hook = shutil.which("ctxward-hook", path=str(Path(python).parent))
    if hook is None:
        raise SystemExit(f"bench: no ctxward-hook next to {python}; run `make` first")
    budget = BUDGET_SECONDS["PreToolUse"]
    with tempfile.TemporaryDirectory(prefix="ctxward-hostile-") as folder:
        projects = {name: Path(folder).resolve() / name for name in ("clean", "config")}
        for project in projects.values():
            (project / ".git").mkdir(parents=True)
        (projects["config"] / ".ctxward").mkdir()
        (projects["config"] / ".ctxward" / "config.yaml").write_text(slowest_yaml(4 * 1024**2))
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        jobs = {}
        for case, (prompt, where, expected) in cases().items():
            tool_input = {"description": "review", "prompt": prompt}
            project = projects[where]
            jobs[case] = (
                payload("Agent", tool_input, project),
                {**env, "CLAUDE_PROJECT_DIR": str(project)},
                expected,
            )
        samples: dict[str, list[float]] = {case: [] for case in jobs}
        for round_ in range(warmup + runs):
            for case, (stdin, case_env, expected) in jobs.items():
                seconds, _, code, out = timed([hook], stdin, case_env)
                if not answered(expected, code, out):
                    raise SystemExit(f"bench: {case} answered exit {code}: {out[:300]!r}")
                if round_ >= warmup:
                    samples[case].append(seconds)
    medians = {case: statistics.median(values) for case, values in samples.items()}
    rows = []
    for case, values in samples.items():
        same_size = "offload" if "10 MB" in case or "+ block" in case else None
        rows.append(
            {
                "case": case,
                "median_ms": medians[case] * 1000,
                "max_ms": max(values) * 1000,
                "ratio": medians[case] / medians["deny"],
                "same_size_ratio": medians[case] / medians[same_size] if same_size else None,
                "within_budget": max(values) <= budget,
            }
        )
    return {"runs": runs, "budget_s": budget, "rows": rows}


def markdown(result: dict[str, object]) -> str:
    rows = result["rows"]
    assert isinstance(rows, list)
    budget = float(str(result["budget_s"]))
    lines = [
        "# The dispatch guard on hostile inputs",
        "",
        f"{result['runs']} interleaved rounds through `ctxward-hook`; ratio = median wall time "
        f"over the normal deny path's (240 KB of paragraphs); same size = over the 10 MB prose "
        f"offload's. Budget: every run answered within {budget:g} s (PreToolUse's budget, half "
        f"the host's timeout).",
        "",
        "| case | median ms | max ms | ratio to deny | ratio to same size of prose | in budget |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for row in rows:
        same = "—" if row["same_size_ratio"] is None else f"{row['same_size_ratio']:.2f}×"
        lines.append(
            f"| {row['case']} | {row['median_ms']:.0f} | {row['max_ms']:.0f} | "
            f"{row['ratio']:.2f}× | {same} | {'yes' if row['within_budget'] else 'NO'} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="timed rounds (default 5)")
    parser.add_argument("--warmup", type=int, default=1, help="untimed rounds first")
    parser.add_argument("--json", type=Path, help="also write the figures as JSON here")
    args = parser.parse_args(argv)
    result = measure(args.runs, args.warmup)
    text = markdown(result)
    print(text)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(text, encoding="utf-8")
    if args.json:
        args.json.write_text(json.dumps(result, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
