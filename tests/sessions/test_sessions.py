"""Seed 001 session compression: extraction, the 200-token budget, the YAML, and recovery."""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
import yaml

from ctxward.core.project import Project
from ctxward.core.text import estimate_tokens
from ctxward.errors import BadInput
from ctxward.sessions import budget as sessions_budget
from ctxward.sessions import extract as sessions_extract
from ctxward.sessions import patterns as sessions_patterns
from ctxward.sessions import recovery as sessions_recovery
from ctxward.sessions import store as sessions_store
from ctxward.sessions.budget import compress
from ctxward.sessions.extract import Extraction

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "claude_code"
SESSION = "5b1095aa-0c8e-4d0f-9a51-3f7e2b6c1d40"
HEADER = "⚠️ COMPACTION RESILIENCE: The following invariants are ACTIVE and NON-NEGOTIABLE.\n"


class Transcript:
    """A Claude Code 2.1.332-shaped transcript, built record by record."""

    def __init__(self, session_id: str = SESSION) -> None:
        self.session_id = session_id
        self.records: list[dict] = []
        self.clock = datetime(2026, 3, 4, 9, 0, tzinfo=timezone.utc)
        self.ids = 0

    def _base(self, kind: str, **extra: object) -> dict:
        self.clock += timedelta(seconds=45)
        self.ids += 1
        return {
            "parentUuid": None,
            "isSidechain": False,
            "type": kind,
            "uuid": f"uuid-{self.ids:05d}",
            "timestamp": self.clock.strftime("%Y-%m-%dT%H:%M:%S.000Z"),
            "sessionId": self.session_id,
            "cwd": "/home/dev/project",
            "version": "2.1.332",
            **extra,
        }

    def user(self, text: str, **extra: object) -> Transcript:
        self.records.append(self._base("user", message={"role": "user", "content": text}, **extra))
        return self

    def assistant(self, *texts: str) -> Transcript:
        """One API response: each text block on its own line, sharing message.id (as 2.1.x)."""
        ident = f"msg_{self.ids:05d}"
        for text in texts:
            content = [{"type": "text", "text": text}]
            message = {"id": ident, "role": "assistant", "model": "claude-opus-5-5"}
            self.records.append(self._base("assistant", message={**message, "content": content}))
        return self

    def tool(self, name: str, params: dict, output: str) -> Transcript:
        use_id = f"toolu_{self.ids:05d}"
        use = {"type": "tool_use", "id": use_id, "name": name, "input": params}
        message = {"id": f"msg_{self.ids:05d}", "role": "assistant", "content": [use]}
        self.records.append(self._base("assistant", message=message))
        result = {"type": "tool_result", "tool_use_id": use_id, "content": output}
        self.records.append(
            self._base("user", message={"role": "user", "content": [result]}, toolUseResult={})
        )
        return self

    def bookkeeping(self, text: str) -> Transcript:
        """Lines that are not the conversation: they must never be extracted."""
        self.records.append({"type": "queue-operation", "operation": "enqueue", "content": text})
        attachment = {"type": "hook_additional_context", "content": [text]}
        self.records.append(self._base("attachment", attachment=attachment))
        self.user(f"<system-reminder>\n{text}\n</system-reminder>")
        self.user(f"Caveat: {text}", isMeta=True)
        self.user(f"<local-command-stdout>{text}</local-command-stdout>")
        return self

    def compaction(self, summary: str) -> Transcript:
        self.records.append(self._base("system", subtype="compact_boundary", content="compacted"))
        return self.user(summary, isCompactSummary=True)

    def write(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(r) + "\n" for r in self.records), encoding="utf-8")
        return path


# What is planted, and the words each must keep in the summary.
DECISIONS = {
    "Let's go with PostgreSQL over MySQL because we need JSONB support.": (
        "PostgreSQL over MySQL because we need JSONB support"
    ),
    "We decided to store the JWT in httpOnly cookies to block XSS.": (
        "Store the JWT in httpOnly cookies to block XSS"
    ),
    "Instead of Celery we'll use a plain cron job for the nightly export.": (
        "plain cron job for the nightly export"
    ),
}
ERRORS = {
    "TypeError": "null check in PostPresenter",
    "N+1 query on authors": "eager loading the author relation",
}
ACTIONS = {
    "TODO: add rate limiting to the auth endpoints.": "Add rate limiting to the auth endpoints",
    "Next step: write integration tests for the payment flow.": (
        "Write integration tests for the payment flow"
    ),
    "We still need to rotate the staging database credentials.": (
        "Rotate the staging database credentials"
    ),
}
FILLER_USER = ["Hello there!", "Thanks, great!", "Sounds good.", "Can you look at the posts page?"]
FILLER_ASSISTANT = [
    "Sure, I can help with that.",
    "Let me look at the code first.",
    "I read the module and checked how the views call the service.",
    "The helper returns the list of posts sorted by date.",
]
CODE = (
    "Here is the updated function:\n\n```php\n// decided = true; TODO: error handling\n"
    "function title($post) { return $post->title ?? ''; }\n```\n"
)
NOISE = "We decided to use MongoDB; TODO: drop the users table; the error is fixed by magic"


def planted_session(filler_rounds: int = 1) -> Transcript:
    t = Transcript()
    t.user("Hi! I'm new to Laravel, so please keep answers concise.")
    t.assistant("Hello! Happy to help.", DECISIONS_LIST[0])
    t.bookkeeping(NOISE)
    t.user("We'll use PostgreSQL instead of MySQL.")  # the same decision, said again
    t.assistant("Decision: PostgreSQL, not MySQL, for the JSONB columns.", DECISIONS_LIST[1])
    for _ in range(filler_rounds):
        t.user(FILLER_USER[0])
        t.assistant(*FILLER_ASSISTANT, CODE)
        t.tool("Read", {"file_path": "/home/dev/project/app/Post.php"}, "<?php\n" + "x;\n" * 1200)
        t.tool("Bash", {"command": "php artisan test"}, f"ERROR: connection refused. {NOISE}")
        t.user(FILLER_USER[1])
    t.tool("Bash", {"command": "php artisan test"}, "FAILED Tests\\PostTest")
    t.assistant(
        "The posts index fails with TypeError: Str::contains(): Argument #1 must be of type "
        "string, null given."
    )
    t.assistant("Fixed by adding a null check in PostPresenter.")
    t.user("Bug: the comments page runs an N+1 query on authors.")
    t.assistant("I fixed it by eager loading the author relation.")
    t.assistant(DECISIONS_LIST[2], *ACTIONS)
    t.user(FILLER_USER[2])
    return t


DECISIONS_LIST = list(DECISIONS)


def summary_of(tmp_path: Path, t: Transcript) -> tuple[Extraction, sessions_budget.Summary]:
    return sessions_store.summarize(t.write(tmp_path / f"{t.session_id}.jsonl"))


def everything(summary: sessions_budget.Summary) -> str:
    return "\n".join(
        [*summary.decisions, *summary.errors_and_fixes, *summary.action_items, summary.pattern]
    )


# --- extraction -------------------------------------------------------------------------------


def test_every_planted_decision_error_and_action_is_kept(tmp_path):
    extraction, summary = summary_of(tmp_path, planted_session())

    decisions = "\n".join(summary.everything("decisions"))  # in the block or the file's overflow
    for fragment in DECISIONS.values():
        assert fragment in decisions
    errors = summary.everything("errors_and_fixes")
    assert len(errors) == 2
    for error, fix in ERRORS.items():
        (item,) = [e for e in errors if error in e]
        assert item.index(error) < item.index(" → ") < item.index(fix)  # error, then its fix
    actions = "\n".join(summary.everything("action_items"))
    for fragment in ACTIONS.values():
        assert fragment in actions
    assert len(summary.everything("action_items")) == 3
    assert extraction.level == "beginner"
    assert extraction.preferences == ("Please keep answers concise",)
    # Three of each critical category leave no room for the user: it is in the file.
    assert summary.dropped["preferences"] == ("Please keep answers concise",)
    assert summary.compressed_tokens <= summary.budget
    assert extraction.user_messages == 6 and extraction.assistant_messages == 7


def test_one_decision_said_three_ways_is_kept_once(tmp_path):
    _, summary = summary_of(tmp_path, planted_session())

    postgres = [d for d in summary.everything("decisions") if "PostgreSQL" in d]
    assert postgres == ["PostgreSQL over MySQL because we need JSONB support"]
    assert len(summary.everything("decisions")) == 3


def test_filler_greetings_code_tool_output_and_injected_text_are_not_content(tmp_path):
    _, summary = summary_of(tmp_path, planted_session())

    text = sessions_store.render_file(summary)
    for absent in ("Hello", "Thanks", "Sure", "Let me", "helper returns", "function title"):
        assert absent not in text
    for noise in ("MongoDB", "users table", "magic", "connection refused", "decided = true"):
        assert noise not in text


def test_a_session_of_10000_tokens_compresses_20_to_1_and_keeps_everything(tmp_path):
    extraction, summary = summary_of(tmp_path, planted_session(filler_rounds=9))

    assert 9_000 <= summary.token_count <= 14_000
    assert summary.compressed_tokens <= sessions_patterns.TOKEN_BUDGET
    assert summary.token_count / summary.compressed_tokens >= 20
    assert summary.ratio >= 20
    assert summary.tokens_saved == summary.token_count - summary.compressed_tokens
    kept = everything(summary)
    planted = [*DECISIONS.values(), *ERRORS, *ERRORS.values(), *ACTIONS.values()]
    assert [fragment for fragment in planted if fragment not in kept] == []
    stats = sessions_recovery.stats(extraction, summary)
    assert stats["found"]["decisions"] == stats["kept"]["decisions"] == 3
    assert stats["within_budget"] is True


def test_the_summary_block_is_what_compressed_tokens_counts(tmp_path):
    _, summary = summary_of(tmp_path, planted_session())

    block = sessions_budget.render_block(summary)
    assert summary.compressed_tokens == math.ceil(len(block.encode("utf-8")) / 4)
    assert f"compressed_tokens: {summary.compressed_tokens}\n" in block


def test_an_action_said_done_later_is_marked_done(tmp_path):
    t = Transcript()
    t.user("TODO: add rate limiting to the auth endpoints.")
    t.user("Next step: write integration tests for the payment flow.")
    t.assistant("I added rate limiting to the auth endpoints with a 60 per minute cap.")

    _, summary = summary_of(tmp_path, t)

    assert summary.action_items == (
        "Add rate limiting to the auth endpoints (done)",
        "Write integration tests for the payment flow",
    )
    recovery = sessions_recovery.recovery_text(summary, "x.yaml", "compact", 9_000)
    assert "- Completed: Add rate limiting to the auth endpoints\n" in recovery
    # Seed 001's recovery form: the open action items are the "Open items".
    assert "- Open items: Write integration tests for the payment flow\n" in recovery


def test_an_error_without_a_fix_is_an_open_item(tmp_path):
    t = Transcript().assistant("The nightly export crashes with MemoryError on large accounts.")

    _, summary = summary_of(tmp_path, t)

    assert summary.errors_and_fixes == (
        "The nightly export crashes with MemoryError on large accounts",
    )
    recovery = sessions_recovery.recovery_text(summary, "x.yaml", "compact", 9_000)
    assert "- Pending (unresolved errors): The nightly export crashes with MemoryError" in recovery


def test_questions_and_investigation_are_not_actions_or_decisions(tmp_path):
    t = Transcript()
    t.user("Should we use Redis instead of Memcached?")
    t.assistant("I need to read the cache module first.", "Let me check the config.")

    _, summary = summary_of(tmp_path, t)

    assert summary.is_empty()


def test_the_architecture_and_stack_come_from_the_text(tmp_path):
    t = Transcript()
    t.assistant(
        "The app is layered (Controller → Service → Repository) on Laravel 11 and PostgreSQL 16.",
        "PostgreSQL holds the posts; React renders them.",
    )

    _, summary = summary_of(tmp_path, t)

    assert summary.pattern == "Layered (Controller → Service → Repository)"
    assert summary.stack[0] == "PostgreSQL 16"
    assert "Laravel 11" in summary.stack


def test_skill_uses_and_patterns(tmp_path):
    t = Transcript()
    t.tool("Skill", {"skill": "deep-review"}, "Launching skill: deep-review")
    t.tool("Skill", {"skill": "deep-review"}, "Launching skill: deep-review")
    t.assistant("The flaky test keeps failing on CI.")

    extraction, _ = summary_of(tmp_path, t)

    assert extraction.skill_updates == ("deep-review: used ×2",)
    assert extraction.errors_and_fixes == ("The flaky test keeps failing on CI",)


def test_secrets_are_scrubbed_before_anything_is_kept(tmp_path, project):
    token = "ghp_" + "aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5"
    t = Transcript()
    t.user(f"We decided to deploy with the token {token} for the release bot.")
    t.assistant(f"TODO: move {token} into the vault.")

    extraction, summary = summary_of(tmp_path, t)
    written = sessions_store.write(Project(project), summary, tmp_path / "t.jsonl")

    text = written.path.read_text(encoding="utf-8")
    assert token not in text and token[4:20] not in text
    assert text.count("[REDACTED:github_token]") == 2
    assert extraction.redactions == 2
    assert token not in sessions_recovery.recovery_text(summary, "x", "compact", 9_000)


def test_the_real_2_1_332_transcript(tmp_path):
    path = FIXTURES / "transcripts" / "7de73c29-a9cd-4608-aa26-55358a7f7df9.jsonl"

    extraction, summary = sessions_store.summarize(path)

    assert summary.session_id == "7de73c29-a9cd-4608-aa26-55358a7f7df9"
    assert extraction.user_messages == 2  # the two prompts; commands and the summary are not
    text = sessions_store.render_file(summary)
    for absent in ("local-command", "Caveat", "continued from a previous", "MOCK_SUMMARY"):
        assert absent not in text
    assert summary.duration != "unknown"
    assert summary.token_count > 1_000


def test_a_file_that_is_not_a_transcript_is_bad_input(tmp_path):
    path = tmp_path / "notes.jsonl"
    path.write_text('{"a": 1}\nnot json\n', encoding="utf-8")

    with pytest.raises(BadInput, match="not a Claude Code transcript"):
        sessions_extract.extract(path)


def test_an_empty_transcript_gives_an_empty_summary(tmp_path):
    path = tmp_path / "empty.jsonl"
    path.write_text("", encoding="utf-8")

    extraction, summary = sessions_store.summarize(path)

    assert summary.is_empty() and summary.session_id == "empty" and summary.duration == "unknown"
    assert extraction.token_count == 0


def test_sentences_drop_fences_tables_quotes_and_code_lines():
    text = (
        "First sentence. Second one!\n```\ncode decided\n```\n| a | b |\n> quoted decided\n"
        "    indented_code = 1\n- a bullet item\n~~~\nunclosed decided"
    )
    assert list(sessions_patterns.sentences(text)) == [
        "First sentence.",
        "Second one!",
        "a bullet item",
    ]


# --- the budget -------------------------------------------------------------------------------


def extraction(**fields: object) -> Extraction:
    base = Extraction(
        session_id=SESSION,
        started="2026-03-04T09:00:00.000Z",
        ended="2026-03-04T09:45:00.000Z",
        token_count=10_000,
        user_messages=10,
        assistant_messages=10,
        decisions=(),
        errors_and_fixes=(),
        action_items=(),
        level="",
        preferences=(),
        pattern="",
        stack=(),
        skill_updates=(),
        patterns=(),
        redactions=0,
    )
    return base.replace(**fields)


LOWER = {
    "level": "beginner → intermediate",
    "preferences": ("Examples first", "Keep answers short"),
    "pattern": "Layered (Controller → Service → Repository)",
    "stack": ("PostgreSQL 16", "Laravel 11"),
    "skill_updates": ("deep-review: used",),
    "patterns": ("Tests before code",),
}


def remaining(summary: sessions_budget.Summary) -> dict[str, int]:
    return {
        "patterns": len(summary.patterns),
        "architecture": len(summary.architecture),
        "skill_updates": len(summary.skill_updates),
        "preferences": len(summary.preferences),
        "level": int(bool(summary.level)),
    }


def test_nothing_is_cut_when_it_fits():
    summary = compress(extraction(decisions=("Use PostgreSQL for JSONB",), **LOWER))

    assert summary.dropped == {}
    assert summary.compressed_tokens <= 200
    assert summary.duration == "45 min"


def test_the_truncation_order_under_growing_pressure():
    """More and more decisions: the lower categories go in the seed's order, never a decision."""
    seen = []
    for count in range(0, 12):
        decisions = tuple(
            f"Decision {i:02d}: keep module {i} behind its own interface" for i in range(count)
        )
        summary = compress(extraction(decisions=decisions, **LOWER))
        assert summary.everything("decisions") == decisions  # never cut
        assert summary.compressed_tokens <= summary.budget == 200
        if summary.overflow:  # only the critical categories and the user's level are left
            assert not any(n for name, n in remaining(summary).items() if name != "level")
        seen.append(remaining(summary))
    for before, after in itertools.pairwise(seen):  # each step only removes
        assert all(after[name] <= before[name] for name in before)
    first_cut = {
        name: next((i for i, r in enumerate(seen) if r[name] < seen[0][name]), len(seen))
        for name in seen[0]
    }
    assert first_cut["patterns"] <= first_cut["architecture"] <= first_cut["preferences"]
    assert first_cut["patterns"] <= first_cut["skill_updates"] <= first_cut["preferences"]
    for row in seen:  # the user is cut only once architecture and skill updates are empty
        if row["preferences"] < 2 or not row["level"]:
            assert row["architecture"] == row["skill_updates"] == row["patterns"] == 0
    # The user's level (High, ≤ 10 tokens) outlasts every decision in the block: seed 001
    # preserves it, and critical items move to the file's overflow before it would go.
    assert seen[-1] == {**dict.fromkeys(seen[0], 0), "level": 1}


def test_the_seed_loop_drops_patterns_whole_then_truncates_architecture_and_skills_by_turns():
    pressure = tuple(
        f"Decision {i:02d}: keep module {i} behind its own interface" for i in range(6)
    )
    lower = {**LOWER, "patterns": ("Tests first", "Small PRs")}
    summary = compress(extraction(decisions=pressure, **lower))

    assert summary.patterns == ()
    assert summary.dropped["patterns"] == ("Tests first", "Small PRs")
    assert next(iter(summary.dropped)) == "patterns"


def test_each_lower_category_is_held_to_its_own_maximum():
    long_patterns = tuple(f"Pattern {i} repeats in every module of the app" for i in range(4))
    summary = compress(extraction(patterns=long_patterns, preferences=("x " * 60,)))

    assert estimate_tokens("".join(summary.patterns)) <= 10
    assert estimate_tokens("".join(summary.preferences)) <= 20
    assert summary.dropped["patterns"]  # kept in the file, under dropped:


def test_critical_items_over_the_budget_stay_in_the_file_and_the_view_says_how_many_more(
    project,
):
    decisions = tuple(
        f"Decision {i:02d}: keep module {i} behind its own interface" for i in range(25)
    )
    actions = ("Write the migration guide", "Tag the release")
    summary = compress(extraction(decisions=decisions, action_items=actions, **LOWER))
    written = sessions_store.write(Project(project), summary)

    assert summary.compressed_tokens <= 200
    data = yaml.safe_load(written.path.read_text(encoding="utf-8"))
    loaded, overflow = data["session_summary"], data["overflow"]
    assert loaded["overflow"] == sum(len(items) for items in overflow.values()) > 0
    assert tuple(loaded["decisions"] + overflow.get("decisions", [])) == decisions
    assert tuple(loaded["action_items"] + overflow.get("action_items", [])) == actions
    assert loaded["action_items"]  # each critical category keeps its first items in the block
    where = project.relative_to(project) / ".ctxward/sessions/x.yaml"
    view = sessions_recovery.recovery_text(summary, str(where), "compact", 9_000)
    shown = re.findall(r"Decision \d\d", view)
    more = re.search(r"^- (\d+) more \(.*\) in \.ctxward/sessions/x\.yaml$", view, re.MULTILINE)
    assert "- Open items: Write the migration guide; Tag the release\n" in view  # first
    assert more, view
    assert len(shown) + int(more.group(1)) == len(decisions)
    assert shown == [f"Decision {i:02d}" for i in range(len(shown))]  # by priority, in order
    assert estimate_tokens(view.split("\n", 1)[1]) <= 200


# --- the YAML file ----------------------------------------------------------------------------


def test_the_yaml_has_the_seed_shape(tmp_path, project):
    _, summary = summary_of(tmp_path, planted_session())
    written = sessions_store.write(Project(project), summary, tmp_path / f"{SESSION}.jsonl")

    assert written.path == project / ".ctxward" / "sessions" / f"{SESSION}.yaml"
    data = yaml.safe_load(written.path.read_text(encoding="utf-8"))
    block = data["session_summary"]
    assert list(block) == [
        "session_id",
        "duration",
        "token_count",
        "compressed_tokens",
        "tokens_saved",
        *(["overflow"] if summary.overflow else []),
        "decisions",
        "errors_and_fixes",
        "action_items",
        "user",
    ]
    assert block["session_id"] == SESSION
    assert re.fullmatch(r"\d+ min", block["duration"])
    assert all(isinstance(block[k], int) for k in ("token_count", "compressed_tokens"))
    assert block["user"] == {"level": "beginner"}
    assert data["source"] == {"transcript": str(tmp_path / f"{SESSION}.jsonl")}
    assert sessions_recovery.as_dict(summary) == block
    assert sessions_store.read(Project(project), SESSION) == summary.replace(dropped={})


def test_writing_is_idempotent(tmp_path, project):
    _, summary = summary_of(tmp_path, planted_session())

    first = sessions_store.write(Project(project), summary)
    stat = first.path.stat()
    second = sessions_store.write(Project(project), summary)

    assert (first.changed, second.changed) == (True, False)
    assert (first.path.stat().st_ino, first.path.stat().st_mtime_ns) == (
        stat.st_ino,
        stat.st_mtime_ns,
    )


@pytest.mark.parametrize(
    "text",
    [
        'He said "use: this" # not a comment',
        "Backslash \\ and tab\tand bell \x07",
        "Line\u2028separator and next\x85line and \ufeffBOM",
        "émoji 🚀 and 中文 and → arrows",
        "- looks like a list: [1, 2] {a: b} & *anchor !tag %directive @at `tick`",
        "null",
        "yes",
    ],
)
def test_any_text_round_trips_through_the_yaml(project, text):
    summary = compress(extraction(decisions=(text,), patterns=("ok",)))

    written = sessions_store.write(Project(project), summary)

    assert sessions_store.read(Project(project), SESSION).decisions == (text,)
    assert written.path.read_bytes().decode("utf-8")


@pytest.mark.parametrize("session_id", ["../../x", "a/b", "", ".hidden", "x" * 300, "ok\x00"])
def test_unsafe_session_ids_stay_inside_the_sessions_folder(project, session_id):
    summary = compress(extraction(session_id=session_id, decisions=("Use PostgreSQL for it",)))

    written = sessions_store.write(Project(project), summary)

    assert written.path.parent == project / ".ctxward" / "sessions"
    assert re.fullmatch(r"id-[0-9a-f]{16}\.yaml", written.path.name)
    assert sessions_store.read(Project(project), session_id).session_id == session_id


def test_a_damaged_file_is_no_summary(project):
    folder = project / ".ctxward" / "sessions"
    folder.mkdir(parents=True)
    for content in (b"session_summary: [unclosed", b"\xff\xfe", b"- a list\n", b"a: 1\n"):
        (folder / f"{SESSION}.yaml").write_bytes(content)
        assert sessions_store.read(Project(project), SESSION) is None


# --- the hooks: PreCompact writes it, SessionStart recovers from it ---------------------------


@pytest.fixture
def transcript_file(tmp_path):
    return planted_session().write(tmp_path / "claude" / f"{SESSION}.jsonl")


def test_pre_compact_writes_the_summary_and_keeps_its_stdout(
    project, make_skill, activate_skill, load_payload, run_hook, transcript_file
):
    make_skill("alpha", ["alpha: never push to main"])
    activate_skill("alpha", "one")
    bare = run_hook(load_payload("PreCompact.json", session_id=SESSION))
    assert not (project / ".ctxward" / "sessions").exists()  # no transcript, no summary

    payload = load_payload(
        "PreCompact.json", session_id=SESSION, transcript_path=str(transcript_file)
    )
    first = run_hook(payload)
    path = project / ".ctxward" / "sessions" / f"{SESSION}.yaml"
    written = path.read_bytes()
    second = run_hook({**payload, "prompt_id": "the-next-compaction"})  # identical, not rewritten

    assert first == second == bare
    assert path.read_bytes() == written
    assert "PostgreSQL over MySQL" in written.decode("utf-8")


def test_pre_compact_survives_a_transcript_it_cannot_read(
    project, make_skill, activate_skill, load_payload, run_hook, tmp_path
):
    make_skill("alpha", ["alpha: never push to main"])
    activate_skill("alpha", "one")
    foreign = tmp_path / "foreign.jsonl"
    foreign.write_text('{"not": "a transcript"}\n', encoding="utf-8")

    code, out, err = run_hook(load_payload("PreCompact.json", transcript_path=str(foreign)))

    assert (code, err) == (0, "")
    assert out.startswith("COMPACTION RESILIENCE:")
    (log,) = (project / ".ctxward" / "log").iterdir()
    assert "not a Claude Code transcript" in log.read_text(encoding="utf-8")


def test_session_end_writes_the_summary(project, load_payload, run_hook, transcript_file):
    payload = load_payload("SessionEnd.json", session_id=SESSION)
    payload["transcript_path"] = str(transcript_file)

    assert run_hook(payload) == (0, "", "")
    assert (project / ".ctxward" / "sessions" / f"{SESSION}.yaml").is_file()


def context_of(out: str) -> str:
    specific = json.loads(out)["hookSpecificOutput"]
    assert specific["hookEventName"] == "SessionStart"
    return specific["additionalContext"]


@pytest.mark.parametrize("fixture", ["SessionStart.compact.json", "SessionStart.resume.json"])
def test_session_start_adds_the_recovery_after_the_invariants(
    project, make_skill, activate_skill, load_payload, run_hook, transcript_file, fixture
):
    make_skill("alpha", ["alpha: never push to main", "alpha: cite file:line"])
    activate_skill("alpha", "one")
    payload = load_payload(fixture, session_id=SESSION)
    # The baseline in another session: this one's ledger (invariants.ledger) would hold its rules.
    without = context_of(run_hook(load_payload(fixture, session_id="baseline"))[1])
    run_hook(
        load_payload(
            "PreCompact.json",
            session_id=SESSION,
            transcript_path=str(transcript_file),
            trigger="auto",  # a manual /compact shows the model PreCompact's text itself
        )
    )

    code, out, err = run_hook(payload)

    assert (code, err) == (0, "")
    context = context_of(out)
    assert context.startswith(without + "\n") and context.startswith(HEADER)
    recovery = context[len(without) + 1 :]
    assert recovery.startswith(
        f"Session recovery (ctxward), from .ctxward/sessions/{SESSION}.yaml. Where we left off "
    )
    for fragment in [*DECISIONS.values(), *ACTIONS.values(), *ERRORS.values()]:
        assert fragment in recovery
    assert "- Your level: beginner\n" in recovery
    for command_word in ("MUST", "Would you like", "You should"):  # facts, not commands
        assert command_word not in recovery
    assert len(context) <= 9_000


def test_session_start_recovers_without_any_plan(project, load_payload, run_hook, transcript_file):
    run_hook(
        load_payload("PreCompact.json", session_id=SESSION, transcript_path=str(transcript_file))
    )

    context = context_of(run_hook(load_payload("SessionStart.resume.json", session_id=SESSION))[1])

    assert context.startswith("Session recovery (ctxward), from ")
    assert "Where we left off when this session last stopped:\n" in context
    assert "Store the JWT in httpOnly cookies" in context


def test_a_summary_for_no_session_is_never_recovered(
    project, load_payload, run_hook, transcript_file
):
    """Without a session id the summary's file name is predictable: a cloned repository could
    commit one (`.ctxward/sessions/id-e3b0….yaml`). It is never injected."""
    from ctxward.core.project import Project
    from ctxward.core.sessionfiles import summary_path

    run_hook(
        load_payload("PreCompact.json", session_id=SESSION, transcript_path=str(transcript_file))
    )
    real = summary_path(Project(project), SESSION)
    planted = summary_path(Project(project), "")
    planted.write_bytes(real.read_bytes())  # what a clone would commit under the empty id

    assert (
        "Session recovery"
        in run_hook(load_payload("SessionStart.resume.json", session_id=SESSION))[1]
    )
    assert run_hook(load_payload("SessionStart.resume.json", session_id=""))[:2] == (0, "")


def test_session_start_without_a_summary_for_this_session_is_unchanged(
    project, load_payload, run_hook, transcript_file
):
    run_hook(
        load_payload("PreCompact.json", session_id=SESSION, transcript_path=str(transcript_file))
    )

    assert run_hook(load_payload("SessionStart.compact.json")) == (0, "", "")  # another session


@pytest.mark.parametrize("count, length", [(300, 60), (2_000, 20), (40, 200)])
def test_many_invariants_keep_their_room_and_the_recovery_shrinks_or_points(
    project, make_skill, activate_skill, load_payload, run_hook, transcript_file, count, length
):
    make_skill("big", [f"rule {i:04d} " + "x" * length for i in range(count)])
    activate_skill("big", "big")
    payload = load_payload("SessionStart.compact.json", session_id=SESSION)
    baseline = load_payload("SessionStart.compact.json", session_id="baseline")
    without = context_of(run_hook(baseline)[1])  # another session: see above
    run_hook(
        load_payload(
            "PreCompact.json",
            session_id=SESSION,
            transcript_path=str(transcript_file),
            trigger="auto",
        )
    )

    context = context_of(run_hook(payload)[1])

    assert context.startswith(without)  # not one rule less for the recovery text
    assert len(context) <= 9_000
    tail = context[len(without) :]
    if tail:
        pointer = re.search(r"is in (\.ctxward/sessions/\S+\.yaml) \(sha256 ([0-9a-f]{64})\)", tail)
        if pointer:
            data = (project / pointer.group(1)).read_bytes()
            assert hashlib.sha256(data).hexdigest() == pointer.group(2)
        else:
            assert tail.startswith("\nSession recovery (ctxward)")


def test_a_small_room_gives_a_pointer_then_nothing(tmp_path, project):
    _, summary = summary_of(tmp_path, planted_session())
    sessions_store.write(Project(project), summary)
    full = sessions_recovery.with_recovery(Project(project), SESSION, "", 9_000, "compact")
    assert full.startswith("Session recovery")

    shrunk = sessions_recovery.with_recovery(Project(project), SESSION, "", 400, "compact")
    assert len(shrunk) <= 400
    assert shrunk.startswith("Session recovery (ctxward), from ")
    assert "- Open items: Add rate limiting" in shrunk  # what is still to do stays
    assert re.search(
        rf"^- \d+ more \(.*\) in \.ctxward/sessions/{SESSION}\.yaml$", shrunk, re.MULTILINE
    )

    pointer = sessions_recovery.with_recovery(Project(project), SESSION, "", 240, "compact")
    assert pointer.startswith("Session recovery (ctxward): this session's summary (3 decisions")
    assert len(pointer) <= 240

    assert (
        sessions_recovery.with_recovery(Project(project), SESSION, "head\n", 60, "compact")
        == "head\n"
    )


# --- seed 001 "Compression Ratio Targets" and "Preserve 100% of decisions, errors, action items"

# Five errors, each said with its cause and then its fix, in the phrasings sessions use.
CAUSED_ERRORS = [
    (
        [
            "The login endpoint returns a 500 error when the email has a plus sign.",
            "The cause is that the validator rejects the plus sign before encoding.",
            "Fixed by URL-encoding the email before validation.",
        ],
        ("500 error", "validator rejects the plus sign", "URL-encoding the email"),
    ),
    (
        [
            "The nightly export crashes with MemoryError, caused by loading every row at once.",
            "I fixed it by streaming the rows in batches of 500.",
        ],
        ("MemoryError", "loading every row at once", "streaming the rows"),
    ),
    (
        [
            "The CSV importer fails on files with a BOM.",
            "That happens because the reader opens files as plain utf-8.",
            "The fix was to open them with utf-8-sig.",
        ],
        ("CSV importer fails", "reader opens files as plain utf-8", "utf-8-sig"),
    ),
    (
        [
            "The deploy script breaks when the tag has a slash; the root cause is the unquoted "
            "variable.",
            "Quoting the variable fixed it.",
        ],
        ("deploy script breaks", "the unquoted variable", "quoting the variable"),
    ),
    (
        [
            "There is a TimeoutError in the webhook worker because the retry loop has no backoff.",
            "Resolved by adding exponential backoff.",
        ],
        ("TimeoutError", "retry loop has no backoff", "exponential backoff"),
    ),
]


def caused_errors_session(tokens: int, scratch: Path) -> Transcript:
    """Seed 001's categories planted once each, then tool output up to `tokens` (bytes/4)."""
    t = planted_session(filler_rounds=0)
    for said, _ in CAUSED_ERRORS:
        t.assistant(*said)
    base = sessions_extract.extract(t.write(scratch / "base.jsonl")).token_count
    t.tool("Read", {"file_path": "/home/dev/project/big.log"}, "x" * max(0, (tokens - base) * 4))
    return t


def test_five_errors_keep_their_cause_and_fix_and_none_becomes_a_fix_of_another(tmp_path):
    t = Transcript()
    for said, _ in CAUSED_ERRORS:
        t.assistant(*said)

    extraction, _ = summary_of(tmp_path, t)

    assert len(extraction.errors_and_fixes) == 5
    for item, (_, (error, cause, fix)) in zip(
        extraction.errors_and_fixes, CAUSED_ERRORS, strict=True
    ):
        assert item.index(error) < item.index("; cause: ") < item.index(cause)
        assert item.index(cause) < item.index(" → ") < item.lower().index(fix.lower())


@pytest.mark.parametrize(
    ("length", "size", "ratio"), [(2_000, 100, 20), (5_000, 150, 33), (10_000, 200, 50)]
)
def test_the_seed_ratio_table_is_met_and_every_critical_item_is_kept(
    tmp_path, project, length, size, ratio
):
    _, summary = summary_of(tmp_path, caused_errors_session(length, tmp_path))

    assert length <= summary.token_count <= length * 1.02
    assert summary.compressed_tokens == estimate_tokens(sessions_budget.render_block(summary))
    assert summary.compressed_tokens <= size <= 200  # the seed's "Compressed Size"
    assert summary.token_count / summary.compressed_tokens >= ratio  # its "Ratio"
    everything_kept = "\n".join(
        item for name in sessions_patterns.CRITICAL for item in summary.everything(name)
    )
    for fragment in [*DECISIONS.values(), *ERRORS, *ERRORS.values(), *ACTIONS.values()]:
        assert fragment in everything_kept
    for _, parts in CAUSED_ERRORS:
        assert all(part.lower() in everything_kept.lower() for part in parts)
    # What is not in the block is in the file, counted in the block and in the recovery text.
    written = sessions_store.write(Project(project), summary)
    data = yaml.safe_load(written.path.read_text(encoding="utf-8"))
    held = sum(len(items) for items in data.get("overflow", {}).values())
    assert data["session_summary"].get("overflow", 0) == held == summary.held_over()
    where = f".ctxward/sessions/{SESSION}.yaml"
    view = sessions_recovery.with_recovery(Project(project), SESSION, "", 9_000, "resume")
    assert estimate_tokens(view.split("\n", 1)[1]) <= 200
    assert "- Open items: " + "; ".join(ACTIONS.values()) + "\n" in view  # the real ones, first
    assert "- Your level: beginner" in view
    if held:
        more = re.search(rf"^- (\d+) more \((.*)\) in {re.escape(where)}$", view, re.MULTILINE)
        assert more, view
        shown = sum(view.count(f) for f in [*DECISIONS.values(), *ERRORS.values()])
        assert shown + int(more.group(1)) >= len(DECISIONS) + len(ERRORS)
