"""A FIFO planted where ctxward keeps a state file: every reader ends, within a deadline, with
the answer it gives for an unreadable file (a skip, or one clear line and its documented exit
code), never a hang, never a traceback.

ctxward opens its own files without blocking (`fsutil.read_regular`, `read_regular_text`,
`open_regular`: O_NONBLOCK, then fstat): a FIFO there is refused as OSError(EINVAL), which each
reader already handles. The files a hook payload names (the host's transcript, a sub-agent's
transcript) are skipped when they are not regular files. A FIFO named on the command line is
still read the way `cat` reads one (test_fuzz_cli.py): that is not covered here.

Each run goes through click in-process (CliRunner), as the host would run `ctxward` or
`ctxward hook EVENT`, under a deadline (SIGALRM: a regression fails, it does not hang the suite).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from datetime import datetime, timezone
from pathlib import Path

import ctxward_hardening as support
import pytest

from ctxward.core.project import Project
from ctxward.invariants.activate import activate

DEADLINE = 20  # seconds; each run takes well under one
TRANSCRIPT = support.FIXTURES / "transcripts" / "7de73c29-a9cd-4608-aa26-55358a7f7df9.jsonl"
FIFO_REFUSED = "not a regular file (a FIFO or a device?)"  # fsutil.open_regular's reason
BANK = ".ctxward/memory-bank"


def build(root: Path) -> Path:
    """A git project with one active plan and a transcript."""
    root.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True, timeout=20)
    activate(Project(root), "deep-review", "plan-b")
    shutil.copy(TRANSCRIPT, root / "transcript.jsonl")
    (root.parent / "home").mkdir(exist_ok=True)
    return root


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return build(tmp_path / "project")


def plant(root: Path, rel: str) -> Path:
    """A FIFO at `rel` (its folders created), where a state file belongs."""
    target = root / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(target)
    return target


def invoke(
    root: Path, argv: list[str], stdin: str | None = None, seconds: float = DEADLINE
) -> tuple[int, str, str]:
    return support.invoke_cli(root, argv, stdin, seconds=seconds, counter="FIFO state cases")


def run_cli(root: Path, argv: list[str], seconds: float = DEADLINE) -> tuple[int, str, str]:
    """A command: a documented exit code, one clear last line on failure, no traceback."""
    code, out, err = invoke(root, argv, seconds=seconds)
    problem = support.cli_problem(code, out, err) if argv[0] != "doctor" else None
    assert problem is None, f"ctxward {argv!r}: {problem}"
    assert "Traceback" not in out + err and "internal error" not in err, (argv, out, err)
    return code, out, err


def run_hook(
    root: Path, hook: str, fixture: str, seconds: float = DEADLINE, **overrides: object
) -> tuple[int, str, str]:
    """`ctxward hook HOOK` on a captured payload of session s1: the hook contract holds."""
    data = support.captured(fixture, root, session_id="s1", **overrides)
    code, out, err = invoke(root, ["hook", hook], json.dumps(data), seconds)
    problem = support.hook_problem(code, out, err, data["hook_event_name"])
    assert problem is None, f"hook {hook}: {problem}"
    assert not [n for n in support.logs(root) if support.is_crash_log(n)], support.logs(root)
    return code, out, err


def one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    return lines[0]


# --- ctxward's own state, read by a command --------------------------------------------------


def test_a_survival_report_is_skipped(root: Path) -> None:
    plant(root, ".ctxward/compactions/s1-20260101T000000000000Z.json")

    code, out, err = run_cli(root, ["compactions"])

    assert (code, err) == (0, "")
    assert "no survival reports yet" in out


def test_an_artifact_meta_is_listed_as_unreadable(root: Path) -> None:
    plant(root, ".ctxward/sub_agents/local/artifacts/1-r-001.meta.json")

    code, out, err = run_cli(root, ["reduce", "--batch", "1"])

    assert (code, err) == (0, "")
    assert "unreadable record: .ctxward/sub_agents/local/artifacts/1-r-001.meta.json" in out


@pytest.mark.parametrize(
    "name", ["01-active-context.md", "02-progress-log.md", "_xref/index.md", "_xref/_next_id.json"]
)
def test_a_bank_file_is_one_line_and_exit_2(root: Path, name: str) -> None:
    plant(root, f"{BANK}/{name}")

    for argv in (["bank", "status"], ["bank", "trim"], ["bank", "close-sprint", "--dry-run"]):
        code, out, err = run_cli(root, argv)

        assert code == 2, (argv, out, err)
        line = one_line(err)
        assert line.startswith("ctxward: error: ") and line.endswith(
            f"{name}: cannot read: {FIFO_REFUSED}"
        )


def test_a_bank_journal_is_rolled_back(root: Path) -> None:
    plant(root, f"{BANK}/.txn/journal.json")

    code, _, err = run_cli(root, ["bank", "status"])

    assert (code, err) == (0, "")
    assert not (root / BANK / ".txn").exists()  # unreadable journal: the transaction is undone


def test_the_bank_lock_file_does_not_block(root: Path) -> None:
    plant(root, f"{BANK}/.tmp/compress.lock")  # opened read-write: a FIFO does not wait then

    code, _, err = run_cli(root, ["bank", "status"])

    assert (code, err) == (0, "")


def test_a_zz_artifact_is_one_line_and_exit_2(root: Path) -> None:
    plant(root, f"{BANK}/.tmp/ZZ-phase1-context.md")

    code, _, err = run_cli(root, ["bank", "context", "--phase", "1"])

    assert code == 2
    assert one_line(err) == (
        f"ctxward: error: {BANK}/.tmp/ZZ-phase1-context.md: cannot read: {FIFO_REFUSED}"
    )


def test_the_bank_archive_is_one_line_and_exit_2(root: Path) -> None:
    month = datetime.now(timezone.utc).strftime("%Y-%m")
    plant(root, f"{BANK}/_notes/archive/{month}-compressed-entries.md")

    code, _, err = run_cli(root, ["bank", "trim"])

    assert code == 2
    assert one_line(err).endswith(f"{month}-compressed-entries.md: cannot read: {FIFO_REFUSED}")


def test_a_staged_bank_file_is_left_unrecognized(root: Path) -> None:
    plant(root, f"{BANK}/.tmp/L1-2026-01-02-phase-1-hermes.md")

    code, out, err = run_cli(root, ["handoff"])

    assert (code, err) == (0, "")
    assert "nothing staged." in out


def test_claude_settings_is_one_line_and_exit_2(root: Path) -> None:
    plant(root, ".claude/settings.json")

    install = [
        "install",
        "claude",
        "--scope",
        "project",
        "--dry-run",
        "--claude-version",
        "2.1.332",
    ]
    code, _, err = run_cli(root, install)
    assert code == 2
    assert one_line(err) == f"ctxward: error: .claude/settings.json: cannot read: {FIFO_REFUSED}"

    code, out, _ = run_cli(root, ["doctor", "--no-run", "--claude-version", "2.1.332"])
    assert code == 1  # doctor reports it, among its checks
    assert "FAIL  .claude/settings.json cannot be read" in out


def test_the_opencode_plugin_is_one_line_and_exit_2(root: Path) -> None:
    plant(root, ".opencode/plugin/ctxward.js")

    for argv in (["install", "opencode", "--dry-run"], ["uninstall", "opencode", "--dry-run"]):
        code, _, err = run_cli(root, argv)

        assert code == 2, argv
        line = one_line(err)
        assert line.startswith("ctxward: error: .opencode/plugin/ctxward.js: cannot read it:")
        assert FIFO_REFUSED in line


def test_a_transcript_found_in_the_host_folder_is_skipped(root: Path) -> None:
    """`ctxward audit` without a file picks the project's newest transcript: never a FIFO."""
    from ctxward.transcript.reader import project_folder_name

    folder = root.parent / "home" / ".claude" / "projects" / project_folder_name(root)
    plant(folder, "newest.jsonl")

    code, out, err = run_cli(root, ["audit", "--json"])

    assert (code, err) == (0, "")
    assert json.loads(out)["available"] is False


def test_a_sub_agent_transcript_and_its_meta_are_skipped(root: Path) -> None:
    session = root / "session.jsonl"
    shutil.copy(TRANSCRIPT, session)
    plant(root, "session/subagents/agent-a1.jsonl")
    plant(root, "session/subagents/agent-a1.meta.json")

    code, out, err = run_cli(root, ["audit", str(session), "--json"])

    assert (code, err) == (0, "")
    assert json.loads(out)["subagents"] == []


# --- ctxward's own state, and the files a payload names, read by a hook -------------------------


def test_a_pending_entry_is_skipped_by_user_prompt_submit(root: Path) -> None:
    plant(root, ".ctxward/pending/s1.json")

    assert run_hook(root, "user-prompt-submit", "UserPromptSubmit.json") == (0, "", "")


def test_a_sub_agent_transcript_from_the_payload_is_skipped(root: Path) -> None:
    fifo = plant(root, "agent-a1.jsonl")

    answer = run_hook(
        root,
        "subagent-stop",
        "SubagentStop.json",
        last_assistant_message="",
        agent_transcript_path=str(fifo),
    )

    assert answer == (0, "", "")
    assert support.logs(root) == []  # C8 found no text: nothing failed, nothing logged


def test_the_report_cap_marker_is_one_line(root: Path) -> None:
    data = support.captured("SubagentStop.json", root)
    plant(root, f".ctxward/report-cap/s1/{data['agent_id']}.json")
    report = "".join(f"line {n}\n" for n in range(60))  # over the cap: the marker is read

    code, out, err = run_hook(
        root, "subagent-stop", "SubagentStop.json", last_assistant_message=report
    )

    assert (code, out) == (1, "")  # the marker cannot be written: an expected failure
    assert "not a regular file (a folder, a FIFO?); refusing to replace it" in one_line(err)


@pytest.mark.parametrize(
    ("hook", "fixture"), [("pre-compact", "PreCompact.json"), ("session-end", "SessionEnd.json")]
)
def test_the_host_transcript_is_skipped(root: Path, hook: str, fixture: str) -> None:
    fifo = plant(root, "host-transcript.jsonl")

    code, _, err = run_hook(root, hook, fixture, transcript_path=str(fifo))

    assert (code, err) == (0, "")
    assert not (root / ".ctxward" / "sessions" / "s1.yaml").exists()


def test_a_fifo_in_the_template_cache_is_skipped(root: Path) -> None:
    """~/.cache/ctxward/templates (compiled templates) is read by every hook that renders; a real
    process each time, since a process loads each template from the cache once."""
    home = root.parent / "home"
    env = {**os.environ, "HOME": str(home), "CLAUDE_PROJECT_DIR": str(root)}
    env.pop("XDG_CACHE_HOME", None)

    def hook(compaction: str) -> subprocess.CompletedProcess[str]:
        payload = support.captured("PreCompact.json", root, session_id="s1", prompt_id=compaction)
        return subprocess.run(
            [str(support.CTXWARD_HOOK)],
            input=json.dumps(payload),
            capture_output=True,
            text=True,
            env=env,
            timeout=DEADLINE * 3,  # a real process; TimeoutExpired (not a hang) on a regression
        )

    first = hook("p1")
    cached = sorted((home / ".cache" / "ctxward" / "templates").iterdir())
    assert first.returncode == 0 and cached, first.stderr
    for path in cached:
        path.unlink()
        os.mkfifo(path)

    second = hook("p2")  # the next compaction (the same one's second run says nothing)

    assert (second.returncode, second.stdout, second.stderr) == (0, first.stdout, "")


# --- drift: .ctxward/sessions/<session>.drift.json and .tools.jsonl -----------------------------


def test_a_fifo_as_the_drift_state_is_replaced_by_the_rebuilt_state(root: Path) -> None:
    plant(root, ".ctxward/sessions/s1.drift.json")

    code, out, err = run_hook(root, "post-tool-use", "PostToolUse.json")

    assert (code, out, err) == (0, "", "")
    state = root / ".ctxward" / "sessions" / "s1.drift.json"
    assert state.is_file() and json.loads(state.read_text("utf-8"))["n"] == 1


def test_a_fifo_as_the_drift_log_is_refused_in_one_line(root: Path) -> None:
    plant(root, ".ctxward/sessions/s1.tools.jsonl")

    code, out, err = run_hook(root, "post-tool-use", "PostToolUse.json")

    assert (code, out) == (1, "")
    assert err.startswith("ctxward: PostToolUse: ") and err.count("\n") == 1
    assert err.rstrip().endswith(
        "s1.tools.jsonl: not a regular file (a FIFO?); the call is not observed"
    )


def test_drift_reads_a_log_beside_a_fifo_state(root: Path) -> None:
    log = root / ".ctxward" / "sessions" / "s1.tools.jsonl"
    log.parent.mkdir(parents=True)
    log.write_text('{"n": 1, "tool": "Read", "ok": true}\n', encoding="utf-8")
    plant(root, ".ctxward/sessions/s1.drift.json")

    code, _, err = run_cli(root, ["drift", "s1"])

    assert (code, err) == (0, "")


# --- the library readers, directly (the races an is_file() test leaves open) -------------------


def test_library_readers_refuse_a_fifo_without_waiting(tmp_path: Path) -> None:
    from ctxward.bank import archive
    from ctxward.compress import staging
    from ctxward.core import lock
    from ctxward.errors import BadInput, CtxwardError
    from ctxward.invariants import pending
    from ctxward.transcript import audit as transcript_audit
    from ctxward.transcript import reader as transcript

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with support.deadline(DEADLINE, "library readers on a FIFO"):
        assert staging.read_staged(fifo) is None
        assert transcript.last_assistant_text(fifo) == ""
        with pytest.raises(OSError, match="not a regular file"):
            list(transcript.iter_records(fifo))
        with pytest.raises(OSError, match="not a regular file"):
            transcript_audit.audit_file(fifo)
        with pytest.raises(BadInput, match="cannot read: not a regular file"):
            archive.read(fifo)
        assert lock.stale_owner(fifo) is True  # never a lock owner ctxward made: broken

    # pending.take claims the entry by a rename after its is_file() test: a FIFO swapped in
    # by then is reported and removed, like any file that is not a pending entry.
    project = Project(tmp_path / "project")
    entry = pending.pending_path(project, "s1")
    entry.parent.mkdir(parents=True)
    entry.write_text("{}", encoding="utf-8")
    real_rename = os.rename

    def swap_then_rename(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        os.unlink(src)
        os.mkfifo(src)
        real_rename(src, dst)

    with (
        support.deadline(DEADLINE, "pending.take on a FIFO"),
        pytest.MonkeyPatch.context() as patch,
        pytest.raises(CtxwardError, match="not a pending re-injection; removed it"),
    ):
        patch.setattr(os, "rename", swap_then_rename)
        pending.take(project, "s1")
    assert list(entry.parent.iterdir()) == []
