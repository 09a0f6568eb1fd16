"""Numbers, system errors and unbounded inputs: one line and a documented exit code, never a
traceback, never a wait without end (issue 20).

- Numbers: a JSON integer of more than 4,300 digits (Python's int conversion limit: `json.loads`
  raises a plain ValueError, not JSONDecodeError) at every PreToolUse entry point, as real
  processes: the guard DENIES the dispatch (OpenCode: exit 1, which its plugin turns into a
  block); elsewhere one line, exit 1. Huge floats, exponents, NaN and nested numbers go through
  normally. The same integer in the files a command or a hook reads (config, a skill, the
  settings, an input, --value) is one line and exit 2.
- System errors: fault injection (the OS call monkeypatched to raise the errno) under a sample
  of commands that write and read, through `cli.main` (the console script's own path): ENOSPC,
  EROFS, EACCES, ENAMETOOLONG, EFBIG, ELOOP, ENOTDIR are one line naming the path and the
  error, exit 5, and no state file is changed (every write is atomic). A real over-long path
  and a project whose `.ctxward` is a symbolic link or a file, too.
- Unbounded inputs: a FIFO with no writer, /dev/zero, a file one byte past its limit and stdin
  past its limit, given to every command that reads a file: refused within a deadline, exit 2
  (audit: "not available", exit 0, as for any file it cannot read), nothing written.
"""

from __future__ import annotations

import errno
import io
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import ctxward_hardening as support
import pytest

from ctxward.cli import main
from ctxward.core import fsutil
from ctxward.core.project import Project
from ctxward.hookio import run
from ctxward.invariants.activate import activate
from ctxward.invariants.model import MAX_SKILL_BYTES
from ctxward.transcript import reader as transcript

DIGITS = 5_000  # past the 4,300 Python converts
TRANSCRIPT = support.FIXTURES / "transcripts" / "7de73c29-a9cd-4608-aa26-55358a7f7df9.jsonl"
ENTRY = {
    "agent": "hermes",
    "phase": "1",
    "date": "2026-01-02",
    "summary": "Created new table t in a schema migration",
    "files_changed": ["src/hermes.py"],
    "status": "complete",
}


def build(root: Path) -> Path:
    """A git project with an active plan, a transcript and a subtask summary to promote."""
    root.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True, timeout=20)
    activate(Project(root), "deep-review", "plan-b")
    shutil.copy(TRANSCRIPT, root / "transcript.jsonl")
    (root / "entry.json").write_text(json.dumps({"subtask_summary": [ENTRY]}), encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(tmp_path_factory.mktemp("hostile-inputs") / "project")


@pytest.fixture
def root(template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh copy of the template project, the current folder (relative paths name it)."""
    copy = tmp_path / "project"
    shutil.copytree(template, copy, symlinks=True)
    monkeypatch.chdir(copy)
    return copy.resolve()


# --- numbers at the hook entry points ---------------------------------------------------------


def dispatch_payload(root: Path, number: str, *, first: bool = False, tool: str = "Agent") -> bytes:
    """A small PreToolUse payload holding `number` (raw JSON text) in its tool input, or as its
    first key (before hook_event_name: a parser cannot read the event first)."""
    body = {
        "session_id": "s",
        "cwd": str(root),
        "hook_event_name": "PreToolUse",
        "tool_name": tool,
        "tool_use_id": "toolu_1",
        "tool_input": {"description": "d", "prompt": "Reply with OK.", "n": 0},
    }
    text = json.dumps(body).replace('"n": 0', f'"n": [1, {{"deep": [{number}]}}]')
    return ('{"first": ' + number + ", " + text[1:]).encode() if first else text.encode()


def opencode_payload(root: Path, number: str) -> bytes:
    body = {
        "hook": "tool.execute.before",
        "input": {"tool": "task", "sessionID": "ses_1", "callID": "call_1"},
        "output": {"args": {"description": "d", "prompt": "Reply with OK.", "n": 0}},
        "directory": str(root),
        "worktree": str(root),
    }
    return json.dumps(body).replace('"n": 0', f'"n": {number}').encode()


ENTRY_POINTS = {
    "ctxward-hook": [str(support.CTXWARD_HOOK)],
    "hooks/pre_tool_use.py": [sys.executable, str(support.HOOKS / "pre_tool_use.py")],
    "ctxward hook pre-tool-use": [str(support.CTXWARD), "hook", "pre-tool-use"],
}


def process(argv: list[str], raw: bytes, root: Path) -> tuple[int, str, str]:
    env = {**os.environ, "CLAUDE_PROJECT_DIR": str(root), "HOME": str(root.parent / "home")}
    done = subprocess.run(argv, input=raw, capture_output=True, env=env, timeout=60, check=False)
    support.count("hostile number processes")
    return done.returncode, done.stdout.decode(), done.stderr.decode()


def denied(out: str) -> str:
    answer = json.loads(out)["hookSpecificOutput"]
    assert answer["permissionDecision"] == "deny", answer
    return str(answer["permissionDecisionReason"])


@pytest.mark.parametrize("first", [False, True], ids=["in-tool-input", "first-key"])
@pytest.mark.parametrize("point", sorted(ENTRY_POINTS))
def test_a_dispatch_with_a_5000_digit_integer_is_denied(root: Path, point: str, first: bool):
    for number in ("7" * DIGITS, "-" + "7" * DIGITS):
        code, out, err = process(
            ENTRY_POINTS[point], dispatch_payload(root, number, first=first), root
        )
        assert support.hook_problem(code, out, err, "PreToolUse") is None, (point, err)
        assert code == 0
        assert "an integer of more than 4,300 digits" in denied(out)
        assert err.startswith("ctxward: ") and "integer of more than 4,300 digits" in err


def test_another_tool_with_a_5000_digit_integer_is_one_line_exit_1(root: Path):
    raw = dispatch_payload(root, "7" * DIGITS, tool="Bash")
    code, out, err = process(ENTRY_POINTS["ctxward-hook"], raw, root)
    assert support.hook_problem(code, out, err) is None
    assert (code, out) == (1, "")
    assert "integer of more than 4,300 digits" in err


def test_the_opencode_and_codex_hosts_refuse_a_5000_digit_integer(root: Path):
    opencode = [str(support.CTXWARD), "hook", "pre-tool-use", "--host", "opencode"]
    code, out, err = process(opencode, opencode_payload(root, "7" * DIGITS), root)
    assert support.hook_problem(code, out, err) is None
    assert (code, out) == (1, "")  # the plugin blocks the task call on any non-zero exit
    assert "integer of more than 4,300 digits" in err
    codex = [str(support.CTXWARD), "hook", "pre-compact", "--host", "codex"]
    payload = json.dumps(
        {"session_id": "s", "cwd": str(root), "hook_event_name": "PreCompact", "n": 0}
    ).replace('"n": 0', f'"n": {"7" * DIGITS}')
    code, out, err = process(codex, payload.encode(), root)
    assert support.hook_problem(code, out, err) is None
    assert (code, out) == (1, "")
    assert "integer of more than 4,300 digits" in err


# Numbers json reads as floats (no conversion limit): a normal small dispatch.
FLOATS = ["1e999999", "-1e999999", "1e-999999", "7" * DIGITS + ".5", "NaN", "-Infinity", "-0"]


@pytest.mark.parametrize("number", FLOATS)
@pytest.mark.parametrize("pinned", [None, "PreToolUse"])
def test_huge_floats_and_exponents_pass_a_small_dispatch(root: Path, number: str, pinned):
    out, err = io.StringIO(), io.StringIO()
    with support.deadline(30, f"PreToolUse with {number[:20]}"):
        code = run(
            event_name=pinned,
            stdin=io.BytesIO(dispatch_payload(root, number)),
            stdout=out,
            stderr=err,
            env={"CLAUDE_PROJECT_DIR": str(root)},
        )
    assert support.hook_problem(code, out.getvalue(), err.getvalue(), "PreToolUse") is None
    assert (code, err.getvalue()) == (0, "")
    assert "deny" not in out.getvalue()
    out, err = io.StringIO(), io.StringIO()
    code = run(
        event_name="PreToolUse",
        host="opencode",
        stdin=io.BytesIO(opencode_payload(root, number)),
        stdout=out,
        stderr=err,
        env={},
    )
    assert (code, err.getvalue()) == (0, "")
    assert "deny" not in out.getvalue()


def test_numbers_nested_past_the_depth_limit_are_denied(root: Path):
    number = "[" * 5_000 + "7" * DIGITS + "]" * 5_000
    code, out, err = process(ENTRY_POINTS["ctxward-hook"], dispatch_payload(root, number), root)
    assert support.hook_problem(code, out, err, "PreToolUse") is None
    assert "nests deeper than 100 levels" in denied(out)


# --- the same integer in the files commands and hooks read ------------------------------------


def big_int_files(root: Path) -> None:
    big = "7" * DIGITS
    (root / ".ctxward").mkdir(exist_ok=True)
    (root / ".ctxward" / "config.yaml").write_text(f"dispatch:\n  capacity_bytes: {big}\n")
    skill = root / "big-skill.md"
    skill.write_text(f"---\nname: big\ninvariants:\n  - {big}\n---\nbody\n", encoding="utf-8")
    settings = root / ".claude" / "settings.json"
    settings.parent.mkdir(exist_ok=True)
    handler = '{"type": "command", "command": "ctxward-hook", "timeout": ' + big + "}"
    settings.write_text('{"hooks": {"PreCompact": [{"hooks": [' + handler + "]}]}}")


@pytest.mark.parametrize(
    ("argv", "shown"),
    [
        (["thresholds"], ".ctxward/config.yaml: has an integer of more than 4,300 digits"),
        (["config", "show"], ".ctxward/config.yaml: has an integer of more than 4,300 digits"),
        (["activate", "ROOT/big-skill.md", "--slug", "big"], "front matter has an integer of"),
        (
            ["install", "claude", "--scope", "project", "--claude-version", "2.1.332"],
            "has an integer of more than",
        ),
        (["share", "--batch", "b", "--key", "k", "--value", "7" * DIGITS], "--value is not JSON"),
    ],
)
def test_a_5000_digit_integer_in_a_file_a_command_reads(root: Path, argv, shown):
    big_int_files(root)
    if argv[0] in ("activate", "install", "share"):
        (root / ".ctxward" / "config.yaml").unlink()  # reach the file under test
    argv = [arg.replace("ROOT", str(root)) for arg in argv]
    before = support.state(root)
    code, out, err = support.invoke_cli(root, argv, counter="hostile number commands")
    assert support.cli_problem(code, out, err) is None, err
    assert code == 2
    assert shown in err.strip().splitlines()[-1]
    assert support.changed(before, support.state(root)) == []


def test_doctor_names_a_settings_file_with_a_5000_digit_integer(root: Path):
    big_int_files(root)
    (root / ".ctxward" / "config.yaml").unlink()
    code, out, err = support.invoke_cli(root, ["doctor", "--no-run", "--claude-version", "2.1.0"])
    assert code == 1 and "Traceback" not in out + err
    assert "FAIL  .claude/settings.json cannot be read" in out
    assert "has an integer of more than 4,300 digits" in out


def test_the_guard_denies_when_the_config_holds_a_5000_digit_integer(root: Path):
    big_int_files(root)
    raw = dispatch_payload(root, "1")
    for point in ("ctxward-hook", "hooks/pre_tool_use.py"):
        code, out, err = process(ENTRY_POINTS[point], raw, root)
        assert support.hook_problem(code, out, err, "PreToolUse") is None
        assert "has an integer of more than 4,300 digits" in denied(out)


# --- system errors through cli.main ------------------------------------------------------------


def run_main(root: Path, argv: list[str], stdin: bytes = b"") -> tuple[int, str, str]:
    """`ctxward -C ROOT ARGV` through `cli.main` (what the console script runs), in-process."""
    out, err = io.StringIO(), io.StringIO()
    saved = sys.stdin, sys.stdout, sys.stderr
    sys.stdin = io.TextIOWrapper(io.BytesIO(stdin))
    sys.stdout, sys.stderr = out, err
    try:
        with support.deadline(60, f"ctxward {argv}"):
            code = main(["-C", str(root), *argv])
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved
    support.count("OS error cases")
    return code, out.getvalue(), err.getvalue()


Injector = Callable[[Path, int], None]


@pytest.fixture
def fail_writes(monkeypatch: pytest.MonkeyPatch) -> Injector:
    """Make every folder creation, rename, removal and fsync in the project raise `code`: the
    disk is full, read-only, ... (fsync takes no path: any fsync fails)."""

    def inject(root: Path, code: int) -> None:
        def inside(path: object) -> bool:
            return os.fsdecode(os.fspath(path)).startswith(str(root))  # type: ignore[arg-type]

        def refuse(real: Callable[..., Any], at: int = 0) -> Callable[..., Any]:
            def call(*args: Any, **kwargs: Any) -> Any:
                if inside(args[at]):
                    raise OSError(code, os.strerror(code), os.fspath(args[at]))
                return real(*args, **kwargs)

            return call

        def fsync(fd: int) -> None:
            raise OSError(code, os.strerror(code))  # as the kernel says it: no file named

        real_unlink = os.unlink

        def unlink(path: Any, *args: Any, **kwargs: Any) -> None:
            # Removing a temporary file ctxward just made still works: a full disk lets it, and
            # on a read-only one it could not have been made.
            if ".ctxward-tmp-" in os.fsdecode(os.fspath(path)):
                return real_unlink(path, *args, **kwargs)
            return refuse(real_unlink)(path, *args, **kwargs)

        monkeypatch.setattr(os, "mkdir", refuse(os.mkdir))
        monkeypatch.setattr(os, "replace", refuse(os.replace, 1))
        monkeypatch.setattr(os, "unlink", unlink)
        monkeypatch.setattr(os, "fsync", fsync)

    return inject


@pytest.fixture
def fail_reads(monkeypatch: pytest.MonkeyPatch) -> Injector:
    """Make opening any existing file of the project raise `code`."""

    def inject(root: Path, code: int) -> None:
        real = os.open

        def refuse(path: Any, *args: Any, **kwargs: Any) -> int:
            text = os.fsdecode(os.fspath(path))
            if text.startswith(str(root)) and os.path.isfile(text):
                raise OSError(code, os.strerror(code), text)
            return real(path, *args, **kwargs)

        monkeypatch.setattr(os, "open", refuse)

    return inject


ERRNOS = ["ENOSPC", "EROFS", "EACCES", "ENAMETOOLONG", "EFBIG", "ELOOP", "ENOTDIR"]
WRITERS = [
    ["activate", "deep-review", "--slug", "new-plan"],  # creates a folder
    ["activate", "compaction-resilience", "--slug", "plan-b"],  # replaces a file: fsync fails
    ["plan", "complete", "plan-b"],
    ["inline", "compress", "--text", "Added the JWT login endpoint", "--from", "hermes"],
    ["session", "summarize", "transcript.jsonl"],
    ["bank", "promote", "entry.json", "--phase", "1"],
    ["share", "--batch", "b", "--key", "k", "--value", "1"],
    ["install", "claude", "--claude-version", "2.1.332"],
]


def one_os_line(err: str, name: str) -> str:
    assert "Traceback" not in err, err
    last = err.strip().splitlines()[-1]
    assert last.startswith("ctxward: error: /"), last  # names the path
    assert last.endswith(f"({name})"), last
    return last


@pytest.mark.parametrize("name", ERRNOS)
@pytest.mark.parametrize("argv", WRITERS, ids=lambda argv: "-".join(argv[:2]))
def test_a_write_the_system_refuses_is_one_line_exit_5(root: Path, fail_writes, argv, name):
    code = getattr(errno, name)
    before = support.state(root)
    fail_writes(root, code)
    status, out, err = run_main(root, argv)
    assert status == 5, (argv, status, out, err)
    assert os.strerror(code) in one_os_line(err, name)
    assert support.changed(before, support.state(root)) == []  # atomic: as it was


def test_a_full_disk_names_the_file_the_fsync_failed_for(root: Path, fail_writes):
    fail_writes(root, errno.ENOSPC)
    _, _, err = run_main(root, ["activate", "compaction-resilience", "--slug", "plan-b"])
    line = one_os_line(err, "ENOSPC")
    assert line == (
        f"ctxward: error: {root}/docs/plans/plan-b/invariants.md: No space left on device (ENOSPC)"
    )


READERS = [
    ["plan", "list"],
    ["config", "show"],
    ["compactions"],
    ["audit", "transcript.jsonl"],
    ["session", "stats", "transcript.jsonl"],
    ["drift", "transcript.jsonl"],
    ["bank", "status"],
    ["scrub", "entry.json"],
    ["dispatch", "check", "entry.json"],
    ["inline", "score", "--file", "entry.json"],
    ["activate", "entry.json", "--slug", "x"],
    ["doctor", "--no-run", "--claude-version", "2.1.332"],
]


@pytest.mark.parametrize("name", ["EACCES", "ENAMETOOLONG", "ELOOP", "EIO"])
@pytest.mark.parametrize("argv", READERS, ids=lambda argv: "-".join(argv[:2]))
def test_a_read_the_system_refuses_is_one_line(root: Path, fail_reads, argv, name):
    (root / ".ctxward" / "config.yaml").write_text("dispatch: {capacity_bytes: 100000}\n")
    before = support.state(root)
    fail_reads(root, getattr(errno, name))
    code, out, err = run_main(root, argv)
    reporter = argv[0] == "doctor" and code == 1  # its report on stdout names the failure
    assert reporter or support.cli_problem(code, out, err) is None, (argv, code, err)
    assert "Traceback" not in out + err
    if code == 5:
        one_os_line(err, name)
    assert support.changed(before, support.state(root)) == []


def test_a_real_path_too_long_is_one_line_exit_5(root: Path):
    far = root.parent / ("x" * 300)  # one component past NAME_MAX: the kernel says ENAMETOOLONG
    code, _, err = run_main(far, ["plan", "list"])  # a reader: no plans, and why, exit 0
    assert (code, err.count("\n")) == (0, 1) and "File name too long" in err, (code, err)
    for project, argv in (
        (far, ["activate", "deep-review", "--slug", "x"]),
        (root, ["scrub", str(far)]),
        (root, ["audit", "transcript.jsonl", "--html", str(far / "a.html")]),
    ):
        code, _, err = run_main(project, argv)
        assert code == 5, (argv, code, err)
        assert one_os_line(err, "ENAMETOOLONG").startswith(f"ctxward: error: {far}")


@pytest.mark.parametrize("planted", ["link", "file"])
def test_a_ctxward_folder_that_is_a_link_or_a_file(root: Path, tmp_path: Path, planted: str):
    victim = tmp_path / "victim"
    victim.mkdir()
    shutil.rmtree(root / ".ctxward", ignore_errors=True)
    if planted == "link":
        (root / ".ctxward").symlink_to(victim, target_is_directory=True)
    else:
        (root / ".ctxward").write_text("not a folder\n")
    # (bank promote is left out: its lock folder is still made with a plain mkdir, which a
    # link on the way does not stop; the containment work covers the bank.)
    writers = [argv for argv in WRITERS if argv[0] not in ("bank", "install", "plan")]
    with support.untouched(victim):
        for argv in writers:
            code, out, err = run_main(root, argv)
            assert code in (1, 5), (argv, code, err)
            assert support.cli_problem(code, out, err) is None, (argv, err)
            assert "symbolic link" in err or "not a folder" in err or "(ENOTDIR)" in err, err


# --- unbounded inputs --------------------------------------------------------------------------


def file_commands(path: str) -> list[list[str]]:
    return [
        ["audit", path],
        ["activate", path, "--slug", "x"],
        ["scrub", path],
        ["dispatch", "check", path],
        ["inline", "score", "--file", path],
        ["inline", "compress", "--file", path],
        ["inline", "stats", "--file", path],
        ["inline", "batch", path],
        ["bank", "promote", path, "--phase", "1"],
        ["session", "summarize", path],
        ["session", "stats", path],
        ["drift", path],
        ["artifact", "record", path, "--role", "r", "--rid", "1", "--idx", "1"],
    ]


def fifo(folder: Path) -> str:
    path = folder / "no-writer.fifo"
    os.mkfifo(path)
    return str(path)


def past_limit(folder: Path, name: str, limit: int) -> str:
    """A sparse file one byte past `limit` (costs no disk)."""
    path = folder / name
    with open(path, "wb") as handle:
        handle.truncate(limit + 1)
    return str(path)


def hold(root: Path, argv: list[str], stdin: bytes | None = None) -> int:
    """Run one command on an unbounded input: it ends within the deadline with one line and a
    documented exit code, and writes nothing."""
    before = support.state(root)
    code, out, err = support.invoke_cli(root, argv, stdin, seconds=30, counter="unbounded inputs")
    assert support.cli_problem(code, out, err) is None, (argv, err)
    assert support.changed(before, support.state(root)) == [], argv
    return code


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_a_fifo_without_a_writer_or_a_device_is_refused_at_once(root: Path, tmp_path, kind):
    path = fifo(tmp_path) if kind == "fifo" else "/dev/zero"
    for argv in file_commands(path):
        code = hold(root, argv)
        assert code == (0 if argv[0] == "audit" else 2), argv


def test_audit_says_why_it_cannot_read_a_fifo(root: Path, tmp_path: Path):
    code, out, _ = support.invoke_cli(root, ["audit", fifo(tmp_path), "--json"], seconds=30)
    assert code == 0
    reason = json.loads(out)["reason"]
    assert reason.endswith("not a regular file (a FIFO or a device?)")


@pytest.mark.parametrize(
    ("commands", "limit", "shown"),
    [
        ("scrub dispatch inline bank", fsutil.MAX_NAMED_BYTES, "larger than 33,554,432 bytes"),
        ("activate", MAX_SKILL_BYTES, "larger than 1,048,576 bytes"),
        ("audit session drift", transcript.MAX_TRANSCRIPT_BYTES, "larger than 2,147,483,648"),
    ],
)
def test_a_file_past_its_limit_is_refused_in_one_line(root: Path, tmp_path, commands, limit, shown):
    path = past_limit(tmp_path, "big.md", limit)
    ran = 0
    for argv in file_commands(path):
        if argv[0] not in commands.split():
            continue
        ran += 1
        code = hold(root, argv)
        _, out, err = support.invoke_cli(root, argv, seconds=30)
        assert shown in (err if code else out), (argv, err, out)
    assert ran


def test_stdin_past_its_limit_is_refused_in_one_line(root: Path):
    data = b"a" * (fsutil.MAX_NAMED_BYTES + 1)
    for argv in (
        ["scrub", "-"],
        ["dispatch", "check", "-"],
        ["inline", "score", "--file", "-"],
        ["share", "--batch", "b", "--key", "k", "--value", "-"],
    ):
        assert hold(root, argv, data) == 2
        _, _, err = support.invoke_cli(root, argv, data)
        assert err.strip().endswith("stdin: larger than 33,554,432 bytes; refused"), err


def test_a_file_at_its_limit_is_still_read(root: Path, tmp_path: Path):
    path = tmp_path / "prompt.md"
    path.write_bytes(b"a" * fsutil.MAX_NAMED_BYTES)
    code, out, _ = support.invoke_cli(root, ["dispatch", "check", str(path), "--json"])
    assert code == 3  # measured, and far past every tier
    assert json.loads(out)["sizeBytes"] == fsutil.MAX_NAMED_BYTES
