"""Hostile timing: no input makes a hook outlast its host's timeout, where it would be skipped.

A hook the host stops waiting for does not block: Claude Code runs the dispatch the guard did
not answer, and compacts without the rules PreCompact did not print. Each test here feeds the
real `ctxward-hook` process the worst a cloned repository or a session can commit or write: a
4 MB `.ctxward/config.yaml`, a 200,000-rule plan, a 2.4 MB hostile transcript message, 10 MB of
`eyJ` (which made the JWT rule backtrack) as a dispatch prompt and as text for every other hook,
prompts built to make the scrubber's other rules work hardest, and one too slow to scrub at all.

What is asserted, for each: the host's timeout is never reached (the deadline of every run);
the run's CPU time is a bounded multiple of the same hook's normal path, measured in the same
test on an input of the same size and shape (never an absolute time); every oversized dispatch
is denied, or truly shrunk by C9 (an updatedInput under the line, pointing at the stored file);
the good plans' rules still come out of the compaction hooks; no traceback, one stderr line.
"""

from __future__ import annotations

import itertools
import json
import os
import resource
import subprocess
import time
from pathlib import Path
from typing import Any, NamedTuple

import ctxward_hardening as support
import pytest

from ctxward.core.limits import BUDGET_SECONDS, HOST_TIMEOUT_SECONDS
from ctxward.core.project import Project
from ctxward.guard import thresholds
from ctxward.invariants.activate import activate
from ctxward.invariants.read import load_plans

# 1-10 MB hostile inputs through real hook processes: the slow stage (CI) runs them.
pytestmark = pytest.mark.slow

LINE = thresholds.HARD_REJECT.threshold(thresholds.DEFAULT_CAPACITY_BYTES)
MB = 1_000_000
PARAGRAPH = "A short paragraph of a long prompt, well under the 2 KB offload line.\n" * 12
PROSE = "The build failed on the token refresh test; the fix was to rotate the key first. "


_RUN_IDS = itertools.count()


class Run(NamedTuple):
    code: int
    out: str
    err: str
    cpu: float  # user + system seconds of the hook process
    wall: float


def hook(root: Path, payload: dict[str, Any]) -> Run:
    """One `ctxward-hook` process; it fails the test if it outlasts the host's timeout."""
    event = payload["hook_event_name"]
    # Each run is its own compaction: ctxward.events.once takes a repeat of the same payload within
    # seconds for a second wiring's run, and would answer it with nothing.
    payload = {**payload, "prompt_id": f"run-{next(_RUN_IDS)}"}
    timeout = HOST_TIMEOUT_SECONDS[event]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    try:
        done = subprocess.run(
            [str(support.CTXWARD_HOOK)],
            input=json.dumps(payload).encode("utf-8"),
            capture_output=True,
            timeout=timeout,
            env={**os.environ, "CLAUDE_PROJECT_DIR": str(root)},
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{event}: no answer within the host's {timeout} s timeout", pytrace=False)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    run = Run(done.returncode, done.stdout.decode(), done.stderr.decode(), cpu, wall)
    problem = support.hook_problem(run.code, run.out, run.err, event)
    assert problem is None, f"{event}: {problem}"
    support.count("hostile timing runs")
    return run


def normal(root: Path, payload: dict[str, Any], runs: int = 3) -> Run:
    """The same hook's normal path: the quickest of `runs`."""
    return min((hook(root, payload) for _ in range(runs)), key=lambda run: run.cpu)


def within(hostile: Run, usual: Run, ratio: float, what: str) -> None:
    times = hostile.cpu / max(usual.cpu, 1e-3)
    print(f"{what}: {times:.2f}x the normal path ({hostile.cpu:.2f} s / {usual.cpu:.2f} s CPU)")
    assert times <= ratio, (
        f"{what}: {hostile.cpu:.2f} s of CPU, {times:.1f}x the normal path's {usual.cpu:.2f} s "
        f"(at most {ratio}x)"
    )


def dispatch(root: Path, prompt: str) -> dict[str, Any]:
    tool_input = {"description": "review", "prompt": prompt, "subagent_type": "general-purpose"}
    return support.captured("PreToolUse.json", root, tool_name="Agent", tool_input=tool_input)


def decision(run: Run) -> tuple[str | None, dict[str, Any] | None, str]:
    """(permissionDecision, updatedInput, reason) of a PreToolUse answer."""
    specific = json.loads(run.out).get("hookSpecificOutput", {}) if run.out.strip() else {}
    return (
        specific.get("permissionDecision"),
        specific.get("updatedInput"),
        specific.get("permissionDecisionReason", ""),
    )


def assert_denied(run: Run, why: str = "") -> None:
    verdict, _, reason = decision(run)
    assert (run.code, verdict) == (0, "deny"), run
    assert why in reason, reason[:500]


def assert_denied_or_shrunk(run: Run) -> None:
    """Denied, or C9 moved the bulk to a file: the input that goes is under the line and its
    pointer names a stored file holding the moved text (test_no_bypass's definition)."""
    verdict, updated, _ = decision(run)
    assert run.code == 0 and verdict in ("deny", "allow"), run
    if verdict == "allow":
        assert updated is not None, "allowed as is"
        assert len(json.dumps(updated).encode()) < LINE
        path = updated["prompt"].split(" moved to ", 1)[1].split(" (sha256 ", 1)[0]
        digest = updated["prompt"].split("(sha256 ", 1)[1].split(")", 1)[0]
        assert support.sha256(Path(path).read_bytes()) == digest


def paragraphs(unit: str, size: int) -> str:
    """`size` bytes of paragraphs of `unit` under 2 KB each: nothing C9 can move."""
    paragraph = (unit * (900 // len(unit)) + "\n\n")[:902]
    return (paragraph * (size // len(paragraph) + 1))[:size]


def block(unit: str, size: int) -> str:
    return (unit * (size // len(unit) + 1))[:size]


# --- the dispatch guard -------------------------------------------------------------------------


def big_config(size: int) -> str:
    """`size` bytes of the YAML slowest to load per byte: a flow list of one-item lists (at
    4 MB: 15 s to load; a flat list 10 s, keyword entries 5 s)."""
    items = (size - 30) // 5
    return "scoring:\n  ignore: [" + ", ".join(["[0]"] * items) + "]\n"


def test_a_committed_4mb_config_denies_every_dispatch_in_time(project: Path) -> None:
    oversized = dispatch(project, paragraphs("filler words of a prompt ", 240_000))
    small = dispatch(project, "Review the diff and reply with the findings.")
    usual = normal(project, oversized)
    assert_denied(usual, "PROMPT_EMERGENCY")

    config = project / ".ctxward" / "config.yaml"
    config.parent.mkdir(exist_ok=True)
    config.write_text(big_config(4 * 1024 * 1024), encoding="utf-8")

    refused = ".ctxward/config.yaml: refused: larger than 65,536 bytes"
    for payload in (oversized, small):
        run = hook(project, payload)
        assert_denied(run, refused)
        within(run, usual, 3, "a dispatch under a 4 MB config")


def test_every_other_hook_refuses_the_4mb_config_in_one_line_in_time(project: Path) -> None:
    activate(Project(project), "deep-review", "good")
    payloads = {
        "PreCompact": support.captured("PreCompact.json", project),
        "SessionStart": support.captured("SessionStart.compact.json", project),
        "PostCompact": support.captured("PostCompact.json", project),
    }
    usual = {event: normal(project, payload) for event, payload in payloads.items()}
    config = project / ".ctxward" / "config.yaml"
    config.write_text(big_config(4 * 1024 * 1024), encoding="utf-8")
    refused = ".ctxward/config.yaml: refused: larger than 65,536 bytes"

    for event, payload in payloads.items():
        run = hook(project, payload)
        assert run.err == f"ctxward: {event}: {refused} (a config is a few lines)\n"
        within(run, usual[event], 3, f"{event} under a 4 MB config")


@pytest.mark.parametrize("shape", ["paragraphs", "paragraphs and a block", "one block"])
def test_a_10mb_eyj_prompt_is_decided_in_time(project: Path, shape: str) -> None:
    """`eyJ` repeated made the JWT rule scan 8 KB from each `eyJ` when C9 scrubbed the block it
    moves (1 MB: 15 s); paragraphs are the shape nothing can move, so it is denied as is."""

    def prompt(unit: str) -> str:
        if shape == "paragraphs":
            return paragraphs(unit, 10 * MB)
        if shape == "paragraphs and a block":  # the kept part alone is over the line
            return paragraphs(unit, 300_000) + "\n\n" + block(unit, 10 * MB - 300_002)
        return "Review this log.\n\n" + block(unit, 10 * MB)

    usual = normal(project, dispatch(project, prompt(PROSE)), runs=2)
    run = hook(project, dispatch(project, prompt("eyJ")))

    if shape == "one block":
        assert_denied_or_shrunk(run)
    else:
        assert_denied(run, "PROMPT_EMERGENCY")
    within(run, usual, 3, f"10 MB of eyJ as {shape}")


@pytest.mark.parametrize(
    "unit", ["-" * 90 + " ", 'token="', "-u=", "--passpass", "x" * 60 + "token: "]
)
def test_a_prompt_built_to_slow_the_scrubber_is_decided_in_time(project: Path, unit: str) -> None:
    """A 1 MB block (scrubbed as C9 moves it) of the units that cost the scrubber's rules most,
    beside paragraphs over the line: the dispatch is denied, at a bounded multiple of prose."""

    def prompt(text: str) -> str:
        return paragraphs(PROSE, 300_000) + "\n\n" + block(text, MB)

    usual = normal(project, dispatch(project, prompt(PROSE)), runs=2)
    run = hook(project, dispatch(project, prompt(unit)))

    assert_denied(run, "PROMPT_EMERGENCY")
    within(run, usual, 15, f"1 MB of {unit[:20]!r}")


def test_a_prompt_too_slow_to_scrub_is_decided_within_the_budget(project: Path) -> None:
    """10 MB of the secret-dense shape, one block: scrubbing it as C9 moves it costs more than
    the budget today (~1.4 s a MB), so the watchdog denies the dispatch, well within the host's
    timeout, rather than let it through. A scrubber fast enough shrinks it instead."""
    run = hook(project, dispatch(project, "Review this log.\n\n" + block('token="', 10 * MB)))

    assert_denied_or_shrunk(run)
    budget = BUDGET_SECONDS["PreToolUse"]
    if decision(run)[0] == "deny":
        assert_denied(run, f"ran past its {budget:g} s budget")
        assert run.err == f"ctxward: PreToolUse: ran past its {budget:g} s budget; gave up\n"


# --- the compaction hooks -----------------------------------------------------------------------


def good_plans(root: Path) -> list[str]:
    activate(Project(root), "deep-review", "good-one")
    activate(Project(root), "deep-plan", "good-two")
    return [rule for plan in load_plans(Project(root)) for s in plan.sections for rule in s.rules]


def test_a_200000_rule_plan_costs_only_itself(project: Path) -> None:
    rules = good_plans(project)
    payloads = {
        "PreCompact": support.captured("PreCompact.json", project),
        # No session id: no ledger, so every run states every rule (ctxward.invariants.ledger; one
        # session's repeated SessionStart would state each rule once).
        "SessionStart": support.captured("SessionStart.compact.json", project, session_id=""),
        "PostCompact": support.captured(
            "PostCompact.json", project, compact_summary="\n".join(rules[::2])
        ),
    }
    usual = {event: normal(project, payload) for event, payload in payloads.items()}
    huge = project / "docs" / "plans" / "huge"
    huge.mkdir()
    lines = "".join(f"- rule {i} of a plan nobody wrote here\n" for i in range(200_000))
    (huge / "invariants.md").write_text(f"# Plan\n\n## big\n\n### Rules\n\n{lines}")
    named = "docs/plans/huge/invariants.md: cannot read: larger than 262,144 bytes"

    for event, payload in payloads.items():
        run = hook(project, payload)
        within(run, usual[event], 3, f"{event} beside a 200,000-rule plan")
        if event == "PreCompact":
            text = run.out
        elif event == "SessionStart":
            text = json.loads(run.out)["hookSpecificOutput"]["additionalContext"]
        else:
            (report,) = sorted((project / ".ctxward" / "compactions").glob("*.json"))[-1:]
            text = report.read_text()
            assert "nobody wrote here" not in text
            continue
        assert all(rule in text for rule in rules), event
        assert named in text, event


def transcript(root: Path, hostile: str | None) -> Path:
    def record(role: str, text: str, n: int) -> str:
        content = [{"type": "text", "text": text}] if role == "assistant" else text
        return json.dumps(
            {
                "type": role,
                "sessionId": "7de73c29-a9cd-4608-aa26-55358a7f7df9",
                "uuid": f"u{n}",
                "timestamp": f"2026-01-02T03:04:{n:02d}Z",
                "message": {"role": role, "content": content},
            }
        )

    messages = [
        ("user", "Let's go with SQLite because it needs no server. TODO: write the migration."),
        ("assistant", "Decided: SQLite. The fix was to close the cursor before the commit."),
    ]
    if hostile is not None:
        messages.insert(1, ("user", hostile))
    path = root / "transcript.jsonl"
    lines = (record(role, text, n) for n, (role, text) in enumerate(messages))
    path.write_text("\n".join(lines) + "\n")
    return path


HOSTILE_MESSAGE = (
    "eyJ" * 100 + " i am a a a a a a. " + "The fix was to retry. TODO: x; " + "--" * 40 + " "
)


@pytest.mark.parametrize("lines", ["one line", "many lines"])
def test_a_hostile_transcript_message_leaves_the_rules_in_time(project: Path, lines: str) -> None:
    """A 2.4 MB message made PreCompact take 32.6 s (past its 30 s): no rules that time."""
    rules = good_plans(project)
    sep = "\n" if lines == "many lines" else ""
    message = (HOSTILE_MESSAGE + sep) * (2_400_000 // (len(HOSTILE_MESSAGE) + len(sep)))
    payloads = [
        support.captured("PreCompact.json", project),
        support.captured("SessionEnd.json", project),
    ]
    transcript(project, None)
    usual = [normal(project, payload) for payload in payloads]
    transcript(project, message)

    for payload, before in zip(payloads, usual, strict=True):
        run = hook(project, payload)
        within(run, before, 3, f"{payload['hook_event_name']} on a 2.4 MB message ({lines})")
        assert run.code == 0 and run.err == "", run
        if payload["hook_event_name"] == "PreCompact":
            assert all(rule in run.out for rule in rules)
    summaries = list((project / ".ctxward" / "sessions").glob("*.yaml"))
    assert summaries and "SQLite" in summaries[0].read_text()


def texts_elsewhere(root: Path, text: str) -> list[dict[str, Any]]:
    """Every other hook with `text` where its payload carries text."""
    return [
        support.captured("SubagentStop.json", root, last_assistant_message=text),
        support.captured("PostCompact.json", root, compact_summary=text),
        support.captured("UserPromptSubmit.json", root, prompt=text),
        support.captured(
            "PostToolUse.json",
            root,
            tool_response={"stdout": text, "stderr": "", "interrupted": False},
        ),
    ]


@pytest.mark.parametrize("unit", ["eyJ", "<analysis>"])
def test_10mb_of_it_as_text_for_every_other_hook_is_handled_in_time(
    project: Path, unit: str
) -> None:
    """`<analysis>` unclosed, over and over, made PostCompact's summary regex quadratic."""
    good_plans(project)
    usual = [
        normal(project, payload, runs=2)
        for payload in texts_elsewhere(project, block(PROSE, 10 * MB))
    ]

    for payload, before in zip(texts_elsewhere(project, block(unit, 10 * MB)), usual, strict=True):
        run = hook(project, payload)
        within(run, before, 3, f"{payload['hook_event_name']} with 10 MB of {unit}")
