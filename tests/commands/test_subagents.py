"""The CLI contracts of `artifact record|path`, `reduce`, `share`, `shared-read`, `heartbeat`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from ctxward.cli import cli

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _no_session(monkeypatch):
    monkeypatch.delenv("CLAUDE_CODE_SESSION_ID", raising=False)


@pytest.fixture
def invoke(project):
    def run(*args: str, stdin: str | None = None, env: dict | None = None):
        return CliRunner().invoke(cli, ["-C", str(project), *args], input=stdin, env=env)

    return run


@pytest.fixture
def artifact(project) -> Path:
    path = project / ".ctxward/sub_agents/s1/artifacts/003-rd-001.md"
    path.parent.mkdir(parents=True)
    path.write_text("# RD tech doc\n" + "detail\n" * 2000)
    return path


def test_artifact_record_text_and_json(invoke, artifact):
    done = invoke(
        "artifact",
        "record",
        str(artifact),
        "--role",
        "rd",
        "--rid",
        "003",
        "--idx",
        "1",
        "--summary",
        "wrote the RD tech doc",
        "--session",
        "s1",
    )
    assert done.exit_code == 0, done.output
    assert done.stdout.startswith(
        "recorded .ctxward/sub_agents/s1/artifacts/003-rd-001.md (14KB, sha256:"
    )
    assert done.stdout.rstrip().endswith(
        "finalized) in batch 003 → .ctxward/sub_agents/s1/artifacts/003-rd-001.meta.json"
    )

    as_json = invoke(
        "artifact",
        "record",
        str(artifact),
        "--role",
        "rd",
        "--rid",
        "003",
        "--idx",
        "1",
        "--status",
        "partial",
        "--batch",
        "b9",
        "--json",
        env={"CLAUDE_CODE_SESSION_ID": "s1"},
    )
    meta = json.loads(as_json.stdout)
    assert list(meta) == [
        "path",
        "size",
        "sha256",
        "status",
        "contentInlined",
        "summary",
        "writtenAt",
        "rid",
        "role",
        "idx",
    ]
    assert (meta["status"], meta["contentInlined"], meta["summary"]) == ("partial", False, None)
    assert as_json.stderr == ""


def test_artifact_record_bad_input_exits_2(invoke, artifact):
    missing = invoke("artifact", "record", "nope.md", "--role", "rd", "--rid", "003", "--idx", "1")
    assert missing.exit_code == 2
    assert missing.stderr.count("\n") == 1 and "no such file" in missing.stderr
    assert missing.stdout == ""

    too_long = invoke(
        "artifact",
        "record",
        str(artifact),
        "--role",
        "rd",
        "--rid",
        "003",
        "--idx",
        "1",
        "--summary",
        "s" * 201,
        "--json",
    )
    assert too_long.exit_code == 2
    assert json.loads(too_long.stdout) == {
        "ok": False,
        "error": {"code": "BAD_INPUT", "message": too_long.stderr.split("error: ", 1)[1].strip()},
    }
    assert not artifact.with_name("003-rd-001.meta.json").exists()


def test_artifact_elsewhere_warns_on_stderr(invoke, project):
    other = project / "notes.md"
    other.write_text("n")
    done = invoke("artifact", "record", str(other), "--role", "qa", "--rid", "7", "--idx", "2")
    assert done.exit_code == 0
    assert done.stderr.startswith("ctxward: warning NOT_AT_CONVENTIONAL_PATH: notes.md is recorded")


def test_artifact_path(invoke, project):
    done = invoke(
        "artifact",
        "path",
        "--rid",
        "003",
        "--role",
        "qa-perf",
        "--idx",
        "2",
        "--ext",
        "json",
        "--session",
        "s9",
    )
    assert done.stdout == ".ctxward/sub_agents/s9/artifacts/003-qa-perf-002.json\n"
    assert (project / ".ctxward/sub_agents/s9/artifacts").is_dir()
    assert invoke("artifact", "path", "--rid", "0/3", "--role", "x", "--idx", "1").exit_code == 2


def test_reduce(invoke, artifact):
    invoke(
        "artifact",
        "record",
        str(artifact),
        "--role",
        "rd",
        "--rid",
        "003",
        "--idx",
        "1",
        "--summary",
        "wrote the RD tech doc",
        "--session",
        "s1",
    )

    text = invoke("reduce", "--batch", "003", "--session", "s1")
    as_json = invoke("reduce", "--batch", "003", "--session", "s1", "--json")

    assert text.exit_code == 0
    lines = text.stdout.splitlines()
    assert lines[0] == "[ctxward] batch 1/1 done in 0.0s (003)"
    assert lines[1].startswith(
        "- rd → .ctxward/sub_agents/s1/artifacts/003-rd-001.md (14KB, sha256:"
    )
    assert lines[1].endswith('summary: "wrote the RD tech doc"')
    body = json.loads(as_json.stdout)
    assert (body["ok"], body["done"], body["total"], body["view"]) == (True, 1, 1, text.stdout)
    assert body["artifacts"][0]["contentInlined"] is False
    assert "detail" not in text.stdout


def test_share_read_and_heartbeat_envelopes(invoke):
    shared = invoke(
        "share", "--batch", "b1", "--key", "rd.completed", "--value", '{"path": "a.md"}', "--json"
    )
    body = json.loads(shared.stdout)
    assert (shared.exit_code, body["ok"], body["key"], body["bytes"], body["warnings"]) == (
        0,
        True,
        "rd.completed",
        15,
        [],
    )
    assert body["path"] == ".ctxward/sub_agents/local/shared/b1.json"

    read = json.loads(
        invoke("shared-read", "--batch", "b1", "--key", "*.completed", "--json").stdout
    )
    assert (read["ok"], read["count"], read["entries"][0]["value"]) == (True, 1, {"path": "a.md"})
    assert invoke("shared-read", "--batch", "b1").stdout.endswith(
        'rd.completed = {"path": "a.md"}\n'
    )
    assert invoke("shared-read", "--batch", "b1", "--key", "x*").stdout == (
        "batch b1: no shared entries matching the filter\n"
    )

    beat = json.loads(
        invoke("heartbeat", "--batch", "b1", "--role", "rd", "--status", "done", "--json").stdout
    )
    assert (beat["ok"], beat["warnings"]) == (True, [])
    lone = invoke("heartbeat", "--batch", "b1", "--role", "qa", "--status", "done")
    assert lone.exit_code == 0
    assert lone.stderr.startswith(
        "ctxward: warning COMPLETED_WITHOUT_SHARE: role 'qa' reported done"
    )
    assert lone.stdout.startswith("heartbeat qa: done at ")
    lone_json = json.loads(
        invoke("heartbeat", "--batch", "b1", "--role", "qa", "--status", "done", "--json").stdout
    )
    assert [w["code"] for w in lone_json["warnings"]] == ["COMPLETED_WITHOUT_SHARE"]


def test_share_from_stdin_and_the_size_rules(invoke, project):
    big = json.dumps({"blob": "x" * 2000})
    warned = invoke("share", "--batch", "b1", "--key", "k", "--value", "-", stdin=big)
    assert warned.exit_code == 0
    assert warned.stderr.startswith("ctxward: warning VALUE_LARGE:")
    assert warned.stdout.startswith("shared k (2011 bytes) in batch b1 →")

    huge = json.dumps("x" * 70_000)
    refused = invoke("share", "--batch", "b1", "--key", "huge", "--value", huge, "--json")
    assert refused.exit_code == 2
    assert json.loads(refused.stdout)["error"]["code"] == "VALUE_TOO_LARGE"
    stored = json.loads((project / ".ctxward/sub_agents/local/shared/b1.json").read_text())
    assert list(stored["entries"]) == ["k"]

    not_json = invoke("share", "--batch", "b1", "--key", "k", "--value", "{nope")
    assert (not_json.exit_code, not_json.stdout) == (2, "")


def test_bad_session_is_refused(invoke):
    done = invoke(
        "share",
        "--batch",
        "b",
        "--key",
        "k",
        "--value",
        "1",
        env={"CLAUDE_CODE_SESSION_ID": "../x"},
    )
    assert done.exit_code == 2 and "session" in done.stderr


@pytest.mark.slow  # 16 processes
def test_sixteen_processes_share_at_once(project):
    """Last write wins per key, and no write is lost: the channel is locked and atomic."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "lib"), "CLAUDE_CODE_SESSION_ID": "s1"}
    command = [sys.executable, "-m", "ctxward", "-C", str(project), "share", "--batch", "b1"]
    processes = [
        subprocess.Popen(
            [
                *command,
                "--key",
                f"role{n}.completed",
                "--value",
                json.dumps({"n": n, "pad": "p" * 500}),
            ],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(16)
    ]
    for process in processes:
        _out, err = process.communicate(timeout=60)
        assert process.returncode == 0, err

    stored = json.loads((project / ".ctxward/sub_agents/s1/shared/b1.json").read_text())
    assert sorted(stored["entries"]) == sorted(f"role{n}.completed" for n in range(16))
    assert all(stored["entries"][f"role{n}.completed"]["value"]["n"] == n for n in range(16))
    leftovers = [p.name for p in (project / ".ctxward/sub_agents/s1/shared").iterdir()]
    assert leftovers == ["b1.json"]
