"""Issue 17 item 5: only plans that apply. Plans are scoped to the branch they were activated on
(and to branches created from it); a plan whose branch is gone is completed at the next
compaction with one line saying so; `doctor` lists stale plans; `.git` is read, never run."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from ctxward.core import gitrefs
from ctxward.core.gitrefs import Repository
from ctxward.core.project import Project
from ctxward.invariants.plans import scope
from ctxward.invariants.read import plans_for_the_model
from ctxward.setup import plan_checks


@pytest.fixture
def repo(project, git):
    git(project, "commit", "-q", "--allow-empty", "-m", "start")
    return project


def plan_on(project, git, make_skill, activate_skill, branch: str, slug: str) -> None:
    git(project, "checkout", "-q", "-B", branch)
    make_skill(slug, [f"{slug}: rule on {branch}"])
    activate_skill(slug, slug)


def slugs(plans) -> list[str]:
    return [plan.slug for plan in plans]


# --- reading .git -----------------------------------------------------------------------------


def test_head_and_branches_loose_and_packed(repo, git):
    git(repo, "branch", "feature/a")
    git(repo, "pack-refs", "--all")
    git(repo, "branch", "loose")
    view = Repository(repo)

    assert view.head_branch() == "main"
    assert view.branches() == {"main", "feature/a", "loose"}
    assert view.exists("feature/a") is True and view.exists("nope") is False


def test_an_unborn_branch_exists(project):
    assert Repository(project).exists("main") is True


def test_a_linked_worktree_reads_its_own_head_and_the_common_refs(repo, git, tmp_path):
    other = tmp_path / "other-worktree"
    git(repo, "worktree", "add", "-q", "-b", "side", str(other))
    view = Repository(other)

    assert (other / ".git").is_file()
    assert view.head_branch() == "side"
    assert {"main", "side"} <= view.branches()


def test_derivation_from_checkout_b_and_from_git_branch(repo, git):
    git(repo, "checkout", "-q", "-b", "feature")
    git(repo, "checkout", "-q", "-b", "feature-2")  # "Created from HEAD" + HEAD's reflog
    git(repo, "branch", "feature-3", "feature-2")  # "Created from feature-2"
    view = Repository(repo)

    assert view.parent("feature-2") == "feature"
    assert view.parent("feature-3") == "feature-2"
    assert view.derives_from("feature-3", frozenset({"feature"}))
    assert not view.derives_from("feature", frozenset({"feature-2"}))
    assert view.parent("main") is None


def test_detached_head_is_no_branch(repo, git):
    git(repo, "checkout", "-q", "--detach")
    assert Repository(repo).head_branch() is None


def test_hostile_git_folders_make_the_answer_unknown_never_a_hang(repo, monkeypatch):
    heads = repo / ".git" / "refs" / "heads"
    monkeypatch.setattr(gitrefs, "MAX_LOOSE_REFS", 5)
    for n in range(10):
        (heads / f"b{n}").write_text("0" * 40 + "\n")
    assert Repository(repo).branches() is None  # past the bound: unknown, not a guess

    os.unlink(repo / ".git" / "HEAD")
    os.mkfifo(repo / ".git" / "HEAD")  # a read would wait forever
    assert Repository(repo).head_branch() is None


def test_a_git_file_pointing_nowhere_is_no_repository(tmp_path):
    root = tmp_path / "clone"
    root.mkdir()
    (root / ".git").write_text("gitdir: /nonexistent/place\n")
    assert Repository(root).found is False


# --- which plans apply --------------------------------------------------------------------------


def test_a_plan_of_another_branch_is_not_injected(repo, git, make_skill, activate_skill):
    plan_on(repo, git, make_skill, activate_skill, "main", "main-plan")
    plan_on(repo, git, make_skill, activate_skill, "feature-a", "a-plan")
    git(repo, "checkout", "-q", "main")
    plan_on(repo, git, make_skill, activate_skill, "feature-b", "b-plan")

    on_b = plans_for_the_model(Project(repo))[0]
    git(repo, "checkout", "-q", "main")
    on_main = plans_for_the_model(Project(repo))[0]

    # feature-b was made from main: main's plan applies there too, feature-a's (a sibling) not.
    assert slugs(on_b) == ["b-plan", "main-plan"]
    assert slugs(on_main) == ["main-plan"]


def test_a_plan_applies_on_a_branch_derived_from_its_own(repo, git, make_skill, activate_skill):
    plan_on(repo, git, make_skill, activate_skill, "feature", "feat-plan")
    git(repo, "checkout", "-q", "-b", "feature-fix")

    assert slugs(plans_for_the_model(Project(repo))[0]) == ["feat-plan"]


def test_a_plan_without_a_branch_applies_everywhere(project, make_skill, activate_skill, git):
    os.rename(project / ".git", project / "git-later")  # activated outside git: no branch
    make_skill("anywhere", ["anywhere: a rule"])
    activate_skill("anywhere", "anywhere")
    os.rename(project / "git-later", project / ".git")
    git(project, "commit", "-q", "--allow-empty", "-m", "x")
    git(project, "checkout", "-q", "-b", "other")

    assert slugs(plans_for_the_model(Project(project))[0]) == ["anywhere"]


def test_on_a_detached_head_the_plans_of_existing_branches_apply(
    repo, git, make_skill, activate_skill
):
    plan_on(repo, git, make_skill, activate_skill, "feature", "feat-plan")
    git(repo, "checkout", "-q", "main")
    git(repo, "checkout", "-q", "--detach")

    assert slugs(plans_for_the_model(Project(repo))[0]) == ["feat-plan"]


def test_a_plan_whose_branch_is_gone_is_split_out(repo, git, make_skill, activate_skill):
    plan_on(repo, git, make_skill, activate_skill, "feature", "feat-plan")
    git(repo, "checkout", "-q", "main")
    git(repo, "branch", "-q", "-D", "feature")
    gone: list = []

    applied = plans_for_the_model(Project(repo), gone=gone)[0]

    assert applied == [] and slugs(gone) == ["feat-plan"]
    found = scope(Project(repo), gone)
    assert (slugs(found.gone), found.branch) == (["feat-plan"], "main")


# --- PreCompact completes branch-gone plans ----------------------------------------------------


def test_precompact_completes_a_branch_gone_plan_with_one_line(
    repo, git, make_skill, activate_skill, run_hook, load_payload
):
    plan_on(repo, git, make_skill, activate_skill, "feature", "feat-plan")
    plan_on(repo, git, make_skill, activate_skill, "main", "main-plan")
    git(repo, "branch", "-q", "-D", "feature")

    code, out, err = run_hook(load_payload("PreCompact.json"))

    assert (code, err) == (0, "")
    lines = [line for line in out.splitlines() if "feat-plan" in line]
    assert lines == [
        "ctxward completed plan feat-plan: its branch feature no longer exists, so its rules no "
        "longer apply (docs/plans/feat-plan/invariants.md removed)."
    ]
    assert "main-plan: rule on main" in out and "feat-plan: rule on feature" not in out
    assert not (repo / "docs/plans/feat-plan/invariants.md").exists()
    assert (repo / "docs/plans/main-plan/invariants.md").exists()
    again = run_hook(load_payload("PreCompact.json", prompt_id="another-compaction"))
    assert "feat-plan" not in again[1]


def test_an_untrusted_branch_gone_plan_is_never_removed(
    repo, git, make_skill, activate_skill, run_hook, load_payload
):
    plan_on(repo, git, make_skill, activate_skill, "feature", "theirs")
    git(repo, "checkout", "-q", "main")
    git(repo, "branch", "-q", "-D", "feature")
    path = repo / "docs/plans/theirs/invariants.md"
    path.write_text(path.read_text() + "\n")  # edited: no longer the trusted content

    run_hook(load_payload("PreCompact.json"))

    assert path.exists()  # a cloned repository's committed plan is the user's to remove


def test_the_hooks_run_no_git(
    repo, git, make_skill, activate_skill, run_hook, load_payload, monkeypatch
):
    plan_on(repo, git, make_skill, activate_skill, "feature", "feat-plan")
    git(repo, "checkout", "-q", "-b", "feature-2")

    def refuse(*args, **kwargs):
        raise AssertionError(f"a hook ran a subprocess: {args}")

    monkeypatch.setattr(subprocess, "run", refuse)
    monkeypatch.setattr(subprocess, "Popen", refuse)

    code, out, err = run_hook(load_payload("SessionStart.compact.json"))

    assert (code, err) == (0, "")
    assert (
        "feat-plan: rule on feature" in json.loads(out)["hookSpecificOutput"]["additionalContext"]
    )


# --- doctor -------------------------------------------------------------------------------------


def test_doctor_lists_stale_plans_and_plans_of_other_branches(
    repo, git, make_skill, activate_skill
):
    plan_on(repo, git, make_skill, activate_skill, "gone-branch", "stale-plan")
    plan_on(repo, git, make_skill, activate_skill, "kept-branch", "other-plan")
    git(repo, "checkout", "-q", "main")
    git(repo, "branch", "-q", "-D", "gone-branch")

    checks = {check.id: check for check in plan_checks.plan_checks(Project(repo))}

    stale = checks["plan.stale-plan.branch"]
    assert stale.status == "warn"
    assert stale.title == "plan stale-plan: stale, its branch gone-branch no longer exists"
    assert stale.fix == "ctxward plan complete stale-plan (or: ctxward plan clean)"
    other = checks["plan.other-plan.branch"]
    assert (other.status, other.title) == (
        "info",
        "plan other-plan: scoped to kept-branch, not injected on main",
    )
