"""Bad input at every CLI command that reads input: a documented exit code and one clear line,
never a traceback, never a hang, and nothing written when the input is refused.

Inputs: files (malformed, truncated, non-UTF-8, NUL, 100,000 levels deep, lone surrogates,
YAML bombs and aliases, YAML tags, wrong types, 5 MB lines, a FIFO, a folder, a link out of
the project), stdin, option values (traversal, NUL, confusables, 300 characters), and the
project's own state files corrupted in the same ways (config, shared channel, ArtifactMeta,
survival reports, pending entries, session YAML, drift state, memory bank, settings.json).
Hypothesis then feeds arbitrary text and bytes to the commands that read stdin or --text.

Each run goes through click in-process (CliRunner), under a deadline. "Documented exit code":
README "Exit codes"; "one clear line": the last stderr line is `ctxward: ...` or click's
`Error: ...` (support.cli_problem).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import ctxward_hardening as support
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxward.core.project import Project
from ctxward.invariants.activate import activate

# Fuzzing every command: the slow stage (CI) runs it.
pytestmark = pytest.mark.slow

BOMB = (
    "a: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
    "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
    "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
    "g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\nh: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]\n"
)
DEEP = b"[" * 5_000 + b"]" * 5_000  # past Python's recursion limit, whatever it is set to
DEEP_100K = b"[" * 100_000 + b"]" * 100_000
DEEP_900 = b"[" * 900 + b"]" * 900  # parses; its walkers must not recurse 900 deep
ENTRY = {"agent": "hermes", "summary": "Added the login endpoint", "status": "complete"}

# Contents of an input file: name -> bytes.
FILES: dict[str, bytes] = {
    "empty": b"",
    "nul": b"\x00" * 32,
    "not-utf8": b"\xff\xfe\x00a valid start then \xc3",
    "truncated-json": b'{"subtask_summary": {"agent": "a", "summary": "b',
    "deep-json": DEEP,
    "deep-100k": DEEP_100K,
    "deep-900": DEEP_900,
    "lone-surrogate": json.dumps({"subtask_summary": {**ENTRY, "agent": "\\ud800"}})
    .replace("\\\\ud800", "\\ud800")
    .encode(),
    "transcript-surrogates": (
        b'{"type":"assistant","requestId":"r1","message":{"role":"assistant","usage":'
        b'{"input_tokens":1},"content":[{"type":"tool_use","id":"t1","name":"Bash\\ud800",'
        b'"input":{"command":"ls \\udc00"}},{"type":"text","text":"We decided \\ud800."}]}}\n'
        b'{"type":"user","message":{"role":"user","content":"I prefer \\udfff tabs."}}\n'
    ),
    "json-list": b"[1, 2, 3]",
    "json-null": b"null",
    "yaml-bomb": (BOMB + "subtask_summary: {agent: a, summary: *h}\n").encode(),
    "yaml-alias": b"s: &s Added the login endpoint\nsubtask_summary: {agent: a, summary: *s}\n",
    "yaml-tag": b"subtask_summary: !!python/object/apply:os.system ['true']\n",
    "wrong-types": json.dumps(
        {"subtask_summary": {"agent": 5, "summary": ["x"], "files_changed": "a", "status": {}}}
    ).encode(),
    "wrong-types-2": b'{"subtask_summary": [{"agent": null, "summary": null}, 5, "x", []]}',
    "transcript-garbage": b"\n".join(
        [
            b'{"type":"user","message":{"role":"user","content":5}}',
            b'{"type":"assistant","message":{"content":[{"type":"tool_use","input":7}]}}',
            b"[1]",
            b"null",
            b'{"type":"user","message":"s"}',
            b'{"type":"assistant","message":{"content":"s","usage":"x"},"requestId":5}',
            b'{"type":"system","subtype":"compact_boundary","compactMetadata":"x"}',
            b'{"type":"user","message":{"role":"user","content":"' + b"[" * 2000 + b'"}}',
            b'{"type":"user","x":' + DEEP_900 + b"}",
        ]
    )
    + b"\n",
    "huge-line": b'{"type":"user","message":{"role":"user","content":"'
    + b"x" * 5_000_000
    + b'"}}\n',
}


def file_commands(path: str) -> list[list[str]]:
    """Every command that reads a file, given `path`."""
    return [
        ["dispatch", "check", path],
        ["scrub", path],
        ["inline", "score", "--file", path],
        ["inline", "compress", "--file", path, "--json"],
        ["inline", "stats", "--file", path],
        ["inline", "batch", path],
        ["bank", "promote", path, "--phase", "1"],
        ["audit", path],
        ["audit", path, "--json", "--summary"],
        ["session", "summarize", path],
        ["session", "stats", path],
        ["drift", path],
        ["drift", path, "--transcript"],
        ["artifact", "record", path, "--role", "r", "--rid", "1", "--idx", "1"],
        ["activate", path, "--slug", "fuzz-plan"],
    ]


STDIN_COMMANDS = [
    ["dispatch", "check", "-"],
    ["scrub", "-"],
    ["share", "--batch", "b", "--key", "k", "--value", "-"],
    ["hook", "pre-tool-use"],
    ["hook", "pre-compact"],
    ["hook", "post-tool-use", "--host", "opencode"],
    ["hook", "session-start", "--host", "codex"],
]

BAD_NAMES = ["../x", "a/b", "..", "a\x00b", "x" * 300, "Аgent", "*", "", " ", "-", "a\nb"]


def name_commands(bad: str) -> list[list[str]]:
    return [
        ["share", "--batch", bad, "--key", "k", "--value", "1"],
        ["share", "--batch", "b", "--key", bad, "--value", "1"],
        ["share", "--batch", "b", "--key", "k", "--value", "1", "--session", bad],
        ["shared-read", "--batch", bad],
        ["shared-read", "--batch", "b", "--since", bad],
        ["shared-read", "--batch", "b", "--key", bad],
        ["reduce", "--batch", bad],
        ["heartbeat", "--batch", bad, "--role", bad, "--status", "done"],
        ["artifact", "path", "--rid", bad, "--role", bad, "--idx", "1", "--ext", bad],
        ["bank", "context", "--phase", bad],
        ["bank", "promote", "--phase", bad],
        ["bank", "promote", "--phase", "1", "--date", bad],
        ["bank", "promote", "--phase", "1", "--feature", bad],
        ["handoff", "--phase", bad],
        ["drift", bad],
        ["activate", "deep-review", "--slug", bad],
        ["activate", bad, "--slug", "fuzz-plan"],
        ["plan", "complete", bad],
        ["session", "summarize", "--session-id", bad, "transcript.jsonl"],
        ["dispatch", "check", "-", "--agent-type", bad],
        ["install", "claude", "--claude-version", bad, "--dry-run"],
    ]


# Commands that report problems with exit 1 as their answer (not a refused input): they may
# write (watch --once distills payloads) and still exit 1.
REPORTERS = ("doctor", "watch")


def build(root: Path) -> Path:
    root.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True, timeout=20)
    with pytest.MonkeyPatch.context() as patch:  # the user `support.invoke_cli` runs as
        patch.setenv("HOME", str(root.parent / "home"))
        patch.delenv("XDG_STATE_HOME", raising=False)
        activate(Project(root), "deep-review", "plan-b")
    shutil.copy(
        support.FIXTURES / "transcripts" / "7de73c29-a9cd-4608-aa26-55358a7f7df9.jsonl",
        root / "transcript.jsonl",
    )
    return root


@pytest.fixture(scope="module")
def cli_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(tmp_path_factory.mktemp("cli") / "project")


def invoke(root: Path, argv: list[str], stdin: bytes | str | None = None) -> tuple[int, str, str]:
    return support.invoke_cli(root, argv, stdin)


def check(
    root: Path, argv: list[str], stdin: bytes | str | None = None, *, unchanged: bool = True
) -> int:
    """Run one command and hold it to the contract; `unchanged`: a refusal writes nothing
    (for a refused input; a corrupted state file may fail a command half-way)."""
    before = support.state(root)
    code, out, err = invoke(root, argv, stdin)
    reporter = argv[0] in REPORTERS and code == 1  # the report on stdout says what failed
    problem = support.cli_problem(code, out, err) if not reporter else None
    assert problem is None, f"ctxward {argv!r}: {problem}"
    assert not reporter or ("Traceback" not in out + err and (out or err)), (argv, out, err)
    refused = code in (1, 2, 4) and argv[0] not in REPORTERS and unchanged
    if refused:
        moved = support.changed(before, support.state(root))
        if "not a pending re-injection; removed it" in err:  # documented: pending.take
            moved = [path for path in moved if not path.startswith(".ctxward/pending/")]
        assert not moved, f"ctxward {argv!r} exit {code} ({err.strip()}) but changed {moved}"
    return code


@pytest.fixture(scope="module")
def input_files(cli_root: Path) -> dict[str, str]:
    folder = cli_root.parent / "inputs"
    folder.mkdir(exist_ok=True)
    paths = {}
    for name, data in FILES.items():
        (folder / name).write_bytes(data)
        paths[name] = str(folder / name)
    (folder / "a-folder").mkdir()
    paths["folder"] = str(folder / "a-folder")
    (folder / "link-out").symlink_to("/etc/hostname")
    paths["link-out"] = str(folder / "link-out")
    paths["missing"] = str(folder / "missing" / "file")
    return paths


# A FIFO or a device named on the command line is refused at once (test_hostile_inputs.py);
# FIFOs where ctxward opens files on its own (plans, state) are tested in test_fifo_state.py.
FAST_FILES = ["deep-json", "lone-surrogate", "transcript-surrogates", "yaml-bomb", "not-utf8"]


@pytest.mark.parametrize("name", FAST_FILES)
def test_every_file_command_on_a_hostile_file(cli_root: Path, input_files, name: str) -> None:
    for argv in file_commands(input_files[name]):
        check(cli_root, argv)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(set(FILES) - set(FAST_FILES) | {"folder", "link-out"}))
def test_every_file_command_on_every_hostile_file(cli_root: Path, input_files, name: str) -> None:
    for argv in file_commands(input_files[name]):
        check(cli_root, argv)


@pytest.mark.parametrize("name", ["deep-json", "lone-surrogate", "not-utf8", "empty"])
def test_every_stdin_command_on_hostile_stdin(cli_root: Path, name: str) -> None:
    for argv in STDIN_COMMANDS:
        check(cli_root, argv, FILES[name])


@pytest.mark.parametrize("bad", BAD_NAMES)
def test_hostile_names_and_option_values(cli_root: Path, bad: str) -> None:
    for argv in name_commands(bad):
        check(cli_root, argv)
    assert not (cli_root.parent / "x").exists(), "a traversal escaped the project"


def test_slugs_never_escape_docs_plans(cli_root: Path) -> None:
    outside = {p.name for p in cli_root.parent.iterdir()}
    for slug in ["../escaped", "../../escaped", "/tmp/escaped", "..", ".", "a/../../escaped"]:
        assert check(cli_root, ["activate", "deep-review", "--slug", slug]) == 2
        assert check(cli_root, ["plan", "complete", slug]) == 2
    assert {p.name for p in cli_root.parent.iterdir()} == outside


# --- the project's own state files, corrupted ---------------------------------------------------

CORRUPT: dict[str, bytes] = {
    "deep": DEEP,
    "deep-900": DEEP_900,
    "not-utf8": b"\xff\xfe\xfd",
    "truncated": b'{"entries": {"k": ',
    "bomb": BOMB.encode(),
    "nul": b"\x00" * 10,
    "wrong-shape": b'{"entries": [1, 2], "heartbeats": "x", "version": "one", "next": []}',
    "surrogate": b'{"context": "\\ud800", "entries": {"k": {"value": "\\udfff"}}}',
}
STATE_FILES = [
    ".ctxward/config.yaml",
    ".ctxward/sub_agents/local/shared/b.json",
    ".ctxward/sub_agents/local/artifacts/1-r-001.meta.json",
    ".ctxward/compactions/s1-20260101T000000000000Z.json",
    ".ctxward/pending/s1.json",
    ".ctxward/sessions/s1.yaml",
    ".ctxward/sessions/s1.drift.json",
    ".ctxward/sessions/s1.tools.jsonl",
    ".ctxward/memory-bank/_xref/_next_id.json",
    ".ctxward/memory-bank/_xref/index.md",
    ".ctxward/memory-bank/01-active-context.md",
    ".ctxward/memory-bank/.txn/journal.json",
    ".ctxward/memory-bank/.tmp/phase1-hermes.md",
    ".claude/settings.json",
    "docs/plans/plan-b/invariants.md",
    "docs/plans/plan-b/.compaction-payload.md",
]
READERS = [
    ["config", "show"],
    ["thresholds", "--json"],
    ["plan", "list", "--json"],
    ["compactions"],
    ["shared-read", "--batch", "b"],
    ["reduce", "--batch", "1"],
    ["heartbeat", "--batch", "b", "--role", "r", "--status", "done"],
    ["share", "--batch", "b", "--key", "k2", "--value", '"v"'],
    ["drift", "s1"],
    ["bank", "status"],
    ["bank", "trim"],
    ["bank", "close-sprint", "--dry-run"],
    ["bank", "context", "--phase", "1"],
    ["handoff"],
    ["install", "claude", "--dry-run", "--claude-version", "2.1.332"],
    ["uninstall", "claude", "--dry-run"],
    ["doctor", "--no-run"],
    ["watch", "--once"],
    ["hook", "user-prompt-submit"],
    ["hook", "pre-compact"],
    ["hook", "session-start"],
    ["hook", "post-compact"],
    ["hook", "subagent-stop"],
    ["hook", "post-tool-use"],
    ["hook", "pre-tool-use"],
]
HOOK_FIXTURES = {
    "user-prompt-submit": "UserPromptSubmit.json",
    "pre-compact": "PreCompact.json",
    "session-start": "SessionStart.compact.json",
    "post-compact": "PostCompact.json",
    "subagent-stop": "SubagentStop.json",
    "post-tool-use": "PostToolUse.json",
    "pre-tool-use": "PreToolUse.json",
}


def _reader_payload(root: Path, hook: str) -> str:
    data = support.captured(HOOK_FIXTURES[hook], root, session_id="s1")
    if hook == "pre-tool-use":
        data["tool_name"] = "Agent"
    return json.dumps(data)


# A FIFO blocks no reader of any of STATE_FILES: ctxward opens its own state files without
# blocking (`fsutil.read_regular`, `open_regular`), so a FIFO there reads as an unreadable file
# (tests/hardening/test_fifo_state.py checks each reader's answer).


@pytest.mark.parametrize("kind", ["deep", "surrogate"])
def test_readers_of_a_corrupted_state_file(tmp_path: Path, kind: str) -> None:
    _corrupted(tmp_path, kind, STATE_FILES[:3])


def test_readers_of_a_fifo_where_config_or_a_plan_belongs(tmp_path: Path) -> None:
    _corrupted(tmp_path, "fifo", [".ctxward/config.yaml", "docs/plans/plan-b/invariants.md"])


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted([*CORRUPT, "folder"]))
def test_readers_of_every_corrupted_state_file(tmp_path: Path, kind: str) -> None:
    _corrupted(tmp_path, kind, STATE_FILES)


@pytest.mark.slow
def test_readers_of_a_fifo_in_every_safe_place(tmp_path: Path) -> None:
    _corrupted(tmp_path, "fifo", STATE_FILES)


def _corrupted(tmp_path: Path, kind: str, files: list[str]) -> None:
    """Each state file in turn replaced by `kind` (bytes, a FIFO, a folder); every reader runs."""
    root = build(tmp_path / "project")
    for rel in files:
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        saved = target.read_bytes() if target.is_file() else None
        if target.exists():
            target.unlink()
        if kind == "fifo":
            os.mkfifo(target)
        elif kind == "folder":
            target.mkdir()
        else:
            target.write_bytes(CORRUPT[kind])
        try:
            for argv in READERS:
                stdin = _reader_payload(root, argv[1]) if argv[0] == "hook" else None
                with support.deadline(30, f"{argv} with {rel} as a {kind}"):
                    check(root, argv, stdin, unchanged=False)
        finally:
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target)
            elif target.exists() or target.is_symlink():
                target.unlink()
            if saved is not None:
                target.write_bytes(saved)


# --- hypothesis: arbitrary text and bytes where a command reads text -----------------------

TEXT_COMMANDS: list[Callable[[str], tuple[list[str], str | None]]] = [
    lambda t: (["scrub", "-"], t),
    lambda t: (["dispatch", "check", "-", "--json"], t),
    lambda t: (["inline", "score", "--text", t], None),
    lambda t: (["inline", "compress", "--text", t, "--json"], None),
    lambda t: (["share", "--batch", "b", "--key", "k", "--value", t], None),
    lambda t: (["hook", "pre-tool-use"], t),
    lambda t: (["hook", "post-compact", "--host", "opencode"], t),
]
texts = st.one_of(
    st.text(max_size=300),
    st.binary(max_size=300).map(lambda b: b.decode("utf-8", "surrogateescape")),
    st.sampled_from(
        [BOMB, "{" * 500, '{"a": "\\ud800"}', "subtask_summary:\n  agent: x\n  summary: y\n"]
    ),
)


def _arbitrary_text(root: Path, examples: int) -> None:
    @settings(
        max_examples=examples,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(text=texts, which=st.integers(0, len(TEXT_COMMANDS) - 1))
    def run_one(text: str, which: int) -> None:
        argv, stdin = TEXT_COMMANDS[which](text)
        if "\x00" in "".join(argv) or any(
            "\udc80" <= c <= "\udcff" for c in "".join(argv)
        ):  # argv cannot carry these (the OS refuses them): stdin can
            return
        data = stdin.encode("utf-8", "surrogateescape") if stdin is not None else None
        check(root, argv, data)

    run_one()


def test_arbitrary_text_to_text_readers(cli_root: Path) -> None:
    _arbitrary_text(cli_root, 60)


@pytest.mark.slow
def test_arbitrary_text_to_text_readers_many(cli_root: Path) -> None:
    _arbitrary_text(cli_root, 1500)


# --- regressions: each was a traceback or a write on a refused input before this suite -----------


def test_regression_config_with_a_list_of_capacities(tmp_path: Path) -> None:
    """`capacity_by_agent: [...]` was an AttributeError traceback (the hook denied, but logged
    an internal error)."""
    root = build(tmp_path / "project")
    (root / ".ctxward").mkdir(exist_ok=True)
    (root / ".ctxward" / "config.yaml").write_text("dispatch: {capacity_by_agent: [1]}\n")
    code, _, err = invoke(root, ["config", "show"])
    assert code == 2 and "capacity_by_agent: expected a mapping" in err


def test_regression_post_compact_with_a_broken_config_writes_nothing(tmp_path: Path) -> None:
    """PostCompact wrote its survival report, then failed on the config: half the job."""
    root = build(tmp_path / "project")
    (root / ".ctxward").mkdir(exist_ok=True)
    (root / ".ctxward" / "config.yaml").write_text("injection: {limit_chars: 1}\n")
    payload = json.dumps(support.captured("PostCompact.json", root))
    before = support.state(root)
    code, out, err = invoke(root, ["hook", "post-compact"], payload)
    assert (code, out) == (1, "") and "limit_chars" in err
    assert support.changed(before, support.state(root)) == []


def test_regression_promote_of_a_file_without_entries_writes_nothing(tmp_path: Path) -> None:
    """`bank promote FILE` with no entry in FILE wrote the bank's files and exited 1 with no
    line on stderr."""
    root = build(tmp_path / "project")
    empty = tmp_path / "notes.md"
    empty.write_text("# just notes\n", encoding="utf-8")
    code, _, err = invoke(root, ["bank", "promote", str(empty), "--phase", "1"])
    assert code == 2 and err.startswith("ctxward: error: nothing to promote")
    assert not (root / ".ctxward" / "memory-bank" / "01-active-context.md").exists()


def test_regression_reports_of_the_wrong_shape_are_skipped(tmp_path: Path) -> None:
    """A hand-edited report without `checked_at` broke `ctxward compactions` (template error)."""
    root = build(tmp_path / "project")
    folder = root / ".ctxward" / "compactions"
    folder.mkdir(parents=True)
    (folder / "s-1.json").write_text('{"entries": [1]}', encoding="utf-8")
    assert invoke(root, ["compactions"])[0] == 0


def test_regression_a_folder_where_a_state_file_belongs(tmp_path: Path) -> None:
    """atomic_write replaced nothing and raised IsADirectoryError (a traceback)."""
    root = build(tmp_path / "project")
    channel = root / ".ctxward" / "sub_agents" / "local" / "shared" / "b.json"
    channel.mkdir(parents=True)
    code, _, err = invoke(root, ["heartbeat", "--batch", "b", "--role", "r", "--status", "done"])
    assert code == 1 and "not a regular file" in err
    assert channel.is_dir()
