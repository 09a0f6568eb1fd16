"""The streaming transcript reader and the context audit (lib/ctxward/transcript/)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from ctxward.core.render import render
from ctxward.transcript import audit as transcript_audit
from ctxward.transcript import measure
from ctxward.transcript import reader as t
from ctxward.transcript import report as transcript_report

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "claude_code" / "transcripts"
DENY_COMPACT = FIXTURES / "7de73c29-a9cd-4608-aa26-55358a7f7df9.jsonl"
ALLOW = FIXTURES / "876f70ae-3637-4f57-b055-c61867a928f5.jsonl"
ALLOW_AGENT = (
    FIXTURES / "876f70ae-3637-4f57-b055-c61867a928f5_subagents_agent-a85995de1c25d0350.jsonl"
)
CWD = "/home/dev/project"


# --- builders: records in Claude Code 2.1.332's shape (compact JSON, one per line) ------------


def line(record: dict) -> str:
    return json.dumps(record, separators=(",", ":")) + "\n"


def user(content, **extra) -> dict:
    return {
        "type": "user",
        "cwd": CWD,
        "sessionId": "s1",
        "message": {"role": "user", "content": content},
        **extra,
    }


def tool_use(request: str, ident: str, name: str, params: dict, usage: dict | None = None) -> dict:
    message = {
        "id": f"msg_{request}",
        "role": "assistant",
        "model": "claude-opus-5-5",
        "content": [{"type": "tool_use", "id": ident, "name": name, "input": params}],
    }
    if usage is not None:
        message["usage"] = usage
    return {"type": "assistant", "requestId": request, "cwd": CWD, "message": message}


def said(request: str, text: str, usage: dict | None = None, msg_id: str | None = None) -> dict:
    message = {
        "id": msg_id or f"msg_{request}",
        "role": "assistant",
        "content": [{"type": "text", "text": text}],
    }
    if usage is not None:
        message["usage"] = usage
    return {"type": "assistant", "requestId": request, "message": message}


def result(ident: str, content) -> dict:
    return user([{"type": "tool_result", "tool_use_id": ident, "content": content}])


def usage(inp: int, read: int = 0, create: int = 0, out: int = 1) -> dict:
    return {
        "input_tokens": inp,
        "cache_read_input_tokens": read,
        "cache_creation_input_tokens": create,
        "output_tokens": out,
    }


def boundary(trigger: str = "auto", pre: int = 168_597, post: int = 2_522) -> dict:
    return {
        "type": "system",
        "subtype": "compact_boundary",
        "parentUuid": None,
        "content": "Conversation compacted",
        "compactMetadata": {"trigger": trigger, "preTokens": pre, "postTokens": post},
    }


def write(path: Path, *records: dict | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        for record in records:
            handle.write(record if isinstance(record, str) else line(record))
    return path


def jsize(value) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())


# --- the reader -------------------------------------------------------------------------------


def test_iter_records_skips_and_counts_what_it_cannot_read(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_bytes(
        line(user("hello")).encode()
        + b"\n   \n"  # blank lines are not records, and not malformed
        + b'{"type":"assistant","message":{"content":[\n'  # cut in the middle
        + b"[1, 2, 3]\n"  # JSON, but not an object
        + line({"type": "brand-new-record", "x": 1}).encode()  # unknown: passed through
        + b'{"type":"user","message":{"content":"caf\xe9"}}\n'  # not UTF-8
        + line(said("r1", "done", usage(10))).encode()
        + b'{"type":"user","message":{"content":"partial'  # a live session's unfinished tail
    )
    stats = t.ReadStats()

    records = list(t.iter_records(path, stats=stats))

    assert [r.type for r in records] == ["user", "brand-new-record", "assistant"]
    assert [r.line for r in records] == [1, 6, 8]
    assert (stats.malformed, stats.records, stats.lines) == (4, 3, 9)
    assert stats.bytes == path.stat().st_size


def test_types_filter_skips_bookkeeping_without_parsing_it(tmp_path):
    path = write(
        tmp_path / "t.jsonl",
        {"type": "api-request-blob", "message": {"role": "user", "content": "big"}},
        '{"type":"queue-operation" this is not even JSON\n',
        user("hi"),
        said("r1", "ok", usage(5)),
    )
    stats = t.ReadStats()

    records = list(t.iter_records(path, types={"assistant"}, stats=stats))

    assert [r.type for r in records] == ["assistant"]
    assert (stats.skipped, stats.malformed) == (3, 0)


def test_oversized_lines_are_skipped_without_holding_them(tmp_path, monkeypatch):
    monkeypatch.setattr(t, "MAX_LINE_BYTES", 150)
    path = write(tmp_path / "t.jsonl", user("x" * 500), user("short"))
    stats = t.ReadStats()

    records = list(t.iter_records(path, stats=stats))

    assert [r.message.text for r in records if r.message] == ["short"]
    assert (stats.oversized, stats.lines) == (1, 2)


def test_record_accessors_tolerate_odd_shapes():
    odd = t.Record({"type": "user", "message": "not a dict", "isMeta": "yes", "uuid": 7})
    assert (odd.message, odd.is_meta, odd.uuid, odd.attachment, odd.compact_metadata) == (
        None,
        False,
        "",
        None,
        {},
    )
    weird = t.Record({"type": "assistant", "message": {"content": 42, "usage": "lots"}})
    assert weird.message is not None
    assert (weird.message.blocks, weird.message.text, weird.message.usage) == ((), "", None)
    assert t.Record({}).type == ""


def test_message_view():
    record = t.Record(
        user(
            [
                {"type": "tool_result", "tool_use_id": "a", "content": "héllo"},
                {
                    "type": "tool_result",
                    "tool_use_id": "b",
                    "is_error": True,
                    "content": [
                        {"type": "text", "text": "one"},
                        {"type": "image", "source": {"data": "AAAA"}},
                        {"type": "text", "text": "two"},
                    ],
                },
            ]
        )
    )
    first, second = record.message.tool_results
    assert first == t.ToolResult("a", "héllo", 6, 0, False)
    assert second == t.ToolResult("b", "one\ntwo", 7 + t.IMAGE_BYTES, 1, True)

    call = t.Record(tool_use("r1", "toolu_1", "Read", {"file_path": "/x"}, usage(3, 100, 20)))
    assert call.message.tool_uses == (t.ToolUse("toolu_1", "Read", {"file_path": "/x"}),)
    assert call.message.usage.context_tokens == 123
    assert call.usage == call.message.usage
    error = t.Record({**call.raw, "isApiErrorMessage": True})
    assert error.usage is None and t.Record(user("x")).usage is None
    assert call.request_id == "r1"


def test_compaction_records():
    mark = t.Record(boundary("manual", 21_449, 2_719))
    assert mark.is_compact_boundary
    assert mark.compact_metadata["preTokens"] == 21_449
    assert t.Record(user("Summary: ...", isCompactSummary=True)).is_compact_summary


def test_last_assistant_text_joins_the_last_message_and_skips_errors(tmp_path):
    path = write(
        tmp_path / "agent.jsonl",
        said("r1", "first answer", usage(1)),
        said("r2", "part one", usage(1), msg_id="m2"),
        tool_use("r2", "toolu_9", "Read", {"file_path": "/a"}),
        said("r2", "part two", usage(1), msg_id="m2"),
        {**said("r3", "API Error: overloaded"), "isApiErrorMessage": True},
        "garbage line\n",
    )
    assert t.last_assistant_text(path) == "part one\npart two"
    assert t.last_assistant_text(tmp_path / "missing.jsonl") == ""


def test_real_transcripts_read_cleanly():
    for path in FIXTURES.glob("*.jsonl"):
        stats = t.ReadStats()
        records = list(t.iter_records(path, stats=stats))
        assert stats.malformed == 0
        assert records and stats.known == len(records)
    assert t.last_assistant_text(ALLOW_AGENT) == "DONE (mock sub-agent)"


# --- the audit on generated transcripts with known answers ------------------------------------


@pytest.fixture
def session(tmp_path) -> Path:
    read_input = {"file_path": f"{CWD}/src/a.py"}
    bash_input = {"command": "pytest -q", "description": "run the tests"}
    return write(
        tmp_path / "s1.jsonl",
        {"type": "queue-operation", "operation": "enqueue", "content": "go"},
        user("hello"),
        tool_use("r1", "t1", "Read", read_input, usage(100, out=5)),  # streaming placeholder
        tool_use("r1", "t2", "Bash", bash_input, usage(1_000, 500, 200, 50)),  # final usage
        result("t1", "x" * 1_000),
        result("t2", [{"type": "text", "text": "y" * 500}]),
        said("r2", "ok", usage(2_000, 300)),
        {
            **said("r3", "API Error"),
            "isApiErrorMessage": True,
            "message": {"model": "<synthetic>", "usage": usage(0), "content": []},
        },
        boundary("auto", 168_597, 2_522),
        user("the summary", isCompactSummary=True),
        tool_use("r4", "t3", "Read", read_input, usage(50)),
        result("t3", "z" * 300),
    )


def test_audit_groups_segments_and_requests(session):
    audit = transcript_audit.audit(session)
    read = jsize({"file_path": f"{CWD}/src/a.py"})
    bash = jsize({"command": "pytest -q", "description": "run the tests"})

    top = {(g["tool"], g["key"]): (g["bytes"], g["count"]) for g in audit.top}
    assert top == {
        ("Read", "src/a.py"): (1_000 + 300 + 2 * read, 2),
        ("Bash", "pytest -q"): (500 + bash, 1),
        ("user", "prompt"): (5, 1),
        ("assistant", "text"): (2, 1),
        ("compaction", "summary"): (11, 1),
    }
    assert audit.total_bytes == sum(size for size, _ in top.values())
    assert abs(sum(g["pctOfTotal"] for g in audit.top) - 100) < 0.3
    assert audit.top[0]["pctOfTotal"] == round(100 * (1_300 + 2 * read) / audit.total_bytes, 1)

    assert [(r.request_id, r.segment, r.context_tokens) for r in audit.requests] == [
        ("r1", 0, 1_700),  # de-duplicated by requestId: the last record's usage
        ("r2", 0, 2_300),
        ("r4", 1, 50),
    ]
    first, second = audit.segments
    assert (first.requests, first.peak_context_tokens, first.total_bytes) == (
        2,
        2_300,
        1_507 + read + bash,
    )
    assert (second.trigger, second.pre_tokens, second.post_tokens) == ("auto", 168_597, 2_522)
    assert second.top[0] == {
        "tool": "Read",
        "key": "src/a.py",
        "bytes": 300 + read,
        "pctOfTotal": round(100 * (300 + read) / (311 + read), 1),
        "count": 1,
    }
    assert (audit.peak_context_tokens, audit.last_context_tokens) == (2_300, 50)


def test_attachments_count_what_is_rendered_and_the_system_prompt_once_per_segment(tmp_path):
    hook = {
        "type": "attachment",
        "attachment": {
            "type": "hook_additional_context",
            "content": ["ctx"],
            "hookName": "SessionStart",
        },
        "rendered": [{"content": "<system-reminder>\nctx\n</system-reminder>"}],
    }
    silent = {"type": "attachment", "attachment": {"type": "hook_success", "stdout": "x" * 999}}
    old_style = {"type": "attachment", "attachment": {"type": "nested_memory", "content": "m" * 40}}
    snapshot = {
        "type": "attachment",
        "attachment": {"type": "prompt_snapshot", "systemPrompt": ["s" * 700]},
    }
    bigger = {
        "type": "attachment",
        "attachment": {
            "type": "prompt_snapshot",
            "systemPrompt": ["s" * 700],
            "tools": [{"name": "Read"}],
        },
    }
    path = write(
        tmp_path / "a.jsonl", hook, silent, old_style, snapshot, bigger, said("r1", "k", usage(9))
    )

    groups = {(g["tool"], g["key"]): g["bytes"] for g in transcript_audit.audit(path).top}

    assert groups == {
        ("attachment", "hook_additional_context:SessionStart"): len(
            "<system-reminder>\nctx\n</system-reminder>"
        ),
        ("attachment", "nested_memory"): 40,
        ("system", "prompt + tool schemas"): 700 + jsize([{"name": "Read"}]),
        ("assistant", "text"): 1,
    }


def test_subagent_transcripts_are_their_own_groups(tmp_path):
    main = write(
        tmp_path / "s1.jsonl",
        tool_use(
            "r1",
            "t1",
            "Agent",
            {"description": "d", "prompt": "p", "subagent_type": "Explore"},
            usage(10),
        ),
        result("t1", "report"),
    )
    folder = tmp_path / "s1" / "subagents"
    write(
        folder / "agent-abc.jsonl", user("task " * 20, agentId="abc"), said("q1", "done", usage(77))
    )
    (folder / "agent-abc.meta.json").write_text('{"agentType": "Explore"}')
    write(folder / "agent-def.jsonl", "not json\n")  # unreadable: left out, never fatal

    audit = transcript_audit.audit(main)

    assert audit.top[0]["tool"] == "Agent" and audit.top[0]["key"] == "Explore"
    (sub,) = audit.subagents
    assert (sub.agent_id, sub.agent_type, sub.peak_context_tokens) == ("abc", "Explore", 77)
    body = audit.as_dict()["subagents"][0]
    assert (body["tool"], body["key"], body["bytes"], body["pctOfTotal"], body["count"]) == (
        "subagent",
        "Explore",
        104,
        100.0,
        1,
    )
    assert transcript_audit.audit(main, subagents=False).subagents == []


def test_groups_are_bounded_and_lose_no_bytes(tmp_path, monkeypatch):
    monkeypatch.setattr(measure, "MAX_GROUPS", 8)
    records = []
    for n in range(40):
        records += [
            tool_use(f"r{n}", f"t{n}", "Bash", {"command": f"echo {n}"}),
            result(f"t{n}", "o" * (n + 1)),
        ]
    audit = transcript_audit.audit(write(tmp_path / "many.jsonl", *records), top=100)

    assert audit.groups <= 8
    assert audit.folded_groups > 0
    assert audit.total_bytes == sum(n + 1 + jsize({"command": f"echo {n}"}) for n in range(40))
    assert any(g["key"] == "(other)" for g in audit.top)


def test_keys_are_scrubbed(tmp_path):
    secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    path = write(
        tmp_path / "s.jsonl",
        tool_use(
            "r1", "t1", "Bash", {"command": f"curl -H 'Authorization: token {secret}' x"}, usage(1)
        ),
        result("t1", "ok"),
    )
    text = json.dumps(transcript_audit.audit(path).as_dict())
    assert secret not in text
    assert "REDACTED" in text


def test_tool_keys():
    assert measure.tool_key("Read", {"file_path": f"{CWD}/src/x.py"}, CWD) == "src/x.py"
    assert measure.tool_key("Bash", {"command": "git   log\n--oneline"}) == "git log --oneline"
    assert measure.tool_key("Agent", {"prompt": "p"}) == "general-purpose"
    assert measure.tool_key("Task", {"subagent_type": "Plan"}) == "Plan"
    assert measure.tool_key("Grep", {"pattern": "TODO", "path": f"{CWD}/lib"}, CWD) == "TODO in lib"
    assert measure.tool_key("mcp__x__y", {"n": 1}) == ""
    assert len(measure.tool_key("Bash", {"command": "x" * 500})) == t.KEY_CHARS


def test_foreign_and_unreadable_files(tmp_path):
    foreign = tmp_path / "notes.jsonl"
    foreign.write_text('{"name": "a"}\n{"name": "b"}\n')
    binary = tmp_path / "blob.bin"
    binary.write_bytes(bytes(range(256)) * 100)
    for path in (foreign, binary):
        with pytest.raises(transcript_audit.NotATranscript, match="not a Claude Code transcript"):
            transcript_audit.audit(path)
    with pytest.raises(OSError):
        transcript_audit.audit(tmp_path / "missing.jsonl")
    with pytest.raises(OSError):
        transcript_audit.audit(tmp_path)


# --- the audit on the transcripts captured from Claude Code 2.1.332 ---------------------------


def test_real_transcript_with_a_manual_compaction():
    audit = transcript_audit.audit(DENY_COMPACT)

    assert [(r.request_id, r.segment, r.context_tokens) for r in audit.requests] == [
        ("req_mock000003", 0, 12_556),
        ("req_mock000005", 0, 21_376),
        ("req_mock000016", 1, 13_140),
    ]
    first, second = audit.segments
    assert (second.trigger, second.pre_tokens, second.post_tokens) == ("manual", 21_449, 2_719)
    assert {(g["tool"], g["key"]) for g in first.top} >= {
        ("Agent", "general-purpose"),
        ("system", "prompt + tool schemas"),
        ("attachment", "skill_listing"),
    }
    assert ("compaction", "summary") in {(g["tool"], g["key"]) for g in second.top}
    assert audit.session_id == "7de73c29-a9cd-4608-aa26-55358a7f7df9"
    assert audit.stats.malformed == 0


def test_real_transcript_with_its_subagent(tmp_path):
    main = tmp_path / ALLOW.name
    shutil.copy(ALLOW, main)
    folder = main.with_suffix("") / "subagents"
    folder.mkdir(parents=True)
    shutil.copy(ALLOW_AGENT, folder / "agent-a85995de1c25d0350.jsonl")

    audit = transcript_audit.audit(main)

    agent = next(g for g in audit.top if g["tool"] == "Agent")
    assert agent["key"] == "general-purpose" and agent["count"] == 1
    (sub,) = audit.subagents
    assert (sub.agent_id, sub.agent_type) == ("a85995de1c25d0350", "general-purpose")
    assert [r.context_tokens for r in sub.requests] == [17_135]
    assert sub.top[1]["tool"] == "user"  # the 34 kB dispatch prompt is the sub-agent's prompt


# --- summary, finding the transcript, the page ------------------------------------------------


def test_summary_stays_under_2_kb_and_is_additive(tmp_path):
    records = []
    for n in range(300):
        command = f"some-very-long-command --with-flags {n} " + "x" * 150
        records += [
            tool_use(f"r{n}", f"t{n}", "Bash", {"command": command}, usage(n)),
            result(f"t{n}", "o" * n),
        ]
    audit = transcript_audit.audit(write(tmp_path / "big.jsonl", *records), top=50)

    body = transcript_report.summary(audit, names=50)

    assert len(json.dumps(body, ensure_ascii=False, indent=2).encode()) < 2048
    assert 0 < len(body["top"]) < 50
    assert (body["groups"], body["requests"]) == (audit.groups, 300)
    full = audit.as_dict()
    assert len(full["top"]) == 50 and len(full["requests"]) == 300


def test_find_transcript(tmp_path):
    root = tmp_path / "my.repo"
    home = tmp_path / "home"
    folder = home / ".claude" / "projects" / t.project_folder_name(root)
    assert t.project_folder_name(Path("/home/dev/my.repo")) == "-home-dev-my-repo"
    env = {"HOME": str(home)}
    assert t.find_transcript(root, env) is None

    old = write(folder / "old.jsonl", user("a"))
    new = write(folder / "new.jsonl", user("b"))
    import os

    os.utime(old, (1, 1))
    assert t.find_transcript(root, env) == new
    assert t.find_transcript(root, {**env, "CLAUDE_CODE_SESSION_ID": "old"}) == old
    elsewhere = write(home / ".claude" / "projects" / "-other" / "sid9.jsonl", user("c"))
    assert t.find_transcript(root, {**env, "CLAUDE_CODE_SESSION_ID": "sid9"}) == elsewhere
    custom = tmp_path / "cfg"
    assert t.find_transcript(root, {**env, "CLAUDE_CONFIG_DIR": str(custom)}) is None


def test_html_page_is_self_contained_and_escapes(session, tmp_path):
    nasty = write(
        tmp_path / "n.jsonl",
        tool_use("r1", "t1", "Bash", {"command": "echo '<script>alert(1)</script>'"}, usage(10)),
        result("t1", "x"),
        boundary(),
        said("r2", "y", usage(5)),
    )
    for path in (session, nasty, DENY_COMPACT):
        page = render(
            "transcript/audit_report.html.j2",
            page=transcript_report.page_model(transcript_audit.audit(path)),
        )
        assert page.startswith("<!DOCTYPE html>")
        assert "<svg" in page and "<path" in page
        for remote in ("http://", "https://", "<script", "<link", "@import", "src="):
            assert remote not in page.replace("http://www.w3.org", "")
    assert "&lt;script&gt;" in page or "&lt;script&gt;" in render(
        "transcript/audit_report.html.j2",
        page=transcript_report.page_model(transcript_audit.audit(nasty)),
    )


def test_page_model_stacks_sum_to_the_measured_context(session):
    model = transcript_report.page_model(transcript_audit.audit(session))
    assert model["legend"][0]["label"] == "system prompt + tools"
    assert len(model["markers"]) == 1 and model["markers"][0]["label"] == "auto compaction"
    assert model["stats"]["compactions"] == 1
    assert model["bars"][0]["width"] == 100.0


def test_a_transcript_past_its_limit_or_not_a_regular_file_is_refused_unread(tmp_path):
    import errno

    big = tmp_path / "big.jsonl"
    with open(big, "wb") as handle:
        handle.truncate(t.MAX_TRANSCRIPT_BYTES + 1)  # sparse: costs no disk
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    for path, code in ((big, errno.EFBIG), (fifo, errno.EINVAL), ("/dev/zero", errno.EINVAL)):
        with pytest.raises(OSError) as raised:
            list(t.iter_records(path))
        assert raised.value.errno == code
        with pytest.raises(OSError):
            transcript_audit.audit_file(Path(path))
