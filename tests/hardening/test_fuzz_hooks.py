"""Bad input at every hook entry point: a documented exit code and one clear line, never a
traceback, never a hang, and no state file changed by an input the hook rejected.

Three layers:

- Hypothesis, in-process (`hookio.run`, the code every entry point runs): a captured payload
  of each event, then wrong types for any field, missing fields, unknown fields, confusable
  tool names, traversal in paths and ids, NUL bytes, nesting, then byte-level damage
  (truncation, non-UTF-8, NUL). Claude Code's shape (pinned to the event, and not), OpenCode's
  and Codex's. Each case runs under a deadline.
- Real processes: every hooks/*.py and `ctxward-hook` on a fixed corpus of hostile stdin
  (empty, garbage, truncated, non-UTF-8, 50 MB, 100,000 levels deep, a lone surrogate, ...),
  each under a timeout.
- Odd plan folders: symbolic links (inside and out of the project), a FIFO or a folder where
  invariants.md should be, an unreadable or non-UTF-8 invariants.md, folder names that are not
  slugs; the compaction hooks must skip or report them, never hang, never touch the others.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import ctxward_hardening as support
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxward.core.project import Project
from ctxward.hookio import run
from ctxward.invariants.activate import activate

# Fuzzing every entry point: the slow stage (CI) runs it.
pytestmark = pytest.mark.slow

NOW = None  # activation time: now (the plans are inputs here, not golden files)
TRANSCRIPT = support.FIXTURES / "transcripts" / "7de73c29-a9cd-4608-aa26-55358a7f7df9.jsonl"
FUZZ_SETTINGS = {
    "deadline": None,
    "suppress_health_check": [
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
}
FAST_EXAMPLES = 120  # per test in the default run
SLOW_EXAMPLES = 2500  # per test under -m slow


# --- the project every fuzz case runs against --------------------------------------------------


def build_project(root: Path) -> Path:
    """A git project with two active plans, a transcript, a config-less .ctxward/."""
    root.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True, timeout=20)
    skill = root / ".claude" / "skills" / "fuzz" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text(
        "---\nname: fuzz\ninvariants:\n  - Never edit generated files by hand\n"
        "  - Run the whole test suite before a commit\n---\n\nbody\n",
        encoding="utf-8",
    )
    project = Project(root)
    with pytest.MonkeyPatch.context() as patch:  # a module's fixture: no test's HOME yet
        patch.setenv("XDG_STATE_HOME", str(user_state(root)))
        activate(project, str(skill), "plan-a")
        activate(project, "deep-review", "plan-b")
    shutil.copy(TRANSCRIPT, root / "transcript.jsonl")
    return root


def user_state(root: Path) -> Path:
    """The per-user state of whoever built `root` (its plans' trust, its key): every test on
    `root` runs as that user, as one user's hooks do on their project."""
    return root.parent / "user-state"


@pytest.fixture(scope="module")
def _fuzz_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_project(tmp_path_factory.mktemp("fuzz") / "project")


@pytest.fixture
def fuzz_root(_fuzz_project: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_STATE_HOME", str(user_state(_fuzz_project)))
    return _fuzz_project


# --- strategies --------------------------------------------------------------------------------

# Strings a hostile or broken host might put anywhere.
NASTY_TEXT = [
    "",
    " ",
    "\x00",
    "a\x00b",
    "../../../../etc/passwd",
    "..",
    "/",
    "/dev/zero",
    "C:\\Windows\\system32",
    "Аgent",  # Cyrillic А
    "Αgent",  # Greek Α
    "Agent\u200b",  # zero-width space
    "agent",
    "AGENT",
    " Agent",
    "Task ",
    "tаsk",
    "\u202eenoN",  # right-to-left override
    "\ufeffAgent",
    "Agent|Task",
    "mcp__evil__Agent",
    "😀" * 3,
    "%s%n{0}{{x}}",
    "{{ 7*7 }}{% raw %}",
    "'; DROP TABLE x; --",
    "x" * 70_000,
    "line1\nline2\r\nline3\u2028",
]
json_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=40),
    st.sampled_from(NASTY_TEXT),
)
json_value = st.recursive(
    json_leaf,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=12,
)
FIELDS = [
    "session_id",
    "transcript_path",
    "cwd",
    "hook_event_name",
    "trigger",
    "custom_instructions",
    "source",
    "compact_summary",
    "tool_name",
    "tool_input",
    "tool_response",
    "tool_use_id",
    "prompt",
    "agent_type",
    "agent_id",
    "agent_transcript_path",
    "last_assistant_message",
    "stop_hook_active",
    "permission_mode",
    "error",
    "is_interrupt",
    "reason",
]
TOOL_INPUT_FIELDS = ["prompt", "description", "subagent_type", "command", "file_path", "model"]


@st.composite
def mutated_payload(draw: st.DrawFn, root: Path) -> tuple[str, bytes]:
    """(event of the base payload, the bytes a broken or hostile host sends)."""
    event = draw(st.sampled_from(sorted(support.EVENT_FIXTURES)))
    data: Any = support.captured(support.EVENT_FIXTURES[event], root)
    if event == "PreToolUse" and draw(st.booleans()):
        data["tool_name"] = draw(st.sampled_from(["Agent", "Task", "Bash"]))
    for _ in range(draw(st.integers(0, 4))):
        key = draw(st.sampled_from(FIELDS))
        action = draw(st.sampled_from(["set", "drop", "nested"]))
        if action == "drop":
            data.pop(key, None)
        elif action == "set":
            data[key] = draw(json_value)
        elif isinstance(data.get("tool_input"), dict):
            data["tool_input"][draw(st.sampled_from(TOOL_INPUT_FIELDS))] = draw(json_value)
    if draw(st.integers(0, 9)) == 0:
        data = draw(st.sampled_from([[data], "text", 7, None, []]))
    raw = json.dumps(data, ensure_ascii=draw(st.booleans())).encode("utf-8")
    damage = draw(st.sampled_from(["none"] * 6 + ["truncate", "bytes", "nul", "prefix"]))
    if damage == "truncate":
        raw = raw[: draw(st.integers(0, max(len(raw) - 1, 0)))]
    elif damage == "bytes":
        at = draw(st.integers(0, len(raw)))
        raw = (
            raw[:at]
            + draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x80"]))
            + raw[at:]
        )
    elif damage == "nul":
        at = draw(st.integers(0, len(raw)))
        raw = raw[:at] + b"\x00" + raw[at:]
    elif damage == "prefix":
        raw = draw(st.sampled_from([b"\xef\xbb\xbf", b" \n", b"garbage"])) + raw
    return event, raw


def run_case(
    root: Path,
    raw: bytes,
    *,
    event_name: str | None = None,
    host: str = "claude",
    env: dict[str, str] | None = None,
) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with support.deadline(20, f"hook {event_name or host} on {raw[:80]!r}"):
        code = run(
            event_name=event_name,
            stdin=io.BytesIO(raw),
            stdout=out,
            stderr=err,
            env=env if env is not None else {"CLAUDE_PROJECT_DIR": str(root)},
            host=host,
        )
    return code, out.getvalue(), err.getvalue()


def check_case(root: Path, raw: bytes, event: str, **how: Any) -> None:
    """Run one case, then hold it to the contract (see support.hook_problem)."""
    before, logs_before = support.state(root), support.logs(root)
    code, out, err = run_case(root, raw, **how)
    support.count("hook fuzz cases (in-process)")
    label = f"{how or 'ctxward-hook'} on {raw[:300]!r}"
    problem = support.hook_problem(code, out, err, how.get("event_name") or event)
    assert problem is None, f"{label}: {problem}"
    crashed = [n for n in support.logs(root) if n not in logs_before and support.is_crash_log(n)]
    assert not crashed, f"{label}: an internal error was logged: {crashed} {err}"
    if code == 1:  # rejected: nothing may have changed
        moved = support.changed(before, support.state(root))
        assert not moved, f"{label}: exit 1 but state changed: {moved}"


# --- hypothesis, in-process ----------------------------------------------------------------------


def _claude(root: Path, examples: int) -> None:
    @settings(max_examples=examples, **FUZZ_SETTINGS)
    @given(case=mutated_payload(root), pinned=st.booleans())
    def check(case: tuple[str, bytes], pinned: bool) -> None:
        event, raw = case
        check_case(root, raw, event, event_name=event if pinned else None)

    check()


def test_fuzzed_payloads_keep_the_hook_contract(fuzz_root: Path) -> None:
    _claude(fuzz_root, FAST_EXAMPLES)


@pytest.mark.slow
def test_fuzzed_payloads_keep_the_hook_contract_many(fuzz_root: Path) -> None:
    _claude(fuzz_root, SLOW_EXAMPLES)


def _without_project_dir(root: Path, examples: int) -> None:
    """No $CLAUDE_PROJECT_DIR: the payload's `cwd` names the project (hostile values too)."""
    inside = str(root / "docs")
    cwd = st.one_of(
        st.sampled_from([str(root), inside, str(root / "missing" / ".." / ".."), "\x00", ""]),
        json_value.filter(lambda v: not isinstance(v, str)),
    )

    @settings(max_examples=examples, **FUZZ_SETTINGS)
    @given(case=mutated_payload(root), where=cwd)
    def check(case: tuple[str, bytes], where: object) -> None:
        event, raw = case
        try:
            data = json.loads(raw)
        except ValueError:
            return
        if not isinstance(data, dict):
            return
        data["cwd"] = where
        try:
            raw = json.dumps(data).encode("utf-8")
        except ValueError:
            return
        check_case(root, raw, event, env={})

    check()


def test_fuzzed_cwd_without_project_dir(fuzz_root: Path) -> None:
    _without_project_dir(fuzz_root, FAST_EXAMPLES // 2)


@pytest.mark.slow
def test_fuzzed_cwd_without_project_dir_many(fuzz_root: Path) -> None:
    _without_project_dir(fuzz_root, SLOW_EXAMPLES // 2)


def opencode_payload(root: Path) -> st.SearchStrategy[tuple[str, bytes]]:
    """The plugin's JSON (hooks/opencode/ctxward.js), mutated."""
    hooks = {
        "PreToolUse": (
            "tool.execute.before",
            {"tool": "task", "sessionID": "ses_1", "callID": "c1"},
            {"args": {"description": "d", "prompt": "p", "subagent_type": "general"}},
        ),
        "PreCompact": ("experimental.session.compacting", {"sessionID": "ses_1"}, None),
        "SessionStart": ("experimental.chat.system.transform", {"sessionID": "ses_1"}, None),
        "PostCompact": (
            "event",
            {"event": {"type": "session.compacted", "properties": {"sessionID": "ses_1"}}},
            None,
        ),
        "PostToolUse": (
            "tool.execute.after",
            {"tool": "bash", "sessionID": "ses_1", "callID": "c2", "args": {"command": "ls"}},
            None,
        ),
    }

    @st.composite
    def build(draw: st.DrawFn) -> tuple[str, bytes]:
        event = draw(st.sampled_from(sorted(hooks)))
        hook, given_input, output = hooks[event]
        body: Any = {"hook": hook, "input": json.loads(json.dumps(given_input))}
        body["directory"] = str(root)
        if output is not None:
            body["output"] = json.loads(json.dumps(output))
        body["plugin"] = {"source": "compact", "trigger": "manual", "summary": "s", "quiet": 1}
        for _ in range(draw(st.integers(0, 4))):
            where = draw(st.sampled_from(["top", "input", "output", "plugin", "args"]))
            key = draw(
                st.sampled_from(
                    [
                        *["hook", "input", "output", "directory", "plugin", "tool", "sessionID"],
                        *["callID", "args", "prompt", "event", "summary", "source", "failed"],
                    ]
                )
            )
            value = draw(json_value)
            target = {
                "top": body,
                "input": body.get("input"),
                "output": body.get("output"),
                "plugin": body.get("plugin"),
                "args": (body.get("output") or {}).get("args")
                if isinstance(body.get("output"), dict)
                else None,
            }[where]
            if isinstance(target, dict):
                if draw(st.booleans()):
                    target[key] = value
                else:
                    target.pop(key, None)
        raw = json.dumps(body).encode("utf-8")
        if draw(st.integers(0, 7)) == 0:
            raw = raw[: draw(st.integers(0, len(raw)))]
        return event, raw

    return build()


def _other_hosts(root: Path, examples: int) -> None:
    names = {
        "PreToolUse": "PreToolUse",
        "PreCompact": "PreCompact",
        "SessionStart": "SessionStart",
        "PostCompact": "PostCompact",
        "PostToolUse": "PostToolUse",
    }

    @settings(max_examples=examples, **FUZZ_SETTINGS)
    @given(case=opencode_payload(root), codex=mutated_payload(root), pick=st.booleans())
    def check(case: tuple[str, bytes], codex: tuple[str, bytes], pick: bool) -> None:
        if pick:
            event, raw = case
            check_case(root, raw, event, event_name=names[event], host="opencode")
        else:
            event, raw = codex
            pinned = event if event in ("PreCompact", "SessionStart", "PostCompact") else None
            check_case(root, raw, event, event_name=pinned or "PreCompact", host="codex")

    check()


def test_fuzzed_opencode_and_codex_payloads(fuzz_root: Path) -> None:
    _other_hosts(fuzz_root, FAST_EXAMPLES // 2)


@pytest.mark.slow
def test_fuzzed_opencode_and_codex_payloads_many(fuzz_root: Path) -> None:
    _other_hosts(fuzz_root, SLOW_EXAMPLES // 2)


# --- every field of every event, every wrong type (exhaustive, in-process) ------------------------

WRONG_TYPES: list[object] = [None, True, 0, -1, 1.5, 10**30, "", [], {}, ["x"], {"a": 1}, "\ud800"]


def _every_field(root: Path, event: str, wrong: list[object]) -> None:
    base = support.captured(support.EVENT_FIXTURES[event], root)
    if event == "PreToolUse":
        base["tool_name"] = "Agent"
    for field in [*base, "tool_input.prompt", "tool_input.description"]:
        for value in wrong:
            data = json.loads(json.dumps(base))
            if field.startswith("tool_input."):
                if not isinstance(data.get("tool_input"), dict):
                    continue
                data["tool_input"][field.split(".", 1)[1]] = value
            else:
                data[field] = value
            raw = json.dumps(data).encode("utf-8", "surrogatepass")
            for pinned in (None, event):
                check_case(root, raw, event, event_name=pinned)
        missing = {k: v for k, v in base.items() if k != field}
        check_case(root, json.dumps(missing).encode(), event)


@pytest.mark.parametrize("event", ["PreToolUse", "PostCompact"])
def test_every_field_with_a_wrong_type(fuzz_root: Path, event: str) -> None:
    _every_field(fuzz_root, event, [None, 0, [], "\ud800"])


@pytest.mark.slow
@pytest.mark.parametrize("event", sorted(support.EVENT_FIXTURES))
def test_every_field_with_every_wrong_type(fuzz_root: Path, event: str) -> None:
    _every_field(fuzz_root, event, WRONG_TYPES)


# --- real processes, hostile stdin ---------------------------------------------------------------


def hostile_inputs(root: Path, *, big: bool) -> dict[str, bytes]:
    """Name -> stdin bytes. `big` adds the 50 MB and 100,000-level cases (slow)."""
    dispatch = support.captured("PreToolUse.json", root)
    dispatch["tool_name"] = "Agent"
    cases = {
        "empty": b"",
        "whitespace": b" \n\t ",
        "garbage": b"\x00\x01\x02 not json at all \xff",
        "truncated": json.dumps(dispatch).encode()[:-7],
        "not-utf8": json.dumps(dispatch).encode().replace(b"Agent", b"Ag\xffent"),
        "nul-bytes": b"\x00" * 64,
        "json-array": b'[{"hook_event_name": "PreToolUse"}]',
        "json-string": b'"PreToolUse"',
        "deep-1000": b'{"hook_event_name": "PreCompact", "x": ' + b"[" * 1000 + b"]" * 1000 + b"}",
        "lone-surrogate": json.dumps({**dispatch, "tool_input": {"prompt": "\\ud800"}})
        .replace("\\\\ud800", "\\ud800")
        .encode(),
        "confusable-tool": json.dumps({**dispatch, "tool_name": "Аgent"}).encode(),
        "unknown-event": json.dumps({**dispatch, "hook_event_name": "Nonsense"}).encode(),
        "traversal-session": json.dumps(
            {**support.captured("PostCompact.json", root), "session_id": "../../../../tmp/x"}
        ).encode(),
    }
    if big:
        huge = {**dispatch, "tool_input": {"prompt": "x" * 50_000_000, "description": "d"}}
        cases["50MB-dispatch"] = json.dumps(huge).encode()
        huge_bash = {**dispatch, "tool_name": "Bash", "tool_input": {"command": "y" * 50_000_000}}
        cases["50MB-bash"] = json.dumps(huge_bash).encode()
        cases["deep-100000"] = (
            b'{"hook_event_name": "PreToolUse", "tool_name": "Agent", "tool_input": '
            + b"[" * 100_000
            + b"]" * 100_000
            + b"}"
        )
    return cases


def run_process(argv: list[str], stdin: bytes, root: Path) -> tuple[int, str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLAUDE_")}
    env["CLAUDE_PROJECT_DIR"] = str(root)
    done = subprocess.run(argv, input=stdin, capture_output=True, env=env, timeout=60, check=False)
    support.count("hook fuzz cases (real processes)")
    return done.returncode, done.stdout.decode("utf-8", "replace"), done.stderr.decode("utf-8")


def _processes(root: Path, *, big: bool, names: list[str] | None = None) -> None:
    cases = hostile_inputs(root, big=big)
    for label, argv in support.entry_points():
        pinned = "PreToolUse" if label == "hooks/pre_tool_use.py" else None
        for name, stdin in cases.items():
            if names is not None and name not in names:
                continue
            before = support.state(root)
            code, out, err = run_process(argv, stdin, root)
            problem = support.hook_problem(code, out, err, event="PreCompact")
            assert problem is None, f"{label} on {name}: {problem}"
            if code == 1:
                assert not support.changed(before, support.state(root)), f"{label} on {name}"
            if pinned and code == 0 and name != "unknown-event":
                # the pinned dispatch guard denies what it cannot read (README "Exit codes")
                assert '"permissionDecision": "deny"' in out or out == "", (label, name, out)


def test_every_entry_point_on_hostile_stdin(fuzz_root: Path) -> None:
    _processes(fuzz_root, big=False, names=["not-utf8", "deep-1000"])


@pytest.mark.slow
def test_every_entry_point_on_hostile_stdin_all(fuzz_root: Path) -> None:
    _processes(fuzz_root, big=True)


@pytest.mark.slow
def test_fifty_megabytes_end_quickly(fuzz_root: Path) -> None:
    """The 50 MB stdin is refused after reading 32 MB + 1: bounded time and memory."""
    cases = hostile_inputs(fuzz_root, big=True)
    for label, argv in support.entry_points():
        for name in ("50MB-dispatch", "50MB-bash"):
            code, out, err = run_process(argv, cases[name], fuzz_root)
            assert "larger than" in err, (label, name, err)
            denies = '"permissionDecision": "deny"' in out
            # the pinned guard denies any unreadable payload; ctxward-hook, a dispatch only
            expected = label == "hooks/pre_tool_use.py" or (
                label == "ctxward-hook" and name == "50MB-dispatch"
            )
            assert denies == expected, (label, name, code, out[:200])
            assert code == (0 if expected else 1), (label, name, code)


# --- odd plan folders ----------------------------------------------------------------------------


def odd_plans(root: Path) -> dict[str, str]:
    """Lay out every odd plan folder next to the two good ones; name -> what it is."""
    plans = root / "docs" / "plans"
    outside = root.parent / "outside-plan"
    outside.mkdir(exist_ok=True)
    shutil.copy(plans / "plan-a" / "invariants.md", outside / "invariants.md")
    (plans / "linked-out").symlink_to(outside, target_is_directory=True)
    (plans / "linked-in").symlink_to(plans / "plan-b", target_is_directory=True)
    (plans / "file-link").mkdir()
    (plans / "file-link" / "invariants.md").symlink_to(outside / "invariants.md")
    (plans / "fifo").mkdir()
    os.mkfifo(plans / "fifo" / "invariants.md")
    (plans / "folder").mkdir()
    (plans / "folder" / "invariants.md").mkdir()
    (plans / "not-utf8").mkdir()
    (plans / "not-utf8" / "invariants.md").write_bytes(b"# Active Invariants\n\n## x\n\xff\xfe\n")
    (plans / "Not A Slug").mkdir()
    shutil.copy(plans / "plan-a" / "invariants.md", plans / "Not A Slug" / "invariants.md")
    (plans / "Аgent").mkdir()  # a Cyrillic А: not a slug
    shutil.copy(plans / "plan-a" / "invariants.md", plans / "Аgent" / "invariants.md")
    (plans / "empty").mkdir()
    (plans / "empty" / "invariants.md").write_bytes(b"")
    (plans / "garbage").mkdir()
    (plans / "garbage" / "invariants.md").write_bytes(b"\x00" * 100 + b"## \n- \n### Rules\n")
    return {"outside": str(outside)}


@pytest.fixture
def odd_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = build_project(tmp_path / "odd")
    monkeypatch.setenv("XDG_STATE_HOME", str(user_state(root)))
    odd_plans(root)
    return root


COMPACTION = ["PreCompact", "SessionStart", "PostCompact", "UserPromptSubmit"]


@pytest.mark.parametrize("event", COMPACTION)
def test_odd_plan_folders_never_hang_or_leak(odd_root: Path, event: str) -> None:
    payload = support.captured(support.EVENT_FIXTURES[event], odd_root)
    good = {p: b for p, b in support.state(odd_root).items() if "/plan-" in p}
    outside = (odd_root.parent / "outside-plan").resolve()
    outside_before = {p.name: p.read_bytes() for p in outside.iterdir()}
    code, out, err = run_case(odd_root, json.dumps(payload).encode())
    support.count("hook fuzz cases (in-process)")
    assert support.hook_problem(code, out, err, event) is None, (code, out, err)
    # nothing written through a link, nothing outside the project
    assert {p.name: p.read_bytes() for p in outside.iterdir()} == outside_before
    assert not (odd_root / "docs" / "plans" / "fifo" / ".compaction-payload.md").exists()
    after = support.state(odd_root)
    for path, data in good.items():
        if path.endswith("invariants.md"):
            assert after[path] == data, path


def test_unreadable_plan_is_reported_not_crashed(
    odd_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An invariants.md that cannot be read (EACCES; simulated: the suite may run as root)."""
    victim = (odd_root / "docs" / "plans" / "plan-b" / "invariants.md").resolve()
    real = Path.read_bytes

    def read_bytes(self: Path) -> bytes:
        if self.resolve() == victim:
            raise PermissionError(13, "Permission denied", str(self))
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    for event in COMPACTION:
        payload = support.captured(support.EVENT_FIXTURES[event], odd_root)
        code, out, err = run_case(odd_root, json.dumps(payload).encode())
        support.count("hook fuzz cases (in-process)")
        assert support.hook_problem(code, out, err, event) is None, (event, code, err)


def _without_root_powers() -> list[str]:
    """A prefix that runs a command unable to bypass file permissions, even as root.

    Root reads any file through CAP_DAC_OVERRIDE; `setpriv` (util-linux) starts the command
    with an empty capability bounding set, so chmod 0 hides a folder from it as from anyone.
    """
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.fail("running as root without setpriv (util-linux): cannot drop CAP_DAC_OVERRIDE")
    return [setpriv, "--bounding-set=-all", "--inh-caps=-all"]


def test_unreadable_plan_folder_for_real(odd_root: Path) -> None:
    folder = odd_root / "docs" / "plans" / "plan-b"
    folder.chmod(0)
    try:
        prefix = _without_root_powers()
        probe = subprocess.run([*prefix, "ls", str(folder)], capture_output=True, check=False)
        assert probe.returncode != 0, "the folder is still readable: the case would prove nothing"
        for event in COMPACTION:
            payload = support.captured(support.EVENT_FIXTURES[event], odd_root)
            code, out, err = run_process(
                [*prefix, str(support.CTXWARD_HOOK)], json.dumps(payload).encode(), odd_root
            )
            assert support.hook_problem(code, out, err, event) is None, (event, code, err)
            if event == "PreCompact":  # the readable plan still reaches the summarizer
                assert "Never edit generated files by hand" in out, (code, out, err)
                assert "- docs/plans/plan-b/invariants.md: cannot read: Permission denied" in out
    finally:
        folder.chmod(0o755)
