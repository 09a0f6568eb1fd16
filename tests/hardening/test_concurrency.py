"""One concurrency harness: 16 processes firing hooks and commands at one project at once.

Every process is a real entry point (hooks/*.py, `ctxward-hook`, the `ctxward` console
script's `main`), started first and then released together: each blocks reading its stdin, and
the harness writes every stdin only once all 16 are running (the barrier). Then: nothing lost,
nothing duplicated, no temporary file left, every file parses.

Round A (the writes that share files): a PreCompact storm (the host may fire it several times
for one compaction) over both entry points, shares to one batch, promotions into one memory
bank, activations of different skills into one plan. Round B (the races the design names):
PostCompact storms, then prompts racing for the one pending re-injection, SubagentStop storms
on one report, tool calls of one session observed by the drift hook, heartbeats.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import ctxward_hardening as support
import pytest

from ctxward.bank import active, progress
from ctxward.compress import identity as identities
from ctxward.core.project import Project
from ctxward.invariants.distill import render_payload
from ctxward.invariants.read import load_plan, parse_sections

# Process storms (8-16 writers at once): the slow stage (CI) runs them.
pytestmark = pytest.mark.slow

PROCESSES = 16
TRANSCRIPT = support.FIXTURES / "transcripts" / "7de73c29-a9cd-4608-aa26-55358a7f7df9.jsonl"
# The `ctxward` console script's main, started before the barrier (it reads stdin first).
CLI = (
    "import sys; sys.stdin.buffer.read(); from ctxward.cli import main; "
    "raise SystemExit(main(sys.argv[1:]))"
)


@dataclass
class Job:
    argv: list[str]
    stdin: bytes
    label: str


@dataclass
class Done:
    job: Job
    code: int
    out: str
    err: str


def hook_job(script: str | None, payload: dict[str, object], label: str) -> Job:
    argv = [str(support.CTXWARD_HOOK)] if script is None else [sys.executable, script]
    return Job(argv, json.dumps(payload).encode(), label)


def cli_job(args: list[str], label: str, stdin: bytes = b"") -> Job:
    return Job([sys.executable, "-c", CLI, *args], stdin, label)


def fire(root: Path, jobs: list[Job], *, settle: float = 1.0) -> list[Done]:
    """Start every job, let them all block on stdin, release them together; wait (bounded)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLAUDE_")}
    env["CLAUDE_PROJECT_DIR"] = str(root)
    env["PYTHONPATH"] = str(support.REPO / "lib")
    started = [
        subprocess.Popen(
            job.argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=root,
        )
        for job in jobs
    ]
    time.sleep(settle)  # every interpreter is up and blocked on its stdin
    for process, job in zip(started, jobs, strict=True):
        assert process.stdin is not None
        process.stdin.write(job.stdin)
    for process in started:
        assert process.stdin is not None
        process.stdin.close()
        process.stdin = None  # communicate() below must not flush it again
    done = []
    for process, job in zip(started, jobs, strict=True):
        try:
            out, err = process.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            for other in started:
                other.kill()
            raise AssertionError(f"{job.label}: still running after 120 s") from None
        done.append(Done(job, process.returncode, out.decode(), err.decode()))
    support.count("concurrent processes (16 at once)", len(jobs))
    return done


def build(root: Path) -> Path:
    root.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True, timeout=20)
    shutil.copy(TRANSCRIPT, root / "transcript.jsonl")
    for i in range(4):
        skill = root / ".claude" / "skills" / f"skill-{i}" / "SKILL.md"
        skill.parent.mkdir(parents=True)
        rules = "".join(f'  - "skill {i} rule {r}: keep the tests green"\n' for r in range(3))
        skill.write_text(f"---\nname: skill-{i}\ninvariants:\n{rules}---\n\nbody\n", "utf-8")
        entry = {
            "subtask_summary": {
                "agent": f"agent{i}",
                "phase": "1",
                "date": "2026-01-02",
                "summary": f"Renamed helper module {i} and its imports",
                "status": "complete",
            }
        }
        (root / f"entry{i}.json").write_text(json.dumps(entry), "utf-8")
    return root


def no_temporary_files(root: Path) -> None:
    left = [
        p.relative_to(root).as_posix()
        for p in root.rglob("*")
        if p.is_file()
        and (".ctxward-tmp-" in p.name or re.search(r"\.\d+\.tmp$", p.name) or ".taken-" in p.name)
    ]
    assert not left, f"temporary files left behind: {left}"


def all_ok(done: list[Done]) -> None:
    for item in done:
        assert item.code == 0, f"{item.job.label}: exit {item.code}: {item.err}"
        assert "Traceback" not in item.err, f"{item.job.label}: {item.err}"


# --- round A: PreCompact storm, shares, promotions, activations ----------------------------------


def round_a(root: Path) -> None:
    project = Project(root)
    # the plan the PreCompact storm distills (activated before the storm: the activations
    # below go to another plan, so that the storm's expected payload is known)
    first = subprocess.run(
        [str(support.CTXWARD), "activate", "skill-0", "--slug", "storm"],
        cwd=root,
        env={**os.environ, "CLAUDE_PROJECT_DIR": str(root)},
        capture_output=True,
        check=True,
        timeout=60,
    )
    assert first.returncode == 0
    # four compactions at once (one prompt each: the same one's second run says nothing,
    # ctxward.events.once)
    script = str(support.HOOKS / "pre_compact.py")
    jobs = [
        hook_job(
            script if i % 2 else None,
            support.captured("PreCompact.json", root, session_id="storm-s", prompt_id=f"p{i}"),
            f"PreCompact #{i}",
        )
        for i in range(4)
    ]
    jobs += [
        Job(
            [
                sys.executable,
                "-c",
                _SHARE,
                *("--batch", "b1", "--key", f"k{i}.completed", "--value", "-"),
            ],
            json.dumps({"role": f"k{i}", "n": i}).encode(),
            f"share k{i}",
        )
        for i in range(4)
    ]
    jobs += [
        cli_job(["bank", "promote", str(root / f"entry{i}.json"), "--phase", "1"], f"promote {i}")
        for i in range(4)
    ]
    jobs += [
        cli_job(["activate", f"skill-{i}", "--slug", "together"], f"activate skill-{i}")
        for i in range(4)
    ]
    assert len(jobs) == PROCESSES
    done = fire(root, jobs)
    all_ok(done)

    # PreCompact: one payload, byte-identical to a single distill; one session summary
    plan = load_plan(root / "docs" / "plans" / "storm")
    assert plan.payload_path.read_text("utf-8") == render_payload(project, plan)
    # (their stdout differs when an activation into the other plan lands between them)
    assert all("skill 0 rule 0" in d.out for d in done if d.job.label.startswith("PreCompact"))
    assert (root / ".ctxward" / "sessions" / "storm-s.yaml").is_file()

    # shares: every key once, with its value
    channel = json.loads(
        (root / ".ctxward" / "sub_agents" / "local" / "shared" / "b1.json").read_text("utf-8")
    )
    assert sorted(channel["entries"]) == [f"k{i}.completed" for i in range(4)]
    for i in range(4):
        assert channel["entries"][f"k{i}.completed"]["value"] == {"role": f"k{i}", "n": i}

    # promotions: every entry once in the active context and the progress log
    bank = project.bank_dir
    rows = [
        "|".join(identities.split(row.key)[:3])
        for row in active.parse((bank / active.FILE).read_text("utf-8")).rows()
    ]
    assert sorted(rows) == [f"2026-01-02|1|agent{i}" for i in range(4)]
    log = (bank / progress.FILE).read_text("utf-8")
    progress.parse(log)
    for i in range(4):
        assert log.count(f"### 2026-01-02 — Phase 1: agent{i}\n") == 1
    assert not (bank / ".txn").exists()

    # activations: every skill's section once
    sections = parse_sections(
        (root / "docs" / "plans" / "together" / "invariants.md").read_text("utf-8")
    )
    assert sorted(s.skill for s in sections) == [f"skill-{i}" for i in range(4)]
    assert all(len(s.rules) == 3 for s in sections)
    no_temporary_files(root)


# `ctxward share --value -` reads stdin itself: the barrier is that read.
_SHARE = (
    "import sys; from ctxward.cli import main; raise SystemExit(main(['share', *sys.argv[1:]]))"
)


# --- round B: PostCompact storm, prompts racing, SubagentStop storm, drift, heartbeats ---------


def round_b(root: Path) -> None:
    project = Project(root)
    subprocess.run(
        [str(support.CTXWARD), "activate", "skill-1", "--slug", "race"],
        cwd=root,
        env={**os.environ, "CLAUDE_PROJECT_DIR": str(root)},
        capture_output=True,
        check=True,
        timeout=60,
    )
    summary = "<summary>skill 1 rule 0: keep the tests green</summary>"
    post = support.captured("PostCompact.json", root, session_id="race-s", compact_summary=summary)
    report = "\n".join(f"finding {i}: the same long final report" for i in range(60))
    stop = support.captured(
        "SubagentStop.json",
        root,
        session_id="race-s",
        agent_id="agent-r",
        last_assistant_message=report,
        stop_hook_active=True,
    )
    jobs = [hook_job(None, post, f"PostCompact #{i}") for i in range(4)]
    jobs += [
        hook_job(str(support.HOOKS / "subagent_stop.py") if i % 2 else None, stop, f"stop #{i}")
        for i in range(4)
    ]
    jobs += [
        hook_job(
            str(support.HOOKS / "post_tool_use.py") if i % 2 else None,
            support.captured(
                "PostToolUse.json",
                root,
                session_id="race-s",
                tool_name="Bash",
                tool_input={"command": f"ls dir{i}", "description": "d"},
                tool_use_id=f"toolu_race_{i}",
            ),
            f"PostToolUse #{i}",
        )
        for i in range(4)
    ]
    jobs += [
        cli_job(
            ["heartbeat", "--batch", "b2", "--role", f"r{i}", "--status", "running"],
            f"heartbeat {i}",
        )
        for i in range(4)
    ]
    done = fire(root, jobs)
    all_ok(done)
    reports = list((root / ".ctxward" / "compactions").glob("race-s-*.json"))
    assert reports and all(json.loads(p.read_text("utf-8"))["missing"] for p in reports)
    assert (root / ".ctxward" / "pending" / "race-s.json").is_file()
    folder = root / ".ctxward" / "sub_agents" / "race-s" / "artifacts"
    assert len(list(folder.glob("agent-r-*.md"))) == 1, "one report, one artifact"
    assert len(list(folder.glob("agent-r-*.meta.json"))) == 1
    log = (root / ".ctxward" / "sessions" / "race-s.tools.jsonl").read_text("utf-8")
    ids = [json.loads(line).get("id") for line in log.splitlines()]
    calls = sorted(i for i in ids if i)
    assert calls == [f"toolu_race_{i}" for i in range(4)], "each call observed once"
    channel = json.loads(
        (root / ".ctxward" / "sub_agents" / "local" / "shared" / "b2.json").read_text("utf-8")
    )
    assert sorted(channel["heartbeats"]) == [f"r{i}" for i in range(4)]

    # then 16 prompts race for the one pending re-injection: exactly one gets it
    prompt = support.captured("UserPromptSubmit.json", root, session_id="race-s", prompt="go")
    script = str(support.HOOKS / "user_prompt_submit.py")
    racing = fire(
        root,
        [hook_job(script if i % 2 else None, prompt, f"prompt #{i}") for i in range(PROCESSES)],
    )
    all_ok(racing)
    given = [d for d in racing if "lost or altered these" in d.out]
    assert len(given) == 1, f"{len(given)} prompts got the pending rules"
    assert not (root / ".ctxward" / "pending" / "race-s.json").exists()
    assert project.root == root
    no_temporary_files(root)


def test_sixteen_processes_at_once_lose_and_duplicate_nothing(tmp_path: Path) -> None:
    round_a(build(tmp_path / "project"))


@pytest.mark.slow
def test_sixteen_processes_race_on_compaction_reports_and_drift(tmp_path: Path) -> None:
    round_b(build(tmp_path / "project"))


@pytest.mark.slow
@pytest.mark.parametrize("repeat", range(3))
def test_sixteen_processes_again_and_again(tmp_path: Path, repeat: int) -> None:
    root = build(tmp_path / "project")
    round_a(root)
    round_b(root)


def test_eight_parallel_stops_of_one_agent_over_the_cap_keep_eight_reports(tmp_path: Path) -> None:
    """Issue 16: the report-cap artifact index is taken under the lock (`ctxward.core.lock`).

    Eight SubagentStop hooks of one agent id, each with its own over-cap report, released
    together: eight artifacts, eight records, eight distinct indexes, each report intact.
    """
    root = build(tmp_path / "project")
    jobs = []
    for i in range(8):
        report = "\n".join(f"report {i} finding {n}: a long final report" for n in range(60))
        stop = support.captured(
            "SubagentStop.json",
            root,
            session_id="cap-s",
            agent_id="agent-same",
            last_assistant_message=report,
            stop_hook_active=True,
        )
        jobs.append(
            hook_job(str(support.HOOKS / "subagent_stop.py") if i % 2 else None, stop, f"stop {i}")
        )
    all_ok(fire(root, jobs))
    folder = root / ".ctxward" / "sub_agents" / "cap-s" / "artifacts"
    reports = sorted(folder.glob("agent-same-*.md"))
    records = sorted(folder.glob("agent-same-*.meta.json"))
    assert len(reports) == 8 and len(records) == 8
    assert sorted({json.loads(p.read_text("utf-8"))["idx"] for p in records}) == list(range(1, 9))
    firsts = sorted(p.read_text("utf-8").splitlines()[0] for p in reports)
    assert firsts == [f"report {i} finding 0: a long final report" for i in range(8)]
    no_temporary_files(root)
