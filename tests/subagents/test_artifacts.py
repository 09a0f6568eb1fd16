"""G7 ArtifactMeta records and the reducer view; G8 shared channel and heartbeats."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from ctxward.core.project import Project
from ctxward.errors import BadInput, CtxwardError
from ctxward.subagents import artifacts as a
from ctxward.subagents import batch as batches
from ctxward.subagents import channel as chan

T0 = datetime(2026, 6, 6, 10, 0, 0, tzinfo=timezone.utc)
SECRET = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


@pytest.fixture(autouse=True)
def _no_session(monkeypatch):
    monkeypatch.delenv("CLAUDE_CODE_SESSION_ID", raising=False)


@pytest.fixture
def proj(project) -> Project:
    return Project(project)


def put(proj: Project, rid: str, role: str, idx: int, data: bytes, session: str = "s1") -> Path:
    path = a.artifact_path(proj, session, rid, role, idx)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


# --- G7 ---------------------------------------------------------------------------------------


def test_record_writes_the_seed_schema(proj):
    path = put(proj, "003", "rd", 1, b"# tech doc\n" * 100)

    recorded = a.record_artifact(
        proj, "s1", path, rid="003", role="rd", idx=1, summary="wrote the RD tech doc", now=T0
    )

    assert recorded.meta.as_dict() == {
        "path": ".ctxward/sub_agents/s1/artifacts/003-rd-001.md",
        "size": 1100,
        "sha256": a.hashlib.sha256(b"# tech doc\n" * 100).hexdigest(),
        "status": "finalized",
        "contentInlined": False,
        "summary": "wrote the RD tech doc",
        "writtenAt": "2026-06-06T10:00:00.000Z",
        "rid": "003",
        "role": "rd",
        "idx": 1,
    }
    assert recorded.record_path == path.with_name("003-rd-001.meta.json")
    stored = json.loads(recorded.record_path.read_text())
    assert stored == {**recorded.meta.as_dict(), "batch": "003"}
    assert recorded.warnings == ()


def test_record_refuses_bad_input_and_writes_nothing(proj):
    path = put(proj, "003", "rd", 1, b"x")
    folder = path.parent
    cases = [
        ({"summary": "s" * 201}, "at most 200"),
        ({"status": "done"}, "not one of"),
        ({"role": "../etc"}, "role"),
        ({"rid": ""}, "rid"),
        ({"idx": -1}, "idx"),
        ({"batch": "a/b"}, "batch"),
    ]
    for change, message in cases:
        options = {"rid": "003", "role": "rd", "idx": 1, **change}
        with pytest.raises(BadInput, match=message):
            a.record_artifact(proj, "s1", path, **options)
    with pytest.raises(BadInput, match="no such file"):
        a.record_artifact(proj, "s1", folder / "missing.md", rid="003", role="rd", idx=1)
    with pytest.raises(BadInput, match="not a regular file"):
        a.record_artifact(proj, "s1", folder, rid="003", role="rd", idx=1)
    with pytest.raises(BadInput, match="session"):
        a.record_artifact(proj, "..", path, rid="003", role="rd", idx=1)
    assert sorted(p.name for p in folder.iterdir()) == ["003-rd-001.md"]


def test_summary_is_flattened_and_scrubbed(proj):
    path = put(proj, "003", "rd", 1, b"x")
    recorded = a.record_artifact(
        proj, "s1", path, rid="003", role="rd", idx=1, summary=f"token\n  {SECRET}"
    )
    assert recorded.meta.summary is not None
    assert SECRET not in recorded.meta.summary and "\n" not in recorded.meta.summary


def test_an_artifact_elsewhere_is_recorded_with_a_warning(proj):
    elsewhere = proj.root / "out" / "report.md"
    elsewhere.parent.mkdir()
    elsewhere.write_text("r")

    recorded = a.record_artifact(proj, "s1", elsewhere, rid="003", role="qa", idx=2)

    assert recorded.meta.path == "out/report.md"
    (warning,) = recorded.warnings
    assert warning.code == "NOT_AT_CONVENTIONAL_PATH"
    assert ".ctxward/sub_agents/s1/artifacts/003-qa-002.md" in warning.message


def test_peaks_preset_moves_the_sub_agent_state(proj):
    (proj.state_dir).mkdir()
    (proj.state_dir / "config.yaml").write_text("preset: peaks\n")
    path = a.artifact_path(proj, "2026-06-06-session-5b1095", "003", "rd", 1)
    assert (
        path == proj.root / ".peaks/_sub_agents/2026-06-06-session-5b1095/artifacts/003-rd-001.md"
    )


def test_session_resolution():
    assert a.resolve_session(None, {}) == "local"
    assert a.resolve_session(None, {"CLAUDE_CODE_SESSION_ID": "abc-1"}) == "abc-1"
    assert a.resolve_session("mine", {"CLAUDE_CODE_SESSION_ID": "abc-1"}) == "mine"
    with pytest.raises(BadInput):
        a.resolve_session("a/../b", {})
    assert a.safe_name("my-plugin:reviewer") == "my-plugin-reviewer"
    assert a.safe_name("../..") == "unknown"


def test_reducer_view_is_metadata_only(proj):
    session = "2026-06-06-session-5b1095"
    chan.heartbeat(proj, session, "003", "rd", "started", now=T0)
    for n, (role, size, summary) in enumerate(
        [
            ("rd", 12_288, "wrote RD tech-doc with 4 sub-roles"),
            ("qa-business", 8_192, 'wrote 12 API test cases "happy" + 3 error paths'),
            ("qa-perf", 5_120, None),
        ]
    ):
        path = put(proj, "003", role, 1, b"z" * size, session)
        a.record_artifact(
            proj,
            session,
            path,
            rid="003",
            role=role,
            idx=1,
            summary=summary,
            status="partial" if role == "qa-perf" else "finalized",
            now=T0 + timedelta(seconds=[10.0, 30.5, 47.3][n]),
        )

    found = batches.load_batch(proj, session, "003")
    view = batches.reducer_view(proj, found)

    sha = a.hashlib.sha256
    assert view == (
        "[ctxward] batch 2/3 done in 47.3s (003)\n"
        f"- rd → .ctxward/sub_agents/{session}/artifacts/003-rd-001.md "
        f"(12KB, sha256:{sha(b'z' * 12_288).hexdigest()[:8]}) "
        'summary: "wrote RD tech-doc with 4 sub-roles"\n'
        f"- qa-business → .../artifacts/003-qa-business-001.md "
        f"(8KB, sha256:{sha(b'z' * 8_192).hexdigest()[:8]}) "
        'summary: "wrote 12 API test cases \\"happy\\" + 3 error paths"\n'
        f"- qa-perf → .../artifacts/003-qa-perf-001.md "
        f"(5KB, sha256:{sha(b'z' * 5_120).hexdigest()[:8]}) [partial]\n"
    )
    assert "zzz" not in view


def test_reducer_view_lists_roles_without_an_artifact_and_unreadable_records(proj):
    chan.heartbeat(proj, "s1", "b7", "qa", "running", now=T0)
    folder = a.artifacts_dir(proj, "s1")
    folder.mkdir(parents=True)
    (folder / "x-y-001.meta.json").write_text("{not json")

    view = batches.reducer_view(proj, batches.load_batch(proj, "s1", "b7"))

    assert view.splitlines() == [
        "[ctxward] batch 0/1 done in 0.0s (b7)",
        "- qa → no artifact yet (heartbeat: running)",
        "- unreadable record: .ctxward/sub_agents/s1/artifacts/x-y-001.meta.json",
    ]
    assert batches.reducer_view(proj, batches.load_batch(proj, "s1", "empty")).startswith(
        "[ctxward] batch empty: nothing recorded yet"
    )


@pytest.mark.parametrize("agents", [3, 6])
def test_reducer_view_is_thousands_of_times_smaller_than_the_artifacts(proj, agents):
    """Seed 004 G7: ~1 MB per sub-agent inlined vs ~200 characters of metadata: 3000-5000x."""
    session = "2026-06-06-session-5b1095"
    total = 0
    roles = ["rd", "qa-business", "qa-perf", "ui", "docs", "security"][:agents]
    for idx, role in enumerate(roles, 1):
        body = (f"## {role} finding {idx}\n" + "detail line of the artifact\n" * 40_000)[:1_000_000]
        path = put(proj, "003", role, idx, body.encode(), session)
        total += path.stat().st_size
        a.record_artifact(
            proj,
            session,
            path,
            rid="003",
            role=role,
            idx=idx,
            summary=f"{role}: 12 findings, 3 high",
        )

    view = batches.reducer_view(proj, batches.load_batch(proj, session, "003")).encode()

    ratio = total / len(view)
    assert len(view) < 200 * (agents + 1)
    assert ratio >= 3_000, f"view {len(view)} B vs artifacts {total} B: only {ratio:.0f}x"


def test_save_text_artifact_scrubs_numbers_and_is_idempotent(proj):
    text = f"# Report\nthe token is {SECRET}\n" + "line\n" * 50

    first = a.save_text_artifact(proj, "s1", text, rid="agent1", role="Explore", batch="reports")
    again = a.save_text_artifact(proj, "s1", text, rid="agent1", role="Explore", batch="reports")
    other = a.save_text_artifact(proj, "s1", "other", rid="agent1", role="Explore", batch="reports")

    stored = (proj.root / first.meta.path).read_text()
    assert SECRET not in stored and "REDACTED" in stored
    assert first.meta.sha256 == a.hashlib.sha256(stored.encode()).hexdigest()
    assert first.meta.summary == "Report"
    assert again.meta == first.meta
    assert (first.meta.idx, other.meta.idx) == (1, 2)


# --- G8 ---------------------------------------------------------------------------------------


def test_share_last_write_wins_and_read_filters(proj):
    chan.share(proj, "s1", "b1", "rd.found-blocker", '{"reason": "no schema"}', now=T0)
    chan.share(proj, "s1", "b1", "qa.completed", '{"path": "x"}', now=T0 + timedelta(seconds=5))
    again = chan.share(
        proj, "s1", "b1", "rd.found-blocker", '{"reason": "fixed"}', now=T0 + timedelta(seconds=9)
    )

    assert again.replaced
    entries = chan.shared_read(proj, "s1", "b1")
    assert [(e["key"], e["value"]) for e in entries] == [
        ("qa.completed", {"path": "x"}),
        ("rd.found-blocker", {"reason": "fixed"}),
    ]
    assert [e["key"] for e in chan.shared_read(proj, "s1", "b1", key_glob="*.completed")] == [
        "qa.completed"
    ]
    assert [e["key"] for e in chan.shared_read(proj, "s1", "b1", key_glob="rd.*")] == [
        "rd.found-blocker"
    ]
    assert chan.shared_read(proj, "s1", "b1", key_glob="[rd].*") == []  # only * is special
    late = chan.shared_read(proj, "s1", "b1", since="2026-06-06T10:00:06Z")
    assert [e["key"] for e in late] == ["rd.found-blocker"]
    assert len(chan.shared_read(proj, "s1", "b1", since="2026-06-06T10:00:05+00:00")) == 2
    assert chan.shared_read(proj, "s1", "other") == []
    with pytest.raises(BadInput, match="ISO 8601"):
        chan.shared_read(proj, "s1", "b1", since="yesterday")


def value_of(size: int) -> str:
    """A JSON string value whose stored form is exactly `size` bytes."""
    return json.dumps("v" * (size - 2))


def test_share_size_limits(proj):
    path = a.shared_path(proj, "s1", "b1")
    assert chan.share(proj, "s1", "b1", "k", value_of(1023)).warnings == ()
    (warning,) = chan.share(proj, "s1", "b1", "k", value_of(1024)).warnings
    assert warning.code == "VALUE_LARGE"
    assert chan.share(proj, "s1", "b1", "k", value_of(65_535)).bytes == 65_535
    before = path.read_bytes()

    with pytest.raises(chan.ValueTooLarge, match="65536 bytes"):
        chan.share(proj, "s1", "b1", "big", value_of(65_536))

    assert path.read_bytes() == before
    assert chan.ValueTooLarge("x").exit_code == 2


def test_share_refuses_bad_values_and_keys(proj):
    with pytest.raises(BadInput, match="not JSON"):
        chan.share(proj, "s1", "b1", "k", "{oops")
    with pytest.raises(BadInput, match="key"):
        chan.share(proj, "s1", "b1", "bad\nkey", "1")
    with pytest.raises(BadInput, match="batch"):
        chan.share(proj, "s1", "../b", "k", "1")
    assert not a.session_dir(proj, "s1").exists()


def test_shared_values_are_scrubbed(proj):
    shared = chan.share(
        proj, "s1", "b1", "k", json.dumps({"note": f"use {SECRET}", "n": [SECRET, 3]})
    )
    assert [w.code for w in shared.warnings] == ["REDACTED"]
    stored = a.shared_path(proj, "s1", "b1").read_text()
    assert SECRET not in stored
    assert chan.shared_read(proj, "s1", "b1")[0]["value"]["n"][1] == 3


def test_a_corrupt_channel_is_reported_and_left_alone(proj):
    path = a.shared_path(proj, "s1", "b1")
    path.parent.mkdir(parents=True)
    path.write_text("{half")
    with pytest.raises(CtxwardError, match="unreadable"):
        chan.share(proj, "s1", "b1", "k", "1")
    assert path.read_text() == "{half"


def test_heartbeat_warns_when_done_without_sharing(proj):
    (warning,) = chan.heartbeat(proj, "s1", "b1", "rd", "done").warnings
    assert warning.code == "COMPLETED_WITHOUT_SHARE"
    assert "rd.completed" in warning.message

    chan.share(proj, "s1", "b1", "qa.completed", '{"path": "a"}')
    assert chan.heartbeat(proj, "s1", "b1", "qa", "done").warnings == ()
    assert chan.heartbeat(proj, "s1", "b1", "ui", "running").warnings == ()
    with pytest.raises(BadInput):
        chan.heartbeat(proj, "s1", "b1", "ui", "sleeping")
    beats = json.loads(a.shared_path(proj, "s1", "b1").read_text())["heartbeats"]
    assert set(beats) == {"rd", "qa", "ui"}


def test_human_size():
    from ctxward.core.text import size_text_compact

    assert [size_text_compact(n) for n in (0, 1023, 1024, 12_288, 1_048_576 * 3 // 2)] == [
        "0B",
        "1023B",
        "1KB",
        "12KB",
        "1.5MB",
    ]
