"""No bypass of the dispatch guard: a battery of attempts to get a sub-agent call over the
hard-reject line past the PreToolUse hook. Target: zero allowed without a real shrink.

"Allowed" is what the host would do: Claude Code runs the call unless the hook answers
`permissionDecision: "deny"` (exit 1 lets it through: README "Exit codes"); OpenCode runs it
unless the answer holds `deny` (its plugin blocks on any non-zero exit). "A real shrink" is a C9
offload: the call may go with `updatedInput` only when that input measures under the line and
every pointer it gained names an offload file that exists and hashes to the sha256 it states.

Sizes are measured here independently of ctxward: the UTF-8 bytes of every string in the tool
input (nested keys included; the top-level field names are Claude Code's schema).

The attempts: every boundary size (each tier's line -1, 0, +1) at several capacities;
command-line flags given to the entry points; environment variables; config values (raising
the capacity, per-agent entries, offload switches, unknown keys, broken YAML, a bomb, a folder);
legacy and odd tool names; the prompt split across fields; unicode tricks (multi-byte,
escaped surrogate pairs, lone surrogates, NUL, BOM, right-to-left marks); duplicated JSON keys;
offload pointers crafted to look like real ones.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import ctxward_hardening as support
import pytest

from ctxward.guard import thresholds
from ctxward.hookio import run

LINE = thresholds.HARD_REJECT.threshold(thresholds.DEFAULT_CAPACITY_BYTES)  # 209,716
PARAGRAPH = "a short paragraph of a long prompt, under the 2 KB offload line.\n" * 20
POINTER = re.compile(r"\[ctxward C9: \w+ block of [\d,]+ bytes moved to (\S+) \(sha256 (\w+)\)")


def measured(value: Any, top: bool = True) -> int:
    """UTF-8 bytes of every string in a tool input (independent of thresholds.input_bytes)."""
    if isinstance(value, str):
        return len(value.encode("utf-8", "surrogatepass"))
    if isinstance(value, dict):
        keys = 0 if top else sum(measured(k, False) for k in value)
        return keys + sum(measured(v, False) for v in value.values())
    if isinstance(value, list):
        return sum(measured(v, False) for v in value)
    return 0


def prompt_of(size: int, *, pasted: bool = False) -> str:
    """An ASCII prompt of exactly `size` bytes: short paragraphs (nothing to offload), or one
    pasted chunk (C9 can move it)."""
    if pasted:
        head = "Review this log.\n\n"
        return head + "x" * (size - len(head))
    body = (PARAGRAPH + "\n") * (size // (len(PARAGRAPH) + 1) + 1)
    return body[:size]


class Verdicts:
    """Every attempt and what the host would have done with it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.attempts = 0
        self.over = 0
        self.bypasses: list[str] = []

    def judge(
        self, label: str, tool_input: Any, code: int, out: str, *, line: int, host: str = "claude"
    ) -> str:
        """'deny', 'allow' or 'shrink'; an over-the-line call let through is recorded."""
        self.attempts += 1
        size = measured(tool_input)
        denied, updated = _decision(code, out, host)
        verdict = "deny" if denied else ("shrink" if updated is not None else "allow")
        if size >= line and not denied:
            self.over += 1
            problem = None
            if updated is None:
                problem = "allowed as is"
            else:
                problem = self._not_a_shrink(tool_input, updated, line)
            if problem:
                self.bypasses.append(f"{label}: {size:,} bytes ≥ {line:,}: {problem}")
        elif size >= line:
            self.over += 1
        return verdict

    def _not_a_shrink(self, before: Any, after: Any, line: int) -> str | None:
        if measured(after) >= line:
            return f"updatedInput still measures {measured(after):,}"
        old = before.get("prompt", "") if isinstance(before, dict) else ""
        new = after.get("prompt", "") if isinstance(after, dict) else ""
        for path, digest in POINTER.findall(new):
            if f"(sha256 {digest})" in old:
                continue  # a pointer the caller wrote: it moved nothing
            file = Path(path)
            if not file.is_file():
                return f"points to a missing file {path}"
            if support.sha256(file.read_bytes()) != digest:
                return f"{path} does not hash to {digest}"
        if not POINTER.search(new):
            return "no pointer in the updated prompt"
        return None


def _decision(code: int, out: str, host: str) -> tuple[bool, Any]:
    if host == "opencode":
        if code != 0:
            return True, None  # the plugin blocks the task call on any failure
        answer = json.loads(out) if out.strip() else {}
        return "deny" in answer, answer.get("args")
    if code != 0 or not out.strip():
        return False, None
    specific = json.loads(out).get("hookSpecificOutput", {})
    return specific.get("permissionDecision") == "deny", specific.get("updatedInput")


def call(
    root: Path,
    tool_input: Any,
    *,
    tool: str = "Agent",
    host: str = "claude",
    pinned: bool = False,
    raw: bytes | None = None,
) -> tuple[int, str]:
    if host == "opencode":
        body = {
            "hook": "tool.execute.before",
            "input": {"tool": tool, "sessionID": "ses", "callID": "c"},
            "output": {"args": tool_input},
            "directory": str(root),
        }
    else:
        body = support.captured("PreToolUse.json", root, tool_name=tool, tool_input=tool_input)
    data = raw if raw is not None else json.dumps(body).encode("utf-8", "surrogatepass")
    out, err = io.StringIO(), io.StringIO()
    code = run(
        event_name="PreToolUse" if pinned or host != "claude" else None,
        stdin=io.BytesIO(data),
        stdout=out,
        stderr=err,
        env={"CLAUDE_PROJECT_DIR": str(root)},
        host=host,
    )
    return code, out.getvalue()


@pytest.fixture
def verdicts(project: Path) -> Verdicts:
    return Verdicts(project)


def finish(verdicts: Verdicts) -> None:
    support.count("guard bypass attempts", verdicts.attempts)
    support.count("guard bypass attempts over the hard-reject line", verdicts.over)
    support.count("guard bypasses (target 0)", len(verdicts.bypasses))
    assert not verdicts.bypasses, "\n".join(verdicts.bypasses)


# --- boundaries ---------------------------------------------------------------------------------


def config(root: Path, text: str) -> None:
    path = root / ".ctxward" / "config.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


@pytest.mark.parametrize(
    ("capacity", "agent"),
    [(None, None), (131_072, None), (1024, None), (None, "Explore")],
)
def test_every_boundary_size(verdicts: Verdicts, capacity: int | None, agent: str | None) -> None:
    root = verdicts.root
    cap = capacity or thresholds.DEFAULT_CAPACITY_BYTES
    if capacity:
        config(root, f"dispatch:\n  capacity_bytes: {capacity}\n")
    if agent:
        cap = 65_536
        config(root, f"dispatch:\n  capacity_by_agent: {{{agent}: {cap}}}\n")
    line = thresholds.HARD_REJECT.threshold(cap)
    description = "review"
    extra = {"subagent_type": agent} if agent else {}
    other = measured({"description": description, **extra})
    for tier in thresholds.TIERS:
        edge = tier.threshold(cap)
        for size in sorted(n for n in {edge - 1, edge, edge + 1} if n > other):
            for pasted in (False, True):
                tool_input = {
                    "description": description,
                    "prompt": prompt_of(size - other, pasted=pasted and size - other > 40),
                    **extra,
                }
                assert measured(tool_input) == size
                for host, pinned in (("claude", False), ("claude", True), ("opencode", False)):
                    code, out = call(root, tool_input, host=host, pinned=pinned)
                    got = verdicts.judge(
                        f"{tier.name}@{size} {host}", tool_input, code, out, line=line, host=host
                    )
                    if size < line:
                        assert got != "deny", (tier.name, size, host, out[:300])
    finish(verdicts)


def test_the_line_itself_through_both_real_entry_points(verdicts: Verdicts) -> None:
    for size in (LINE - 1, LINE):
        tool_input = {"prompt": prompt_of(size)}
        for label, argv in (
            ("ctxward-hook", [str(support.CTXWARD_HOOK)]),
            ("hooks/pre_tool_use.py", [sys.executable, str(support.HOOKS / "pre_tool_use.py")]),
        ):
            code, out = process(verdicts.root, argv, tool_input)
            got = verdicts.judge(f"{label} {size}", tool_input, code, out, line=LINE)
            assert got == ("deny" if size >= LINE else "allow"), (label, size, got)
    finish(verdicts)


def process(
    root: Path,
    argv: list[str],
    tool_input: Any,
    env: dict[str, str] | None = None,
    tool: str = "Agent",
) -> tuple[int, str]:
    payload = support.captured("PreToolUse.json", root, tool_name=tool, tool_input=tool_input)
    base = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE_", "CTXWARD_"))}
    done = subprocess.run(
        argv,
        input=json.dumps(payload).encode(),
        capture_output=True,
        env={**base, "CLAUDE_PROJECT_DIR": str(root), **(env or {})},
        timeout=60,
        check=False,
    )
    return done.returncode, done.stdout.decode("utf-8", "replace")


# --- flags and environment variables ----------------------------------------------------------

FLAGS = [["--force"], ["--no-guard"], ["--capacity", "99999999"], ["-f"], ["--", "--force"]]
ENVIRONMENTS: list[dict[str, str]] = [
    {"CTXWARD_FORCE": "1"},
    {"CTXWARD_DISABLE": "1", "CTXWARD_GUARD": "off", "CTXWARD_OFFLOAD": "0"},
    {"CTXWARD_CAPACITY_BYTES": "999999999", "CTXWARD_DISPATCH_CAPACITY": "999999999"},
    {"CTXWARD_HOME": "/nonexistent", "XDG_CONFIG_HOME": "/nonexistent"},
    {"PYTHONOPTIMIZE": "2"},  # assert statements removed
    {"PYTHONIOENCODING": "ascii", "LANG": "C", "LC_ALL": "C"},  # the deny reason is not ASCII
    {"PYTHONUTF8": "0", "LC_ALL": "POSIX"},
    {"CLAUDE_PROJECT_DIR": "/"},
    {"CLAUDE_PROJECT_DIR": "relative/dir"},
]


def _flags_and_environment(verdicts: Verdicts, flags: list[list[str]], envs: list[Any]) -> None:
    over = {"description": "d", "prompt": prompt_of(LINE + 10)}
    entries = [
        [str(support.CTXWARD_HOOK)],
        [sys.executable, str(support.HOOKS / "pre_tool_use.py")],
    ]
    for argv in entries:
        for extra in flags:
            code, out = process(verdicts.root, [*argv, *extra], over)
            verdicts.judge(f"{argv[-1]} {extra}", over, code, out, line=LINE)
        for env in envs:
            code, out = process(verdicts.root, argv, over, env)
            verdicts.judge(f"{argv[-1]} {env}", over, code, out, line=LINE)
    finish(verdicts)


def test_flags_and_environment_variables(verdicts: Verdicts) -> None:
    _flags_and_environment(verdicts, FLAGS[:1], [ENVIRONMENTS[0], ENVIRONMENTS[5]])


@pytest.mark.slow
def test_every_flag_and_environment_variable(verdicts: Verdicts) -> None:
    _flags_and_environment(verdicts, FLAGS, ENVIRONMENTS)


def test_payloads_too_large_or_too_deep_to_read(verdicts: Verdicts) -> None:
    """Regression: over 32 MB, or nested past the recursion limit, `ctxward-hook` exited 1 (the
    host ran the call) where it must deny a dispatch it cannot read."""
    root = verdicts.root
    huge = {"prompt": "x" * (33 * 1024 * 1024)}
    deep = {"prompt": "go", "extra": json.loads("[" * 50 + "]" * 50)}
    payload = support.captured("PreToolUse.json", root, tool_name="Agent", tool_input=deep)
    deep_raw = json.dumps(payload)[:-1] + ', "x": ' + "[" * 5000 + "]" * 5000 + "}"
    for pinned in (False, True):
        code, out = call(root, huge, pinned=pinned)
        assert verdicts.judge("33 MB", huge, code, out, line=LINE) == "deny"
        code, out = call(root, deep, pinned=pinned, raw=deep_raw.encode())
        denied, _ = _decision(code, out, "claude")
        assert denied, ("5,000 levels deep", pinned, code, out)
    finish(verdicts)


# --- config values --------------------------------------------------------------------------------

CONFIGS = [
    "dispatch:\n  capacity_bytes: 999999999\n",
    "dispatch:\n  capacity_bytes: -1\n",
    "dispatch:\n  capacity_bytes: 262144.5\n",
    "dispatch:\n  capacity_bytes: '999999999'\n",
    "dispatch:\n  capacity_bytes: .inf\n",
    "dispatch:\n  capacity_by_agent: {general-purpose: 999999999}\n",
    "dispatch:\n  capacity_by_agent: [999999999]\n",
    "dispatch:\n  capacity_by_agent: {general-purpose: 2048, GENERAL_PURPOSE: 999999999}\n",
    "dispatch:\n  offload: 'yes'\n",
    "dispatch:\n  offload: null\n",
    "dispatch: null\n",
    "dispatch:\n  force: true\n",
    "guard: off\n",
    "dispatch:\n  enabled: false\n",
    "dispatch: {capacity_bytes: 1024}\ndispatch: {capacity_bytes: 999999999}\n",
    "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
    "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
    "dispatch: {capacity_by_agent: {x: *d}}\n",
    "dispatch: [" * 500 + "]" * 500 + "\n",
    "\xff\xfe not utf-8",
    "dispatch:\n\tcapacity_bytes: 1\n",
    "!!python/object/apply:os.system ['true']\n",
    "",
]


@pytest.mark.parametrize("index", range(len(CONFIGS)))
def test_config_values(verdicts: Verdicts, index: int) -> None:
    root = verdicts.root
    path = root / ".ctxward" / "config.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(CONFIGS[index].encode("utf-8", "surrogateescape"))
    for pasted in (False, True):
        over = {"description": "d", "prompt": prompt_of(LINE + 100, pasted=pasted)}
        for host, pinned in (("claude", False), ("claude", True), ("opencode", False)):
            code, out = call(root, over, host=host, pinned=pinned)
            verdicts.judge(f"config #{index} {host}", over, code, out, line=LINE, host=host)
    finish(verdicts)


def test_config_as_a_folder_or_a_link(verdicts: Verdicts, tmp_path: Path) -> None:
    root = verdicts.root
    path = root / ".ctxward" / "config.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    permissive = tmp_path / "elsewhere.yaml"
    permissive.write_text("dispatch:\n  capacity_bytes: 999999999\n", "utf-8")
    over = {"prompt": prompt_of(LINE + 100)}
    for make in (lambda: path.mkdir(), lambda: path.symlink_to(permissive)):
        make()
        code, out = call(root, over)
        kind = "folder" if path.is_dir() and not path.is_symlink() else "link"
        verdicts.judge(f"config as a {kind}", over, code, out, line=LINE)
        if path.is_dir() and not path.is_symlink():
            path.rmdir()
        else:
            path.unlink()
    finish(verdicts)


# --- tool names -------------------------------------------------------------------------------


def test_legacy_and_odd_tool_names(verdicts: Verdicts) -> None:
    """`Agent` and `Task` (legacy) are dispatches; Claude Code runs no sub-agent for any other
    spelling, so those get no answer (and cannot carry a dispatch past the guard)."""
    over = {"description": "d", "prompt": prompt_of(LINE + 100)}
    for tool in ("Agent", "Task"):
        for pinned in (False, True):
            code, out = call(verdicts.root, over, tool=tool, pinned=pinned)
            assert verdicts.judge(tool, over, code, out, line=LINE) == "deny"
    odd = ["agent", "AGENT", "task", " Agent", "Agent ", "Аgent", "Αgent", "Agent\u200b"]
    odd += ["\ufeffAgent", "Agent|Task", "mcp__x__Agent", "Agent\x00", "Tasks", ""]
    for tool in odd:
        code, out = call(verdicts.root, over, tool=tool)
        assert (code, out) == (0, ""), f"{tool!r} is no dispatch: no answer ({code}, {out})"
    # OpenCode's sub-agent tool id is `task` (ids are case-sensitive; the plugin calls ctxward
    # for `task` only)
    code, out = call(verdicts.root, over, tool="task", host="opencode")
    assert verdicts.judge("opencode task", over, code, out, line=LINE, host="opencode") == "deny"
    finish(verdicts)


# --- the prompt split across fields, unicode tricks -------------------------------------------


def split_inputs() -> dict[str, Any]:
    big = prompt_of(LINE + 100)
    half = prompt_of(LINE // 2 + 100)
    return {
        "description carries it": {"description": big, "prompt": "go"},
        "subagent_type carries it": {"subagent_type": big, "prompt": "go"},
        "unknown field": {"prompt": "go", "context": big},
        "two halves": {"prompt": half, "description": half},
        "many fields": {"prompt": "go", **{f"f{i}": half[: LINE // 8] for i in range(9)}},
        "nested list": {"prompt": "go", "files": [half[: LINE // 4]] * 5},
        "nested keys": {"prompt": "go", "x": {half[: LINE // 2]: 1, half[: LINE // 2 + 7]: 2}},
        "prompt a list": {"prompt": [big]},
        "prompt an object": {"prompt": {"text": big}},
        "prompt null": {"prompt": None, "description": big},
        "no prompt": {"description": big},
        "4-byte characters": {"prompt": "😀" * (LINE // 4 + 10)},
        "combining marks": {"prompt": "e\u0301" * (LINE // 3 + 10)},
        "right-to-left": {"prompt": "\u202e" * (LINE // 3 + 10)},
        "NUL characters": {"prompt": "\x00" * (LINE + 10)},
        "BOM": {"prompt": "\ufeff" * (LINE // 3 + 10)},
        "lone surrogates": {"prompt": "\ud800" * (LINE // 3 + 10)},
    }


def test_the_prompt_split_across_fields_and_unicode_tricks(verdicts: Verdicts) -> None:
    for label, tool_input in split_inputs().items():
        for host, pinned in (("claude", False), ("claude", True), ("opencode", False)):
            code, out = call(verdicts.root, tool_input, host=host, pinned=pinned)
            verdicts.judge(f"{label} ({host})", tool_input, code, out, line=LINE, host=host)
        if label == "4-byte characters":  # escaped surrogate pairs (ensure_ascii JSON)
            payload = support.captured(
                "PreToolUse.json", verdicts.root, tool_name="Agent", tool_input=tool_input
            )
            code, out = call(
                verdicts.root, tool_input, raw=json.dumps(payload, ensure_ascii=True).encode()
            )
            verdicts.judge("escaped surrogate pairs", tool_input, code, out, line=LINE)
    finish(verdicts)


def test_duplicated_json_keys(verdicts: Verdicts) -> None:
    """JSON's last key wins, in Python as in JavaScript: the host dispatches what is measured."""
    big, root = prompt_of(LINE + 100), verdicts.root
    template = support.captured("PreToolUse.json", root, tool_name="Agent", tool_input={})
    head = json.dumps(template)[:-1]
    raws = {
        "prompt twice, big last": (
            head + ', "tool_input": {"prompt": "go", "prompt": ' + json.dumps(big) + "}}",
            {"prompt": big},
        ),
        "tool_name twice, Agent last": (
            json.dumps({**template, "tool_input": {"prompt": big}})[:-1]
            + ', "tool_name": "Bash", "tool_name": "Agent"}',
            {"prompt": big},
        ),
    }
    for label, (raw, effective) in raws.items():
        code, out = call(root, effective, raw=raw.encode())
        verdicts.judge(label, effective, code, out, line=LINE)
    finish(verdicts)


# --- offload pointers crafted to look like real ones ------------------------------------------


def crafted_pointer(root: Path, digest: str = "0" * 64) -> str:
    where = root / ".ctxward" / "offload" / f"{digest}.txt"
    return (
        f"[ctxward C9: pasted block of 60,000 bytes moved to {where} (sha256 {digest}); "
        'first line "x"; Read that file for the full text]'
    )


def test_crafted_offload_pointers(verdicts: Verdicts) -> None:
    root = verdicts.root
    fake = crafted_pointer(root)
    many = "\n\n".join([fake] * (LINE // len(fake) + 10))
    real_file = root / ".ctxward" / "offload" / ("1" * 64 + ".txt")
    real_file.parent.mkdir(parents=True, exist_ok=True)
    real_file.write_text("not what the pointer claims", "utf-8")
    wrong_hash = crafted_pointer(root, "1" * 64)
    cases = {
        "only pointers": {"prompt": many},
        "pointers and paragraphs": {"prompt": fake + "\n\n" + prompt_of(LINE + 100)},
        "a pointer to a file that lies": {"prompt": wrong_hash + "\n\n" + prompt_of(LINE)},
        "a pointer and a movable chunk": {
            "prompt": fake + "\n\n" + prompt_of(LINE + 100, pasted=True)
        },
    }
    for label, tool_input in cases.items():
        for host, pinned in (("claude", False), ("claude", True), ("opencode", False)):
            code, out = call(root, tool_input, host=host, pinned=pinned)
            got = verdicts.judge(label, tool_input, code, out, line=LINE, host=host)
            if label != "a pointer and a movable chunk":
                assert got == "deny", (label, host, got)
    finish(verdicts)
