"""Replay over generated Claude Code transcripts: every planted stuck pattern is found where it
was planted, and a clean session of 500 varied calls reports nothing."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ctxward.cli import cli
from ctxward.core.project import Project
from ctxward.drift import log as drift_log
from ctxward.drift import machine, signatures

ROOT = "/home/dev/project"
SESSION = "5e55a1e0-0000-4000-8000-000000000001"


class Transcript:
    """Writes records the way Claude Code 2.1.x does: one assistant line per content block
    (lines of one response share message.id), tool results in user lines."""

    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []
        self.calls = 0  # tool calls so far (the `call` number drift reports)
        self._ids = 0

    def _envelope(self, kind: str, message: dict[str, Any]) -> dict[str, Any]:
        self._ids += 1
        return {
            "type": kind,
            "uuid": f"u{self._ids}",
            "sessionId": SESSION,
            "timestamp": f"2026-11-30T10:{self._ids // 60 % 60:02d}:{self._ids % 60:02d}.000Z",
            "isSidechain": False,
            "cwd": ROOT,
            "message": message,
        }

    def text(self, words: str) -> None:
        self._ids += 1
        message = {"id": f"msg{self._ids}", "role": "assistant", "content": []}
        message["content"] = [{"type": "text", "text": words}]
        self.records.append(self._envelope("assistant", message))

    def call(self, name: str, params: dict[str, Any], ok: bool = True) -> int:
        """One response with one tool_use, then its result; returns the call's number."""
        self._ids += 1
        tool_id = f"toolu_{self._ids:06d}"
        use = {"type": "tool_use", "id": tool_id, "name": name, "input": params}
        message = {"id": f"msg{self._ids}", "role": "assistant", "content": [use]}
        self.records.append(self._envelope("assistant", message))
        result: dict[str, Any] = {"type": "tool_result", "tool_use_id": tool_id, "content": "out"}
        if not ok:
            result["is_error"] = True
            result["content"] = "Exit code 1"
        self.records.append(self._envelope("user", {"role": "user", "content": [result]}))
        self.calls += 1
        return self.calls

    def write(self, path: Path) -> Path:
        lines = [json.dumps(record) for record in self.records]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return path


# --- a clean session: varied work, no stuck pattern -------------------------------------------


def clean_task(t: Transcript, rng: random.Random, k: int) -> None:
    """One small piece of work on module k: a few looks, one or two edits, a test run, words."""
    module, test = f"{ROOT}/src/mod{k}.py", f"{ROOT}/tests/test_mod{k}.py"
    t.text(f"Next: module {k}.")
    looks = rng.sample(
        [
            ("Read", {"file_path": module}),
            ("Grep", {"pattern": f"def handler_{k}", "path": "src"}),
            ("Glob", {"pattern": f"src/**/mod{k}*.py"}),
            ("Bash", {"command": f"git log --oneline -3 -- src/mod{k}.py"}),
        ],
        rng.randint(1, 3),
    )
    for name, params in looks:
        t.call(name, params)
    t.call("Edit", {"file_path": module, "old_string": f"old{k}", "new_string": f"new{k}"})
    if rng.random() < 0.5:
        t.call("Read", {"file_path": test})
        t.call("Write", {"file_path": test, "content": f"def test_{k}(): pass\n"})
    if rng.random() < 0.15:  # a red run, a look at the code, a fix and a green run
        t.call("Bash", {"command": f"pytest -q tests/test_mod{k}.py -k first"}, ok=False)
        t.call("Read", {"file_path": module})  # (Edit/Bash by turns six times is tool cycling)
        t.call("Edit", {"file_path": module, "old_string": f"new{k}", "new_string": f"fix{k}"})
    t.call("Bash", {"command": f"pytest -q tests/test_mod{k}.py"})
    if rng.random() < 0.3:
        t.call("WebFetch", {"url": f"https://docs.example.com/page{k}"})


def clean_session(calls: int, seed: int = 2) -> Transcript:
    rng = random.Random(seed)
    t = Transcript()
    k = 0
    while t.calls < calls:
        clean_task(t, rng, k)
        k += 1
    return t


def reports(path: Path, project: Path) -> list[dict[str, Any]]:
    return drift_log.analyze_transcript(Project(project), path)["firings"]


def test_a_clean_session_of_500_varied_calls_reports_nothing(tmp_path, project):
    t = clean_session(500)
    path = t.write(tmp_path / "clean.jsonl")
    result = drift_log.analyze_transcript(Project(project), path)
    assert result["calls"] >= 500
    assert result["firings"] == []
    assert result["failures"] > 5  # the session is not trivially green
    lines = path.read_text(encoding="utf-8").splitlines()
    tools = {json.loads(line)["message"]["content"][0].get("name") for line in lines}
    assert {"Read", "Grep", "Glob", "Edit", "Write", "Bash", "WebFetch"} <= tools


# --- planted patterns ---------------------------------------------------------------------------


def plant_repetition(t: Transcript, k: int) -> Iterator[int]:
    for _ in range(3):
        yield t.call("Bash", {"command": f"npm test -- --grep flaky{k}", "description": "run"})


def plant_failure_spiral(t: Transcript, k: int) -> Iterator[int]:
    for n in range(4):
        yield t.call("Bash", {"command": f"make build-{k}-{n}"}, ok=False)


def plant_tool_cycling(t: Transcript, k: int) -> Iterator[int]:
    for n in range(3):
        yield t.call("Bash", {"command": f"pytest -k case{k}_{n}"})
        yield t.call("WebFetch", {"url": f"https://ci.example.com/{k}/{n}"})


def plant_rework_churn(t: Transcript, k: int) -> Iterator[int]:
    target = f"{ROOT}/src/churn{k}.py"
    yield t.call("Write", {"file_path": target, "content": "v1"})
    yield t.call("Read", {"file_path": f"{ROOT}/src/other{k}.py"})
    yield t.call("Write", {"file_path": target, "content": "v2"})
    yield t.call("Bash", {"command": f"python -m churn{k}"})
    yield t.call("Write", {"file_path": target, "content": "v3"})


def plant_excessive_searching(t: Transcript, k: int) -> Iterator[int]:
    yield t.call("Grep", {"pattern": f"needle{k}"})
    yield t.call("Glob", {"pattern": f"**/*{k}*"})
    yield t.call("Bash", {"command": f"find . -name '*{k}*'"})
    yield t.call("Read", {"file_path": f"{ROOT}/lib/a{k}.py"})  # a read: not a search (seed 002)
    yield t.call("Bash", {"command": f"grep -rn needle{k} lib | head -5"})
    yield t.call("Bash", {"command": f"ls -la lib/{k}"})


def plant_silence(t: Transcript, k: int) -> Iterator[int]:
    for n in range(15):
        if n % 3 == 2:  # not Bash/Edit by turns: that would be tool cycling too
            yield t.call(
                "Edit", {"file_path": f"{ROOT}/s{k}_{n}.py", "old_string": "a", "new_string": "b"}
            )
        else:
            yield t.call("Bash", {"command": f"python step_{k}_{n}.py"})


PLANTERS = {
    "repetition": plant_repetition,
    "failure_spiral": plant_failure_spiral,
    "tool_cycling": plant_tool_cycling,
    "rework_churn": plant_rework_churn,
    "excessive_searching": plant_excessive_searching,
    "silence": plant_silence,
}


def settle(t: Transcript, rng: random.Random, k: int) -> None:
    """Clean work after a planted pattern: long enough for every window to move past it."""
    t.call("Edit", {"file_path": f"{ROOT}/settle{k}.py", "old_string": "x", "new_string": "y"})
    for n in range(12):
        clean_task(t, rng, 1000 * k + n)


@pytest.mark.parametrize("seed", [1, 7, 42])
def test_every_planted_pattern_is_found_where_it_was_planted(tmp_path, project, seed):
    rng = random.Random(seed)
    t = clean_session(40, seed)
    order = list(PLANTERS) * 2  # each twice: found again once it has cleared
    rng.shuffle(order)
    planted: list[tuple[str, int, int]] = []
    for k, signature in enumerate(order):
        t.call("Edit", {"file_path": f"{ROOT}/reset{k}.py", "old_string": "a", "new_string": "b"})
        t.text("Trying something.")
        numbers = list(PLANTERS[signature](t, k))
        planted.append((signature, numbers[0], numbers[-1]))
        t.text("Done with that.")
        settle(t, rng, k + 1)
    found = reports(t.write(tmp_path / "planted.jsonl"), project)

    for signature, first, last in planted:
        hits = [r for r in found if r["signature"] == signature and first <= r["call"] <= last]
        assert hits, f"{signature} planted at calls {first}..{last} was not found: {found}"
    inside = [r for r in found if any(first <= r["call"] <= last for _, first, last in planted)]
    assert inside == found, "a report outside every planted span (a false positive)"
    assert sorted(r["signature"] for r in found) == sorted(order)  # each exactly once per plant


def test_the_exact_call_each_planted_pattern_is_reported_at(tmp_path, project):
    t = Transcript()
    t.text("start")
    expected = {}
    for k, (signature, plant) in enumerate(PLANTERS.items()):
        t.call("Edit", {"file_path": f"{ROOT}/reset{k}.py", "old_string": "a", "new_string": "b"})
        t.text("next")
        numbers = list(plant(t, k))
        expected[signature] = numbers[-1]  # each one completes with its last call
        t.text("done")
        settle(t, random.Random(k), k + 1)
    found = {r["signature"]: r for r in reports(t.write(tmp_path / "t.jsonl"), project)}
    assert {name: r["call"] for name, r in found.items()} == expected
    assert found["repetition"]["label"] == "npm test -- --grep flaky0"
    assert found["rework_churn"]["evidence"] == {
        "file": "src/churn3.py",
        "writes": 3,
        "window": 10,
    }
    assert found["silence"]["evidence"] == {"calls": 15}
    assert found["failure_spiral"]["time"].startswith("2026-11-30T10:")


def test_the_cli_reads_a_transcript(tmp_path, project):
    t = Transcript()
    list(plant_failure_spiral(t, 0))
    path = t.write(tmp_path / "spiral.jsonl")
    result = CliRunner().invoke(cli, ["-C", str(project), "drift", str(path), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert (data["source"], data["session"], data["calls"], data["failures"]) == (
        "transcript",
        SESSION,
        4,
        4,
    )
    assert [f["signature"] for f in data["firings"]] == ["failure_spiral"]
    text = CliRunner().invoke(cli, ["-C", str(project), "drift", str(path)])
    assert text.exit_code == 0
    assert text.output.splitlines()[1:] == [
        "4 tool calls observed, 4 failed; 1 signature report; holding now: failure_spiral",
        "  call 4 (2026-11-30T10:00:12.000Z): failure spiral: the last 4 tool calls failed in a "
        "row (Bash ×4), the latest `make build-0-3`",
    ]


@pytest.mark.slow  # a long session
def test_a_transcript_read_is_bounded_by_the_window_not_the_session(tmp_path, project):
    """100,000 calls: the tracker's state is the same size as after 100."""
    t = clean_session(100)
    small = machine.Tracker()
    for n in range(100_000):
        small.observe(signatures.entry("Bash", {"command": f"echo {n}"}, True, f"id{n}"))
    assert len(json.dumps(small.to_json())) < 4_000
    assert reports(t.write(tmp_path / "small.jsonl"), project) == []
