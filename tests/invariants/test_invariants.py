"""Activation (seed 003's invariants.md), lookup order, refusal of bad input, reading back."""

from __future__ import annotations

import re
import shutil
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from ctxward.cli import main
from ctxward.core.paths import data_dir
from ctxward.core.project import Project
from ctxward.errors import BadInput
from ctxward.invariants.activate import activate
from ctxward.invariants.model import RuleRef, validate_slug
from ctxward.invariants.read import load_plans, parse_sections
from ctxward.invariants.skills import find_skill, load_skill
from ctxward.invariants.summary import check_survival, summary_text

SEARCH_ORDER = (".claude/skills", ".opencode/skill", ".opencode/skills")
# Rules a careless writer, parser or template would damage: all must come back verbatim.
AWKWARD_RULES = (
    "0 test failures for PASS — no out-of-scope dismissals",
    "- starts with a dash",
    "## looks like a heading",
    "**Activated:** looks like a field",
    "{{ not_a_template }} and {% raw %} and {# comment #}",
    "<script>alert('x')</script> & `code` | pipes",
    "  padded on both sides  ",
    "unicode: é 漢字 🚀 \u00a0non-breaking",
)


def section_of(text: str, skill: str) -> str:
    """The `## <skill>` section of an invariants.md, up to the next section."""
    match = re.search(rf"^## {re.escape(skill)}\n.*?(?=^## |\Z)", text, re.DOTALL | re.MULTILINE)
    assert match, f"no section for {skill}"
    return match.group(0)


# --- the file format --------------------------------------------------------------------------


def test_activation_writes_the_seed_003_template(project, make_skill, activate_skill):
    make_skill("release", ["Never push to main — open a PR", "Tag releases as vX.Y.Z"])

    path = activate_skill("release", "v2")

    assert path == project / "docs" / "plans" / "v2" / "invariants.md"
    assert path.read_text(encoding="utf-8") == (
        "# Active Invariants\n"
        "\n"
        "## release\n"
        "\n"
        "**Activated:** 2026-01-02T03:04:05Z\n"
        "**Full rules:** .claude/skills/release/SKILL.md\n"
        "**Branch:** main\n"
        "\n"
        "### Rules (non-negotiable)\n"
        "\n"
        "- Never push to main — open a PR\n"
        "- Tag releases as vX.Y.Z\n"
    )


def test_activation_timestamp_is_iso_8601_utc(project, make_skill):
    make_skill("release")
    before = datetime.now(timezone.utc).replace(microsecond=0)

    path = activate(Project(project), "release", "v2").path

    stamp = re.search(r"^\*\*Activated:\*\* (.+)$", path.read_text(), re.MULTILINE).group(1)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", stamp)
    moment = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    assert before <= moment <= datetime.now(timezone.utc)


def test_activation_converts_a_local_time_to_utc(project, make_skill):
    make_skill("release")
    local = datetime(2026, 1, 2, 5, 4, 5, tzinfo=timezone(timedelta(hours=2)))

    path = activate(Project(project), "release", "v2", now=local).path

    assert "**Activated:** 2026-01-02T03:04:05Z\n" in path.read_text()


@pytest.mark.parametrize("rule", AWKWARD_RULES)
def test_rules_are_written_verbatim_and_read_back_verbatim(project, make_skill, rule, now):
    make_skill("tricky", [rule, "a plain rule"])

    path = activate(Project(project), "tricky", "p", now=now).path

    assert f"\n- {rule}\n" in path.read_text(encoding="utf-8")
    (section,) = parse_sections(path.read_text(encoding="utf-8"))
    assert section.rules == (rule, "a plain rule")
    assert section.skill == "tricky"
    assert section.full_rules == ".claude/skills/tricky/SKILL.md"
    assert section.activated == "2026-01-02T03:04:05Z"
    assert section.branch == "main"


# --- where SKILL is found ---------------------------------------------------------------------


def test_project_skills_shadow_shipped_packs_in_the_documented_order(project, make_skill, now):
    for where in SEARCH_ORDER:
        make_skill("deep-review", [f"rule from {where}"], where=where)

    for where in SEARCH_ORDER:
        found = find_skill("deep-review", Project(project))
        assert found == project / where / "deep-review" / "SKILL.md"
        path = activate(Project(project), "deep-review", "p", now=now).path
        assert f"- rule from {where}\n" in path.read_text()
        shutil.rmtree(project / where)

    shipped = data_dir("invariants") / "deep-review" / "SKILL.md"
    assert find_skill("deep-review", Project(project)) == shipped
    text = activate(Project(project), "deep-review", "p", now=now).path.read_text()
    assert "rule from" not in text
    assert "- 0 test failures for PASS — no out-of-scope dismissals for test failures\n" in text
    assert text.count("## deep-review\n") == 1


def test_skill_given_as_a_path_outside_the_project(project, tmp_path, make_skill, now):
    outside = tmp_path / "elsewhere" / "custom.md"
    outside.write_text("---\nname: custom\ninvariants: ['from a path']\n---\n", encoding="utf-8")

    path = activate(Project(project), str(outside), "p", now=now).path

    text = path.read_text()
    assert "## custom\n" in text
    assert f"**Full rules:** {outside.as_posix()}\n" in text
    assert "- from a path\n" in text


def test_relative_skill_path_is_resolved_from_the_working_directory(
    project, make_skill, monkeypatch, now
):
    make_skill("local", ["from a relative path"], where="skills")
    monkeypatch.chdir(project)

    path = activate(Project(project), "skills/local/SKILL.md", "p", now=now).path

    assert "**Full rules:** skills/local/SKILL.md\n" in path.read_text()


def test_unknown_skill_name_is_refused(project, now):
    with pytest.raises(BadInput, match="no skill named 'no-such-skill'"):
        activate(Project(project), "no-such-skill", "p", now=now)
    assert not (project / "docs").exists()


# --- additive, replace in place, branch -------------------------------------------------------


def test_a_second_skill_appends_its_section(project, make_skill, activate_skill, now):
    make_skill("alpha", ["alpha one"])
    make_skill("beta", ["beta one", "beta two"])
    first = activate_skill("alpha").read_text()

    result = activate(Project(project), "beta", "plan-a", now=now)

    text = result.path.read_text()
    assert result.replaced is False
    assert text.startswith(first.rstrip("\n") + "\n\n## beta\n")
    assert [s.skill for s in parse_sections(text)] == ["alpha", "beta"]
    assert text.count("# Active Invariants") == 1


@pytest.mark.parametrize("again", ["alpha", "beta", "gamma"])
def test_reactivation_replaces_the_section_in_place(
    project, make_skill, activate_skill, again, now
):
    for name in ("alpha", "beta", "gamma"):
        make_skill(name, [f"{name} old rule"])
        activate_skill(name)
    before = activate_skill("alpha").parent.joinpath("invariants.md").read_text()
    make_skill(again, [f"{again} new rule", f"{again} second new rule"])

    later = now + timedelta(hours=1)
    result = activate(Project(project), again, "plan-a", now=later)

    after = result.path.read_text()
    assert result.replaced is True
    assert after.count(f"## {again}\n") == 1
    assert [s.skill for s in parse_sections(after)] == ["alpha", "beta", "gamma"]
    assert f"{again} old rule" not in after
    assert f"- {again} new rule\n- {again} second new rule\n" in after
    assert "**Activated:** 2026-01-02T04:04:05Z" in section_of(after, again)
    for other in {"alpha", "beta", "gamma"} - {again}:
        assert section_of(after, other) == section_of(before, other)
    # The file is what a fresh activation in that order would have written.
    assert after.replace(section_of(after, again), section_of(before, again)) == before


def test_reactivating_with_identical_rules_and_time_rewrites_nothing(
    project, make_skill, activate_skill
):
    make_skill("alpha")
    path = activate_skill("alpha")
    stat = path.stat()

    activate_skill("alpha")

    assert (path.stat().st_ino, path.stat().st_mtime_ns) == (stat.st_ino, stat.st_mtime_ns)


def test_branch_is_recorded_per_section(project, make_skill, activate_skill, now, git):
    make_skill("alpha")
    make_skill("beta")
    git(project, "commit", "-q", "--allow-empty", "-m", "init")
    activate_skill("alpha")
    git(project, "checkout", "-q", "-b", "feature/x")

    text = activate(Project(project), "beta", "plan-a", now=now).path.read_text()

    assert "**Branch:** main\n" in section_of(text, "alpha")
    assert "**Branch:** feature/x\n" in section_of(text, "beta")


def test_no_branch_line_outside_git(tmp_path, monkeypatch, now):
    root = tmp_path / "plain"
    skill = root / ".claude" / "skills" / "alpha" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text("---\nname: alpha\ninvariants: [one]\n---\n", encoding="utf-8")
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))

    result = activate(Project(root), "alpha", "p", now=now)

    assert result.branch == ""
    assert "**Branch:**" not in result.path.read_text()


# --- bad input: exit 2, one line naming the file and the problem, nothing written -------------

BAD_SKILLS = {
    "no-frontmatter": (b"# Just a title\n\ninvariants: [a]\n", "no YAML front matter"),
    "empty-file": (b"", "no YAML front matter"),
    "unclosed-fence": (b"---\nname: x\ninvariants: [a]\n", "not closed"),
    "yaml-error": (b"---\nname: x\ninvariants: [a\n---\n", "YAML error"),
    "yaml-tab-error": (b"---\nname: x\n\tinvariants: [a]\n---\n", "YAML error"),
    "head-is-a-list": (b"---\n- a\n- b\n---\n", "not a mapping"),
    "no-name": (b"---\ninvariants: [a]\n---\n", "'name'"),
    "bad-name": (b"---\nname: '## x'\ninvariants: [a]\n---\n", "'name'"),
    "invariants-missing": (b"---\nname: x\n---\n", "no 'invariants'"),
    "invariants-null": (b"---\nname: x\ninvariants:\n---\n", "no 'invariants'"),
    "invariants-a-string": (b"---\nname: x\ninvariants: one rule\n---\n", "non-empty list"),
    "invariants-a-mapping": (b"---\nname: x\ninvariants: {a: b}\n---\n", "non-empty list"),
    "invariants-empty": (b"---\nname: x\ninvariants: []\n---\n", "non-empty list"),
    "item-int": (b"---\nname: x\ninvariants: [ok, 1]\n---\n", "invariants[1]"),
    "item-null": (b"---\nname: x\ninvariants: [null]\n---\n", "invariants[0]"),
    "item-bool": (b"---\nname: x\ninvariants: [yes]\n---\n", "invariants[0]"),
    "item-list": (b"---\nname: x\ninvariants: [[a]]\n---\n", "invariants[0]"),
    "item-mapping": (b"---\nname: x\ninvariants: [{a: b}]\n---\n", "invariants[0]"),
    "item-empty": (b"---\nname: x\ninvariants: ['']\n---\n", "invariants[0] is empty"),
    "item-blank": (b"---\nname: x\ninvariants: ['   ']\n---\n", "invariants[0] is empty"),
    "item-block": (b"---\nname: x\ninvariants:\n  - |\n    a\n    b\n---\n", "several lines"),
    "item-newline": (b'---\nname: x\ninvariants: ["a\\nb"]\n---\n', "several lines"),
    "item-cr": (b'---\nname: x\ninvariants: ["a\\rb"]\n---\n', "several lines"),
    "item-u2028": (b'---\nname: x\ninvariants: ["a\\u2028b"]\n---\n', "several lines"),
    "item-u2029": (b'---\nname: x\ninvariants: ["a\\u2029b"]\n---\n', "several lines"),
    "item-nel": (b'---\nname: x\ninvariants: ["a\\x85b"]\n---\n', "several lines"),
    "item-vt": (b'---\nname: x\ninvariants: ["a\\vb"]\n---\n', "several lines"),
    "not-utf8": (b"---\nname: x\ninvariants: ['caf\xe9']\n---\n", "not UTF-8"),
    "utf16": ("---\nname: x\ninvariants: [a]\n---\n".encode("utf-16"), "not UTF-8"),
}


def run_cli(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def existing_plan(project, make_skill, activate_skill):
    """A plan that already holds one skill: a refused activation must leave it byte-identical."""
    make_skill("alpha")
    activate_skill("alpha", "plan-a")
    return project / "docs" / "plans"


@pytest.mark.parametrize("case", sorted(BAD_SKILLS))
def test_bad_skill_file_is_refused_and_nothing_is_written(
    project, tmp_path, existing_plan, capsys, case, snapshot
):
    content, problem = BAD_SKILLS[case]
    skill = tmp_path / "skills" / f"{case}.md"
    skill.parent.mkdir()
    skill.write_bytes(content)
    before = snapshot(project)

    for slug in ("plan-a", "plan-b"):
        code, out, err = run_cli(capsys, "-C", str(project), "activate", str(skill), "--slug", slug)

        assert code == 2
        assert out == ""
        assert err.count("\n") == 1, err
        assert str(skill) in err
        assert problem in err
    assert snapshot(project) == before
    assert not (existing_plan / "plan-b").exists()


def test_unsafe_yaml_tag_is_an_error_and_never_executed(project, tmp_path, capsys):
    marker = tmp_path / "executed"
    skill = tmp_path / "evil.md"
    skill.write_text(
        f"---\nname: evil\ninvariants: !!python/object/apply:os.system ['touch {marker}']\n---\n",
        encoding="utf-8",
    )

    code, _, err = run_cli(capsys, "-C", str(project), "activate", str(skill), "--slug", "p")

    assert code == 2
    assert "YAML error" in err
    assert "python/object" in err
    assert not marker.exists()
    assert not (project / "docs").exists()


@pytest.mark.parametrize(
    "spec, problem",
    [("missing.md", "no such file"), ("folder-skill", "is a folder")],
)
def test_missing_or_folder_skill_path_is_refused(project, tmp_path, capsys, spec, problem):
    (tmp_path / "folder-skill").mkdir()
    path = tmp_path / spec

    code, out, err = run_cli(capsys, "-C", str(project), "activate", str(path), "--slug", "p")

    assert (code, out) == (2, "")
    assert err.count("\n") == 1
    assert str(path) in err and problem in err
    assert not (project / "docs").exists()


BAD_SLUGS = ["..", ".", "a/b", "../x", "/abs", "a\\b", "ABC", "Plan", "", "a" * 65, ".hidden"]
BAD_SLUGS += ["-dash", "_under", "a..b", "a b", "a\n", "é", "a\x00"]


@pytest.mark.parametrize("slug", BAD_SLUGS)
def test_bad_slug_is_refused_and_nothing_is_written(project, existing_plan, capsys, slug, snapshot):
    before = snapshot(project)

    code, out, err = run_cli(capsys, "-C", str(project), "activate", "alpha", "--slug", slug)

    assert (code, out) == (2, "")
    assert err.count("\n") == 1
    assert "invalid slug" in err
    assert snapshot(project) == before
    assert sorted(p.name for p in existing_plan.iterdir()) == ["plan-a"]


@pytest.mark.parametrize("slug", ["a", "0", "a" * 64, "v1.2", "my_plan-3", "a.b.c"])
def test_good_slugs_are_accepted(slug):
    assert validate_slug(slug) == slug


def test_activation_refuses_a_symlinked_plan_folder(project, tmp_path, make_skill, now):
    make_skill("alpha")
    outside = tmp_path / "outside"
    outside.mkdir()
    (project / "docs" / "plans").mkdir(parents=True)
    (project / "docs" / "plans" / "p").symlink_to(outside)

    with pytest.raises(BadInput, match="symbolic link"):
        activate(Project(project), "alpha", "p", now=now)
    assert list(outside.iterdir()) == []


# --- reading plans back -----------------------------------------------------------------------


def test_load_plans_reads_every_plan_sorted_and_skips_links_and_bad_names(
    project, tmp_path, make_skill, activate_skill
):
    make_skill("alpha", ["a1", "a2"])
    make_skill("beta", ["b1"])
    activate_skill("alpha", "zeta")
    activate_skill("alpha", "eta")
    activate_skill("beta", "eta")
    plans_dir = project / "docs" / "plans"
    (plans_dir / "Bad Name").mkdir()
    (plans_dir / "Bad Name" / "invariants.md").write_text("## x\n### Rules\n- r\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "invariants.md").write_text("## x\n### Rules\n- r\n")
    (plans_dir / "linked").symlink_to(outside)

    plans = load_plans(Project(project))

    assert [plan.slug for plan in plans] == ["eta", "zeta"]
    assert [(s.skill, s.rules) for s in plans[0].sections] == [
        ("alpha", ("a1", "a2")),
        ("beta", ("b1",)),
    ]
    assert plans[0].rule_count == 3


def test_load_skill_reads_name_rules_and_path(make_skill):
    path = make_skill("alpha", ["one", "two"])
    skill = load_skill(path)
    assert (skill.name, skill.rules, skill.path) == ("alpha", ("one", "two"), path)


def test_every_shipped_pack_loads():
    packs = sorted(data_dir("invariants").glob("*/SKILL.md"))
    names = {path.parent.name for path in packs}
    assert names == {
        "compaction-resilience",
        "context-governance",
        "deep-auto",
        "deep-execute",
        "deep-plan",
        "deep-review",
    }
    for path in packs:
        skill = load_skill(path)
        assert skill.name == path.parent.name
        assert skill.rules


# --- survival matching ------------------------------------------------------------------------


def refs(*rules: str) -> list[RuleRef]:
    return [RuleRef("p", "s", rule) for rule in rules]


def test_survival_ignores_whitespace_and_case():
    rules = refs("Run the FULL suite  before the verdict", "Never push to main")
    summary = "<summary>Notes:\n- run the full\n   suite before\tthe VERDICT\n</summary>"

    survived, missing = check_survival(rules, summary)

    assert survived == rules[:1]
    assert missing == rules[1:]


@pytest.mark.parametrize(
    "summary",
    [
        "<analysis>Never push to main</analysis>\n<summary>Other things.</summary>",
        "<analysis>Never push to main</analysis>\nOther things, and no summary tags.",
        "<summary>Other things.</summary>\n<analysis>Never push to main</analysis>",
    ],
)
def test_a_rule_only_in_the_analysis_block_is_missing(summary):
    survived, missing = check_survival(refs("Never push to main"), summary)
    assert (survived, missing) == ([], refs("Never push to main"))


@pytest.mark.parametrize(
    "summary",
    [
        "<analysis>thinking</analysis>\n<summary>We never push to main.</summary>",
        "<summary>Never push to main (unclosed summary",
        "No tags at all: never push to main.",
    ],
)
def test_a_rule_in_the_kept_text_survives(summary):
    survived, missing = check_survival(refs("never push to main"), summary)
    assert (survived, missing) == (refs("never push to main"), [])


def test_summary_text_keeps_only_the_summary_blocks():
    text = "<analysis>A</analysis>\n<summary>B</summary>\nC"
    assert summary_text(text) == "B"


def test_invariants_file_path_of_a_plan(project, make_skill, activate_skill):
    make_skill("alpha")
    path = activate_skill("alpha", "p")
    (plan,) = load_plans(Project(project))
    assert plan.invariants_path == path
    assert plan.payload_path == path.parent / ".compaction-payload.md"
    assert plan.payload_state() == "missing"


def test_a_bare_name_is_a_skill_name_even_when_a_file_of_that_name_is_here(
    project, make_skill, monkeypatch, now
):
    make_skill("deep-review", ["the project's own rule"])
    monkeypatch.chdir(project)
    (project / "deep-review").write_text("not a skill", encoding="utf-8")
    result = activate(Project(project), "deep-review", "plan-a", now=now)
    assert result.skill.rules == ("the project's own rule",)


def test_an_existing_invariants_file_that_is_not_utf8_is_refused_untouched(
    project, make_skill, now, capsys
):
    make_skill("alpha")
    path = project / "docs" / "plans" / "plan-a" / "invariants.md"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"# Active Invariants\n\xff\xfe\n")
    code = main(["-C", str(project), "activate", "alpha", "--slug", "plan-a"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1
    assert "docs/plans/plan-a/invariants.md: not UTF-8" in err
    assert path.read_bytes() == b"# Active Invariants\n\xff\xfe\n"


def test_plan_clean_without_git_is_one_clear_line(project, make_skill, now, monkeypatch, capsys):
    make_skill("alpha")
    activate(Project(project), "alpha", "plan-a", now=now)
    text = (project / "docs/plans/plan-a/invariants.md").read_text(encoding="utf-8")
    (project / "docs/plans/plan-a/invariants.md").write_text(
        text.replace("**Branch:** main", "**Branch:** gone"), encoding="utf-8"
    )
    monkeypatch.setenv("PATH", "")  # no git on PATH
    code = main(["-C", str(project), "plan", "clean", "--dry-run"])
    err = capsys.readouterr().err
    assert code == 1
    assert err.startswith("ctxward: error: cannot ask git") and err.count("\n") == 1


@pytest.mark.parametrize("kind", ["fifo", "device", "too-large"])
def test_load_skill_refuses_at_once_what_it_cannot_bound(tmp_path, kind):
    import os

    from ctxward.invariants.model import MAX_SKILL_BYTES

    path = tmp_path / "SKILL.md"
    if kind == "fifo":
        os.mkfifo(path)  # no writer: a plain open would wait for one forever
    elif kind == "too-large":
        path.write_text("---\nname: big\ninvariants: [a]\n---\n" + "x" * MAX_SKILL_BYTES)
    else:
        path = Path("/dev/zero")
    with pytest.raises(BadInput) as raised:
        load_skill(path)
    problem = "larger than 1,048,576 bytes" if kind == "too-large" else "not a regular file"
    assert str(raised.value).startswith(f"{path}: {problem}")


def test_a_pack_is_named_by_its_command_never_by_an_installed_path(project):
    """A committed plan must not carry one machine's site-packages path (a reinstall moves it)."""
    from ctxward.invariants.skills import full_rules_path, pack_text

    result = activate(Project(project), "deep-review", "portable")
    text = result.path.read_text(encoding="utf-8")
    assert "**Full rules:** `ctxward packs deep-review` (shipped with ctxward)\n" in text
    assert str(data_dir("invariants")) not in text and "site-packages" not in text
    (section,) = parse_sections(text)
    assert full_rules_path(Project(project), section.full_rules) == (
        data_dir("invariants") / "deep-review" / "SKILL.md"
    )
    assert pack_text("deep-review").startswith("---\nname: deep-review\n")


def test_a_project_skill_is_named_by_its_project_relative_path(project):
    from ctxward.invariants.skills import full_rules_path

    skill = project / ".claude" / "skills" / "mine" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text("---\nname: mine\ninvariants:\n  - 'Keep it short'\n---\n", encoding="utf-8")
    result = activate(Project(project), "mine", "own")
    (section,) = parse_sections(result.path.read_text(encoding="utf-8"))
    assert section.full_rules == ".claude/skills/mine/SKILL.md"
    assert full_rules_path(Project(project), section.full_rules) == skill
