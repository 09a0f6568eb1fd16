"""PreToolUse: the G9 dispatch guard on Agent/Task, with no override, failing closed, and C9.

In-process through hookio (`run_hook`) unless the test needs a real process; the subprocess
tests at the end run the captured Claude Code 2.1.332 payloads through hooks/pre_tool_use.py and
the installed `ctxward-hook`.
"""

from __future__ import annotations

import inspect
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ctxward.core import project
from ctxward.core.config import CONFIG_FILE
from ctxward.core.project import Project
from ctxward.core.scrub import scrub
from ctxward.events import pre_tool_use
from ctxward.guard import decide as guard
from ctxward.guard import thresholds
from ctxward.guard.thresholds import DEFAULT_CAPACITY_BYTES, TIERS
from ctxward.hookio import NOTHING, HookEvent, run, run_in_memory
from ctxward.hosts import claude_code

REPO = Path(__file__).resolve().parents[2]
CAP = DEFAULT_CAPACITY_BYTES
LINE = {tier.name: tier.threshold(CAP) for tier in TIERS}
PARAGRAPH = ("lorem ipsum dolor sit amet, consectetur adipiscing elit; " * 20)[:999]


def prompt_of(size: int) -> str:
    """Exactly `size` UTF-8 bytes in paragraphs of about 1 KB: nothing C9 could move."""
    unit = PARAGRAPH + "\n\n"
    text = unit * (size // len(unit))
    return text + "x" * (size - len(text))


def pasted(size: int, word: str = "row") -> str:
    """One paragraph (no blank line) of exactly `size` bytes: what C9 moves when > 2 KB."""
    line = f"{word} " * 20 + "\n"
    return (line * (size // len(line) + 1))[: size - 1] + "."


@pytest.fixture
def dispatch(load_payload):
    """`dispatch(tool_input, tool="Agent")`: the captured PreToolUse payload, input replaced."""

    def make(tool_input: Any, tool: str = "Agent", **fields: Any) -> dict[str, Any]:
        return load_payload("PreToolUse.json", tool_name=tool, tool_input=tool_input, **fields)

    return make


def answer(out: str) -> dict[str, Any]:
    """The hookSpecificOutput plus systemMessage of a hook's stdout ({} for no output)."""
    if not out:
        return {}
    body = json.loads(out)
    assert set(body) <= {"hookSpecificOutput", "systemMessage"}
    specific = dict(body.get("hookSpecificOutput", {}))
    if specific:
        assert specific.pop("hookEventName") == "PreToolUse"
    if "systemMessage" in body:
        specific["systemMessage"] = body["systemMessage"]
    return specific


def assert_tier(out: str, tier: str) -> dict[str, Any]:
    got = answer(out)
    if tier == "ok":
        assert got == {}
    elif tier in ("soft-warn", "near-limit"):
        assert set(got) == {"additionalContext", "systemMessage"}
        assert f"tier {tier}" in got["additionalContext"]
        assert f"tier {tier}" in got["systemMessage"]
        assert ("CONTEXT_NEAR_LIMIT" in got["additionalContext"]) is (tier == "near-limit")
    else:
        code = thresholds.BY_NAME[tier].code
        assert got["permissionDecision"] == "deny"
        assert got["permissionDecisionReason"].startswith(f"{code}: ")
        assert "updatedInput" not in got
    return got


def write_config(root: Path, text: str) -> None:
    (root / ".ctxward").mkdir(exist_ok=True)
    (root / ".ctxward" / "config.yaml").write_text(text, encoding="utf-8")


# --- which tools are guarded ------------------------------------------------------------------


@pytest.mark.parametrize(
    "tool",
    [
        "Bash",
        "Read",
        "Write",
        "agent",
        "AGENT",
        "task",
        # Cyrillic А (U+0410): not Claude Code's tool. The host runs a sub-agent only for its own
        # tool named exactly Agent (or Task), so this call starts no sub-agent: passing it as
        # any other tool is correct.
        "Аgent",
        "Agent ",
        "TaskCreate",
        "TaskOutput",
        "mcp__agents__Agent",
        None,
        42,
        ["Agent"],
    ],
)
def test_other_tools_get_no_answer(run_hook, dispatch, project, tool):
    payload = dispatch({"prompt": prompt_of(LINE["emergency"])}, tool=tool)

    assert run_hook(payload) == (0, "", "")
    assert pre_tool_use.handle(HookEvent("PreToolUse", payload, Project(project))) is NOTHING


def test_dispatch_tools_are_claude_codes_and_codexs():
    from ctxward.hosts import codex

    assert frozenset({"Agent", "Task", *codex.DISPATCH_TOOLS}) == claude_code.DISPATCH_TOOLS


BOUNDARIES = [
    (tier.name, offset) for tier in TIERS[1:] for offset in (-1, 0, 1)
]  # -1 falls in the tier below


@pytest.mark.parametrize("tool", ["Agent", "Task"])
@pytest.mark.parametrize(("tier", "offset"), BOUNDARIES)
def test_every_boundary_through_the_hook(run_hook, dispatch, tool, tier, offset):
    size = LINE[tier] + offset
    expected = thresholds.tier_for(size, CAP).name
    assert expected == (
        tier if offset >= 0 else TIERS[TIERS.index(thresholds.BY_NAME[tier]) - 1].name
    )

    code, out, err = run_hook(dispatch({"prompt": prompt_of(size)}, tool=tool))

    assert (code, err) == (0, "")
    assert_tier(out, expected)


def test_warning_names_the_tier_the_size_and_the_next_threshold(run_hook, dispatch):
    _, out, _ = run_hook(dispatch({"prompt": prompt_of(140_000)}))
    got = assert_tier(out, "soft-warn")

    context, notice = got["additionalContext"], got["systemMessage"]
    for text in (context, notice):
        assert "140,000 bytes" in text
        assert "near-limit" in text and "196,608" in text
    assert "131,072" in context and "209,716" in context and "Agent" in context


def test_near_limit_carries_the_warning_code(run_hook, dispatch):
    _, out, _ = run_hook(dispatch({"prompt": prompt_of(200_000)}))
    got = assert_tier(out, "near-limit")

    assert "Warning CONTEXT_NEAR_LIMIT" in got["additionalContext"]
    assert "(CONTEXT_NEAR_LIMIT)" in got["systemMessage"]
    assert "hard-reject at 209,716 bytes (rejected)" in got["systemMessage"]


@pytest.mark.parametrize(
    ("size", "code", "line"),
    [(215_000, "PROMPT_TOO_LARGE", "209,716"), (240_000, "PROMPT_EMERGENCY", "235,930")],
)
def test_deny_reason_states_code_size_threshold_and_how_to_shrink(
    run_hook, dispatch, size, code, line
):
    _, out, _ = run_hook(dispatch({"prompt": prompt_of(size)}, tool="Task"))
    got = answer(out)
    reason = got["permissionDecisionReason"]

    assert reason.startswith(f"{code}: the ctxward dispatch guard denied this Task call.")
    assert f"{size:,} bytes" in reason
    assert f"line of {line} bytes" in reason
    assert "must stay under 209,716 bytes" in reason
    assert f"{size - 209_716 + 1:,} bytes over" in reason
    assert "There is no override at this layer." in reason
    assert "write the bulk" in reason and "pass its path" in reason
    assert "split the task" in reason and "trim" in reason
    assert "no fenced block or pasted chunk larger than 2 KB" in reason
    assert code in got["systemMessage"]
    assert len(reason) < 10_000


# --- no override at this layer ------------------------------------------------------------------

OVERRIDE_ENV = {
    "CTXWARD_FORCE": "1",
    "CTXWARD_DISPATCH_FORCE": "true",
    "CTXWARD_OVERRIDE": "1",
    "CTXWARD_NO_GUARD": "1",
    "CTXWARD_DISABLE": "pre_tool_use",
    "CTXWARD_CAPACITY_BYTES": "99999999",
    "FORCE": "1",
    "PEAKS_FORCE": "1",
}


def test_no_environment_variable_overrides(project, dispatch):
    raw = json.dumps(dispatch({"prompt": prompt_of(LINE["hard-reject"])})).encode()
    env = {"CLAUDE_PROJECT_DIR": str(project), **OVERRIDE_ENV}

    code, out, _ = run_in_memory(raw, env)

    assert code == 0
    assert_tier(out, "hard-reject")


@pytest.mark.parametrize(
    "extra_input",
    [
        {"force": True},
        {"force": "true", "override": True, "skip_guard": True},
        {"dangerouslyDisableGuard": True, "allow": True},
        {"capacity_bytes": 10**9},
    ],
)
def test_no_tool_input_field_overrides(run_hook, dispatch, extra_input):
    tool_input = {"prompt": prompt_of(LINE["hard-reject"]), **extra_input}

    _, out, _ = run_hook(dispatch(tool_input))

    assert answer(out)["permissionDecision"] == "deny"


@pytest.mark.parametrize(
    "fields",
    [
        {"force": True},
        {"permission_mode": "bypassPermissions"},
        {"override": "G9"},
        {"hook_flags": ["--force"]},
    ],
)
def test_no_payload_field_overrides(run_hook, dispatch, fields):
    _, out, _ = run_hook(dispatch({"prompt": prompt_of(LINE["emergency"])}, **fields))

    assert_tier(out, "emergency")


@pytest.mark.parametrize(
    ("config", "problem"),
    [
        ("dispatch:\n  force: true\n", "unknown key 'force'"),
        ("dispatch:\n  enabled: false\n", "unknown key 'enabled'"),
        ("dispatch:\n  capacity_bytes: 100000000\n", "outside"),
        ("dispatch:\n  capacity_by_agent: {general-purpose: 999999999}\n", "outside"),
        ("dispatch:\n  hard_reject_percent: 100\n", "unknown key"),
        ("guard: off\n", "unknown key 'guard'"),
        ("dispatch: [\n", "YAML error"),
    ],
)
def test_no_config_value_overrides_and_a_broken_config_denies(
    run_hook, dispatch, project, config, problem
):
    write_config(project, config)

    code, out, err = run_hook(dispatch({"prompt": "a small prompt"}))

    got = answer(out)
    assert code == 0
    assert got["permissionDecision"] == "deny"
    assert ".ctxward/config.yaml" in got["permissionDecisionReason"]
    assert problem in got["permissionDecisionReason"]
    assert "could not check it" in got["systemMessage"]
    assert problem in err  # the one diagnostic line is still written


def test_config_may_only_make_the_guard_stricter(run_hook, dispatch, project):
    write_config(project, "dispatch:\n  capacity_bytes: 100000\n")

    _, out, _ = run_hook(dispatch({"prompt": prompt_of(80_000)}))

    assert_tier(out, "hard-reject")  # 80% of 100,000


def test_capacity_per_sub_agent_type(run_hook, dispatch, project):
    write_config(project, "dispatch:\n  capacity_by_agent: {Explore: 10000}\n")
    prompt = prompt_of(9_500)

    _, explore, _ = run_hook(dispatch({"prompt": prompt, "subagent_type": "explore"}))
    _, general, _ = run_hook(dispatch({"prompt": prompt, "subagent_type": "general-purpose"}))

    assert_tier(explore, "emergency")
    assert_tier(general, "ok")


@pytest.mark.parametrize(
    ("tool_input", "problem"),
    [
        (None, "tool_input is a JSON null, not an object"),
        ([{"prompt": "x"}], "tool_input is a JSON array, not an object"),
        ("do the thing", "tool_input is a JSON str, not an object"),
        (12, "tool_input is a JSON number, not an object"),
        ({}, "tool_input has no 'prompt'"),
        ({"description": "x"}, "tool_input has no 'prompt'"),
        ({"prompt": None}, "tool_input.prompt is a JSON null, not a string"),
        ({"prompt": 3.5}, "tool_input.prompt is a JSON number, not a string"),
        ({"prompt": False}, "tool_input.prompt is a JSON boolean, not a string"),
        ({"prompt": ["part one", "part two"]}, "tool_input.prompt is a JSON array"),
        ({"prompt": {"text": "x"}}, "tool_input.prompt is a JSON object"),
        ({"prompt": "x", "description": 7}, "tool_input.description is a JSON number"),
        ({"prompt": "x", "subagent_type": {"a": 1}}, "tool_input.subagent_type is a JSON object"),
    ],
)
def test_odd_json_types_are_denied_with_a_clear_reason(run_hook, dispatch, tool_input, problem):
    code, out, err = run_hook(dispatch(tool_input))

    got = answer(out)
    assert (code, err) == (0, "")
    assert got["permissionDecision"] == "deny"
    assert problem in got["permissionDecisionReason"]
    assert "cannot be measured" in got["permissionDecisionReason"]


def test_a_missing_tool_input_is_denied(run_hook, load_payload):
    payload = load_payload("PreToolUse.json")
    del payload["tool_input"]

    _, out, _ = run_hook(payload)

    assert "tool_input is a JSON null" in answer(out)["permissionDecisionReason"]


@pytest.mark.parametrize("field", ["text", "input", "command", "context", "description"])
def test_a_prompt_hidden_in_another_field_is_measured(run_hook, dispatch, field):
    tool_input = {"prompt": "Summarise the attachment.", field: prompt_of(LINE["emergency"])}

    _, out, _ = run_hook(dispatch(tool_input))

    reason = answer(out)["permissionDecisionReason"]
    assert reason.startswith("PROMPT_EMERGENCY")
    assert "+ other fields" in reason


def test_the_hook_layer_has_no_force_anywhere():
    assert "force" not in inspect.signature(pre_tool_use.guard_dispatch).parameters
    assert "force" not in inspect.signature(pre_tool_use.handle).parameters
    assert "force" not in inspect.getsource(pre_tool_use).lower()


# --- failing closed -----------------------------------------------------------------------------

UNREADABLE = {
    "malformed-json": b'{"hook_event_name": "PreToolUse", "tool_name": "Agent",',
    "json-array": b'[{"hook_event_name": "PreToolUse"}]',
    "json-null": b"null",
    "not-utf8": b'{"hook_event_name": "PreToolUse", "tool_name": "Ag\xffent"}',
    "empty": b"",
    "no-event-name": b'{"tool_name": "Agent", "tool_input": {"prompt": "x"}}',
}


def run_pinned(raw: bytes, project: Path) -> tuple[int, str, str]:
    import io

    out, err = io.StringIO(), io.StringIO()
    code = run(
        event_name="PreToolUse",
        stdin=io.BytesIO(raw),
        stdout=out,
        stderr=err,
        env={"CLAUDE_PROJECT_DIR": str(project)},
    )
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("case", sorted(UNREADABLE))
def test_unreadable_payload_pinned_to_pre_tool_use_is_denied(project, case):
    code, out, err = run_pinned(UNREADABLE[case], project)

    got = answer(out)
    assert code == 0
    assert got["permissionDecision"] == "deny"
    assert "could not check it" in got["permissionDecisionReason"]
    assert err.startswith("ctxward: PreToolUse: ") and err.count("\n") == 1


@pytest.mark.parametrize("case", sorted(UNREADABLE))
def test_unreadable_payload_not_pinned_is_exit_1(run_hook, case):
    code, out, err = run_hook(UNREADABLE[case])

    assert (code, out) == (1, "")
    assert err.startswith("ctxward: ")


def test_pinned_to_pre_tool_use_a_payload_of_another_event_is_exit_1(project, load_payload):
    raw = json.dumps(load_payload("PreCompact.json")).encode()

    code, out, err = run_pinned(raw, project)

    assert (code, out) == (1, "")
    assert "this hook handles PreToolUse, but the payload is for PreCompact" in err


def test_an_internal_error_on_a_dispatch_denies(run_hook, dispatch, project, monkeypatch):
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("table unreadable")

    monkeypatch.setattr(guard, "decide", broken)

    code, out, err = run_hook(dispatch({"prompt": "tiny"}))

    got = answer(out)
    assert code == 0
    assert got["permissionDecision"] == "deny"
    assert "internal error: RuntimeError: table unreadable" in got["permissionDecisionReason"]
    log = re.search(r"details: (\.ctxward/log/\S+\.log)", got["permissionDecisionReason"])
    assert log and (project / log.group(1)).is_file()
    assert "internal error in PreToolUse" in err


def test_a_broken_config_never_touches_other_tools(run_hook, dispatch, project):
    write_config(project, "dispatch: [\n")

    assert run_hook(dispatch({"command": "ls"}, tool="Bash")) == (0, "", "")


# --- C9 offload ---------------------------------------------------------------------------------


def reassemble(prompt: str) -> str:
    """Replace every C9 pointer by the file it names."""

    def content(match: re.Match[str]) -> str:
        return Path(match.group(1)).read_text(encoding="utf-8")

    return re.sub(
        r"^\[ctxward C9: .*? moved to (\S+) \(sha256 [0-9a-f]{64}\); .*\]$",
        content,
        prompt,
        flags=re.M,
    )


def big_prompt() -> tuple[str, list[str]]:
    """Instructions around two fenced blocks and a pasted chunk: ~230 KB, hard-reject."""
    fenced_a = "```python\n" + "\n".join(f"value_{i} = {i}  # generated" for i in range(3000))
    fenced_a += "\n```"
    fenced_b = "~~~text\n" + pasted(70_000, "log") + "\n~~~"
    chunk = pasted(60_000, "csv")
    prompt = "\n".join(
        [
            "You are reviewing the attached material.",
            "Report the three biggest risks.",
            "",
            fenced_a,
            "",
            "The log follows.",
            fenced_b,
            "",
            chunk,
            "",
            "Reply with a list.",
        ]
    )
    return prompt, [fenced_a, fenced_b, chunk]


def test_offload_allows_with_the_complete_input_and_round_trips_exactly(
    run_hook, dispatch, project
):
    prompt, moved = big_prompt()
    size = len(prompt.encode())
    assert LINE["hard-reject"] <= size < LINE["emergency"]
    tool_input = {
        "description": "Review material",
        "prompt": prompt,
        "subagent_type": "general-purpose",
        "run_in_background": False,
    }

    code, out, err = run_hook(dispatch(tool_input))

    got = answer(out)
    assert (code, err) == (0, "")
    assert got["permissionDecision"] == "allow"
    updated = got["updatedInput"]
    assert {k: v for k, v in updated.items() if k != "prompt"} == {
        k: v for k, v in tool_input.items() if k != "prompt"
    }
    assert reassemble(updated["prompt"]) == prompt  # nothing dropped, byte for byte
    assert updated["prompt"].count("[ctxward C9:") == 3
    assert updated["prompt"].startswith("You are reviewing the attached material.\n")
    assert updated["prompt"].endswith("\n\nReply with a list.")
    stored = sorted((project / ".ctxward" / "offload").iterdir())
    assert len(stored) == 3
    for path in stored:
        data = path.read_bytes()
        assert path.stem == hashlib_sha256(data)
        assert data.decode() in moved
    assert {path.suffix for path in stored} == {".md", ".txt"}
    context = got["additionalContext"]
    assert "moved 3 block(s) larger than 2 KB" in context
    assert "nothing was dropped" in context
    assert all(str(path) in context for path in stored)
    assert "went out as" in got["systemMessage"]


def hashlib_sha256(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


def test_pointers_are_one_line_with_path_size_sha_and_first_line(run_hook, dispatch, project):
    prompt, _ = big_prompt()
    _, out, _ = run_hook(dispatch({"prompt": prompt}))

    pointers = [
        line for line in answer(out)["updatedInput"]["prompt"].split("\n") if "ctxward C9" in line
    ]
    assert len(pointers) == 3
    first = pointers[0]
    assert first.startswith("[ctxward C9: fenced block of ")
    assert str(project / ".ctxward" / "offload") in first
    assert re.search(r"\(sha256 [0-9a-f]{64}\)", first)
    assert 'first line "value_0 = 0  # generated"' in first
    assert "Read that file" in first
    assert all(len(pointer) < 500 for pointer in pointers)  # a long tmp path included


def test_offloaded_secrets_are_scrubbed_and_the_round_trip_is_of_the_scrubbed_text(
    run_hook, dispatch, project
):
    # The scrubber changes the block, so the files reassemble the SCRUBBED prompt: the secret
    # itself is what must not reach the disk.
    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    prompt, _ = big_prompt()
    leaky = pasted(30_000, "cfg") + f"\nGITHUB_TOKEN={secret}\n" + pasted(3_000, "cfg")
    prompt = prompt.replace("Reply with a list.", leaky + "\n\nReply with a list.")

    _, out, _ = run_hook(dispatch({"prompt": prompt}))

    got = answer(out)
    assert got["permissionDecision"] == "allow"
    assert secret not in out
    for path in (project / ".ctxward" / "offload").iterdir():
        assert secret not in path.read_text(encoding="utf-8")
    scrubbed_block = scrub(leaky)[0]
    assert scrubbed_block != leaky
    assert reassemble(got["updatedInput"]["prompt"]) == prompt.replace(leaky, scrubbed_block)


def test_offload_that_is_not_enough_denies_and_names_what_moved(run_hook, dispatch, project):
    prompt = prompt_of(LINE["hard-reject"] + 500) + "\n\n" + pasted(12_000, "trace")

    _, out, _ = run_hook(dispatch({"prompt": prompt}))

    got = answer(out)
    reason = got["permissionDecisionReason"]
    assert got["permissionDecision"] == "deny"
    assert reason.startswith("PROMPT_TOO_LARGE")
    assert "ctxward moved 1 block(s) larger than 2 KB (12,000 bytes)" in reason
    (stored,) = (project / ".ctxward" / "offload").iterdir()
    assert str(stored) in reason  # on disk, and named: nothing is dropped
    assert "Could not be moved:" in reason and "block(s) of 2 KB or less" in reason
    assert "moved to files were not enough" in got["systemMessage"]


def test_a_deny_lists_a_bounded_number_of_moved_files(run_hook, dispatch, project):
    blocks = [pasted(2_100, f"b{i}") for i in range(30)]
    prompt = prompt_of(LINE["hard-reject"] + 100) + "\n\n" + "\n\n".join(blocks)

    _, out, _ = run_hook(dispatch({"prompt": prompt}))

    reason = answer(out)["permissionDecisionReason"]
    assert reason.count(str(project / ".ctxward" / "offload")) == pre_tool_use.LISTED_BLOCKS
    assert f"and {30 - pre_tool_use.LISTED_BLOCKS} more in .ctxward/offload/" in reason
    assert len(reason) < 10_000
    assert len(list((project / ".ctxward" / "offload").iterdir())) == 30


def test_offload_off_in_config_denies_without_moving(run_hook, dispatch, project):
    write_config(project, "dispatch:\n  offload: false\n")
    prompt, _ = big_prompt()

    _, out, _ = run_hook(dispatch({"prompt": prompt}))

    reason = answer(out)["permissionDecisionReason"]
    assert reason.startswith("PROMPT_TOO_LARGE")
    assert "moved" not in reason
    assert not (project / ".ctxward" / "offload").exists()


def test_prompts_that_pass_are_never_rewritten(run_hook, dispatch, project):
    prompt = "Review this.\n\n" + pasted(150_000, "dump")  # soft-warn, one big chunk

    _, out, _ = run_hook(dispatch({"prompt": prompt}))

    got = assert_tier(out, "soft-warn")
    assert "updatedInput" not in got
    assert not (project / ".ctxward" / "offload").exists()


def test_offload_is_idempotent(run_hook, dispatch, project):
    prompt, _ = big_prompt()
    payload = dispatch({"prompt": prompt})

    first = run_hook(payload)
    before = {p.name: p.stat().st_mtime_ns for p in (project / ".ctxward" / "offload").iterdir()}
    second = run_hook(payload)

    assert first == second
    after = {p.name: p.stat().st_mtime_ns for p in (project / ".ctxward" / "offload").iterdir()}
    assert before == after  # content-addressed: an unchanged file is not rewritten


def test_offload_into_a_warning_tier_says_so(run_hook, dispatch):
    prompt = prompt_of(LINE["near-limit"] + 1000) + "\n\n" + pasted(20_000, "dump")

    _, out, _ = run_hook(dispatch({"prompt": prompt}))

    got = answer(out)
    assert got["permissionDecision"] == "allow"
    assert "tier near-limit, CONTEXT_NEAR_LIMIT" in got["additionalContext"]


# --- the hot path: no handler imports for what needs no answer -----------------------------------


def test_the_config_path_the_hot_path_checks_is_the_real_one():
    assert Path(project.STATE_DIRNAME, CONFIG_FILE) == Path(pre_tool_use._CONFIG)


@pytest.mark.parametrize(
    "size", [0, 1000, LINE["soft-warn"] - 2_000, LINE["soft-warn"], LINE["hard-reject"]]
)
@pytest.mark.parametrize("config", [None, "dispatch:\n  capacity_bytes: 1024\n"])
def test_no_answer_on_the_hot_path_means_no_answer_from_the_handler(
    run_hook, dispatch, project, size, config
):
    if config:
        write_config(project, config)
    payload = dispatch({"prompt": prompt_of(size), "description": "d"})
    raw = json.dumps(payload).encode()

    quick = pre_tool_use.needs_no_answer(payload, {"CLAUDE_PROJECT_DIR": str(project)}, len(raw))

    if quick:
        assert run_hook(payload) == (0, "", "")
    assert quick is (config is None and len(raw) < LINE["soft-warn"])


def test_the_hot_path_finds_a_config_from_the_payload_cwd(project, dispatch, tmp_path):
    nested = project / "src" / "pkg"
    nested.mkdir(parents=True)
    write_config(project, "dispatch:\n  capacity_bytes: 2048\n")
    payload = dispatch({"prompt": "x" * 1900}, cwd=str(nested))

    assert not pre_tool_use.needs_no_answer(payload, {}, 2000)
    assert not pre_tool_use.needs_no_answer(payload, {"CLAUDE_PROJECT_DIR": str(tmp_path)}, 2000)
    elsewhere = tmp_path / "elsewhere-project"
    elsewhere.mkdir()
    assert pre_tool_use.needs_no_answer({**payload, "cwd": str(elsewhere)}, {}, 2000)


def test_the_hot_path_leaves_unmeasurable_input_to_the_handler(dispatch):
    assert not pre_tool_use.needs_no_answer(dispatch({"prompt": 5}), {}, 100)
    assert pre_tool_use.needs_no_answer(dispatch({"command": "ls"}, tool="Bash"), {}, 100)


# --- OpenCode: the same decision for the task tool ----------------------------------------------


def opencode(project: Path, args: dict[str, Any]) -> tuple[int, Any]:
    import io

    body = {
        "hook": "tool.execute.before",
        "input": {"tool": "task", "sessionID": "ses_1", "callID": "call_1"},
        "output": {"args": args},
        "directory": str(project),
    }
    out, err = io.StringIO(), io.StringIO()
    code = run(
        event_name="PreToolUse",
        stdin=io.BytesIO(json.dumps(body).encode()),
        stdout=out,
        stderr=err,
        env={},
        host="opencode",
    )
    return code, json.loads(out.getvalue()) if out.getvalue() else None


def test_opencode_task_gets_the_same_decisions(project):
    base = {"description": "probe", "subagent_type": "general"}
    assert opencode(project, {**base, "prompt": "small"}) == (0, None)

    code, denied = opencode(project, {**base, "prompt": prompt_of(LINE["emergency"])})
    assert code == 0 and denied["deny"].startswith("PROMPT_EMERGENCY: ")
    assert "Task call" in denied["deny"]

    prompt, _ = big_prompt()
    code, offloaded = opencode(project, {**base, "prompt": prompt})
    assert code == 0
    assert reassemble(offloaded["args"]["prompt"]) == prompt
    assert "moved 3 block(s)" in offloaded["note"]


# --- real processes, captured Claude Code 2.1.332 payloads ---------------------------------------


def hook_commands() -> dict[str, list[str]]:
    installed = Path(sys.executable).with_name("ctxward-hook")
    return {
        "script": [sys.executable, str(REPO / "hooks" / "pre_tool_use.py")],
        "ctxward-hook": [str(installed)]
        if installed.is_file()
        else [sys.executable, "-c", "from ctxward.hookio import main; raise SystemExit(main())"],
    }


def spawn(command: list[str], payload: Any, project: Path, *argv: str) -> tuple[int, str, str]:
    raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    env = {
        **__import__("os").environ,
        "CLAUDE_PROJECT_DIR": str(project),
        "PYTHONPATH": str(REPO / "lib"),
    }
    result = subprocess.run(
        [*command, *argv], input=raw, capture_output=True, env=env, timeout=30, check=False
    )
    return result.returncode, result.stdout.decode(), result.stderr.decode()


@pytest.mark.parametrize("entry", ["script", "ctxward-hook"])
@pytest.mark.parametrize("fixture", ["PreToolUse.json", "PreToolUse.allow.json"])
def test_captured_payloads_in_a_real_process(load_payload, project, entry, fixture):
    payload = load_payload(fixture)
    assert payload["tool_name"] == "Agent"
    assert 30_000 < len(payload["tool_input"]["prompt"]) < LINE["soft-warn"]

    assert spawn(hook_commands()[entry], payload, project) == (0, "", "")
    bash = {**payload, "tool_name": "Bash", "tool_input": {"command": "ls"}}
    assert spawn(hook_commands()[entry], bash, project) == (0, "", "")


def e2e_prompt(size: int) -> str:
    """The captured E2E prompt's shape (numbered filler lines, one paragraph) at `size` bytes."""
    head = "E2E_DENY: you are a sub-agent dispatched by the mock model.\n"
    lines = [
        f"line {i:04d}: filler text to make the dispatch prompt large; lorem ipsum dolor sit amet."
        for i in range(size // 80 + 1)
    ]
    body = head + "\n".join(lines)
    tail = "\nReply with the single word DONE."
    return body[: size - len(tail)] + tail


# The shim's variant (hooks/*.py) is a heavy one: the slow stage (CI) runs it.
@pytest.mark.parametrize("entry", [pytest.param("script", marks=pytest.mark.slow), "ctxward-hook"])
def test_the_e2e_cases_in_a_real_process(load_payload, project, entry):
    command = hook_commands()[entry]

    # 150 KB runs: soft-warn, allowed, with the facts for the model and the user.
    runs = load_payload("PreToolUse.json")
    runs["tool_input"]["prompt"] = e2e_prompt(150 * 1024)
    code, out, err = spawn(command, runs, project)
    assert (code, err) == (0, "")
    assert_tier(out, "soft-warn")

    # 240 KB of small paragraphs: nothing C9 can move, denied.
    denied = load_payload("PreToolUse.json")
    denied["tool_input"]["prompt"] = prompt_of(240 * 1024)
    code, out, _ = spawn(command, denied, project)
    assert code == 0
    assert answer(out)["permissionDecisionReason"].startswith("PROMPT_EMERGENCY: ")

    # The captured prompt's own shape at 240 KB is ONE pasted chunk: C9 moves it to a file and
    # the call goes out with a pointer. With offload off it is denied like the case above.
    chunk = load_payload("PreToolUse.json")
    chunk["tool_input"]["prompt"] = e2e_prompt(240 * 1024)
    code, out, _ = spawn(command, chunk, project)
    got = answer(out)
    assert code == 0 and got["permissionDecision"] == "allow"
    assert reassemble(got["updatedInput"]["prompt"]) == chunk["tool_input"]["prompt"]
    write_config(project, "dispatch:\n  offload: false\n")
    code, out, _ = spawn(command, chunk, project)
    assert answer(out)["permissionDecisionReason"].startswith("PROMPT_EMERGENCY: ")


@pytest.mark.parametrize("entry", ["script", "ctxward-hook"])
def test_a_force_flag_on_the_hook_allows_nothing(load_payload, project, entry):
    payload = load_payload("PreToolUse.json")
    payload["tool_input"]["prompt"] = prompt_of(LINE["hard-reject"])

    code, out, _ = spawn(hook_commands()[entry], payload, project, "--force")

    assert code == 0  # the entry points take no arguments: --force is ignored
    assert_tier(out, "hard-reject")


def test_ctxward_hook_pre_tool_use_has_no_force_option(load_payload, project):
    payload = load_payload("PreToolUse.json")
    payload["tool_input"]["prompt"] = prompt_of(LINE["hard-reject"])
    cli = [sys.executable, "-m", "ctxward", "hook", "pre-tool-use"]

    code, out, err = spawn(cli, payload, project, "--force")

    assert code == 2  # a usage error; exit 2 is also what Claude Code reads as "block"
    assert out == "" and "No such option" in err and "--force" in err
    code, out, _ = spawn(cli, payload, project)
    assert code == 0
    assert_tier(out, "hard-reject")


def test_environment_overrides_in_a_real_process(load_payload, project, monkeypatch):
    for name, value in OVERRIDE_ENV.items():
        monkeypatch.setenv(name, value)
    payload = load_payload("PreToolUse.json")
    payload["tool_input"]["prompt"] = prompt_of(LINE["emergency"])

    code, out, _ = spawn(hook_commands()["ctxward-hook"], payload, project)

    assert code == 0
    assert_tier(out, "emergency")


def test_garbage_in_a_real_process(project):
    code, out, err = spawn(hook_commands()["script"], b"{not json", project)
    assert code == 0 and answer(out)["permissionDecision"] == "deny"
    assert err.count("\n") == 1

    code, out, err = spawn(hook_commands()["ctxward-hook"], b"{not json", project)
    assert (code, out) == (1, "")  # not pinned: it cannot know the event


def test_a_checkout_without_dependencies_hands_the_payload_to_ctxward_hook(load_payload, project):
    installed = Path(sys.executable).with_name("ctxward-hook")
    if not installed.is_file():
        pytest.skip("no installed ctxward-hook next to the interpreter")
    payload = load_payload("PreToolUse.json")
    payload["tool_input"]["prompt"] = prompt_of(LINE["emergency"])
    pretend = (
        "import sys; sys.path.insert(0, sys.argv[1]); from ctxward import hookio; "
        "hookio._dependencies_missing = lambda: True; "
        "raise SystemExit(hookio.run_script('PreToolUse'))"
    )
    env = {
        **__import__("os").environ,
        "CLAUDE_PROJECT_DIR": str(project),
        "PATH": f"{installed.parent}:/usr/bin:/bin",
    }

    result = subprocess.run(
        [sys.executable, "-c", pretend, str(REPO / "lib")],
        input=json.dumps(payload).encode(),
        capture_output=True,
        env=env,
        timeout=30,
        check=False,
    )

    assert result.returncode == 0
    assert_tier(result.stdout.decode(), "emergency")  # the whole payload reached ctxward-hook


@pytest.mark.parametrize("entry", ["script", "ctxward-hook"])
def test_an_unusable_cwd_takes_the_full_path_not_a_traceback(load_payload, project, entry):
    """The hot path's config probe cannot walk a cwd with a NUL byte: `run` decides instead."""
    payload = load_payload("PreToolUse.json", cwd="/tmp/a\x00b")

    code, out, err = spawn(hook_commands()[entry], payload, project)

    assert (code, out, err) == (0, "", "")  # CLAUDE_PROJECT_DIR names the project: measured, ok


def test_dispatch_settings_without_a_config_file_are_the_configs_defaults(project):
    """The handler skips importing ctxward.core.config when there is no file: same values."""
    from ctxward.core.config import DispatchConfig, load

    defaults = DispatchConfig()
    assert load(Project(project)).dispatch == defaults
    assert pre_tool_use.dispatch_settings(Project(project)) == (
        defaults.capacity_bytes,
        defaults.capacity_by_agent,
        defaults.offload,
    )
    write_config(project, "dispatch:\n  capacity_bytes: 2000\n  offload: false\n")
    assert pre_tool_use.dispatch_settings(Project(project)) == (2000, {}, False)


def test_a_guarded_dispatch_without_a_config_file_does_not_import_the_config(project):
    payload = json.dumps(
        {
            "hook_event_name": "PreToolUse",
            "tool_name": "Agent",
            "tool_input": {"prompt": prompt_of(LINE["emergency"])},
            "cwd": str(project),
        }
    )
    probe = (
        "import io, sys\n"
        "from ctxward import hookio\n"
        "out = io.StringIO()\n"
        "hookio.run(stdout=out)\n"
        "print('deny' in out.getvalue(), 'ctxward.core.config' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        input=payload,
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
        env={**__import__("os").environ, "CLAUDE_PROJECT_DIR": str(project)},
    )
    assert done.stdout.split() == ["True", "False"]
