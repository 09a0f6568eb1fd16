"""Consensus debates (seed 002 "Consensus Debate"): verdicts from the seed's own examples and
rules, records, filing, and the Stop / SubagentStop hold while a verdict is unfiled."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ctxward.cli import cli
from ctxward.core.project import Project
from ctxward.debate import protocol, store, unfiled
from ctxward.errors import BadInput

T0 = 1_800_000_000_000  # a fixed opening moment, in ms


def opening(layer: str = "spec", **extra: Any) -> dict[str, Any]:
    return {
        "topic": "Network timeout behaviour",
        "layer": layer,
        "participants": [
            {"name": "spec-critic", "role": "attacker"},
            {"name": "spec-proposer", "role": "defender"},
        ],
        **extra,
    }


def turn(position: str, counter: str = "", change: int = -1, **extra: Any) -> dict[str, Any]:
    return {"agent": "x", "position": position, "counter_to": counter, "confidence_change": change}


def rnd(attacker: dict[str, Any], defender: dict[str, Any] | None) -> dict[str, Any]:
    return {"attacker": attacker, "defender": defender}


NO_FURTHER = turn("No further objections. Spec is complete.", "", 0)

# § L1: Spec Debate, the seed's example table, row by row.
SPEC_ROUNDS = [
    rnd(
        turn(
            "Error behaviour is missing.", "You didn't specify error behavior for network timeout"
        ),
        turn("Added: timeout → retry 3x with exponential backoff, then fail with TIMEOUT_ERROR"),
    ),
    rnd(
        turn(
            "Retries may repeat writes.",
            "What about partial writes during retry? Is the operation idempotent?",
        ),
        turn(
            "Spec now requires idempotency key. Each retry reuses the same key. Server "
            "deduplicates."
        ),
    ),
    rnd(NO_FURTHER, None),
]


@pytest.fixture
def proj(project: Path) -> Project:
    return Project(project)


def argue(proj: Project, rounds: list[dict[str, Any]], layer: str = "spec", **extra: Any):
    debate = store.open_debate(proj, opening(layer, **extra), now=T0)
    for index, entry in enumerate(rounds):
        debate = store.add_round(proj, debate["id"], entry, now=T0 + 1000 * (index + 1))
    return debate


# --- verdicts (§ Verdict Semantics, § Convergence Detection) ---------------------------------


def test_the_seeds_spec_debate_reaches_consensus_in_round_3_of_its_3(proj):
    debate = argue(proj, SPEC_ROUNDS)

    assert debate["budget"]["maxRounds"] == 3  # § L1: "Budget: 3 rounds, ~2K tokens/round"
    assert debate["budget"]["maxTokensPerRound"] == 2000
    assert debate["verdict"]["verdict"] == protocol.CONSENSUS_REACHED
    assert debate["verdict"]["round"] == 3
    assert debate["verdict"]["final_position"].startswith("Spec now requires idempotency key")
    assert debate["verdict"]["escalate"] is False


def test_the_seeds_plan_debate_has_the_plan_budget_and_reaches_consensus(proj):
    rounds = [
        rnd(
            turn("Circular dependency.", "Task 2 also reads the output of Task 3."),
            turn("Task 2 only reads Task 3's OUTPUT SCHEMA, not its data."),
        ),
        rnd(
            turn("No rollback.", "Task 4 (DB migration) has no rollback plan."),
            turn("Added Task 4b: migration verification + rollback trigger."),
        ),
        rnd(turn("No further objections. Plan is executable.", "", 0), None),
    ]
    debate = argue(proj, rounds, layer="plan")

    assert (debate["budget"]["maxRounds"], debate["budget"]["maxTokensPerRound"]) == (3, 3000)
    assert debate["verdict"]["verdict"] == protocol.CONSENSUS_REACHED


def test_layer_budgets_and_defaults_are_the_seeds():
    assert protocol.budget_for("verify", None) == {  # § L4: 4 rounds, ~2K tokens/round
        "maxRounds": 4,
        "maxTokensPerRound": 2000,
        "maxWallClockMs": 120_000,  # § ConsensusBudget: "default: 120s"
        "convergenceRounds": 1,  # "(default: 1)"
    }


def test_a_position_that_survives_a_new_counter_unchanged_is_convergence(proj):
    held = turn("Retry 3x with exponential backoff.")
    debate = argue(proj, [rnd(turn("a", "no retry policy"), held)])
    assert debate["verdict"] is None  # one round: nothing to compare with yet

    debate = store.add_round(proj, debate["id"], rnd(turn("b", "what about jitter?"), held), now=T0)

    assert debate["verdict"]["verdict"] == protocol.CONSENSUS_REACHED
    assert "survived 1 round(s) of new counters" in debate["verdict"]["reason"]


def test_a_cosmetic_rewording_is_no_position_change():
    assert protocol.position_hash("Retry 3x, with backoff.") == protocol.position_hash(
        "retry 3x with   BACKOFF"
    )
    assert protocol.position_hash("Retry 3x") != protocol.position_hash("Retry 4x")


def test_neither_side_moving_is_deadlock(proj):
    same = rnd(turn("It must be synchronous.", "Async loses ordering."), turn("Async is fine."))

    debate = argue(proj, [same, same])

    assert debate["verdict"]["verdict"] == protocol.DEADLOCK
    assert debate["verdict"]["escalate"] is True
    assert debate["verdict"]["positions"] == {
        "attacker": "It must be synchronous.",
        "defender": "Async is fine.",
    }


def test_convergence_rounds_2_needs_two_unchanged_rounds(proj):
    same = rnd(turn("It must be synchronous.", "Async loses ordering."), turn("Async is fine."))

    debate = argue(proj, [same, same], budget={"convergenceRounds": 2, "maxRounds": 5})
    assert debate["verdict"] is None  # one unchanged round: one short

    debate = store.add_round(proj, debate["id"], same, now=T0)
    assert debate["verdict"]["verdict"] == protocol.DEADLOCK


def test_an_old_counter_again_is_not_convergence(proj):
    held = turn("Async is fine.")
    rounds = [rnd(turn("a", "ordering"), held), rnd(turn("b", "Ordering!"), held)]

    debate = argue(proj, rounds, budget={"maxRounds": 5})

    assert debate["verdict"] is None  # the attacker moved, but brought nothing new


def test_max_rounds_without_convergence_is_budget_exhausted(proj):
    rounds = [
        rnd(turn(f"objection {n}", f"counter {n}"), turn(f"position {n}")) for n in range(1, 4)
    ]

    debate = argue(proj, rounds)

    assert debate["verdict"]["verdict"] == protocol.BUDGET_EXHAUSTED
    assert debate["verdict"]["reason"] == "3 of maxRounds 3 rounds argued without convergence"
    assert debate["verdict"]["agreed_position"] is None
    assert debate["verdict"]["escalate"] is True


def test_a_turn_over_the_token_budget_is_budget_exhausted(proj):
    long = turn("x" * 8001, "too long")  # 8,001 characters: 2,001 estimated tokens > 2,000

    debate = argue(proj, [rnd(long, None)])

    assert debate["verdict"]["verdict"] == protocol.BUDGET_EXHAUSTED
    assert "2,003 tokens (maxTokensPerRound 2,000)" in debate["verdict"]["reason"]


def test_a_round_past_the_wall_clock_is_timeout(proj):
    debate = store.open_debate(proj, opening(budget={"maxWallClockMs": 5000}), now=T0)
    entry = rnd(turn("late", "late counter"), turn("late position"))

    debate = store.add_round(proj, debate["id"], entry, now=T0 + 5001)

    assert debate["verdict"]["verdict"] == protocol.TIMEOUT


def test_exactly_at_the_wall_clock_is_not_timeout(proj):
    debate = store.open_debate(proj, opening(budget={"maxWallClockMs": 5000}), now=T0)
    entry = rnd(turn("in time", "counter"), turn("position"))

    debate = store.add_round(proj, debate["id"], entry, now=T0 + 5000)

    assert debate["verdict"] is None


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({"topic": "t", "layer": "spec", "participants": []}, "expected 2-16 agents"),
        (
            opening(participants=[{"name": "a", "role": "attacker"}, {"name": "b", "role": "x"}]),
            "expected 'attacker' or 'defender'",
        ),
        (opening(layer="../etc"), "debate.layer"),
        (opening(budget={"maxRounds": 0}), "budget.maxRounds"),
        (opening(budget={"rounds": 3}), "unknown key 'rounds'"),
        ([], "expected a JSON object"),
    ],
)
def test_bad_openings_are_refused_by_name(proj, bad, message):
    with pytest.raises(BadInput, match=message):
        store.open_debate(proj, bad)
    assert not store.debates_dir(proj).exists() or not list(store.debates_dir(proj).iterdir())


def test_a_turn_with_a_confidence_change_out_of_range_is_refused(proj):
    debate = store.open_debate(proj, opening(), now=T0)
    with pytest.raises(BadInput, match="confidence_change: expected -1, 0 or \\+1"):
        store.add_round(proj, debate["id"], rnd(turn("p", "c", 2), None))
    assert store.load_debate(proj, debate["id"])["rounds"] == []


# --- records and filing -----------------------------------------------------------------------


def test_no_round_after_the_verdict_and_close_files_the_page(proj):
    debate = argue(proj, SPEC_ROUNDS)
    with pytest.raises(BadInput, match="has its verdict"):
        store.add_round(proj, debate["id"], SPEC_ROUNDS[0])

    closed = store.close_debate(proj, debate["id"], now=T0 + 9000)

    page = proj.root / "docs/wiki/consensus/spec-network-timeout-behaviour.md"
    assert closed["filed"]["path"] == "docs/wiki/consensus/spec-network-timeout-behaviour.md"
    text = page.read_text(encoding="utf-8")
    assert "verdict: CONSENSUS_REACHED" in text
    assert "## Final position\n\nSpec now requires idempotency key." in text
    assert "then proceed to the next layer" in text


def test_a_deadlock_page_has_both_positions_and_the_analysis(proj):
    same = rnd(turn("It must be synchronous.", "Async loses ordering."), turn("Async is fine."))
    debate = argue(proj, [same, same])

    store.close_debate(proj, debate["id"])

    text = (proj.root / f"docs/wiki/consensus/{debate['id']}.md").read_text(encoding="utf-8")
    assert "- **Attacker:** It must be synchronous.\n- **Defender:** Async is fine." in text
    assert "## Deadlock analysis" in text and "Escalate to a human." in text


def test_closing_an_undecided_debate_is_budget_exhausted_and_filed(proj):
    debate = argue(proj, [rnd(turn("a", "b"), turn("c"))])

    closed = store.close_debate(proj, debate["id"], now=T0 + 2000)

    assert closed["verdict"]["verdict"] == protocol.BUDGET_EXHAUSTED
    assert closed["verdict"]["reason"].startswith("closed by the caller after 1 of 3 rounds")
    page = proj.root / closed["filed"]["path"]
    assert "## Exhaustion analysis" in page.read_text(encoding="utf-8")


def test_closing_past_the_wall_clock_is_timeout(proj):
    debate = argue(proj, [])
    closed = store.close_debate(proj, debate["id"], now=T0 + 120_001)
    assert closed["verdict"]["verdict"] == protocol.TIMEOUT
    assert "## Timeout analysis" in (proj.root / closed["filed"]["path"]).read_text("utf-8")


def test_the_wiki_folder_is_configurable_and_confined(proj):
    (proj.state_dir).mkdir()
    (proj.state_dir / "config.yaml").write_text("debate:\n  wiki_dir: wiki/decisions\n")
    debate = argue(proj, SPEC_ROUNDS)

    closed = store.close_debate(proj, debate["id"])

    assert closed["filed"]["path"] == f"wiki/decisions/{debate['id']}.md"
    (proj.state_dir / "config.yaml").write_text("debate:\n  wiki_dir: ../outside\n")
    with pytest.raises(BadInput, match="must be a relative folder inside the project"):
        store.close_debate(proj, debate["id"])


def test_a_settled_debate_is_not_reopened(proj):
    debate = argue(proj, SPEC_ROUNDS)
    store.close_debate(proj, debate["id"])
    store.record_path(proj, debate["id"]).unlink()

    with pytest.raises(BadInput, match="that debate was settled"):
        store.open_debate(proj, opening())


def test_secrets_in_arguments_are_scrubbed_before_anything_is_written(proj):
    import secrets

    token = "ghp_" + secrets.token_hex(18)  # generated: never a committed secret-shaped literal
    debate = store.open_debate(proj, opening(), now=T0)
    entry = rnd(turn(f"the key {token} leaks", "c"), turn("rotate it"))

    store.add_round(proj, debate["id"], entry, now=T0 + 1)
    store.close_debate(proj, debate["id"])

    record = store.record_path(proj, debate["id"]).read_text(encoding="utf-8")
    page = (proj.root / f"docs/wiki/consensus/{debate['id']}.md").read_text(encoding="utf-8")
    assert token not in record and token not in page
    assert "[REDACTED" in record and "[REDACTED" in page


# --- the CLI ----------------------------------------------------------------------------------


def invoke(project: Path, *args: str, stdin: str | None = None):
    return CliRunner().invoke(cli, ["-C", str(project), *args], input=stdin)


def test_cli_open_round_close_with_json(project):
    opened = invoke(project, "debate", "open", "--json", stdin=json.dumps(opening()))
    assert opened.exit_code == 0, opened.output
    debate_id = json.loads(opened.stdout)["id"]
    assert debate_id == "spec-network-timeout-behaviour"

    for entry in SPEC_ROUNDS:
        done = invoke(project, "debate", "round", debate_id, stdin=json.dumps(entry))
        assert done.exit_code == 0, done.output
    assert "verdict: CONSENSUS_REACHED" in done.stdout
    assert f"next: ctxward debate close {debate_id}" in done.stdout

    listed = invoke(project, "debate", "list", "--json")
    assert json.loads(listed.stdout) == [
        {"id": debate_id, "verdict": "CONSENSUS_REACHED", "rounds": 3, "filed": None}
    ]
    closed = invoke(project, "debate", "close", debate_id, "--json")
    assert closed.exit_code == 0, closed.output
    assert json.loads(closed.stdout)["filed"]["path"] == f"docs/wiki/consensus/{debate_id}.md"


def test_cli_reads_a_file_argument(project, tmp_path):
    path = tmp_path / "opening.json"
    path.write_text(json.dumps(opening(slug="from-file")))
    done = invoke(project, "debate", "open", str(path))
    assert done.exit_code == 0, done.output
    assert done.stdout.startswith("opened debate spec-from-file (spec): Network timeout")


@pytest.mark.parametrize(
    ("args", "stdin", "line"),
    [
        (("debate", "open"), "{not json", "stdin: not JSON"),
        (("debate", "round", "spec-nothing"), "{}", "no debate 'spec-nothing'"),
        (("debate", "close", "../x"), None, "debate id: expected 1-64 characters"),
    ],
)
def test_cli_errors_are_one_line_and_exit_2(project, args, stdin, line):
    done = invoke(project, *args, stdin=stdin)

    assert done.exit_code == 2
    assert done.stderr.count("\n") == 1 and line in done.stderr
    assert "Traceback" not in done.output


def test_cli_json_errors_are_an_envelope(project):
    done = invoke(project, "debate", "open", "--json", stdin="[]")
    assert done.exit_code == 2
    assert json.loads(done.stdout)["ok"] is False


def test_help_has_an_example(project):
    for args in (("debate",), ("debate", "open"), ("debate", "round"), ("debate", "close")):
        done = invoke(project, *args, "--help")
        assert done.exit_code == 0 and "Example:" in done.stdout


# --- the Stop / SubagentStop hold ---------------------------------------------------------------


def stop_payload(load_payload, **extra: Any) -> dict[str, Any]:
    return load_payload("Stop.json", **extra)


def decided(proj: Project) -> dict[str, Any]:
    return argue(proj, SPEC_ROUNDS)


def test_stop_blocks_while_a_verdict_is_unfiled_and_says_how_to_file_it(
    proj, run_hook, load_payload
):
    debate = decided(proj)

    code, out, err = run_hook(stop_payload(load_payload))

    assert (code, err) == (0, "")
    answer = json.loads(out)
    assert answer["decision"] == "block"
    assert f"ctxward debate close {debate['id']}" in answer["reason"]
    assert "not filed to the project wiki" in answer["reason"]


def test_stop_is_quiet_once_filed_and_while_still_arguing(proj, run_hook, load_payload):
    debate = store.open_debate(proj, opening(), now=T0)
    assert run_hook(stop_payload(load_payload)) == (0, "", "")  # no verdict yet

    for entry in SPEC_ROUNDS:
        store.add_round(proj, debate["id"], entry, now=T0 + 1)
    store.close_debate(proj, debate["id"])

    assert run_hook(stop_payload(load_payload)) == (0, "", "")
    assert not unfiled.marker_path(proj, debate["id"]).exists()


def test_stop_never_blocks_under_the_hosts_loop_guard(proj, run_hook, load_payload):
    decided(proj)
    assert run_hook(stop_payload(load_payload, stop_hook_active=True)) == (0, "", "")


def test_stop_blocks_at_most_max_blocks_times_per_debate(proj, run_hook, load_payload):
    decided(proj)
    blocked = [run_hook(stop_payload(load_payload))[1] != "" for _ in range(unfiled.MAX_BLOCKS + 2)]
    assert blocked == [True] * unfiled.MAX_BLOCKS + [False, False]


def test_a_cloned_repositorys_committed_debate_never_blocks(
    proj, run_hook, load_payload, monkeypatch, tmp_path
):
    """A record opened by another user (another key, no marker here) is not this user's."""
    decided(proj)
    record = store.record_path(proj, "spec-network-timeout-behaviour").read_bytes()
    monkeypatch.setenv("HOME", str(tmp_path / "someone-else"))  # this machine's other user

    assert run_hook(stop_payload(load_payload)) == (0, "", "")

    # Even with a marker of their own, a record sealed by another key is refused.
    unfiled.write_marker(proj, "spec-network-timeout-behaviour", T0)
    store.record_path(proj, "spec-network-timeout-behaviour").write_bytes(record)
    assert run_hook(stop_payload(load_payload)) == (0, "", "")


def test_stop_is_quiet_on_our_own_failure(proj, run_hook, load_payload, monkeypatch):
    decided(proj)

    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(unfiled, "holding", broken)

    assert run_hook(stop_payload(load_payload)) == (0, "", "")
    assert list((proj.state_dir / "log").glob("*-stop-debate.log"))


def test_subagent_stop_blocks_a_sub_agent_but_never_the_compaction_agent(
    proj, run_hook, load_payload
):
    decided(proj)

    compaction = run_hook(load_payload("SubagentStop.compaction.json"))
    sub_agent = run_hook(load_payload("SubagentStop.json", last_assistant_message="done"))

    assert compaction == (0, "", "")
    assert json.loads(sub_agent[1])["decision"] == "block"


@pytest.mark.parametrize("plant", ["fifo", "link", "junk"])
def test_a_record_replaced_by_a_fifo_a_link_or_junk_holds_nothing(
    proj, run_hook, load_payload, tmp_path, plant
):
    """A pull may replace a record this user opened: it is read without waiting or following."""
    import os

    debate = decided(proj)
    path = store.record_path(proj, debate["id"])
    path.unlink()
    if plant == "fifo":
        os.mkfifo(path)  # a plain open() would wait for a writer forever
    elif plant == "link":
        target = tmp_path / "elsewhere.json"
        target.write_text(path.parent.joinpath("x").as_posix())
        path.symlink_to(target)
    else:
        path.write_bytes(b"\xff{not json")

    assert run_hook(stop_payload(load_payload)) == (0, "", "")


def test_closing_again_keeps_the_page_and_refiles_a_page_that_is_gone(proj):
    debate = argue(proj, SPEC_ROUNDS)
    first = store.close_debate(proj, debate["id"])
    page = proj.root / first["filed"]["path"]
    page.write_text(page.read_text(encoding="utf-8") + "\nA reviewer's note.\n", encoding="utf-8")

    store.close_debate(proj, debate["id"])
    assert page.read_text(encoding="utf-8").endswith("A reviewer's note.\n")

    page.unlink()
    store.close_debate(proj, debate["id"])
    assert "verdict: CONSENSUS_REACHED" in page.read_text(encoding="utf-8")


def test_a_page_someone_else_wrote_is_never_overwritten(proj):
    debate = argue(proj, SPEC_ROUNDS)
    page = proj.root / f"docs/wiki/consensus/{debate['id']}.md"
    page.parent.mkdir(parents=True)
    page.write_text("their page\n")

    from ctxward.errors import CtxwardError

    with pytest.raises(CtxwardError, match="was not filed by this debate"):
        store.close_debate(proj, debate["id"])
    assert page.read_text() == "their page\n"
