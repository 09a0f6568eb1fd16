"""`ctxward subagent-prompt`: seed 004's G8.6 sub-agent prompt protocol and the G9 self-check."""

from __future__ import annotations

import json
import shlex

from click.testing import CliRunner

from ctxward.cli import cli


def invoke(project, *args: str):
    return CliRunner().invoke(cli, ["-C", str(project), "subagent-prompt", *args])


def test_the_protocol_is_the_seeds_four_steps_in_order(project):
    done = invoke(project, "--role", "rd", "--batch", "003")

    assert done.exit_code == 0, done.output
    text = done.stdout
    assert text.startswith("You are sub-agent role rd, batch 003.\n\nPROTOCOL (mandatory):\n1. ")
    steps = [text.index(f"\n{n}. ") for n in (1, 2, 3, 4)]
    assert steps == sorted(steps)
    # 1. peek at the shared channel on start
    assert (
        "1. On start: peek at the shared channel: `ctxward shared-read --batch 003 --json`" in text
    )
    # 2. a blocker is shared under <role>.found-blocker with a reason
    assert (
        """`ctxward share --batch 003 --key "rd.found-blocker" --value '{"reason": "..."}'`"""
        in text
    )
    # 3. <role>.completed is shared BEFORE the final heartbeat --status done
    completed = text.index('--key "rd.completed"')
    heartbeat = text.index("ctxward heartbeat --batch 003 --role rd --status done")
    assert completed < heartbeat
    assert "BEFORE the final `ctxward heartbeat" in text
    # 4. the shared channel is the only visibility into siblings
    assert "4. The shared channel is your only visibility into sibling sub-agents.\n" in text
    assert "Do NOT attempt to read other sub-agents' dispatch records directly." in text


def test_every_command_the_protocol_names_exists_with_those_options(project):
    text = invoke(project, "--role", "rd", "--batch", "003").stdout
    commands = [
        line.split("`")[1]
        for line in text.splitlines()
        if "`ctxward " in line and "<" not in line.split("`")[1]
    ]
    assert len(commands) >= 4
    for command in commands:
        argv = shlex.split(command)[1:]
        done = CliRunner().invoke(cli, ["-C", str(project), *argv, "--help"])
        assert done.exit_code == 0, (command, done.output)


def test_the_self_check_is_the_g9_table_at_the_capacity_in_force(project):
    text = invoke(project, "--role", "rd", "--batch", "003").stdout

    # Seed 004 G9, 256K capacity: 50% >= 128 KiB, 75% >= 192 KiB, 80% >= 204.8 KiB, 90% >= 230.4.
    assert "  - 50% (soft-warn) from 131,072 bytes:" in text
    assert "  - 75% (near-limit) from 196,608 bytes:" in text and "`CONTEXT_NEAR_LIMIT`" in text
    assert "  - 80% (hard-reject) from 209,716 bytes:" in text and "`PROMPT_TOO_LARGE`" in text
    assert "  - 90% (emergency) from 235,930 bytes:" in text and "`PROMPT_EMERGENCY`" in text
    assert "has no `--force`" in text
    assert "at most 40 lines and under 2 KB" in text


def test_a_lower_configured_capacity_moves_the_thresholds(project):
    (project / ".ctxward").mkdir()
    (project / ".ctxward" / "config.yaml").write_text(
        "dispatch:\n  capacity_bytes: 100000\n  capacity_by_agent: {Explore: 10000}\n"
    )

    text = invoke(project, "--role", "qa", "--batch", "7").stdout
    explore = invoke(project, "--role", "qa", "--batch", "7", "--agent-type", "Explore").stdout

    assert "(100,000 bytes)" in text and "from 80,000 bytes" in text
    assert "(10,000 bytes for Explore)" in explore and "from 9,000 bytes" in explore
    assert "ctxward dispatch check <prompt-file> --agent-type Explore --json" in explore


def test_json_and_protocol_only(project):
    done = invoke(project, "--role", "rd", "--batch", "003", "--session", "s1", "--json")
    data = json.loads(done.stdout)
    assert data["capacityBytes"] == 262_144
    assert data["prompt"].startswith(data["protocol"])
    assert "--session s1" in data["protocol"]

    bare = invoke(project, "--role", "rd", "--batch", "003", "--no-self-check")
    assert "SELF-CHECK" not in bare.stdout and "PROTOCOL (mandatory)" in bare.stdout


def test_an_unsafe_role_is_one_line_and_exit_2(project):
    done = invoke(project, "--role", "../x", "--batch", "003")
    assert done.exit_code == 2
    assert done.stderr.count("\n") == 1 and "role '../x'" in done.stderr


def test_help_has_an_example(project):
    done = invoke(project, "--help")
    assert done.exit_code == 0 and "ctxward subagent-prompt --role rd --batch 003" in done.stdout
