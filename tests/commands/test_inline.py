"""`ctxward inline|scrub|handoff` through CliRunner, and the C8/C11 hooks as real processes."""

from __future__ import annotations

import json
import random
import re
import string
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ctxward.cli import cli

REPO = Path(__file__).resolve().parents[2]
HOOKS = REPO / "hooks"
SEED_YAML = (
    "subtask_summary:\n"
    '  summary: "Added JWT auth endpoint with refresh token rotation"\n'
    '  files_changed: ["backend/routers/auth.py", "backend/services/auth_service.py"]\n'
    "  status: complete\n"
)


@pytest.fixture
def invoke(project: Path):
    def run(*args: str, stdin: str | None = None):
        return CliRunner().invoke(cli, ["-C", str(project), *args], input=stdin)

    return run


def fake_token(seed: int = 1) -> str:
    rng = random.Random(seed)
    return (
        "gh" + "p_" + "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(36))
    )


# -- inline score / compress / stats / batch -----------------------------------------------------


def test_score_prints_the_seed_example(invoke, project: Path) -> None:
    (project / "s.yaml").write_text(SEED_YAML, encoding="utf-8")
    result = invoke(
        "inline",
        "score",
        "--file",
        str(project / "s.yaml"),
        "--from",
        "Hermes",
        "--to",
        "Aphrodite",
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {
        "dimensions": {
            "impact": 0.9,
            "risk": 1.0,
            "novelty": 0.5,
            "blockers": 0.0,
            "downstream": 0.9,
        },
        "score": 0.71,
        "band": "HIGH",
        "keywords": ["JWT", "endpoint", "token"],
    }


def test_score_from_stdin_and_text(invoke) -> None:
    piped = invoke("inline", "score", "--to", "aphrodite", "--from", "hermes", stdin=SEED_YAML)
    text = invoke("inline", "score", "--text", SEED_YAML, "--from", "hermes", "--to", "aphrodite")
    assert piped.exit_code == text.exit_code == 0
    assert json.loads(piped.stdout) == json.loads(text.stdout)
    unknown = invoke("inline", "score", "--text", SEED_YAML, "--from", "hermes")
    assert json.loads(unknown.stdout)["dimensions"]["downstream"] == 0.5


def test_compress_prints_the_entry_and_keeps_the_original(invoke, project: Path) -> None:
    source = project / "s.yaml"
    source.write_text(SEED_YAML, encoding="utf-8")
    result = invoke(
        "inline",
        "compress",
        "--file",
        str(project / "s.yaml"),
        "--from",
        "hermes",
        "--to",
        "aphrodite",
    )
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith("[hermes] What changed: Added JWT auth endpoint with refresh token")
    assert lines[1].startswith("To Aphrodite (endpoint path, request/response shape, status codes)")
    assert lines[2].startswith("  ↳ HIGH 0.71 · full text: .ctxward/offload/")
    stored = project / lines[2].split("full text: ")[1]
    assert stored.read_text(encoding="utf-8") == SEED_YAML
    assert source.read_text(encoding="utf-8") == SEED_YAML


def test_compress_json(invoke) -> None:
    result = invoke(
        "inline", "compress", "--text", "Fixed a typo in the README", "--from", "hermes", "--json"
    )
    data = json.loads(result.stdout)
    assert data["band"] == "LOW"
    assert data["text"] == "[hermes] — no files\n"
    assert data["compressed"] is True
    assert data["original"]["path"].startswith(".ctxward/offload/")


def test_compress_scrubs_first(invoke, project: Path) -> None:
    token = fake_token()
    result = invoke(
        "inline", "compress", "--text", f"Rotated {token} in the deploy config", "--json"
    )
    assert token not in result.stdout
    stored = project / json.loads(result.stdout)["original"]["path"]
    assert token not in stored.read_text(encoding="utf-8")


def test_compress_refuses_unfinished_work(invoke) -> None:
    entry = "subtask_summary:\n  summary: halfway through the migration\n  status: in_progress\n"
    result = invoke("inline", "compress", "--text", entry)
    assert result.exit_code == 1
    assert result.stdout == (
        "not compressed [unknown]: status in progress: not compressed (seed 000 §10)\n"
    )


def test_stats(invoke) -> None:
    result = invoke("inline", "stats", "--text", SEED_YAML, "--from", "hermes", "--json")
    data = json.loads(result.stdout)
    assert data["bytes_before"] == len(SEED_YAML.encode())
    assert data["tokens_before"] == -(-data["bytes_before"] // 4)
    assert data["bands"]["HIGH"] == 1
    text = invoke("inline", "stats", "--text", SEED_YAML)
    assert "tokens (bytes/4)" in text.stdout
    assert "HIGH 1" in text.stdout


def test_batch_scores_every_entry_on_its_own(invoke, project: Path) -> None:
    (project / "a.yaml").write_text(SEED_YAML, encoding="utf-8")
    batch = [
        {
            "type": "subtask",
            "phase": "2a",
            "agent": "hermes",
            "to": "aphrodite",
            "summary": "Added a new table",
        },
        {
            "type": "subtask",
            "phase": "2b",
            "agent": "aphrodite",
            "summary": "Fixed a typo",
            "status": "complete",
        },
        {
            "type": "subtask",
            "phase": "2c",
            "agent": "demeter",
            "summary": "WIP",
            "status": "blocked",
        },
    ]
    (project / "b.json").write_text(json.dumps(batch), encoding="utf-8")
    result = invoke("inline", "batch", str(project / "a.yaml"), str(project / "b.json"), "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [r["band"] for r in data["results"]] == ["HIGH", "CRITICAL", "LOW", "LOW"]
    assert [r["compressed"] for r in data["results"]] == [True, True, True, False]
    assert data["stats"]["inputs"] == 2
    assert data["stats"]["entries"] == 3
    assert data["stats"]["skipped"] == 1
    text = invoke("inline", "batch", str(project / "a.yaml"), str(project / "b.json"))
    assert "3 compressed (CRITICAL 1, HIGH 1, MEDIUM 0, LOW 1), 1 not compressed" in text.stdout


def test_input_errors(invoke) -> None:
    both = invoke("inline", "compress", "--text", "x", "--file", "y")
    assert both.exit_code == 2
    assert "give --text or --file, not both" in both.stderr
    missing = invoke("inline", "compress", "--file", "nope.yaml")
    assert missing.exit_code == 2
    assert "nope.yaml: no such file" in missing.stderr
    empty = invoke("inline", "score", "--text", "   ")
    assert empty.exit_code == 2


# -- scrub ---------------------------------------------------------------------------------------


def test_scrub_command(invoke, project: Path) -> None:
    token = fake_token(2)
    (project / ".env").write_text(f"GITHUB_TOKEN={token}\nDEBUG=1\n", encoding="utf-8")
    result = invoke("scrub", str(project / ".env"))
    assert result.stdout == "GITHUB_TOKEN=[REDACTED:github_token]\nDEBUG=1\n"
    data = json.loads(invoke("scrub", "--json", stdin=f"x {token}").stdout)
    assert data == {
        "text": "x [REDACTED:github_token]",
        "redactions": [
            {"type": "github_token", "position": [2, 42], "replacement": "[REDACTED:github_token]"}
        ],
    }


def test_scrub_explain_names_the_rule_of_every_redaction(invoke, project: Path) -> None:
    token = fake_token(3)
    password = "".join(random.Random(4).choice(string.ascii_letters) for _ in range(10)) + "7!x"
    text = f"a=1\nGITHUB_TOKEN={token}\nmysql -uroot -p{password} shop\nagain: {password} ok\n"
    result = invoke("scrub", "--explain", stdin=text)
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "2:14  github_token  github_token  (40 chars)",
        f"3:16  password  cli_password_flag  ({len(password)} chars)",
        f"4:8  password  repeat  ({len(password)} chars)",
    ]
    assert token not in result.stdout and password not in result.stdout
    data = json.loads(invoke("scrub", "--explain", "--json", stdin=text).stdout)
    assert [(r["type"], r["rule"]) for r in data["redactions"]] == [
        ("github_token", "github_token"),
        ("password", "cli_password_flag"),
        ("password", "repeat"),
    ]


def test_scrub_rejects_non_utf8(invoke, project: Path) -> None:
    (project / "bin").write_bytes(b"\xff\xfe")
    result = invoke("scrub", str(project / "bin"))
    assert result.exit_code == 2
    assert "not UTF-8" in result.stderr


# -- handoff -------------------------------------------------------------------------------------


def test_handoff_command(invoke, project: Path) -> None:
    nothing = invoke("handoff")
    assert nothing.exit_code == 0
    assert "nothing staged" in nothing.stdout
    tmp = project / ".ctxward" / "memory-bank" / ".tmp"
    tmp.mkdir(parents=True)
    (tmp / "IMPL-phase2.md").write_text(
        "# IMPL\n\n```yaml\n"
        + SEED_YAML.replace(
            "subtask_summary:\n",
            "subtask_summary:\n  agent: hermes\n  phase: 2\n  date: 2026-07-01\n",
        )
        + "```\n",
        encoding="utf-8",
    )
    first = invoke("handoff", "--phase", "2")
    assert first.exit_code == 0, first.output
    assert "compressed now (1):" in first.stdout
    assert re.search(r"L1-2026-07-01-phase-2-hermes-[0-9a-f]{12}\.md", first.stdout)
    data = json.loads(invoke("handoff", "--json").stdout)
    assert data["compressed"] == []
    assert [item["agent"] for item in data["already"]] == ["hermes"]


# -- hooks as processes: C8 at SubagentStop, C11 at PreCompact -----------------------------------

SUMMARY_MESSAGE = (
    "Done: the refresh flow works.\n\n```yaml\nsubtask_summary:\n  date: 2026-07-01\n  phase: 2\n"
    "  to: aphrodite\n  summary: Added JWT auth endpoint with refresh token rotation. "
    "POST /auth/refresh returns 200, or 401 on reuse.\n"
    "  files_changed: [backend/routers/auth.py, backend/services/auth_service.py]\n"
    "  status: complete\n```\n"
)

LOW_MESSAGE = (
    "subtask_summary:\n  date: 2026-07-01\n  phase: 3\n  summary: Fixed a typo\n"
    "  files: [README.md]\n  status: complete\n"
)


def run_script(
    script: str, payload: dict[str, Any], project: Path
) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(project.parent / "home"),
        "CLAUDE_PROJECT_DIR": str(project),
    }
    return subprocess.run(
        [sys.executable, str(HOOKS / script)],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        timeout=30,
        env=env,
        check=False,
    )


def staged_files(project: Path) -> list[Path]:
    tmp = project / ".ctxward" / "memory-bank" / ".tmp"
    return sorted(tmp.glob("L1-*.md")) if tmp.is_dir() else []


def test_subagent_stop_stages_a_high_summary(load_payload, project: Path) -> None:
    payload = load_payload(
        "SubagentStop.json", agent_type="hermes", last_assistant_message=SUMMARY_MESSAGE
    )
    done = run_script("subagent_stop.py", payload, project)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    (path,) = staged_files(project)
    assert re.fullmatch(r"L1-2026-07-01-phase-2-hermes-[0-9a-f]{12}\.md", path.name)
    text = path.read_text(encoding="utf-8")
    assert 'state="compressed"' in text and 'band="HIGH"' in text
    assert (
        "To Aphrodite (endpoint path, request/response shape, status codes): POST /auth/refresh"
        in text
    )
    again = run_script("subagent_stop.py", payload, project)
    assert again.returncode == 0
    assert path.read_text(encoding="utf-8") == text


def test_subagent_stop_reads_the_transcript_when_the_message_is_empty(
    load_payload, project: Path, tmp_path: Path
) -> None:
    transcript = tmp_path / "agent.jsonl"
    record = {
        "type": "assistant",
        "uuid": "u1",
        "message": {
            "id": "m1",
            "role": "assistant",
            "content": [{"type": "text", "text": SUMMARY_MESSAGE}],
        },
    }
    transcript.write_text(json.dumps(record) + "\n", encoding="utf-8")
    payload = load_payload(
        "SubagentStop.json",
        agent_type="hermes",
        last_assistant_message="",
        agent_transcript_path=str(transcript),
    )
    done = run_script("subagent_stop.py", payload, project)
    assert done.returncode == 0, done.stderr
    (path,) = staged_files(project)
    assert re.fullmatch(r"L1-2026-07-01-phase-2-hermes-[0-9a-f]{12}\.md", path.name)


def test_subagent_stop_leaves_the_captured_payload_alone(load_payload, project: Path) -> None:
    for fixture in ("SubagentStop.json", "SubagentStop.compaction.json"):
        done = run_script("subagent_stop.py", load_payload(fixture), project)
        assert (done.returncode, done.stdout) == (0, "")
    assert staged_files(project) == []


def test_subagent_stop_skips_unfinished_and_stages_low_as_pending(
    load_payload, project: Path
) -> None:
    blocked = SUMMARY_MESSAGE.replace("status: complete", "status: blocked")
    done = run_script(
        "subagent_stop.py",
        load_payload("SubagentStop.json", agent_type="hermes", last_assistant_message=blocked),
        project,
    )
    assert done.returncode == 0
    assert staged_files(project) == []
    low = LOW_MESSAGE
    done = run_script(
        "subagent_stop.py",
        load_payload("SubagentStop.json", agent_type="aphrodite", last_assistant_message=low),
        project,
    )
    assert done.returncode == 0
    (path,) = staged_files(project)
    assert 'state="pending"' in path.read_text(encoding="utf-8")


def test_subagent_stop_failure_is_logged_and_never_blocks(load_payload, project: Path) -> None:
    bank = project / ".ctxward" / "memory-bank"
    bank.mkdir(parents=True)
    (bank / ".tmp").write_text("not a folder", encoding="utf-8")
    payload = load_payload(
        "SubagentStop.json", agent_type="hermes", last_assistant_message=SUMMARY_MESSAGE
    )
    done = run_script("subagent_stop.py", payload, project)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    (log,) = (project / ".ctxward" / "log").glob("*-subagent_stop-c8.log")
    assert "Traceback" in log.read_text(encoding="utf-8")


def test_pre_compact_hands_off_silently(load_payload, project: Path) -> None:
    low = LOW_MESSAGE
    run_script(
        "subagent_stop.py",
        load_payload("SubagentStop.json", agent_type="aphrodite", last_assistant_message=low),
        project,
    )
    done = run_script("pre_compact.py", load_payload("PreCompact.json"), project)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    (path,) = staged_files(project)
    text = path.read_text(encoding="utf-8")
    assert 'state="compressed"' in text
    assert "[aphrodite] — README.md" in text


def test_pre_compact_keeps_its_instructions_when_c11_fails(
    load_payload, project: Path, make_skill, activate_skill
) -> None:
    make_skill("guarded", ["Never push to main."])
    activate_skill("guarded", "demo")
    low = "subtask_summary:\n  phase: 3\n  summary: Fixed a typo\n  status: complete\n"
    payload = load_payload("SubagentStop.json", agent_type="aphrodite", last_assistant_message=low)
    run_script("subagent_stop.py", payload, project)
    offload = project / ".ctxward" / "offload"
    for stored in offload.iterdir():
        stored.unlink()
    offload.rmdir()
    offload.write_text("not a folder: C11 cannot keep originals now", encoding="utf-8")
    done = run_script("pre_compact.py", load_payload("PreCompact.json"), project)
    assert (done.returncode, done.stderr) == (0, "")
    assert "Never push to main." in done.stdout
    (log,) = (project / ".ctxward" / "log").glob("*-pre_compact-c11.log")
    assert "Traceback" in log.read_text(encoding="utf-8")
    (path,) = staged_files(project)
    assert 'state="pending"' in path.read_text(encoding="utf-8")
