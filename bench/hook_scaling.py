#!/usr/bin/env python3
"""How PreToolUse latency grows with its input: each path at 1×, 10× and 100× the size.

- no-op: a `Bash` call whose command is 1 KB, 10 KB, 100 KB (the hook answers nothing);
- allow: an `Agent` prompt of 1 KB, 10 KB, 100 KB (tier ok: nothing to say);
- deny: an `Agent` prompt of short paragraphs, 240 KB, 2.4 MB, 24 MB (emergency, nothing C9
  can move);
- offload: an `Agent` prompt of 60 KB fenced blocks, 240 KB, 2.4 MB, 24 MB (C9 moves every
  block; the call goes with a prompt of pointers).

One process per call through the installed `ctxward-hook` (what settings.example.json runs;
bench/hook_latency.py times both entry points at the 1× sizes), interleaved rounds, each path
checked for the right answer before it is timed. Ratio = median wall time / median wall time of
`python -c pass`. Growth = the 100× median over the 1× median.

    .venv/bin/python bench/hook_scaling.py [--runs 15] [--json bench/out/hook_scaling.json]

Writes bench/out/hook_scaling.md (and the JSON that bench/report.py reads).
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

from hook_latency import LINE, paragraphs, payload, timed

OUT = Path(__file__).resolve().parent / "out" / "hook_scaling.md"
SIZES = {  # path -> (1×, 10×, 100×) input bytes
    "no-op": (1_000, 10_000, 100_000),
    "allow": (1_000, 10_000, 100_000),
    "deny": (240_000, 2_400_000, 24_000_000),
    "offload": (240_000, 2_400_000, 24_000_000),
}


def fenced(total: int) -> str:
    """About `total` bytes of 60 KB fenced blocks (each larger than the 2 KB G0 line)."""
    block = f"```text\n{LINE * 700}```\n\n"
    return "Review these files.\n\n" + "".join(
        f"File {i}:\n\n{block}" for i in range(max(total // len(block), 1))
    )


def stdin_for(path: str, size: int, project: Path) -> bytes:
    if path == "no-op":
        return payload("Bash", {"command": "x" * size, "description": "run"}, project)
    if path == "offload":
        return payload("Agent", {"description": "review", "prompt": fenced(size)}, project)
    return payload("Agent", {"description": "review", "prompt": paragraphs(size)}, project)


def answered(path: str, code: int, out: bytes) -> bool:
    specific = json.loads(out)["hookSpecificOutput"] if out.strip() else {}
    return (
        code == 0
        and {
            "no-op": not out,
            "allow": not out,
            "deny": specific.get("permissionDecision") == "deny",
            "offload": specific.get("permissionDecision") == "allow" and "updatedInput" in specific,
        }[path]
    )


def measure(runs: int, warmup: int) -> dict[str, object]:
    python = sys.executable
    hook = shutil.which("ctxward-hook", path=str(Path(python).parent))
    if hook is None:
        raise SystemExit(f"bench: no ctxward-hook next to {python}; run `make` first")
    with tempfile.TemporaryDirectory(prefix="ctxward-scaling-") as folder:
        project = Path(folder).resolve()
        (project / ".git").mkdir()
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["CLAUDE_PROJECT_DIR"] = str(project)
        jobs: dict[tuple[str, int], tuple[list[str], bytes]] = {
            ("baseline", 0): ([python, "-c", "pass"], b"")
        }
        for path, sizes in SIZES.items():
            for size in sizes:
                jobs[(path, size)] = ([hook], stdin_for(path, size, project))
        samples: dict[tuple[str, int], list[float]] = {key: [] for key in jobs}
        for round_ in range(warmup + runs):
            for key, (command, stdin) in jobs.items():
                seconds, _, code, out = timed(command, stdin, env)
                if key[0] != "baseline" and not answered(key[0], code, out):
                    raise SystemExit(f"bench: {key} answered exit {code}: {out[:300]!r}")
                if round_ >= warmup:
                    samples[key].append(seconds)
    base = statistics.median(samples[("baseline", 0)])
    rows = []
    for (path, size), values in samples.items():
        if path == "baseline":
            continue
        q1, _, q3 = statistics.quantiles(values, n=4)
        rows.append(
            {
                "path": path,
                "bytes": size,
                "scale": ("1×", "10×", "100×")[SIZES[path].index(size)],
                "median_ms": statistics.median(values) * 1000,
                "q1_ms": q1 * 1000,
                "q3_ms": q3 * 1000,
                "min_ms": min(values) * 1000,
                "ratio": statistics.median(values) / base,
            }
        )
    return {"runs": runs, "baseline_ms": base * 1000, "rows": rows}


def markdown(result: dict[str, object]) -> str:
    rows = result["rows"]
    assert isinstance(rows, list)
    lines = [
        "# PreToolUse latency by input size",
        "",
        f"{result['runs']} interleaved rounds through `ctxward-hook`; `python -c pass` = "
        f"{float(str(result['baseline_ms'])):.1f} ms.",
        "",
        "| path | scale | input | median ms | IQR ms | ratio |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for row in rows:
        lines.append(
            f"| {row['path']} | {row['scale']} | {row['bytes']:,} B | {row['median_ms']:.1f} | "
            f"{row['q1_ms']:.1f}–{row['q3_ms']:.1f} | {row['ratio']:.2f}× |"
        )
    lines += ["", "Growth (100× over 1×, medians):", ""]
    for path in SIZES:
        own = [r for r in rows if r["path"] == path]
        lines.append(f"- {path}: {own[-1]['median_ms'] / own[0]['median_ms']:.2f}×")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15, help="timed rounds (default 15)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed rounds first")
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
