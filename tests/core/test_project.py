"""Finding the project root, and the state paths inside it."""

from __future__ import annotations

from ctxward.core.project import Project, find_root


def test_claude_project_dir_wins(project, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    assert find_root({"CLAUDE_PROJECT_DIR": str(project)}, cwd=other) == project


def test_walks_up_from_cwd_to_the_nearest_marker(project, tmp_path):
    deep = project / "src" / "pkg"
    deep.mkdir(parents=True)
    assert find_root({}, cwd=deep) == project

    state_only = tmp_path / "state-only"
    (state_only / ".ctxward").mkdir(parents=True)
    (state_only / "sub").mkdir()
    assert find_root({}, cwd=state_only / "sub") == state_only


def test_falls_back_to_the_start_folder(tmp_path, monkeypatch):
    bare = tmp_path / "bare"
    bare.mkdir()
    monkeypatch.chdir(bare)
    # tmp_path is not inside any git checkout, so nothing above `bare` has a marker.
    assert find_root({}) == bare.resolve()


def test_state_paths(project):
    p = Project(project)
    assert p.plans_dir == project / "docs" / "plans"
    assert p.offload_dir == project / ".ctxward" / "offload"
    assert p.compactions_dir == project / ".ctxward" / "compactions"
    assert p.log_dir == project / ".ctxward" / "log"
    assert p.relative(project / "docs" / "x.md") == "docs/x.md"
    assert p.relative(project.parent / "out.md") == (project.parent / "out.md").as_posix()
