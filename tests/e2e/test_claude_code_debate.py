"""Debate filing on the real Claude Code CLI: a turn does not end while a debate's verdict is
unfiled, and the Stop hook's reason reaches the model (seed 002, "Wiki Filing Rule").

A debate is opened and argued to CONSENSUS_REACHED with the `ctxward debate` CLI, in the same
scratch HOME as the CLI runs (its marker and seal are this user's), then:

1. `claude -p "hello"`: the model answers, Stop fires, ctxward blocks with its reason; the CLI
   sends the model one more request carrying the reason; the model answers again; Stop fires
   with `stop_hook_active` true and ctxward lets the turn end (the loop guard).
2. `ctxward debate close`: the verdict is filed to docs/wiki/consensus/.
3. `claude -p "hello again"`: one request, nothing held.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.e2e

DEBATE = "spec-retry-policy"
OPENING = {
    "topic": "Retry policy",
    "layer": "spec",
    "participants": [
        {"name": "spec-critic", "role": "attacker"},
        {"name": "spec-proposer", "role": "defender"},
    ],
}
ROUNDS = [
    {
        "attacker": {
            "agent": "spec-critic",
            "position": "Timeouts are unspecified.",
            "counter_to": "You didn't specify error behavior for network timeout",
            "confidence_change": -1,
        },
        "defender": {
            "agent": "spec-proposer",
            "position": "Timeout: retry 3x with exponential backoff, then TIMEOUT_ERROR.",
            "confidence_change": 1,
        },
    },
    {
        "attacker": {
            "agent": "spec-critic",
            "position": "No further objections. Spec is complete.",
            "counter_to": "",
            "confidence_change": 0,
        },
        "defender": None,
    },
]


@dataclass(frozen=True)
class Turn:
    result: dict[str, Any]
    requests: list[Any]  # harness.Request


def ctxward(sandbox: Any, project: Path, *args: str, stdin: Any = None) -> str:
    command = [str(Path(sys.executable).with_name("ctxward")), "-C", str(project), *args]
    if stdin is not None:
        source = project / "debate-input.json"
        source.write_text(json.dumps(stdin), encoding="utf-8")
        command.append(str(source))
    done = sandbox.run(command, cwd=project)
    assert done.returncode == 0, done.stderr
    return done.stdout


def prompt(sandbox: Any, project: Path, text: str) -> Turn:
    before = len(sandbox.requests())
    done = sandbox.claude("-p", text, "--output-format", "json", cwd=project)
    return Turn(done.result(), sandbox.requests()[before:])


def all_text(request: Any) -> str:
    harness = sys.modules["e2e_harness"]
    return "\n".join(harness.message_text(message) for message in request.messages)


@pytest.fixture(scope="module")
def runs(sandbox: Any, project: Path) -> dict[str, Any]:
    ctxward(sandbox, project, "debate", "open", stdin=OPENING)
    for entry in ROUNDS:
        ctxward(sandbox, project, "debate", "round", DEBATE, stdin=entry)
    held = prompt(sandbox, project, "hello")
    listed_before = json.loads(ctxward(sandbox, project, "debate", "list", "--json"))
    ctxward(sandbox, project, "debate", "close", DEBATE)
    free = prompt(sandbox, project, "hello again")
    return {"held": held, "free": free, "listed_before": listed_before}


def test_the_debate_had_its_verdict_and_no_page_before_the_turn(runs):
    assert runs["listed_before"] == [
        {"id": DEBATE, "verdict": "CONSENSUS_REACHED", "rounds": 2, "filed": None}
    ]


def test_stop_holds_the_turn_once_and_the_reason_reaches_the_model(runs):
    requests = runs["held"].requests
    assert len(requests) == 2, [r.reply for r in requests]
    first, second = (all_text(r) for r in requests)
    assert f"ctxward debate close {DEBATE}" not in first
    assert f"ctxward debate close {DEBATE}" in second, second[-2000:]
    assert "not filed to the project wiki yet" in second
    # Claude Code 2.1.332 hands the reason to the model as a user message, "Stop hook
    # feedback:" then the reason, inside a <system-reminder> that tells the model to follow it.
    feedback = [t for t in requests[1].texts("user") if "Stop hook feedback:\n" in t]
    assert len(feedback) == 1, requests[1].texts("user")
    reason = feedback[0].split("Stop hook feedback:\n", 1)[1]
    assert reason.startswith(f"ctxward: the verdict of debate {DEBATE} is not filed")
    assert f"  ctxward debate close {DEBATE}    # CONSENSUS_REACHED" in reason


def test_once_filed_the_turn_ends_at_once(runs, project):
    assert len(runs["free"].requests) == 1
    assert f"ctxward debate close {DEBATE}" not in all_text(runs["free"].requests[0])
    page = project / "docs" / "wiki" / "consensus" / f"{DEBATE}.md"
    assert "verdict: CONSENSUS_REACHED" in page.read_text(encoding="utf-8")
