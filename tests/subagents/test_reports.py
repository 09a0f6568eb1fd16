"""G0: the sub-agent report cap, in-process and through the real SubagentStop entry points."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ctxward.core.project import Project
from ctxward.subagents import reports
from ctxward.subagents.artifacts import ArtifactMeta

REPO = Path(__file__).resolve().parents[2]
HOOK = REPO / "hooks" / "subagent_stop.py"
SECRET = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
LONG = "\n".join(f"finding {n}: the parser drops trailing commas" for n in range(41))


@pytest.fixture(autouse=True)
def _no_session(monkeypatch):
    monkeypatch.delenv("CLAUDE_CODE_SESSION_ID", raising=False)


def cap(project: Path, payload: dict) -> reports.CapResult:
    return reports.enforce_cap(Project(project), payload)


def artifacts_of(project: Path) -> list[Path]:
    folder = project / ".ctxward" / "sub_agents"
    return sorted(p for p in folder.rglob("*") if p.is_file()) if folder.exists() else []


# --- thresholds -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "over"),
    [
        ("line\n" * 40, False),
        ("line\n" * 41, True),
        ("line\n" * 39 + "line", False),
        ("x" * 2048, False),
        ("x" * 2049, True),
        ("é" * 1024, False),  # 2048 bytes in UTF-8
        ("é" * 1024 + "x", True),
        ("", False),
    ],
)
def test_cap_thresholds(text, over):
    assert reports.measure(text).over is over


def test_measure():
    assert reports.measure("a\nb\n") == reports.Size(2, 4)


# --- the hook's decisions ---------------------------------------------------------------------


def test_a_short_report_passes_untouched(project, load_payload):
    result = cap(project, load_payload("SubagentStop.json"))
    assert (result.action, result.blocks) == ("under", False)
    assert not (project / ".ctxward").exists()


@pytest.mark.parametrize("report", [LONG, "x" * 2049])
def test_a_long_report_is_saved_and_the_stop_blocked(project, load_payload, report):
    payload = load_payload("SubagentStop.json", last_assistant_message=report)

    result = cap(project, payload)

    assert result.action == "blocked"
    sid, agent = payload["session_id"], payload["agent_id"]
    path = project / f".ctxward/sub_agents/{sid}/artifacts/{agent}-general-purpose-001.md"
    assert result.path == path
    assert path.read_text() == report
    meta = ArtifactMeta.from_dict(json.loads(path.with_name(path.stem + ".meta.json").read_text()))
    assert (meta.rid, meta.role, meta.idx, meta.status) == (
        agent,
        "general-purpose",
        1,
        "finalized",
    )
    assert meta.sha256 == result.sha256
    size = reports.measure(report)
    assert result.reason is not None
    assert f"{size.lines} lines / {size.bytes / 1024:.1f} KB" in result.reason
    assert str(path) in result.reason
    assert "at most 40 lines" in result.reason
    assert result.blocks
    assert result.reason


def test_the_saved_report_is_scrubbed(project, load_payload):
    payload = load_payload("SubagentStop.json", last_assistant_message=f"{LONG}\ntoken {SECRET}")
    result = cap(project, payload)
    assert result.path is not None
    saved = result.path.read_text()
    assert SECRET not in saved and "REDACTED" in saved


def test_the_compaction_agent_is_left_alone(project, load_payload):
    payload = load_payload("SubagentStop.compaction.json", last_assistant_message=LONG)
    assert cap(project, payload).action == "exempt"
    del payload["agent_type"]  # versions before 2.1.69 send no agent_type at all
    assert cap(project, payload).action == "exempt"
    assert artifacts_of(project) == []


def test_never_blocks_twice_in_a_row(project, load_payload):
    long = load_payload("SubagentStop.json", last_assistant_message=LONG)
    again = load_payload("SubagentStop.json", last_assistant_message=LONG + "\nmore")

    assert cap(project, long).action == "blocked"
    # The host says it is continuing from a stop hook: record, never block.
    assert cap(project, {**again, "stop_hook_active": True}).action == "recorded"
    # Even if it did not say so, we blocked this agent last time: record only.
    assert cap(project, long).action == "blocked"
    assert cap(project, again).action == "recorded"
    # A short report in between re-arms the cap.
    assert cap(project, load_payload("SubagentStop.json")).action == "under"
    assert cap(project, again).action == "blocked"


def test_loop_guard_is_per_agent(project, load_payload):
    first = load_payload("SubagentStop.json", last_assistant_message=LONG)
    second = load_payload("SubagentStop.json", last_assistant_message=LONG, agent_id="b0b")
    assert cap(project, first).action == "blocked"
    assert cap(project, second).action == "blocked"


@pytest.mark.parametrize(
    ("mode", "action", "saved"), [("offload", "recorded", 1), ("off", "off", 0)]
)
def test_enforce_modes(project, load_payload, mode, action, saved):
    (project / ".ctxward").mkdir()
    (project / ".ctxward" / "config.yaml").write_text(f"reports:\n  enforce: {mode}\n")

    result = cap(project, load_payload("SubagentStop.json", last_assistant_message=LONG))

    assert (result.action, result.blocks) == (action, False)
    assert len([p for p in artifacts_of(project) if p.suffix == ".md"]) == saved


def test_falls_back_to_the_agent_transcript(project, load_payload, tmp_path):
    transcript = tmp_path / "agent-x.jsonl"
    record = {
        "type": "assistant",
        "message": {"id": "m1", "role": "assistant", "content": [{"type": "text", "text": LONG}]},
    }
    transcript.write_text(json.dumps(record) + "\n")
    payload = load_payload(
        "SubagentStop.json", last_assistant_message="", agent_transcript_path=str(transcript)
    )

    result = cap(project, payload)

    assert result.action == "blocked"
    assert result.path is not None and result.path.read_text() == LONG
    missing = {**payload, "agent_transcript_path": str(tmp_path / "gone.jsonl")}
    assert cap(project, missing).action == "under"


def test_peaks_preset(project, load_payload):
    (project / ".ctxward").mkdir()
    (project / ".ctxward" / "config.yaml").write_text("preset: peaks\n")
    result = cap(project, load_payload("SubagentStop.json", last_assistant_message=LONG))
    assert result.path is not None
    assert result.path.is_relative_to(project / ".peaks" / "_sub_agents")


def test_handler_through_hookio(project, load_payload, run_hook):
    code, out, err = run_hook(load_payload("SubagentStop.json", last_assistant_message=LONG))
    assert (code, err) == (0, "")
    assert json.loads(out)["decision"] == "block"
    assert run_hook(load_payload("SubagentStop.json")) == (0, "", "")
    assert run_hook(load_payload("SubagentStop.compaction.json", last_assistant_message=LONG)) == (
        0,
        "",
        "",
    )


def test_a_bad_config_is_one_line_and_never_blocks(project, load_payload, run_hook):
    (project / ".ctxward").mkdir()
    (project / ".ctxward" / "config.yaml").write_text("reports:\n  enforce: sometimes\n")
    code, out, err = run_hook(load_payload("SubagentStop.json", last_assistant_message=LONG))
    assert (code, out) == (1, "")
    assert err.count("\n") == 1 and "reports.enforce" in err


# --- the real entry points, in a subprocess, with the captured payloads -----------------------


def run_script(
    command: list[str], project: Path, payload: dict
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CLAUDE_PROJECT_DIR": str(project)}
    env.pop("CLAUDE_CODE_SESSION_ID", None)
    return subprocess.run(
        command,
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
        check=False,
    )


def hook_commands() -> list[list[str]]:
    installed = Path(sys.executable).with_name("ctxward-hook")
    return [
        [sys.executable, str(HOOK)],
        [str(installed)] if installed.is_file() else [sys.executable, "-m", "ctxward.hookio"],
    ]


@pytest.mark.parametrize("command", hook_commands(), ids=["hooks/subagent_stop.py", "ctxward-hook"])
def test_hook_script_blocks_a_long_report(project, load_payload, command):
    payload = load_payload("SubagentStop.json", last_assistant_message=LONG)

    done = run_script(command, project, payload)

    assert (done.returncode, done.stderr) == (0, "")
    answer = json.loads(done.stdout)
    assert answer["decision"] == "block"
    assert "41 lines" in answer["reason"]
    saved = project / f".ctxward/sub_agents/{payload['session_id']}/artifacts"
    assert (saved / f"{payload['agent_id']}-general-purpose-001.md").read_text() == LONG

    second = run_script(command, project, {**payload, "stop_hook_active": True})
    assert (second.returncode, second.stdout, second.stderr) == (0, "", "")


@pytest.mark.parametrize(
    ("fixture", "message"),
    [
        ("SubagentStop.json", None),
        ("SubagentStop.compaction.json", None),
        ("SubagentStop.compaction.json", LONG),
    ],
)
def test_hook_script_stays_silent(project, load_payload, fixture, message):
    overrides = {} if message is None else {"last_assistant_message": message}
    done = run_script([sys.executable, str(HOOK)], project, load_payload(fixture, **overrides))
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert not (project / ".ctxward" / "sub_agents").exists()
