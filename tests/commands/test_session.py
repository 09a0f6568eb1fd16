"""`ctxward session summarize` and `ctxward session stats`."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from ctxward.cli import cli
from ctxward.core.project import Project
from ctxward.core.text import estimate_tokens
from ctxward.sessions import budget as sessions_budget
from ctxward.sessions import store
from ctxward.transcript.reader import project_folder_name

SESSION = "0f3c2a77-5d1e-4b6a-9c48-2e7d1a9b6c55"


def record(role: str, text: str, n: int) -> str:
    content = text if role == "user" else [{"type": "text", "text": text}]
    message = {"role": role, "content": content}
    if role == "assistant":
        message["id"] = f"msg_{n}"
    return json.dumps(
        {
            "type": role,
            "sessionId": SESSION,
            "uuid": f"u{n}",
            "timestamp": f"2026-03-04T09:{n:02d}:00.000Z",
            "message": message,
        }
    )


CONVERSATION = [
    ("user", "Hello! We'll use SQLite instead of PostgreSQL for the prototype."),
    ("assistant", "Sure. The import fails with UnicodeDecodeError on latin-1 files."),
    ("assistant", "Fixed by decoding with errors='replace' in the reader."),
    ("user", "TODO: add a --encoding option to the import command."),
    ("assistant", "I read the importer and its tests. " * 40),
]


@pytest.fixture
def transcript(tmp_path: Path) -> Path:
    path = tmp_path / f"{SESSION}.jsonl"
    lines = [record(role, text, n) for n, (role, text) in enumerate(CONVERSATION)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def invoke(project: Path, *args: str, env: dict | None = None):
    return CliRunner().invoke(cli, ["-C", str(project), *args], env=env)


def test_summarize_prints_and_writes_the_yaml(project, transcript):
    result = invoke(project, "session", "summarize", str(transcript))

    assert result.exit_code == 0, result.output
    path = project / ".ctxward" / "sessions" / f"{SESSION}.yaml"
    assert result.stdout == path.read_text(encoding="utf-8")
    assert result.stderr == f"ctxward: wrote .ctxward/sessions/{SESSION}.yaml\n"
    written = yaml.safe_load(result.stdout)
    block, overflow = written["session_summary"], written.get("overflow", {})
    assert (
        estimate_tokens(sessions_budget.render_block(store.read(Project(project), SESSION))) <= 100
    )

    def whole(name: str) -> list[str]:  # seed 001: in the summary, or in the file's overflow
        return block[name] + overflow.get(name, [])

    assert whole("decisions") == ["Use SQLite instead of PostgreSQL for the prototype"]
    (error,) = whole("errors_and_fixes")
    assert error.startswith("The import fails with UnicodeDecodeError on latin-1 files → ")
    assert whole("action_items") == ["Add a --encoding option to the import command"]
    assert block.get("overflow", 0) == sum(len(items) for items in overflow.values())


def test_summarize_json(project, transcript):
    result = invoke(project, "session", "summarize", str(transcript), "--json")

    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    assert list(body) == ["path", "session_summary", "dropped", "overflow", "stats"]
    assert body["path"] == f".ctxward/sessions/{SESSION}.yaml"
    written = yaml.safe_load((project / body["path"]).read_text(encoding="utf-8"))
    assert body["session_summary"] == written["session_summary"]
    assert body["stats"]["kept"]["decisions"] + len(body["overflow"].get("decisions", [])) == 1


def test_summarize_with_another_session_id(project, transcript):
    result = invoke(project, "session", "summarize", str(transcript), "--session-id", "../x")

    assert result.exit_code == 0, result.output
    (path,) = (project / ".ctxward" / "sessions").iterdir()
    assert re.fullmatch(r"id-[0-9a-f]{16}\.yaml", path.name)


def test_stats(project, transcript):
    result = invoke(project, "session", "stats", str(transcript), "--json")

    assert result.exit_code == 0, result.output
    stats = json.loads(result.stdout)
    assert stats["session_id"] == SESSION
    assert stats["messages"] == {"user": 2, "assistant": 3}
    assert stats["token_count"] < 2_000  # seed 001's ratio table starts at 100 tokens for 2,000
    assert stats["compressed_tokens"] <= stats["budget"] == 100
    assert stats["ratio"] == round(stats["token_count"] / stats["compressed_tokens"], 1)
    errors = stats["kept"]["errors_and_fixes"] + stats["overflow"].get("errors_and_fixes", 0)
    assert stats["found"]["errors_and_fixes"] == errors == 1
    assert not (project / ".ctxward").exists()  # stats writes nothing


def test_stats_text(project, transcript):
    result = invoke(project, "session", "stats", str(transcript))

    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"session {SESSION} (4 min; 2 user and 3 assistant messages)")
    assert re.fullmatch(
        r"tokens \(bytes/4\): ~\d+ → ~\d+ \(budget 100, seed 001's ratio table\)", lines[1]
    )
    assert re.fullmatch(r"ratio: [\d.]+:1, \d+ tokens saved", lines[2])
    (decisions,) = [line for line in lines if line.startswith("  decisions ")]
    assert re.fullmatch(
        r"  decisions         (1 kept of 1 found|0 kept of 1 found, 1 more in the YAML under "
        r"overflow:)",
        decisions,
    )


def test_the_default_transcript_is_the_current_sessions(project, transcript, tmp_path):
    home = tmp_path / "home"
    folder = home / ".claude" / "projects" / project_folder_name(project)
    folder.mkdir(parents=True)
    (folder / transcript.name).write_bytes(transcript.read_bytes())

    env = {"HOME": str(home), "CLAUDE_CODE_SESSION_ID": SESSION}
    result = invoke(project, "session", "stats", "--json", env=env)

    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["transcript"] == str(folder / transcript.name)


@pytest.mark.parametrize(
    "args, problem",
    [
        (["session", "stats"], "no transcript of this project under "),
        (["session", "summarize", "missing.jsonl"], "missing.jsonl: no such file"),
    ],
)
def test_no_transcript_is_bad_input(project, tmp_path, args, problem):
    result = invoke(project, *args, env={"HOME": str(tmp_path / "home")})

    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.startswith("ctxward: error: ") and problem in result.stderr
    assert result.stderr.count("\n") == 1
    assert not (project / ".ctxward").exists()


def test_a_foreign_file_is_bad_input(project, tmp_path):
    foreign = tmp_path / "data.jsonl"
    foreign.write_text('{"x": 1}\n', encoding="utf-8")

    result = invoke(project, "session", "summarize", str(foreign))

    assert result.exit_code == 2
    assert "not a Claude Code transcript" in result.stderr
    assert not (project / ".ctxward").exists()


def test_hook_user_prompt_submit_is_a_hook_event(project, load_payload):
    payload = json.dumps(load_payload("UserPromptSubmit.json"))

    result = CliRunner().invoke(
        cli, ["hook", "user-prompt-submit"], input=payload, env={"CLAUDE_PROJECT_DIR": str(project)}
    )

    assert (result.exit_code, result.stdout) == (0, "")
