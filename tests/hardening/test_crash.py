"""One crash-injection harness for every writer: SIGKILL at random points, then every file
parses and holds a complete before- or after-state.

The writers (each a cycle of operations, run by a forked child in a loop until it is killed):

- invariants.md (`ctxward activate`, two versions of a skill) and its payload (`distill`);
- 20 plans' payloads distilled in one batch (`distill_all`: the fsyncs on threads);
- the PreCompact hook (payloads of every plan, the seed 001 session YAML);
- offload files (`offload.offload`, content-addressed);
- survival reports (`survival.write_report`) and the PostCompact hook (report + pending entry),
  then the UserPromptSubmit hook that takes the entry;
- memory-bank files (`bank promote`, journaled transaction);
- ArtifactMeta (`artifacts.record_artifact`) and the SubagentStop hook (report artifact + meta);
- the G8 shared channel (`share`, `heartbeat`);
- session YAML (`sessions_store.write`);
- the drift observer (PostToolUse hook: the append-only log and the state file).

The reference run (before any kill, in the same project) records every content each file takes;
deterministic writers (a fixed clock) must then always hold one of those, byte for byte. The
writers whose content carries the time are checked by structure with the project's own readers.
The bank is checked as a whole (its files are one transaction): before any recovery, as a
reader sees it, and after the recovery the next command runs.

Kills come two ways, half each: after a random delay within one cycle of the writer, and at a
random system call among those a cycle makes (os.write, os.fsync, os.replace, os.rename, the
points around which an atomic write can tear). Temporary files left behind must be ignored by
every reader.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import ctxward_hardening as support
import pytest

from ctxward.bank import active, progress, state, txn
from ctxward.bank.promote import promote
from ctxward.core import offload
from ctxward.core.project import Project
from ctxward.hookio import run_in_memory
from ctxward.invariants import pending, survival
from ctxward.invariants.activate import activate
from ctxward.invariants.distill import distill, distill_all
from ctxward.invariants.read import load_plan, load_plans, parse_sections
from ctxward.sessions import store as sessions_store
from ctxward.subagents import artifacts
from ctxward.subagents import batch as batches
from ctxward.subagents import channel as chan

# SIGKILL loops over every writer: the slow stage (CI) runs them.
pytestmark = pytest.mark.slow

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
TRANSCRIPT = support.FIXTURES / "transcripts" / "7de73c29-a9cd-4608-aa26-55358a7f7df9.jsonl"
RULES = [f"crash rule {i}: never leave a half-written file" for i in range(6)]
KILL_CALLS = ("write", "fsync", "replace", "rename")


def skill_text(name: str, version: int) -> str:
    bullets = "".join(f'  - "{rule} (v{version})"\n' for rule in RULES)
    return f"---\nname: {name}\ninvariants:\n{bullets}---\n\n# {name}\n"


def write_input(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@dataclass
class Writer:
    """One writer: its cycle of operations, its files, how its files are checked."""

    name: str
    ops: list[Callable[[], None]]
    files: Callable[[], list[Path]]  # the files it owns right now
    exact: bool = True  # every file must hold a content seen in the reference run
    check: Callable[[Path, bytes], None] | None = None  # structural check of one file
    legit: dict[str, set[bytes]] = field(default_factory=dict)
    cycle_seconds: float = 0.0
    cycle_calls: int = 0


def _glob(folder: Path, pattern: str) -> Callable[[], list[Path]]:
    return lambda: sorted(p for p in folder.glob(pattern) if p.is_file()) if folder.is_dir() else []


def _not_tmp(paths: list[Path]) -> list[Path]:
    return [p for p in paths if ".ctxward-tmp-" not in p.name]


def build_writers(root: Path) -> dict[str, Writer]:
    project = Project(root)
    env = {"CLAUDE_PROJECT_DIR": str(root)}
    inputs = root.parent / "inputs"
    skills = [
        write_input(inputs / f"a{v}" / "crash-a" / "SKILL.md", skill_text("crash-a", v))
        for v in (1, 2)
    ]
    skills_b = [
        write_input(inputs / f"b{v}" / "crash-b" / "SKILL.md", skill_text("crash-b", v))
        for v in (1, 2)
    ]
    plans = root / "docs" / "plans"
    writers: dict[str, Writer] = {}

    def hook(payload: dict[str, Any]) -> None:
        code, _, err = run_in_memory(json.dumps(payload).encode(), env)
        if code != 0:
            raise AssertionError(f"{payload['hook_event_name']}: exit {code}: {err}")

    # invariants.md
    writers["invariants.md"] = Writer(
        "invariants.md",
        [lambda s=s: _activate(project, s, "crash-a") for s in skills],
        _glob(plans / "crash-a", "invariants.md"),
        check=lambda p, data: _check_plan(data),
    )

    # a plan and its payload
    def activate_and_distill(skill: Path) -> None:
        _activate(project, skill, "crash-b")
        distill(project, load_plan(plans / "crash-b"))

    writers["payload"] = Writer(
        "payload",
        [lambda s=s: activate_and_distill(s) for s in skills_b],
        lambda: _not_tmp(_glob(plans / "crash-b", "*")() + _glob(plans / "crash-b", ".*")()),
        check=lambda p, data: _check_plan(data),
    )

    # 20 plans distilled in one batch: past fsutil's threshold, the fsyncs run on threads
    batch = [f"crash-batch-{n:02d}" for n in range(20)]

    def activate_and_distill_all(skill: Path) -> None:
        for slug in batch:
            _activate(project, skill, slug)
        distill_all(project, [load_plan(plans / slug) for slug in batch])

    writers["payload batch"] = Writer(
        "payload batch",
        [lambda s=s: activate_and_distill_all(s) for s in skills_b],
        lambda: [
            path
            for slug in batch
            for path in _glob(plans / slug, "invariants.md")()
            + _glob(plans / slug, ".compaction-payload.md")()
        ],
        check=lambda p, data: _check_plan(data),
    )

    # the PreCompact hook: every plan's payload, the session YAML
    transcripts = [TRANSCRIPT, _longer_transcript(inputs / "t2.jsonl")]

    def pre_compact(transcript: Path) -> None:
        hook(
            support.captured(
                "PreCompact.json", root, session_id="pc", transcript_path=str(transcript)
            )
        )

    writers["PreCompact hook"] = Writer(
        "PreCompact hook",
        [lambda t=t: pre_compact(t) for t in transcripts],
        lambda: _not_tmp(
            _glob(plans / "crash-a", ".compaction-payload.md")()
            + _glob(root / ".ctxward" / "sessions", "pc.yaml")()
        ),
        check=lambda p, data: _check_yaml_or_plan(project, p, data),
    )

    # offload files
    secret = support.secrets().single_line()[0].value

    def offload_new() -> None:  # a new text each time: a content-addressed write always writes
        offload.offload(project, f"offloaded {_unique()} with {secret}\n" + "filler\n" * 4000)

    writers["offload"] = Writer(
        "offload",
        [offload_new],
        lambda: _not_tmp(_glob(root / ".ctxward" / "offload", "*")()),
        exact=False,
        check=lambda p, data: _check_offload(p, data),
    )

    # survival reports (one per compaction: a new file each time)
    def report(session: str) -> None:
        rules = [r for plan in load_plans(project) for r in _rule_refs(plan)]
        survival.write_report(
            project,
            rules,
            session_id=session,
            trigger="manual",
            compact_summary="<summary>" + " ".join(RULES[:3]) + "</summary>",
        )

    writers["survival report"] = Writer(
        "survival report",
        [lambda s=s: report(s) for s in ("sa", "sb")],
        lambda: _not_tmp(_glob(root / ".ctxward" / "compactions", "s[ab]-*")()),
        exact=False,
        check=lambda p, data: _check_report(data),
    )

    # the PostCompact hook (report + pending entry), then UserPromptSubmit takes the entry
    summary = "<summary>" + "\n".join(f"- {r} (v1)" for r in RULES[:3]) + "</summary>"
    writers["PostCompact + UserPromptSubmit hooks"] = Writer(
        "PostCompact + UserPromptSubmit hooks",
        [
            lambda: hook(
                support.captured(
                    "PostCompact.json", root, session_id="hook-s", compact_summary=summary
                )
            ),
            lambda: hook(support.captured("UserPromptSubmit.json", root, session_id="hook-s")),
        ],
        lambda: _not_tmp(
            _glob(root / ".ctxward" / "compactions", "hook-s-*")()
            + _glob(root / ".ctxward" / "pending", "hook-s.json*")()
        ),
        exact=False,
        check=lambda p, data: _check_report(data) if "compactions" in p.parts else _pending(data),
    )

    # the memory bank (one journaled transaction per promotion)
    entries = [
        write_input(
            inputs / f"entry{v}.json",
            json.dumps(
                {
                    "subtask_summary": {
                        "agent": "hermes",
                        "phase": "1",
                        "date": "2026-01-02",
                        "summary": f"Renamed the helper module, version {v}",
                        "status": "complete",
                    }
                }
            ),
        )
        for v in (1, 2)
    ]
    writers["memory bank"] = Writer(
        "memory bank",
        [lambda e=e: promote(project, [str(e)], phase="1", now=NOW) for e in entries],
        lambda: [],  # checked as a whole: BankCheck
    )

    # ArtifactMeta
    artifact = write_input(
        artifacts.artifacts_dir(project, "crash") / "7-rd-001.md", "# RD doc\n" + "x\n" * 500
    )
    writers["ArtifactMeta"] = Writer(
        "ArtifactMeta",
        [
            lambda st=st: artifacts.record_artifact(
                project, "crash", artifact, rid="7", role="rd", idx=1, status=st, now=NOW
            )
            for st in ("finalized", "partial")
        ],
        _glob(artifacts.artifacts_dir(project, "crash"), "7-rd-001.meta.json"),
        check=lambda p, data: _check_json(data),
    )

    # the SubagentStop hook: the report cap's artifact and its meta (the clock is real)
    folder = artifacts.artifacts_dir(project, "sub-s")

    def subagent() -> None:  # a new final report each time: a new artifact and its meta
        text = "\n".join(f"finding {i} of report {_unique()}" for i in range(60))
        payload = support.captured(
            "SubagentStop.json",
            root,
            session_id="sub-s",
            agent_id="agent7",
            last_assistant_message=text,
            stop_hook_active=True,
        )
        hook(payload)

    writers["SubagentStop hook"] = Writer(
        "SubagentStop hook",
        [subagent],
        lambda: _not_tmp(_glob(folder, "agent7-*")()),
        exact=False,
        check=lambda p, data: _check_report_artifact(project, p, data),
    )

    # the shared channel
    values = ['{"v": 1}', '{"v": 2}']
    ops: list[Callable[[], None]] = []
    for value in values:
        for key in ("k1.completed", "k2.found"):
            ops.append(lambda k=key, v=value: chan.share(project, "crash", "b1", k, v, now=NOW))
    ops.append(lambda: chan.heartbeat(project, "crash", "b1", "k1", "done", now=NOW))
    writers["shared channel"] = Writer(
        "shared channel",
        ops,
        lambda: _not_tmp(_glob(artifacts.shared_path(project, "crash", "b1").parent, "*")()),
        exact=False,
        check=lambda p, data: _check_channel(data, values),
    )

    # session YAML (sessions_store.write)
    def summarize(transcript: Path) -> None:
        _, found = sessions_store.summarize(transcript, "sess-y")
        sessions_store.write(project, found, transcript)

    writers["session YAML"] = Writer(
        "session YAML",
        [lambda t=t: summarize(t) for t in transcripts],
        _glob(root / ".ctxward" / "sessions", "sess-y.yaml"),
        check=lambda p, data: _check_session(project, "sess-y"),
    )

    # the drift observer (PostToolUse): an append-only log and a small state file
    calls = iter(range(10**9))

    def tool_call(command: str) -> None:
        payload = support.captured(
            "PostToolUse.json",
            root,
            session_id="drift-s",
            tool_name="Bash",
            tool_input={"command": command, "description": "d"},
            tool_use_id=f"toolu_{os.getpid()}_{next(calls)}",
        )
        hook(payload)

    writers["drift observer"] = Writer(
        "drift observer",
        [lambda c=c: tool_call(c) for c in ("ls a", "ls b", "pytest -q")],
        lambda: [  # drift.py's own temporary state files end in .tmp
            p for p in _glob(root / ".ctxward" / "sessions", "drift-s.*")() if p.suffix != ".tmp"
        ],
        exact=False,
        check=lambda p, data: _check_drift(p, data),
    )
    return writers


def _unique() -> str:
    """Unique across the forked children (each starts from the parent's state)."""
    return f"{os.getpid()}-{time.monotonic_ns()}"


def _activate(project: Project, skill: Path, slug: str) -> None:
    activate(project, str(skill), slug, now=NOW)


def _rule_refs(plan: Any) -> list[Any]:
    from ctxward.invariants.distill import all_rules

    return all_rules([plan])


def _longer_transcript(path: Path) -> Path:
    lines = TRANSCRIPT.read_text(encoding="utf-8").splitlines()
    extra = {
        "type": "user",
        "message": {
            "role": "user",
            "content": "We decided to use SQLite for the crash store because it needs no server. "
            "TODO: add a smoke test for the importer.",
        },
        "uuid": "crash-extra",
        "sessionId": "pc",
        "timestamp": "2026-11-30T09:30:00.000Z",
    }
    return write_input(path, "\n".join([*lines, json.dumps(extra)]) + "\n")


# --- structural checks with the project's readers ----------------------------------------------


def _check_plan(data: bytes) -> None:
    sections = parse_sections(data.decode("utf-8"))
    assert sections and all(s.rules for s in sections), "a plan or payload without rules"


def _check_yaml_or_plan(project: Project, path: Path, data: bytes) -> None:
    if path.suffix == ".yaml":
        _check_session(project, path.stem)
    else:
        _check_plan(data)


def _check_session(project: Project, session_id: str) -> None:
    assert sessions_store.read(project, session_id) is not None, (
        f"{session_id}.yaml does not read back"
    )


def _check_offload(path: Path, data: bytes) -> None:
    assert support.sha256(data) == path.name.split(".")[0], f"{path.name}: content != its name"


def _check_json(data: bytes) -> dict[str, Any]:
    value = json.loads(data)
    assert isinstance(value, dict)
    return value


def _check_report(data: bytes) -> None:
    report = _check_json(data)
    assert set(report) == {"session_id", "trigger", "checked_at", "survived", "missing", "verdicts"}
    assert len(report["survived"]) + len(report["missing"]) >= len(RULES)


def _pending(data: bytes) -> None:
    entry = pending._parse(data)
    assert entry is not None, "a pending entry that does not read back"
    assert len(entry["rules"]) >= 3


def _check_report_artifact(project: Project, path: Path, data: bytes) -> None:
    if path.name.endswith(".meta.json"):  # written after its artifact: it describes it whole
        meta = _check_json(data)
        artifact = project.root / meta["path"]
        assert support.sha256(artifact.read_bytes()) == meta["sha256"], meta
    else:
        lines = data.decode("utf-8").split("\n")
        assert len(lines) == 60 and all(f"finding {i} " in lines[i] for i in range(60)), (
            f"{path.name}: not one whole report"
        )


def _check_channel(data: bytes, values: list[str]) -> None:
    channel = _check_json(data)
    allowed = [json.loads(v) for v in values]
    for key, entry in channel["entries"].items():
        assert key in ("k1.completed", "k2.found"), key
        assert entry["value"] in allowed, entry
    assert set(channel.get("heartbeats", {})) <= {"k1"}


def _check_drift(path: Path, data: bytes) -> None:
    if path.name.endswith(".tools.jsonl"):
        text = data.decode("utf-8")
        assert not text or text.endswith("\n"), "a torn last line in the drift log"
        for line in text.splitlines():
            assert isinstance(json.loads(line), dict)
    else:
        _check_json(data)


class BankCheck:
    """The memory bank as a whole: one of the states the reference run went through."""

    def __init__(self, project: Project) -> None:
        self.project = project
        self.bank = project.bank_dir
        self.states: set[str] = {json.dumps({})}

    def files(self) -> dict[str, str]:
        names = set()
        if self.bank.is_dir():
            for path in self.bank.rglob("*"):
                rel = path.relative_to(self.bank).as_posix()
                ours = path.is_file() and not rel.startswith(".txn") and "lock" not in path.name
                if ours and ".ctxward-tmp-" not in path.name:
                    names.add(rel)
        journal = self.bank / ".txn" / "journal.json"
        if journal.is_file():
            names |= {entry["target"] for entry in json.loads(journal.read_bytes())["writes"]}
        seen = txn.logical_files(self.bank, sorted(names))
        return {n: d.decode("utf-8") for n, d in sorted(seen.items()) if d is not None}

    def record(self) -> None:
        self.states.add(json.dumps(self.files(), sort_keys=True))

    def check(self, trial: int) -> str | None:
        seen = self.files()
        assert json.dumps(seen, sort_keys=True) in self.states, f"trial {trial}: a bank mix"
        with state.session(self.project) as opened:  # what the next bank command does first
            recovered = opened.recovered
        after = self.files()
        assert json.dumps(after, sort_keys=True) in self.states, f"trial {trial}: recovery mix"
        if active.FILE in after:
            active.parse(after[active.FILE])
        if progress.FILE in after:
            progress.parse(after[progress.FILE])
        return recovered


# --- the harness ------------------------------------------------------------------------------


@dataclass
class Harness:
    root: Path
    writers: dict[str, Writer]
    bank: BankCheck
    validated: dict[str, tuple[int, int]] = field(default_factory=dict)

    def owned(self) -> dict[str, Writer]:
        owners = {}
        for writer in self.writers.values():
            for path in writer.files():
                owners[path.relative_to(self.root).as_posix()] = writer
        return owners

    def reference(self, rounds: int = 2) -> None:
        """Run every writer's cycle `rounds` times, interleaved (op 1 of each writer, then op 2,
        ...: a file that depends on another writer's, the payload of a plan, sees each of its
        versions), recording each file's contents, and one cycle's duration and system calls."""
        counts = _count_calls()
        longest = max(len(w.ops) for w in self.writers.values())
        for _ in range(rounds):
            seconds = dict.fromkeys(self.writers, 0.0)
            calls = dict.fromkeys(self.writers, 0)
            for index in range(longest):
                for name, writer in self.writers.items():
                    if index >= len(writer.ops):
                        continue
                    before = sum(counts.values())
                    started = time.perf_counter()
                    writer.ops[index]()
                    seconds[name] += time.perf_counter() - started
                    calls[name] += sum(counts.values()) - before
                    self._record(writer)
                    if name == "memory bank":
                        self.bank.record()
            for name, writer in self.writers.items():  # the last round: the steady state
                writer.cycle_seconds = seconds[name]
                writer.cycle_calls = calls[name]
        _restore_calls()

    def _record(self, writer: Writer) -> None:
        for path in writer.files():
            writer.legit.setdefault(path.relative_to(self.root).as_posix(), set()).add(
                path.read_bytes()
            )

    def validate(self, trial: int) -> str | None:
        for rel, writer in self.owned().items():
            path = self.root / rel
            stat = path.stat()
            stamp = (stat.st_mtime_ns, stat.st_size)
            if self.validated.get(rel) == stamp:
                continue
            data = path.read_bytes()
            where = f"trial {trial}: {writer.name}: {rel}"
            if writer.exact:
                assert data in writer.legit.get(rel, set()), f"{where}: not a whole state"
            if writer.check is not None:
                try:
                    writer.check(path, data)
                except (AssertionError, ValueError, KeyError) as exc:
                    raise AssertionError(f"{where}: {exc!r}") from exc
            self.validated[rel] = stamp
        recovered = self.bank.check(trial)
        # every reader still works, temporary files and all
        project = Project(self.root)
        assert load_plans(project)
        survival.read_reports(project, limit=3)
        batches.load_batch(project, "crash", "7")
        chan.shared_read(project, "crash", "b1")
        return recovered


_REAL = {name: getattr(os, name) for name in KILL_CALLS}


def _count_calls() -> dict[str, int]:
    counts = dict.fromkeys(KILL_CALLS, 0)
    for name in KILL_CALLS:

        def counted(*args: Any, _n: str = name, **kwargs: Any) -> Any:
            counts[_n] += 1
            return _REAL[_n](*args, **kwargs)

        setattr(os, name, counted)
    return counts


def _restore_calls() -> None:
    for name, real in _REAL.items():
        setattr(os, name, real)


def _kill_at_call(n: int) -> None:
    """In the child: SIGKILL this process just before its n-th write/fsync/replace/rename."""
    seen = [0]
    for name in KILL_CALLS:

        def deadly(*args: Any, _n: str = name, **kwargs: Any) -> Any:
            seen[0] += 1
            if seen[0] == n:
                os.kill(os.getpid(), signal.SIGKILL)
            return _REAL[_n](*args, **kwargs)

        setattr(os, name, deadly)


def _child(writer: Writer, kill_at: int | None, error_file: Path) -> None:
    try:
        if kill_at is not None:
            _kill_at_call(kill_at)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            for op in writer.ops:
                op()
    except BaseException:  # noqa: BLE001 - reported to the parent through a file
        error_file.write_text(traceback.format_exc(), encoding="utf-8")
        os._exit(1)
    os._exit(0)


def crash_many(tmp_path: Path, kills: int, seed: int) -> dict[str, Any]:
    root = tmp_path / "project"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True, timeout=20)
    writers = build_writers(root)
    harness = Harness(root, writers, BankCheck(Project(root)))
    harness.reference()
    harness.validate(-1)
    rng = random.Random(seed)
    error_file = tmp_path / "child-error.txt"
    names = list(writers)
    outcomes: dict[str, Any] = {"killed": 0, "by writer": dict.fromkeys(names, 0), "recovered": 0}
    for trial in range(kills):
        writer = writers[names[trial % len(names)]]
        by_call = trial % 2 == 1
        kill_at = rng.randint(1, max(writer.cycle_calls, 1)) if by_call else None
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child never returns
            _child(writer, kill_at, error_file)
        if not by_call:
            time.sleep(rng.uniform(0, writer.cycle_seconds))
            os.kill(pid, signal.SIGKILL)
        status = _reap(pid, max(2.0, 5 * writer.cycle_seconds))
        assert not error_file.exists(), f"{writer.name}: {error_file.read_text()}"
        killed = os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
        assert killed, f"trial {trial}: {writer.name} exited {status} instead of being killed"
        outcomes["killed"] += 1
        outcomes["by writer"][writer.name] += 1
        outcomes["recovered"] += harness.validate(trial) is not None
    outcomes["temporary files left"] = sum(
        1 for p in root.rglob("*") if ".ctxward-tmp-" in p.name or p.suffix == ".tmp"
    )
    support.count("SIGKILLs (crash harness)", outcomes["killed"])
    support.count("crash harness: bank transactions recovered", outcomes["recovered"])
    support.count("crash harness: temporary files left by a kill", outcomes["temporary files left"])
    return outcomes


def _reap(pid: int, seconds: float) -> int:
    """The child's wait status; one still running after `seconds` is killed first."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        time.sleep(0.0005)
    os.kill(pid, signal.SIGKILL)
    return os.waitpid(pid, 0)[1]


def test_sigkill_every_writer_leaves_whole_files(tmp_path: Path) -> None:
    outcomes = crash_many(tmp_path, kills=52, seed=7)
    assert outcomes["killed"] == 52
    assert all(n >= 4 for n in outcomes["by writer"].values()), outcomes


@pytest.mark.slow
def test_a_thousand_sigkills_leave_whole_files(tmp_path: Path) -> None:
    started = time.monotonic()
    outcomes = crash_many(tmp_path, kills=1000, seed=20260102)
    assert outcomes["killed"] == 1000
    assert all(n >= 1000 // len(outcomes["by writer"]) for n in outcomes["by writer"].values())
    assert time.monotonic() - started < 240, "the harness is meant to run in about a minute"
