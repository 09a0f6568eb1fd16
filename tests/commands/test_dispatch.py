"""The CLI layer: `ctxward dispatch check` (with --force) and `ctxward thresholds`."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest
from click.testing import CliRunner

from ctxward.cli import cli, main
from ctxward.guard.thresholds import DEFAULT_CAPACITY_BYTES, TIERS

LINE = {tier.name: tier.threshold(DEFAULT_CAPACITY_BYTES) for tier in TIERS}
KEYS = {
    "ok",
    "tier",
    "code",
    "warnings",
    "sizeBytes",
    "capacityBytes",
    "thresholdBytes",
    "forced",
    "forcedAt",
}


@pytest.fixture
def invoke(project):
    def run(*args: str, stdin: bytes | str | None = None):
        return CliRunner().invoke(cli, ["-C", str(project), *args], input=stdin)

    return run


@pytest.fixture
def prompt_file(tmp_path):
    """`prompt_file(size)`: a UTF-8 file of exactly `size` bytes."""

    def make(size: int, char: str = "x"):
        path = tmp_path / f"prompt-{size}.md"
        width = len(char.encode())
        path.write_bytes((char * (size // width) + "y" * (size % width)).encode())
        return path

    return make


@pytest.mark.parametrize(
    ("size", "tier", "ok", "code", "warnings"),
    [
        (1, "ok", True, None, []),
        (LINE["soft-warn"], "soft-warn", True, None, []),
        (LINE["near-limit"], "near-limit", True, None, ["CONTEXT_NEAR_LIMIT"]),
        (LINE["hard-reject"] - 1, "near-limit", True, None, ["CONTEXT_NEAR_LIMIT"]),
        (LINE["hard-reject"], "hard-reject", False, "PROMPT_TOO_LARGE", []),
        (LINE["emergency"], "emergency", False, "PROMPT_EMERGENCY", []),
    ],
)
def test_check_json_envelope_and_exit_code(invoke, prompt_file, size, tier, ok, code, warnings):
    result = invoke("dispatch", "check", str(prompt_file(size)), "--json")

    envelope = json.loads(result.stdout)
    assert set(envelope) == KEYS
    assert envelope == {
        "ok": ok,
        "tier": tier,
        "code": code,
        "warnings": warnings,
        "sizeBytes": size,
        "capacityBytes": DEFAULT_CAPACITY_BYTES,
        "thresholdBytes": LINE[tier] if tier != "ok" else 0,
        "forced": False,
        "forcedAt": None,
    }
    assert result.exit_code == (0 if ok else 3)


def test_size_is_utf8_bytes(invoke, prompt_file):
    path = prompt_file(LINE["soft-warn"], char="é")  # 2 bytes each
    result = invoke("dispatch", "check", str(path), "--json")

    assert json.loads(result.stdout)["sizeBytes"] == LINE["soft-warn"]
    assert json.loads(result.stdout)["tier"] == "soft-warn"


def test_force_lets_a_hard_reject_through_and_records_when(invoke, prompt_file):
    before = datetime.now(timezone.utc).replace(microsecond=0)
    result = invoke("dispatch", "check", str(prompt_file(LINE["hard-reject"])), "--force", "--json")

    envelope = json.loads(result.stdout)
    assert result.exit_code == 0
    assert envelope["ok"] is True and envelope["forced"] is True
    assert envelope["warnings"] == ["FORCED_OVER_THRESHOLD"]
    assert envelope["tier"] == "hard-reject" and envelope["code"] is None
    stamp = envelope["forcedAt"]
    assert stamp.endswith("Z")
    assert before <= datetime.fromisoformat(stamp.replace("Z", "+00:00"))


@pytest.mark.parametrize("size", [LINE["emergency"], LINE["emergency"] + 1, 10**6])
def test_force_is_still_rejected_at_emergency(invoke, prompt_file, size):
    result = invoke("dispatch", "check", str(prompt_file(size)), "--force", "--json")

    envelope = json.loads(result.stdout)
    assert result.exit_code == 3
    assert (envelope["ok"], envelope["code"], envelope["forced"]) == (
        False,
        "PROMPT_EMERGENCY",
        False,
    )
    assert envelope["forcedAt"] is None


def test_force_below_the_line_is_not_recorded(invoke, prompt_file):
    result = invoke("dispatch", "check", str(prompt_file(100)), "--force", "--json")

    assert json.loads(result.stdout)["forced"] is False
    assert result.exit_code == 0


@pytest.mark.parametrize(
    ("size", "force", "line", "exit_code"),
    [
        (10_240, False, "ok: 10,240 bytes, 3.9% of 262,144 (tier ok); soft-warn from 131,072 "
         "bytes, rejected from 209,716 bytes", 0),
        (200_000, False, "ok: 200,000 bytes, 76.3% of 262,144 (tier near-limit, "
         "CONTEXT_NEAR_LIMIT); hard-reject from 209,716 bytes", 0),
        (215_000, False, "rejected: PROMPT_TOO_LARGE: 215,000 bytes, 82.0% of 262,144 (tier "
         "hard-reject from 209,716 bytes); --force lets this tier through", 3),
        (240_000, True, "rejected: PROMPT_EMERGENCY: 240,000 bytes, 91.6% of 262,144 (tier "
         "emergency from 235,930 bytes); --force cannot pass this tier (it was given)", 3),
    ],
)  # fmt: skip
def test_check_prints_one_human_line(invoke, prompt_file, size, force, line, exit_code):
    args = ["dispatch", "check", str(prompt_file(size))] + (["--force"] if force else [])
    result = invoke(*args)

    assert result.output == line + "\n"
    assert result.exit_code == exit_code


def test_forced_human_line(invoke, prompt_file):
    result = invoke("dispatch", "check", str(prompt_file(215_000)), "--force")

    assert result.output.startswith(
        "forced: FORCED_OVER_THRESHOLD: 215,000 bytes, 82.0% of 262,144 (tier hard-reject from "
        "209,716 bytes) let through by --force at 20"
    )
    assert result.exit_code == 0


def test_check_reads_stdin(invoke):
    result = invoke("dispatch", "check", "-", "--json", stdin="x" * LINE["near-limit"])
    assert json.loads(result.stdout)["tier"] == "near-limit"

    result = invoke("dispatch", "check", "--json", stdin="hello")
    assert json.loads(result.stdout)["sizeBytes"] == 5


def test_check_uses_the_configured_capacity_per_agent_type(invoke, project, prompt_file):
    (project / ".ctxward").mkdir()
    (project / ".ctxward" / "config.yaml").write_text(
        "dispatch:\n  capacity_bytes: 200000\n  capacity_by_agent: {Explore: 10000}\n"
    )
    path = str(prompt_file(9_000))

    explore = json.loads(
        invoke("dispatch", "check", path, "--agent-type", "Explore", "--json").stdout
    )
    general = json.loads(invoke("dispatch", "check", path, "--json").stdout)

    assert (explore["capacityBytes"], explore["tier"], explore["ok"]) == (
        10_000,
        "emergency",
        False,
    )
    assert (general["capacityBytes"], general["tier"]) == (200_000, "ok")


def test_not_utf8_is_bad_input(invoke, tmp_path):
    path = tmp_path / "binary"
    path.write_bytes(b"\xff\xfe\x00")

    result = invoke("dispatch", "check", str(path))

    assert result.exit_code == 2
    assert "not UTF-8 (byte 0)" in result.output


def test_missing_file_is_a_usage_error(capsys, project):
    assert main(["-C", str(project), "dispatch", "check", str(project / "nope.md")]) == 2
    assert "nope.md" in capsys.readouterr().err


def test_a_bad_config_is_bad_input_at_the_cli(invoke, project, prompt_file):
    (project / ".ctxward").mkdir()
    (project / ".ctxward" / "config.yaml").write_text("dispatch:\n  capacity_bytes: 999999999\n")

    result = invoke("dispatch", "check", str(prompt_file(10)))

    assert result.exit_code == 2
    assert "dispatch.capacity_bytes" in result.output


def test_main_returns_3_when_rejected(capsys, project, prompt_file):
    assert (
        main(["-C", str(project), "dispatch", "check", str(prompt_file(LINE["hard-reject"]))]) == 3
    )
    assert capsys.readouterr().out.startswith("rejected: PROMPT_TOO_LARGE")


# --- ctxward thresholds -----------------------------------------------------------------------


def test_thresholds_json(invoke):
    result = invoke("thresholds", "--json")

    body = json.loads(result.stdout)
    assert result.exit_code == 0
    assert body["capacityBytes"] == DEFAULT_CAPACITY_BYTES
    assert [
        (row["tier"], row["percent"], row["thresholdBytes"], row["code"]) for row in body["tiers"]
    ] == [
        ("ok", 0, 0, None),
        ("soft-warn", 50, 131_072, None),
        ("near-limit", 75, 196_608, None),
        ("hard-reject", 80, 209_716, "PROMPT_TOO_LARGE"),
        ("emergency", 90, 235_930, "PROMPT_EMERGENCY"),
    ]


def test_thresholds_text_and_markdown(invoke):
    text = invoke("thresholds").output
    markdown = invoke("thresholds", "--markdown").output

    assert text.startswith("G9 dispatch thresholds at a capacity of 262,144 bytes (default")
    assert "hard-reject    80%   209,716  PROMPT_TOO_LARGE" in text
    assert markdown.startswith("| Tier | At or above | Bytes (capacity 262,144) |")
    assert "| `emergency` | 90% | 235,930 | `PROMPT_EMERGENCY` |" in markdown
    assert "| `near-limit` | 75% | 196,608 | `CONTEXT_NEAR_LIMIT` (warning) |" in markdown
    assert markdown.count("\n") == 2 + len(TIERS)


def test_thresholds_follow_the_configured_capacity(invoke, project):
    (project / ".ctxward").mkdir()
    (project / ".ctxward" / "config.yaml").write_text(
        "dispatch:\n  capacity_bytes: 100000\n  capacity_by_agent: {Explore: 50000}\n"
    )

    text = invoke("thresholds").output
    explore = json.loads(invoke("thresholds", "--agent-type", "Explore", "--json").stdout)

    assert "capacity of 100,000 bytes (from .ctxward/config.yaml)" in text
    assert "80,000" in text
    assert explore["capacityBytes"] == 50_000
    assert explore["tiers"][4]["thresholdBytes"] == 45_000


def test_thresholds_markdown_and_json_together_is_a_usage_error(invoke):
    result = invoke("thresholds", "--markdown", "--json")
    assert result.exit_code == 2
    assert "pick one" in result.output


@pytest.mark.parametrize("path", [["dispatch"], ["dispatch", "check"], ["thresholds"]])
def test_help_has_an_example(path):
    result = CliRunner().invoke(cli, [*path, "--help"])
    assert result.exit_code == 0
    assert "Example" in result.output


def test_the_hook_command_has_no_force():
    result = CliRunner().invoke(cli, ["hook", "--help"])
    assert "--force" not in result.output
