"""Benchmark: L2 promotion of N entries into a memory bank that already holds 1,000 rows.

    .venv/bin/python bench/bank_promotion.py [--sizes 1000,10000,100000] [--existing 1000]

For each N, a fresh project gets a bank of `--existing` rows (promoted in phases of 100), then
one `bank promote` of N new entries (one JSON file, distinct agents, a realistic band mix: 1%
CRITICAL with an endpoint, 20% HIGH, 40% MEDIUM, 39% LOW) is timed: read, scrub, parse, score,
allocate, cross-reference, C7 trim, render and commit the transaction. The budget is raised to
10,000 lines (`bank.total_budget`) so that the existing rows stay in Completed Phases and the
files really are that large; the trim still runs on the biggest sizes. Prints entries/s and the
time ratio between sizes (×10 entries should cost about ×10 time: linear).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "lib"))

from ctxward.bank import active, progress
from ctxward.bank.promote import promote
from ctxward.core.project import Project

TEXTS = [
    (1, "New GET /api/v1/items/{n} endpoint for auth; new table items_{n} in the schema"),
    (20, "Added auth endpoint for module {n}"),
    (40, "Renamed helper module {n} and its imports"),
    (39, "Fixed typo {n} in README"),
]


def entries(count: int, prefix: str, phase: str | None = None) -> list[dict[str, object]]:
    out = []
    cycle = [text for weight, text in TEXTS for _ in range(weight)]
    for i in range(count):
        out.append(
            {
                "agent": f"{prefix}{i}",
                "phase": phase or str(1 + i // 100),
                "date": "2026-01-02",
                "summary": cycle[i % len(cycle)].format(n=f"{prefix}{i}"),
                "files_changed": [f"src/{prefix}/{i}.py"],
                "status": "complete",
            }
        )
    return out


def write(folder: Path, name: str, items: list[dict[str, object]]) -> str:
    path = folder / name
    path.write_text(json.dumps({"subtask_summary": items}), encoding="utf-8")
    return str(path)


def run(size: int, existing: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="ctxward-bank-bench-") as folder:
        root = Path(folder)
        (root / ".git").mkdir()
        (root / ".ctxward").mkdir()
        (root / ".ctxward" / "config.yaml").write_text("bank:\n  total_budget: 10000\n", "utf-8")
        project = Project(root)
        seed = entries(existing, "old")
        for start in range(0, existing, 100):
            batch = seed[start : start + 100]
            path = write(root, f"seed{start}.json", batch)
            promote(project, [path], phase=str(batch[0]["phase"]), phases=100)
        rows_before = sum(1 for _ in active.parse(_text(project, active.FILE)).rows())
        path = write(root, "new.json", entries(size, "new", phase="99"))
        started = time.perf_counter()
        result = promote(project, [path], phase="99")
        seconds = time.perf_counter() - started
        doc = active.parse(_text(project, active.FILE))
        log = progress.parse(_text(project, progress.FILE))
        assert len(result.promoted) == size, (len(result.promoted), size)
        assert sum(1 for c in log.chunks if c.key is not None) == existing + size
        bank = project.bank_dir
        return {
            "size": size,
            "seconds": seconds,
            "rate": size / seconds,
            "rows_before": rows_before,
            "rows_after": sum(1 for _ in doc.rows()),
            "trimmed": len(result.trim.removed) + len(result.trim.cut) if result.trim else 0,
            "xrefs": result.xrefs_added,
            "mb": sum(p.stat().st_size for p in bank.rglob("*") if p.is_file()) / 1e6,
        }


def _text(project: Project, name: str) -> str:
    return (project.bank_dir / name).read_text(encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--existing", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=1, help="runs per size (median kept)")
    args = parser.parse_args()
    sizes = [int(part) for part in args.sizes.split(",")]
    python = sys.version.split()[0]
    print(f"promotion into a bank with {args.existing} existing rows (python {python})")
    print(
        f"{'entries':>8}  {'seconds':>8}  {'entries/s':>9}  {'×time':>6}  rows before→after  "
        f"trimmed  x-refs  bank MB"
    )
    previous = None
    for size in sizes:
        runs = [run(size, args.existing) for _ in range(args.repeat)]
        best = sorted(runs, key=lambda r: r["seconds"])[len(runs) // 2]
        seconds = statistics.median(r["seconds"] for r in runs)
        ratio = f"{seconds / previous:.1f}" if previous else "—"
        print(
            f"{size:>8}  {seconds:>8.2f}  {size / seconds:>9.0f}  {ratio:>6}  "
            f"{best['rows_before']:>6}→{best['rows_after']:<10}  {best['trimmed']:>7}  "
            f"{best['xrefs']:>6}  {best['mb']:>7.1f}"
        )
        previous = seconds
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
