"""PreCompact: distil every plan's payload; hand the summarizer every rule verbatim; idempotent."""

from __future__ import annotations

import hashlib
import json
import re

import pytest

from ctxward.invariants import parse_sections

RULES_A = ["alpha: never push to main", "alpha: 0 test failures — no exceptions"]
RULES_B = ["beta: cite file:line", "beta: {{ braces }} stay verbatim"]


@pytest.fixture
def two_plans(project, make_skill, activate_skill):
    """Plan `one` with skills alpha and beta, plan `two` with alpha only."""
    make_skill("alpha", RULES_A)
    make_skill("beta", RULES_B, where=".opencode/skills")
    activate_skill("alpha", "one")
    activate_skill("beta", "one")
    activate_skill("alpha", "two")
    return project / "docs" / "plans"


@pytest.mark.parametrize("fixture", ["PreCompact.json", "PreCompact.auto.json"])
def test_no_plans_no_output_and_nothing_written(project, load_payload, run_hook, fixture):
    code, out, err = run_hook(load_payload(fixture))

    assert (code, out, err) == (0, "", "")
    assert sorted(p.name for p in project.iterdir()) == [".git"]


def test_distils_a_payload_for_every_plan(two_plans, load_payload, run_hook):
    code, _, err = run_hook(load_payload("PreCompact.json"))

    assert (code, err) == (0, "")
    for slug, expected in {
        "one": [
            ("alpha", RULES_A, ".claude/skills/alpha/SKILL.md"),
            ("beta", RULES_B, ".opencode/skills/beta/SKILL.md"),
        ],
        "two": [("alpha", RULES_A, ".claude/skills/alpha/SKILL.md")],
    }.items():
        source = two_plans / slug / "invariants.md"
        payload = (two_plans / slug / ".compaction-payload.md").read_text(encoding="utf-8")
        digest = hashlib.sha256(source.read_bytes()).hexdigest()
        assert payload.startswith(
            f"<!-- ctxward: distilled from docs/plans/{slug}/invariants.md sha256={digest} "
        )
        assert f"\n# Compaction payload: {slug}\n" in payload
        sections = parse_sections(payload)
        assert [(s.skill, list(s.rules), s.full_rules) for s in sections] == expected
        for skill, rules, full_rules in expected:
            block = f"## {skill}\n\n**Full rules:** {full_rules}\n\n### Rules (non-negotiable)\n\n"
            assert block + "".join(f"- {rule}\n" for rule in rules) in payload
        # Distilled: no activation time or branch, only what the model needs.
        assert "**Activated:**" not in payload
        assert "**Branch:**" not in payload


def test_prints_summarizer_instructions_with_every_rule_verbatim(two_plans, load_payload, run_hook):
    code, out, _ = run_hook(load_payload("PreCompact.auto.json"))

    assert code == 0
    assert out.startswith("COMPACTION RESILIENCE:")
    assert "VERBATIM" in out
    for rule in RULES_A + RULES_B:
        assert f"  - {rule}\n" in out
    assert out.count(f"  - {RULES_A[0]}\n") == 2  # once per plan
    assert "Plan one:\n" in out and "Plan two:\n" in out
    assert "- Skill alpha (full rules: .claude/skills/alpha/SKILL.md):\n" in out
    assert "- Skill beta (full rules: .opencode/skills/beta/SKILL.md):\n" in out
    with pytest.raises(ValueError):  # plain text, not JSON: Claude Code appends it to the prompt
        json.loads(out)


def test_firing_twice_changes_nothing(two_plans, load_payload, run_hook, snapshot, project):
    first = run_hook(load_payload("PreCompact.json"))
    before = snapshot(project / "docs")

    second = run_hook(load_payload("PreCompact.json", prompt_id="another-compaction"))

    assert second == first
    assert snapshot(project / "docs") == before  # bytes, inode and mtime of every file


def test_payload_is_redistilled_after_the_plan_changes(
    two_plans, project, make_skill, activate_skill, load_payload, run_hook
):
    run_hook(load_payload("PreCompact.json"))
    payload = two_plans / "one" / ".compaction-payload.md"
    untouched = (two_plans / "two" / ".compaction-payload.md").stat()
    make_skill("alpha", ["alpha: a brand new rule"])
    activate_skill("alpha", "one")

    code, out, _ = run_hook(load_payload("PreCompact.json", prompt_id="the-next-compaction"))

    assert code == 0
    text = payload.read_text(encoding="utf-8")
    assert "- alpha: a brand new rule\n" in text
    assert RULES_A[0] not in parse_sections(text)[0].rules
    digest = hashlib.sha256((two_plans / "one" / "invariants.md").read_bytes()).hexdigest()
    assert f"sha256={digest} " in text.splitlines()[0]
    assert "alpha: a brand new rule" in out
    after = (two_plans / "two" / ".compaction-payload.md").stat()
    assert (after.st_ino, after.st_mtime_ns) == (untouched.st_ino, untouched.st_mtime_ns)


def test_a_plan_without_rules_is_skipped(project, load_payload, run_hook):
    folder = project / "docs" / "plans" / "empty"
    folder.mkdir(parents=True)
    (folder / "invariants.md").write_text("# Active Invariants\n\nnothing yet\n")

    code, out, _ = run_hook(load_payload("PreCompact.json"))

    assert (code, out) == (0, "")
    assert not (folder / ".compaction-payload.md").exists()


def test_many_rules_are_offloaded_not_dropped(project, make_skill, activate_skill, run_hook):
    rules = [f"rule {i:03d}: " + "keep this exact wording " * 4 for i in range(300)]
    make_skill("big", rules)
    activate_skill("big", "big")

    code, out, _ = run_hook({"hook_event_name": "PreCompact", "trigger": "auto"})

    assert code == 0
    assert len(out) <= 9_000
    path = re.search(r"is in (\.ctxward/offload/([0-9a-f]{64})\.md) ", out)
    assert path, out[-600:]
    stored = (project / path.group(1)).read_text(encoding="utf-8")
    assert hashlib.sha256(stored.encode("utf-8")).hexdigest() == path.group(2)
    assert all(f"  - {rule}\n" in stored for rule in rules)
    assert "300 rules" in out
    payload = (project / "docs/plans/big/.compaction-payload.md").read_text(encoding="utf-8")
    assert list(parse_sections(payload)[0].rules) == rules


def test_a_broken_plan_is_named_and_the_others_still_reach_the_summarizer(
    two_plans, load_payload, run_hook
):
    broken = two_plans / "broken"
    broken.mkdir()
    (broken / "invariants.md").write_bytes(b"# Active Invariants\n\n## x\n\xff\n")

    code, out, err = run_hook(load_payload("PreCompact.json"))

    assert (code, err) == (0, "")
    for rule in RULES_A + RULES_B:
        assert f"  - {rule}\n" in out
    assert out.endswith(
        "ctxward could not read this plan, so its rules are not listed above. Keep this note "
        "in your summary, so that the file gets fixed:\n"
        "- docs/plans/broken/invariants.md: not UTF-8 (byte 26)\n"
    )
    assert (two_plans / "one" / ".compaction-payload.md").is_file()
    assert not (broken / ".compaction-payload.md").exists()


def test_with_only_broken_plans_the_summarizer_still_hears_of_them(project, load_payload, run_hook):
    for slug in ("a", "b"):
        folder = project / "docs" / "plans" / slug
        folder.mkdir(parents=True)
        (folder / "invariants.md").write_bytes(b"\xfe\xff")

    code, out, err = run_hook(load_payload("PreCompact.json"))

    assert (code, err) == (0, "")
    assert "ctxward could not read these plans, so their rules are not listed above." in out
    assert "- docs/plans/a/invariants.md: not UTF-8 (byte 0)\n" in out
    assert "- docs/plans/b/invariants.md: not UTF-8 (byte 0)\n" in out
