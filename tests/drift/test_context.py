"""The context checks on PostToolUse: live silence drift from the transcript (seed 002 "Silence
drift: no text response, 15+ iterations"), large tool outputs (seed 004 G0 "Tool output > 2 KB";
seed 002 "Large outputs (>8,000 chars) offloaded to scratch files with previews") and the
graduated context-pressure stages (seed 002 ACC: 70, 80, 85, 90, 99%). Each at its threshold
and one below."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ctxward.core.drift_settings import parse_context
from ctxward.errors import BadInput

REPO = Path(__file__).resolve().parents[2]
SECRET = "gh" + "p_" + "Zq4Lm8Rt2Vx6Nb0Kc3Hy7Wd1Pf5Sj9Ga2Eu"  # fake, assembled at run time


class Session:
    """A Claude Code transcript on disk and the PostToolUse payloads that name it."""

    def __init__(self, project: Path, load_payload: Any, session_id: str = "sess-ctx") -> None:
        self.path = project.parent / "transcripts" / f"{session_id}.jsonl"
        self.path.parent.mkdir(exist_ok=True)
        self.path.write_text("", encoding="utf-8")
        self.load = load_payload
        self.session_id = session_id
        self.calls = 0

    def append(self, record: dict[str, Any]) -> None:
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(record, separators=(",", ":")) + "\n")

    def assistant(self, *blocks: dict[str, Any], usage: int | None = None) -> None:
        message: dict[str, Any] = {"role": "assistant", "model": "claude-opus-5-5"}
        message["content"] = list(blocks)
        if usage is not None:
            message["usage"] = {
                "input_tokens": usage // 10,
                "cache_read_input_tokens": usage - usage // 10 - 5,
                "cache_creation_input_tokens": 5,
                "output_tokens": 99,
            }
        self.append({"type": "assistant", "sessionId": self.session_id, "message": message})

    def text(self, words: str = "Here is where things stand.", usage: int | None = None) -> None:
        self.assistant({"type": "text", "text": words}, usage=usage)

    def compaction(self) -> None:
        self.append({"type": "system", "subtype": "compact_boundary", "content": "compacted"})

    def call(
        self, tool: str = "Bash", response: Any = None, usage: int | None = None, **tool_input: Any
    ) -> dict[str, Any]:
        """The model's tool_use line (with the request's usage), the payload of its result."""
        self.calls += 1
        use_id = f"toolu_ctx_{self.calls:04d}"
        params = tool_input or {"command": f"python step_{self.calls}.py"}
        self.assistant(
            {"type": "tool_use", "id": use_id, "name": tool, "input": params}, usage=usage
        )
        return self.load(
            "PostToolUse.json",
            session_id=self.session_id,
            transcript_path=str(self.path),
            tool_name=tool,
            tool_input=params,
            tool_use_id=use_id,
            tool_response=response if response is not None else {"stdout": "ok", "stderr": ""},
        )


def answer(out: str) -> dict[str, Any]:
    if not out:
        return {}
    specific: dict[str, Any] = json.loads(out)["hookSpecificOutput"]
    assert specific["hookEventName"] == "PostToolUse"
    return specific


def context(out: str) -> str:
    return str(answer(out).get("additionalContext", ""))


@pytest.fixture
def session(project, load_payload) -> Session:
    return Session(project, load_payload)


# --- silence drift, live ------------------------------------------------------------------------


def test_silence_is_told_live_at_the_15th_call_without_text_and_not_at_the_14th(session, run_hook):
    session.text("I will run the steps one by one.")
    answers = [run_hook(session.call()) for _ in range(15)]

    assert [(a[0], context(a[1])) for a in answers[:14]] == [(0, "")] * 14  # 14: one below
    code, out, err = answers[14]
    assert (code, err) == (0, "")
    assert context(out).startswith(
        "ctxward drift check: silence drift — 15 tool calls came since the last text to the user;"
    )
    assert run_hook(session.call())[1] == ""  # told once while it holds


def test_text_from_the_model_resets_the_count(session, run_hook):
    session.text()
    for _ in range(14):
        assert run_hook(session.call())[1] == ""
    session.text("Progress: steps 1-14 pass.")  # the model spoke: a new count
    for _ in range(14):
        assert run_hook(session.call())[1] == ""
    assert "silence drift" in context(run_hook(session.call())[1])


@pytest.mark.slow  # a heavy variant: the slow stage (CI) runs it
def test_silence_is_told_on_the_installed_hot_path_within_its_budget(session, project):
    """`ctxward-hook` as installed: the standard-library path observes, the handler renders."""
    import time

    session.text()
    payloads = [session.call() for _ in range(15)]
    outputs = []
    spent = []
    for payload in payloads:
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-c", "from ctxward.hookio import main; main()"],
            input=json.dumps(payload).encode(),
            capture_output=True,
            env={"CLAUDE_PROJECT_DIR": str(project), "PATH": "/usr/bin:/bin"},
            cwd=project,
            check=False,
        )
        spent.append(time.perf_counter() - started)
        assert done.returncode == 0, done.stderr
        outputs.append(done.stdout.decode())
    assert outputs[:14] == [""] * 14
    assert "silence drift — 15 tool calls" in context(outputs[14])
    from ctxward.core.limits import BUDGET_SECONDS

    assert max(spent) < BUDGET_SECONDS["PostToolUse"]  # the whole process, loaded machine or not


def test_a_sub_agent_call_does_not_read_the_parents_transcript(session, run_hook):
    session.text()
    for _ in range(20):
        payload = session.call()
        payload["agent_id"] = "a1234"
        assert run_hook(payload)[1] == ""


# --- large tool outputs --------------------------------------------------------------------------


def test_an_output_over_2_kb_is_told_once_per_tool_and_session(session, run_hook):
    at_limit = {"stdout": "x" * 2048, "stderr": ""}
    assert run_hook(session.call(response=at_limit))[1] == ""  # 2,048 bytes: not over 2 KB
    big = {"stdout": "y" * 40_000, "stderr": "warning\n"}

    fact = context(run_hook(session.call(response=big))[1])

    assert fact == (
        "ctxward context check: the `Bash` output was 40,008 bytes, over the 2,048 bytes a tool "
        "output should bring into the context. What keeps it out: the command's summary flag "
        "where it has one (`--summary`), or the output written to a file and only the slice "
        "needed read (Read with offset and limit), or a filter (grep, head, jq) before it "
        "reaches the context."
    )
    assert run_hook(session.call(response=big))[1] == ""  # once per tool
    read = {"type": "text", "file": {"filePath": "/p/big.md", "content": "z" * 2049}}
    told = context(run_hook(session.call("Read", response=read, file_path="/p/big.md"))[1])
    assert told.startswith("ctxward context check: the `Read` output was 2,049 bytes")


def test_what_counts_is_what_reaches_the_model(session, run_hook):
    # An Edit's response echoes the whole file; a sub-agent's echoes its prompt.
    edit = {"filePath": "/p/a.py", "originalFile": "x" * 50_000, "structuredPatch": []}
    assert run_hook(session.call("Edit", response=edit, file_path="/p/a.py"))[1] == ""
    agent = {"prompt": "p" * 50_000, "content": [{"type": "text", "text": "DONE"}]}
    assert run_hook(session.call("Agent", response=agent, prompt="p" * 50_000))[1] == ""


def test_the_size_is_configurable(session, run_hook, project):
    (project / ".ctxward").mkdir()
    (project / ".ctxward" / "config.yaml").write_text(
        "context:\n  large_output:\n    bytes: 10000\n", encoding="utf-8"
    )
    assert run_hook(session.call(response={"stdout": "y" * 10_000}))[1] == ""
    assert "10,001 bytes" in context(run_hook(session.call("Grep", response="g" * 10_001))[1])


def mcp_output(text: str) -> list[dict[str, str]]:
    return [{"type": "text", "text": text}]


def test_an_mcp_output_over_8000_chars_is_offloaded_with_a_preview(session, run_hook, project):
    body = "".join(f"row {n:05d}: value\n" for n in range(600)) + f"token {SECRET}\n"
    assert len(body) > 8_000

    out = run_hook(session.call("mcp__db__dump", response=mcp_output(body), table="rows"))[1]

    specific = answer(out)
    (block,) = specific["updatedMCPToolOutput"]
    assert block["type"] == "text"
    preview = block["text"]
    (stored,) = (project / ".ctxward" / "offload").glob("*.txt")
    relative = f".ctxward/offload/{stored.name}"
    data = stored.read_bytes()
    assert stored.name == hashlib.sha256(data).hexdigest() + ".txt"  # on disk, content-named
    assert SECRET not in data.decode() and "[REDACTED:" in data.decode()  # scrubbed
    assert data.decode().startswith("row 00000: value\n")
    assert preview.startswith(
        f"[ctxward: this mcp__db__dump output was {len(body):,} characters; it is stored whole "
        f"in {relative} (sha256 {stored.name[:-4]})."
    )
    assert "row 00000: value" in preview and "row 00599" not in preview
    assert len(preview) < 2_000
    assert f"ctxward stored it whole in {relative}" in specific["additionalContext"]
    # The next large output of the same tool: offloaded again, no second fact.
    again = answer(run_hook(session.call("mcp__db__dump", response=mcp_output(body + "x")))[1])
    assert "additionalContext" not in again and "updatedMCPToolOutput" in again


def test_an_mcp_output_of_8000_chars_is_left_as_it_is(session, run_hook, project):
    out = run_hook(session.call("mcp__db__dump", response=mcp_output("r" * 8_000)))[1]
    specific = answer(out)
    assert "updatedMCPToolOutput" not in specific  # not over 8,000: only the 2 KB fact
    assert specific["additionalContext"].startswith("ctxward context check: the `mcp__db__dump`")
    assert not (project / ".ctxward" / "offload").exists()


def test_only_mcp_tools_are_replaced(session, run_hook):
    out = run_hook(session.call(response={"stdout": "y" * 20_000, "stderr": ""}))[1]
    assert "updatedMCPToolOutput" not in answer(out)


# --- context pressure ----------------------------------------------------------------------------

WINDOW = 200_000


def test_each_stage_is_told_once_and_silent_below_70(session, run_hook):
    told = []
    for tokens in (60_000, 139_999, 140_000, 150_000, 160_000, 169_999, 170_000, 180_000, 198_000):
        told.append(context(run_hook(session.call(usage=tokens))[1]))
    assert told[:2] == ["", ""]  # below 70% (139,999 is 69.99%)
    assert told[2] == (
        "ctxward context check: the context holds 140,000 tokens, 70% of the 200,000-token "
        "window (the last request's usage in the transcript): stage 70% (warning). What usually "
        "helps is to keep new tool outputs small (summary flags, slices, filters)."
    )
    assert told[3] == ""  # still the 70% stage
    assert "stage 80% (observation masking)" in told[4]
    assert told[5] == ""
    assert "stage 85% (fast pruning)" in told[6]
    assert "stage 90% (aggressive masking)" in told[7]
    assert "stage 99% (full compaction). A compaction is imminent" in told[8]


def test_a_jump_tells_the_highest_stage_only(session, run_hook):
    assert "stage 90%" in context(run_hook(session.call(usage=181_000))[1])
    assert run_hook(session.call(usage=182_000))[1] == ""
    assert "stage 99%" in context(run_hook(session.call(usage=WINDOW))[1])


def test_a_compaction_starts_a_new_segment(session, run_hook):
    assert "stage 80%" in context(run_hook(session.call(usage=161_000))[1])
    session.compaction()
    session.text("Continuing after the summary.", usage=30_000)
    assert run_hook(session.call(usage=30_000))[1] == ""
    assert "stage 70%" in context(run_hook(session.call(usage=141_000))[1])  # told again


def test_the_window_and_stages_are_configurable(session, run_hook, project):
    (project / ".ctxward").mkdir()
    (project / ".ctxward" / "config.yaml").write_text(
        "context:\n  pressure:\n    window_tokens: 100000\n    stages: [50, 75]\n",
        encoding="utf-8",
    )
    assert run_hook(session.call(usage=49_999))[1] == ""
    assert "50% of the 100,000-token window" in context(run_hook(session.call(usage=50_000))[1])
    assert run_hook(session.call(usage=74_000))[1] == ""
    assert "stage 75%" in context(run_hook(session.call(usage=75_000))[1])


def test_a_usage_over_the_window_means_the_1m_window(session, run_hook):
    out = context(run_hook(session.call(usage=700_000))[1])
    assert "700,000 tokens, 70% of the 1,000,000-token window" in out


def test_pressure_can_be_switched_off(session, run_hook, project):
    (project / ".ctxward").mkdir()
    (project / ".ctxward" / "config.yaml").write_text(
        "context:\n  pressure:\n    enabled: false\n", encoding="utf-8"
    )
    assert run_hook(session.call(usage=199_000))[1] == ""


@pytest.mark.parametrize(
    ("section", "problem"),
    [
        ({"pressure": {"stages": [80, 70]}}, "must rise"),
        ({"pressure": {"stages": [0]}}, "whole percentage"),
        ({"pressure": {"window_tokens": 10}}, "outside"),
        ({"large_output": {"bytes": "2k"}}, "whole number"),
        ({"large_output": {"size": 1}}, "unknown key"),
        ({"stages": [70]}, "unknown key 'stages'"),
    ],
)
def test_bad_settings_are_refused_by_name(section, problem):
    with pytest.raises(BadInput, match=problem):
        parse_context(section, "config.yaml: context")


def test_the_transcript_is_read_from_where_the_last_call_stopped(tmp_path):
    from ctxward.transcript import tail as transcripttail

    path = tmp_path / "t.jsonl"
    big = json.dumps({"type": "user", "message": {"content": "x" * 1_000_000}})
    line = json.dumps(
        {"type": "assistant", "message": {"content": [{"type": "text", "text": "hi"}]}}
    )
    path.write_text(big + "\n" + line + "\n" + '{"type":"assist', encoding="utf-8")

    first = transcripttail.scan(str(path), 0, 0)
    assert first is not None and first.text and first.seen
    assert first.offset == len(big) + len(line) + 2  # the partial last line waits
    again = transcripttail.scan(str(path), first.offset, first.inode)
    assert again is not None and not again.text and again.offset == first.offset


def test_a_critically_full_context_writes_the_session_summary(session, run_hook, project):
    """Seed 001: "Compress at session end or when budget is critically low" (stage 90%)."""
    session.text("We decided to use SQLite because it needs no server.")
    session.text("TODO: add a smoke test for the importer.")
    summary = project / ".ctxward" / "sessions" / f"{session.session_id}.yaml"
    assert "stage 85%" in context(run_hook(session.call(usage=171_000))[1])
    assert not summary.exists()  # 85%: not yet

    assert "stage 90%" in context(run_hook(session.call(usage=181_000))[1])

    text = summary.read_text(encoding="utf-8")
    assert "SQLite because it needs no server" in text
    assert "Add a smoke test for the importer" in text


def test_a_damaged_context_state_is_cleaned_not_trusted(session, run_hook, project):
    run_hook(session.call(usage=1_000))
    (state,) = (project / ".ctxward" / "sessions").glob("*.drift.json")
    data = json.loads(state.read_text(encoding="utf-8"))
    data["context"] = {"tail": ["x", -1], "told": "Bash", "stages": {"70": 1}, "tokens": True}
    state.write_text(json.dumps(data), encoding="utf-8")

    code, out, err = run_hook(session.call(usage=141_000))

    assert (code, err) == (0, "")
    assert "stage 70%" in context(out)
