#!/usr/bin/env python3
"""Run every benchmark in bench/ and write one report, docs/BENCHMARKS.md.

    .venv/bin/python bench/report.py             # the full run (about 3 minutes on 2 cores)
    .venv/bin/python bench/report.py --quick     # fewer rounds, smaller inputs (about 1 minute)
    make bench                                   # the full run; `make bench QUICK=1` for --quick

Every figure is a ratio measured in the same run (a hook against a bare `python -c pass`, the
audit against a bare JSON-lines loop over the same file, the scrubber against a naive one), a
median with its spread (the interquartile range), and every budget of the issues is marked met
or MISSED as measured. Each figure is also measured at 1×, 10× and 100× its input, to show how it
grows.

The benchmarks, each runnable alone:

- bench/hook_latency.py: PreToolUse (no-op, allow, deny, offload) and the injection
  (PreCompact, SessionStart) through both entry points;
- bench/hook_scaling.py: the PreToolUse paths at 1×, 10×, 100× their input;
- bench/guard_hostile.py: the dispatch guard on hostile inputs (a 4 MB config, 10 MB of `eyJ`,
  prompts that slow the scrubber) against its normal path;
- bench/precompact_plans.py: PreCompact and SessionStart with 1, 10, 100, 1,000 plans;
- bench/drift_latency.py: the drift observer on sessions of 100 to 100,000 calls;
- bench/scrub_throughput.py: the scrubber on 0.1, 1 and 10 MB, and on secret-dense text at 1 MB
  (here, with per-run timings);
- bench/audit_throughput.py: `ctxward audit` on generated transcripts (here, several sizes);
- bench/bank_promotion.py: `bank promote` of 1,000 to 100,000 entries.

A benchmark that fails is reported as failed; the others still run. Exit 1 with `--check` when a
budget is missed or a benchmark failed.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
OUT = BENCH / "out"
REPORT = REPO / "docs" / "BENCHMARKS.md"
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(REPO / "lib"))

MODES: dict[str, dict[str, Any]] = {
    "full": {
        "hook_runs": 40,
        "drift_runs": 30,
        "scaling_runs": 15,
        "hostile_runs": 5,
        "plans_runs": 7,
        "scrub_sizes": (100_000, 1_000_000, 10_000_000),
        "scrub_runs": 7,
        "audit_mb": (2, 20, 200),
        "audit_runs": 3,
        "bank_sizes": (1_000, 10_000, 100_000),
    },
    "quick": {
        "hook_runs": 10,
        "drift_runs": 8,
        "scaling_runs": 4,
        "hostile_runs": 2,
        "plans_runs": 3,
        "scrub_sizes": (100_000, 1_000_000, 10_000_000),
        "scrub_runs": 3,
        "audit_mb": (1, 10, 100),
        "audit_runs": 2,
        "bank_sizes": (100, 1_000, 10_000),
    },
}


@dataclass
class Budget:
    figure: str
    measured: str  # the median (and its unit)
    spread: str  # the IQR or the range of the runs
    budget: str
    met: bool


@dataclass
class Growth:
    figure: str
    values: tuple[str, str, str]  # at 1×, 10×, 100×
    growth: str  # how the 100× figure compares with the 1× one


@dataclass
class Section:
    name: str
    title: str
    body: str = ""
    budgets: list[Budget] = field(default_factory=list)
    growth: list[Growth] = field(default_factory=list)
    seconds: float = 0.0
    error: str | None = None


# --- helpers ------------------------------------------------------------------------------------


def run_bench(script: str, *args: str) -> str:
    """Run bench/<script> with the venv's interpreter; its stdout (it fails loudly)."""
    done = subprocess.run(
        [sys.executable, str(BENCH / script), *args],
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
        cwd=REPO,
    )
    if done.returncode not in (0, 1):  # 1: a budget over (their own --check is not given)
        raise RuntimeError(f"{script} exited {done.returncode}:\n{done.stderr[-2000:]}")
    return done.stdout


def markdown_rows(path: Path) -> list[list[str]]:
    """The cells of every table row of a bench's Markdown output (header rows left out)."""
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("|") and not line.startswith("|---"):
            cells = [cell.strip() for cell in line.strip("|").split("|")]
            if cells[0] not in ("path", "entry point", "case"):
                rows.append(cells)
    return rows


def body_of(path: Path) -> str:
    """A bench's Markdown output without its title line."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return "\n".join(lines[1:]).strip() + "\n"


def number(cell: str) -> float:
    return float(re.sub(r"[^\d.]", "", cell.split("–")[0]) or "nan")


def quartiles(values: list[float]) -> tuple[float, float, float]:
    if len(values) < 2:
        return values[0], values[0], values[0]
    q1, _, q3 = statistics.quantiles(values, n=4)
    return q1, statistics.median(values), q3


# --- the benchmarks -----------------------------------------------------------------------------


def hook_latency(mode: dict[str, Any]) -> Section:
    section = Section("hook_latency", "Hook latency (bench/hook_latency.py)")
    run_bench("hook_latency.py", "--runs", str(mode["hook_runs"]))
    out = OUT / "hook_latency.md"
    section.body = body_of(out)
    for cells in markdown_rows(out):
        path, entry, median, iqr, _, ratio, _, budget = cells[:8]
        if not budget.strip():
            continue
        limit = number(budget.split("≤")[1])
        value = number(ratio)
        section.budgets.append(
            Budget(
                f"hook {path}, {entry}",
                f"{value:.2f}× ({median} ms)",
                f"IQR {iqr} ms",
                f"≤ {limit:.1f}× bare python",
                value <= limit,
            )
        )
    return section


def hook_scaling(mode: dict[str, Any]) -> Section:
    section = Section("hook_scaling", "PreToolUse by input size (bench/hook_scaling.py)")
    data_file = OUT / "hook_scaling.json"
    run_bench("hook_scaling.py", "--runs", str(mode["scaling_runs"]), "--json", str(data_file))
    section.body = body_of(OUT / "hook_scaling.md")
    result = json.loads(data_file.read_text(encoding="utf-8"))
    for path in ("no-op", "allow", "deny", "offload"):
        rows = [r for r in result["rows"] if r["path"] == path]
        values = tuple(f"{r['ratio']:.2f}× ({r['bytes'] / 1e3:,.0f} KB)" for r in rows)
        section.growth.append(
            Growth(
                f"PreToolUse {path} (ratio to bare python, input)",
                values,  # type: ignore[arg-type]
                f"{rows[-1]['median_ms'] / rows[0]['median_ms']:.2f}× the time",
            )
        )
    return section


def guard_hostile(mode: dict[str, Any]) -> Section:
    section = Section(
        "guard_hostile", "The dispatch guard on hostile inputs (bench/guard_hostile.py)"
    )
    data_file = OUT / "guard_hostile.json"
    run_bench("guard_hostile.py", "--runs", str(mode["hostile_runs"]), "--json", str(data_file))
    section.body = body_of(OUT / "guard_hostile.md")
    result = json.loads(data_file.read_text(encoding="utf-8"))
    budget = result["budget_s"]
    hostile = [row for row in result["rows"] if row["case"] not in ("deny", "offload")]
    slowest = max(hostile, key=lambda row: row["max_ms"])
    section.budgets.append(
        Budget(
            f"PreToolUse on {len(hostile)} hostile inputs, every run decided within its budget",
            f"slowest: {slowest['case']}, {slowest['ratio']:.2f}× the normal deny",
            f"max {slowest['max_ms'] / 1000:.2f} s",
            f"≤ {budget:g} s (half the host's 10 s timeout)",
            all(row["within_budget"] for row in hostile),
        )
    )
    for row in hostile:
        if row["same_size_ratio"] is not None:
            section.budgets.append(
                Budget(
                    f"PreToolUse, {row['case']} vs the same size of prose",
                    f"{row['same_size_ratio']:.2f}×",
                    f"{row['median_ms']:.0f} ms",
                    "≤ 2×",
                    row["same_size_ratio"] <= 2,
                )
            )
    return section


def precompact_plans(mode: dict[str, Any]) -> Section:
    section = Section("precompact_plans", "PreCompact with many plans (bench/precompact_plans.py)")
    data_file = OUT / "precompact_plans.json"
    run_bench("precompact_plans.py", "--runs", str(mode["plans_runs"]), "--json", str(data_file))
    section.body = body_of(OUT / "precompact_plans.md")
    result = json.loads(data_file.read_text(encoding="utf-8"))
    names = {
        "warm": "PreCompact, payloads fresh",
        "cold": "PreCompact, every payload written",
        "session-start": "SessionStart(compact)",
    }
    for case, name in names.items():
        rows = {r["plans"]: r for r in result["rows"] if r["case"] == case}
        if case != "session-start":
            big = rows[1000]
            section.budgets.append(
                Budget(
                    f"{name}, 1,000 plans",
                    f"{big['median_ms'] / 1000:.2f} s",
                    f"IQR {big['q1_ms'] / 1000:.2f}–{big['q3_ms'] / 1000:.2f} s",
                    "< 1 s",
                    big["median_ms"] < 1000,
                )
            )
        section.growth.append(
            Growth(
                f"{name} (1, 10, 100 plans; 1,000: {rows[1000]['median_ms']:.0f} ms)",
                (
                    f"{rows[1]['median_ms']:.0f} ms",
                    f"{rows[10]['median_ms']:.0f} ms",
                    f"{rows[100]['median_ms']:.0f} ms",
                ),
                f"{rows[100]['median_ms'] / rows[1]['median_ms']:.2f}× the time",
            )
        )
    return section


def drift_latency(mode: dict[str, Any]) -> Section:
    section = Section("drift_latency", "Drift observer latency (bench/drift_latency.py)")
    run_bench("drift_latency.py", "--runs", str(mode["drift_runs"]))
    out = OUT / "drift_latency.md"
    section.body = body_of(out)
    quiet: dict[str, float] = {}
    for cells in markdown_rows(out):
        if cells[0].startswith("quiet") and len(cells) >= 8:
            calls = cells[0].split(",")[1].strip()
            if cells[1] == "ctxward-hook":
                quiet[calls] = number(cells[2])
            limit = number(cells[7].split("≤")[1]) if "≤" in cells[7] else None
            if limit is not None:
                section.budgets.append(
                    Budget(
                        f"drift {cells[0]}, {cells[1]}",
                        f"{number(cells[5]):.2f}× ({cells[2]} ms)",
                        f"IQR {cells[3]} ms",
                        f"≤ {limit:.1f}× bare python",
                        number(cells[5]) <= limit,
                    )
                )
        elif len(cells) == 5 and "×" in cells[3]:  # the flatness table
            limit = number(cells[4].split("≤")[1])
            section.budgets.append(
                Budget(
                    f"drift quiet path flat from 100 to 100,000 calls, {cells[0]}",
                    f"{number(cells[3]):.2f}×",
                    f"{cells[1]} → {cells[2]} ms",
                    f"≤ {limit:.2f}×",
                    number(cells[3]) <= limit,
                )
            )
    if {"100 calls", "1,000 calls", "10,000 calls"} <= set(quiet):
        section.growth.append(
            Growth(
                "drift quiet call, ctxward-hook (100, 1,000, 10,000 calls in the session)",
                (
                    f"{quiet['100 calls']:.1f} ms",
                    f"{quiet['1,000 calls']:.1f} ms",
                    f"{quiet['10,000 calls']:.1f} ms",
                ),
                f"{quiet['10,000 calls'] / quiet['100 calls']:.2f}× the time",
            )
        )
    return section


def scrub_throughput(mode: dict[str, Any]) -> Section:
    import scrub_throughput as bench

    from ctxward.core.scrub import scrub

    section = Section("scrub", "Scrubber throughput (bench/scrub_throughput.py)")
    lines = [
        f"Median of {mode['scrub_runs']} runs per input; the naive scrubber (15 regexes, no "
        "allowlists) runs on the same text in the same run, and so do ctxward's rules' regexes "
        "alone (each rule's own matching, with no anchor test, no vetting and no merge: what the "
        "table's scans cost by themselves).",
        "",
        "| input | size | ctxward MB/s (IQR) | naive MB/s | ctxward / naive | regexes alone MB/s "
        "| redactions |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    by_size: dict[int, float] = {}
    at_1mb: list[tuple[str, str, float, tuple[float, float, float]]] = []
    for size in mode["scrub_sizes"]:
        inputs = [
            ("mixed", "mixed (with secrets)", bench.corpus(size, secrets=True)),
            ("clean", "clean (no secrets)", bench.corpus(size, secrets=False)),
        ]
        if size == 1_000_000:  # secret-dense text, at the size its target is set for
            inputs.insert(0, ("dense", "dense (a secret every ~150 B)", bench.dense_corpus(size)))
        for kind, name, text in inputs:
            megabytes = len(text.encode("utf-8")) / 1e6
            ours = [megabytes / _seconds(scrub, text) for _ in range(mode["scrub_runs"])]
            naive = [
                megabytes / _seconds(bench.naive_scrub, text) for _ in range(mode["scrub_runs"])
            ]
            alone = [
                megabytes / _seconds(bench.regexes_alone, text) for _ in range(mode["scrub_runs"])
            ]
            q1, median, q3 = quartiles(ours)
            found = len(scrub(text)[1])
            ratio = median / statistics.median(naive)
            lines.append(
                f"| {name} | {size / 1e6:g} MB | {median:.1f} ({q1:.1f}–{q3:.1f}) | "
                f"{statistics.median(naive):.1f} | {ratio:.2f}× | "
                f"{statistics.median(alone):.1f} | {found} |"
            )
            if kind != "dense":  # the growth row compares the sizes of the same inputs
                by_size[size] = min(by_size.get(size, median), median)
            if size == 1_000_000:
                at_1mb.append((kind, name, median, (q1, median, q3)))
    section.body = "\n".join(lines) + "\n"
    for kind, name, median, (q1, _, q3) in at_1mb:
        target = bench.TARGETS[kind]
        section.budgets.append(
            Budget(
                f"scrub, 1 MB {name}",
                f"{median:.1f} MB/s",
                f"IQR {q1:.1f}–{q3:.1f} MB/s",
                f"≥ {target:g} MB/s",
                median >= target,
            )
        )
    sizes = list(by_size)
    section.growth.append(
        Growth(
            "scrub throughput, slower input (0.1, 1, 10 MB)",
            tuple(f"{by_size[s]:.1f} MB/s" for s in sizes),  # type: ignore[arg-type]
            f"{by_size[sizes[0]] / by_size[sizes[-1]]:.2f}× the time per MB",
        )
    )
    return section


def _seconds(function: Callable[[str], object], text: str) -> float:
    started = time.perf_counter()
    function(text)
    return time.perf_counter() - started


def audit_throughput(mode: dict[str, Any]) -> Section:
    import audit_throughput as bench

    section = Section("audit", "Context audit throughput (bench/audit_throughput.py)")
    lines = [
        f"Best of {mode['audit_runs']} interleaved runs of each loop, each in a fresh process "
        "(peak RSS is that run's own); the bare loop is `for line in f: json.loads(line)`.",
        "",
        "| transcript | bare loop s | audit s (runs) | audit MB/s | audit / bare | peak RSS |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    figures = []
    with tempfile.TemporaryDirectory(prefix="ctxward-report-audit-") as folder:
        for megabytes in mode["audit_mb"]:
            path = Path(folder) / f"t{megabytes}.jsonl"
            size = bench.generate(path, megabytes * 1_000_000)["bytes"] / 1e6
            bare, audited = [], []
            for _ in range(mode["audit_runs"]):
                bare.append(bench._measure(bench._BARE, path))
                audited.append(bench._measure(bench._AUDIT, path))
            path.unlink()
            best_bare = min(float(str(r["seconds"])) for r in bare)
            times = sorted(float(str(r["seconds"])) for r in audited)
            rss = max(int(str(r["rss_kb"])) for r in audited) / 1024
            ratio = times[0] / best_bare
            lines.append(
                f"| {size:.0f} MB | {best_bare:.2f} | {times[0]:.2f} ({times[0]:.2f}–"
                f"{times[-1]:.2f}) | {size / times[0]:.0f} | {ratio:.2f}× | {rss:.0f} MB |"
            )
            figures.append((size, ratio, rss, size / times[0], times))
    section.body = "\n".join(lines) + "\n"
    size, ratio, rss, _, times = figures[-1]
    section.budgets.append(
        Budget(
            f"audit of a {size:.0f} MB transcript vs a bare JSON-lines loop",
            f"{ratio:.2f}×",
            f"audit runs {times[0]:.2f}–{times[-1]:.2f} s",
            "≤ 1.5×",
            ratio <= 1.5,
        )
    )
    section.budgets.append(
        Budget(
            f"audit peak RSS, {size:.0f} MB transcript", f"{rss:.0f} MB", "", "≤ 100 MB", rss <= 100
        )
    )
    section.growth.append(
        Growth(
            "audit / bare loop, peak RSS (" + ", ".join(f"{f[0]:.0f} MB" for f in figures) + ")",
            tuple(f"{f[1]:.2f}×, {f[2]:.0f} MB" for f in figures),  # type: ignore[arg-type]
            f"{figures[0][3] / figures[-1][3]:.2f}× the time per MB, "
            f"{figures[-1][2] / figures[0][2]:.2f}× the memory",
        )
    )
    return section


def bank_promotion(mode: dict[str, Any]) -> Section:
    import bank_promotion as bench

    section = Section("bank", "Memory-bank promotion (bench/bank_promotion.py)")
    lines = [
        "One promotion of N entries into a bank that holds 1,000 rows (budget raised to 10,000 "
        "lines; 1% CRITICAL with cross-references, 20% HIGH, 40% MEDIUM, 39% LOW).",
        "",
        "| entries | seconds | entries/s | × time for × 10 entries | trimmed | bank MB |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    results = []
    previous = None
    for size in mode["bank_sizes"]:
        result = bench.run(size, 1000)
        step = f"{result['seconds'] / previous:.1f}" if previous else "—"
        lines.append(
            f"| {size:,} | {result['seconds']:.2f} | {result['rate']:,.0f} | {step} | "
            f"{int(result['trimmed']):,} | {result['mb']:.1f} |"
        )
        previous = result["seconds"]
        results.append(result)
    section.body = "\n".join(lines) + "\n"
    steps = [b["seconds"] / a["seconds"] for a, b in itertools.pairwise(results)]
    worst = max(steps)
    section.budgets.append(
        Budget(
            "bank promotion grows linearly (time for 10× the entries)",
            " then ".join(f"{s:.1f}×" for s in steps),
            f"{results[0]['rate']:,.0f} → {results[-1]['rate']:,.0f} entries/s",
            "linear: ≤ 15× per 10× (per-entry cost within 1.5×)",
            worst <= 15,
        )
    )
    section.growth.append(
        Growth(
            "bank promotion (" + ", ".join(f"{r['size']:,}" for r in results) + " entries)",
            tuple(f"{r['seconds']:.2f} s" for r in results),  # type: ignore[arg-type]
            f"{results[-1]['seconds'] / results[0]['seconds']:.0f}× the time for 100× the entries",
        )
    )
    return section


BENCHES: list[Callable[[dict[str, Any]], Section]] = [
    hook_latency,
    hook_scaling,
    guard_hostile,
    precompact_plans,
    drift_latency,
    scrub_throughput,
    audit_throughput,
    bank_promotion,
]


# --- the report ---------------------------------------------------------------------------------


def render(sections: list[Section], mode_name: str, seconds: float) -> str:
    budgets = [b for s in sections for b in s.budgets]
    missed = [b for b in budgets if not b.met]
    failed = [s for s in sections if s.error]
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    flag = " --quick" if mode_name == "quick" else ""
    lines = [
        "# Benchmarks",
        "",
        "<!-- generated by bench/report.py; do not edit by hand: run `make bench` -->",
        "",
        f"Generated {stamp} by `make bench` (`bench/report.py{flag}`)"
        f" in {seconds / 60:.1f} min: Python {platform.python_version()} on {platform.system()} "
        f"{platform.machine()}, {os.cpu_count()} CPUs, load average "
        f"{os.getloadavg()[0]:.2f} at the end. Every figure is measured in this run: a ratio "
        "to a baseline timed alongside it (interleaved rounds), a median, and its spread.",
        "",
        f"**{len(budgets) - len(missed)} of {len(budgets)} budgets met**"
        + (f"; missed: {'; '.join(b.figure for b in missed)}" if missed else "")
        + (f"; failed benchmarks: {'; '.join(s.name for s in failed)}" if failed else "")
        + ".",
        "",
        "## Budgets",
        "",
        "| figure | measured (median) | spread | budget | verdict |",
        "|---|---:|---|---|---|",
    ]
    for budget in budgets:
        verdict = "met" if budget.met else "**MISSED**"
        lines.append(
            f"| {budget.figure} | {budget.measured} | {budget.spread} | {budget.budget} | "
            f"{verdict} |"
        )
    lines += [
        "",
        "## How each figure grows with its input (1×, 10×, 100×)",
        "",
        "| figure | 1× | 10× | 100× | 100× vs 1× |",
        "|---|---:|---:|---:|---|",
    ]
    for growth in (g for s in sections for g in s.growth):
        lines.append(f"| {growth.figure} | " + " | ".join(growth.values) + f" | {growth.growth} |")
    for section in sections:
        lines += ["", f"## {section.title}", ""]
        if section.error:
            lines += ["**Failed:**", "", "```", section.error.strip()[-1500:], "```"]
        else:
            lines.append(section.body.rstrip())
        lines.append("")
        lines.append(f"_{section.seconds:.0f} s_")
    lines += [
        "",
        "## Reproduce",
        "",
        "`make bench` (or `.venv/bin/python bench/report.py [--quick]`) rewrites this file; each "
        "benchmark also runs alone (`.venv/bin/python bench/<name>.py --help`).",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds, smaller inputs")
    parser.add_argument("--only", action="append", help="run only these (repeatable)")
    parser.add_argument("--out", type=Path, default=REPORT, help="where to write the report")
    parser.add_argument("--check", action="store_true", help="exit 1 when a budget is missed")
    args = parser.parse_args(argv)
    mode_name = "quick" if args.quick else "full"
    mode = MODES[mode_name]
    started = time.perf_counter()
    sections = []
    for bench in BENCHES:
        if args.only and bench.__name__ not in args.only:
            continue
        began = time.perf_counter()
        print(f"bench: {bench.__name__} ...", file=sys.stderr, flush=True)
        try:
            section = bench(mode)
        except Exception:  # noqa: BLE001 - one failed benchmark must not stop the others
            section = Section(bench.__name__, bench.__name__, error=traceback.format_exc())
        section.seconds = time.perf_counter() - began
        print(f"bench: {bench.__name__} done in {section.seconds:.0f} s", file=sys.stderr)
        sections.append(section)
    text = render(sections, mode_name, time.perf_counter() - started)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    print(text)
    bad = any(not b.met for s in sections for b in s.budgets) or any(s.error for s in sections)
    return 1 if bad and args.check else 0


if __name__ == "__main__":
    raise SystemExit(main())
