"""The `ctxward` command through click's CliRunner and through main() (exit-code mapping)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time

import click
import pytest
from click.testing import CliRunner

from ctxward import __version__
from ctxward.cli import cli, main
from ctxward.core.fingerprint import fingerprint, of_rules
from ctxward.errors import EXIT_OS_ERROR


@pytest.fixture
def invoke(project):
    """`invoke("plan", "list")` runs `ctxward -C <project> plan list` in-process."""

    def run(*args: str, stdin: str | bytes | None = None):
        return CliRunner().invoke(cli, ["-C", str(project), *args], input=stdin)

    return run


def all_commands(group: click.Group, path: tuple[str, ...] = ()):
    context = click.Context(group)
    for name in group.list_commands(context):  # lazy commands too
        command = group.get_command(context, name)
        yield (*path, name)
        if isinstance(command, click.Group):
            yield from all_commands(command, (*path, name))


COMMANDS = [(), *all_commands(cli)]


# --- version and help -------------------------------------------------------------------------


def test_version():
    result = CliRunner().invoke(cli, ["--version"])
    assert result.exit_code == 0
    assert result.output == f"ctxward, version {__version__}\n"


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: " ".join(p) or "ctxward")
def test_every_command_has_help_with_an_example(path):
    result = CliRunner().invoke(cli, [*path, "--help"])
    assert result.exit_code == 0, result.output
    assert "Example" in result.output
    assert result.output.startswith(f"Usage: cli {' '.join(path)}".rstrip())


def test_the_foundation_commands_exist():
    names = {" ".join(path) for path in COMMANDS}
    assert {
        "activate",
        "plan list",
        "plan complete",
        "plan clean",
        "packs",
        "config show",
        "hook",
        "demo",
    } <= names


def test_python_dash_m_runs_the_same_cli(project):
    done = subprocess.run(
        [sys.executable, "-m", "ctxward", "-C", str(project), "plan", "complete", "Bad"],
        capture_output=True,
        text=True,
        timeout=20,
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.startswith("ctxward: error: invalid slug 'Bad'")


# --- main(): exit codes ---------------------------------------------------------------------


def test_main_success_is_0(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"ctxward, version {__version__}\n"


@pytest.mark.parametrize(
    "argv",
    [["no-such-command"], ["activate", "deep-review"], ["plan", "list", "--bogus"], ["hook"]],
)
def test_main_usage_error_is_2(capsys, project, argv):
    assert main(["-C", str(project), *argv]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "Error" in captured.err


def test_main_bad_input_is_2_with_one_line(capsys, project):
    assert main(["-C", str(project), "plan", "complete", "../etc"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1
    assert captured.err.startswith("ctxward: error: invalid slug '../etc'")


def test_main_maps_an_os_error_to_one_line_naming_the_path_exit_5(capsys, project, monkeypatch):
    import errno

    from ctxward.invariants import plans

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device", str(project / "docs" / "plans"))

    monkeypatch.setattr(plans, "complete", full)
    assert main(["-C", str(project), "plan", "complete", "x"]) == EXIT_OS_ERROR == 5
    captured = capsys.readouterr()
    assert captured.err == (
        f"ctxward: error: {project}/docs/plans: No space left on device (ENOSPC)\n"
    )


@pytest.mark.parametrize(
    ("exc", "line"),
    [
        (OSError(13, "Permission denied", "/a/b"), "/a/b: Permission denied (EACCES)"),
        (
            OSError(18, "Invalid cross-device link", "/a", None, "/b"),
            "/a -> /b: Invalid cross-device link (EXDEV)",
        ),
        (OSError(28, "No space left on device"), "No space left on device (ENOSPC)"),
        (
            OSError(30, "Read-only file system", b"/r\xffo"),
            "/r\\udcffo: Read-only file system (EROFS)",
        ),
        (
            OSError(36, "File name too long", "/x\ny\x1b[2J"),
            "/x\\ny\\x1b[2J: File name too long (ENAMETOOLONG)",
        ),
        (OSError("no errno"), "no errno"),
    ],
)
def test_os_problem_is_one_printable_line(exc, line):
    from ctxward.errors import os_problem

    assert os_problem(exc) == line


def test_group_maps_expected_failures_in_cli_runner(invoke):
    result = invoke("plan", "complete", "nothing-here")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr == (
        "ctxward: error: no active plan 'nothing-here' (no docs/plans/nothing-here/invariants.md)\n"
    )


# --- activate -------------------------------------------------------------------------------


def test_activate_prints_what_it_did(invoke, make_skill):
    make_skill("release", ["one", "two"])

    first = invoke("activate", "release", "--slug", "v2")
    again = invoke("activate", "release", "--slug", "v2")

    assert first.exit_code == 0
    assert first.stdout == "added release (2 rules) in docs/plans/v2/invariants.md on branch main\n"
    assert again.stdout.startswith("replaced release (2 rules)")


def test_activate_json(invoke, make_skill):
    make_skill("release", ["one", "two"])

    result = invoke("activate", "release", "--slug", "v2", "--json")

    assert result.exit_code == 0
    assert json.loads(result.stdout) == {
        "path": "docs/plans/v2/invariants.md",
        "skill": "release",
        "rules": ["one", "two"],
        "replaced": False,
        "branch": "main",
        "trusted": True,
    }


def test_activate_uses_claude_project_dir(project, make_skill, monkeypatch):
    make_skill("release")
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(project))

    result = CliRunner().invoke(cli, ["activate", "release", "--slug", "v2"])

    assert result.exit_code == 0
    assert (project / "docs" / "plans" / "v2" / "invariants.md").is_file()


# --- plan list / complete / clean -----------------------------------------------------------


@pytest.fixture
def plans(project, make_skill, activate_skill):
    make_skill("alpha", ["a1", "a2"])
    make_skill("beta", ["b1"])
    activate_skill("alpha", "one")
    activate_skill("beta", "one")
    activate_skill("beta", "two")
    return project / "docs" / "plans"


def test_plan_list_empty(invoke):
    result = invoke("plan", "list")
    assert result.exit_code == 0
    assert result.stdout == "no active plans (activate one: ctxward activate SKILL --slug SLUG)\n"
    assert json.loads(invoke("plan", "list", "--json").stdout) == []


def test_plan_list(invoke, plans):
    result = invoke("plan", "list")

    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    header = ["SLUG", "SKILLS", "RULES", "BRANCH", "PAYLOAD", "FINGERPRINT", "TRUSTED"]
    assert lines[0].split() == header
    assert [line.split() for line in lines[1:]] == [
        ["one", "alpha,beta", "3", "main", "missing", of_rules(["a1", "a2", "b1"])[:12], "yes"],
        ["two", "beta", "1", "main", "missing", of_rules(["b1"])[:12], "yes"],
    ]


def test_plan_list_leaves_out_a_broken_plan_with_a_warning(invoke, plans, project):
    broken = project / "docs" / "plans" / "broken"
    broken.mkdir()
    (broken / "invariants.md").write_bytes(b"## x\n\xff\n")

    result = invoke("plan", "list")
    as_json = invoke("plan", "list", "--json")

    assert (result.exit_code, as_json.exit_code) == (0, 0)
    assert [line.split()[0] for line in result.stdout.splitlines()[1:]] == ["one", "two"]
    assert result.stderr == (
        "ctxward: warning: docs/plans/broken/invariants.md: not UTF-8 (byte 5); left out of "
        "this list (`ctxward doctor` checks every plan)\n"
    )
    assert [plan["slug"] for plan in json.loads(as_json.stdout)] == ["one", "two"]


def test_plan_list_json_tracks_payload_freshness(invoke, plans, run_hook, load_payload, make_skill):
    run_hook(load_payload("PreCompact.json"))
    make_skill("beta", ["b1 changed"])
    invoke("activate", "beta", "--slug", "two")

    result = invoke("plan", "list", "--json")

    assert result.exit_code == 0
    assert json.loads(result.stdout) == [
        {
            "slug": "one",
            "skills": ["alpha", "beta"],
            "rules": 3,
            "branches": ["main"],
            "payload": "fresh",
            "path": "docs/plans/one/invariants.md",
            "trusted": True,
            "fingerprint": of_rules(["a1", "a2", "b1"]),
            "rule_fingerprints": [fingerprint(rule)[:12] for rule in ("a1", "a2", "b1")],
        },
        {
            "slug": "two",
            "skills": ["beta"],
            "rules": 1,
            "branches": ["main"],
            "payload": "stale",
            "path": "docs/plans/two/invariants.md",
            "trusted": True,
            "fingerprint": of_rules(["b1 changed"]),
            "rule_fingerprints": [fingerprint("b1 changed")[:12]],
        },
    ]


def test_plan_complete_removes_only_the_invariants_and_payload(
    invoke, plans, run_hook, load_payload
):
    run_hook(load_payload("PreCompact.json"))
    (plans / "one" / "plan.md").write_text("the plan itself stays\n")

    result = invoke("plan", "complete", "one")

    assert result.exit_code == 0
    assert result.stdout == (
        "completed one: removed docs/plans/one/.compaction-payload.md, "
        "docs/plans/one/invariants.md\n"
    )
    assert sorted(p.name for p in (plans / "one").iterdir()) == ["plan.md"]
    assert (plans / "two" / "invariants.md").is_file()
    assert (plans / "two" / ".compaction-payload.md").is_file()


def test_plan_complete_removes_an_emptied_folder(invoke, plans):
    assert invoke("plan", "complete", "two").stdout == (
        "completed two: removed docs/plans/two/invariants.md\n"
    )
    assert not (plans / "two").exists()
    assert invoke("plan", "complete", "two").exit_code == 2


def test_completed_plan_is_no_longer_reinjected(invoke, plans, run_hook, load_payload):
    invoke("plan", "complete", "one")
    invoke("plan", "complete", "two")
    assert run_hook(load_payload("SessionStart.compact.json")) == (0, "", "")


@pytest.fixture
def branches(project, make_skill, git, invoke):
    """Plans on main, on feature/gone (deleted afterwards), on feature/kept, and with no branch."""
    make_skill("alpha")
    git(project, "commit", "-q", "--allow-empty", "-m", "init")
    invoke("activate", "alpha", "--slug", "on-main")
    for branch, slug in (("feature/gone", "gone"), ("feature/kept", "kept")):
        git(project, "checkout", "-q", "-b", branch)
        invoke("activate", "alpha", "--slug", slug)
        git(project, "checkout", "-q", "main")
    git(project, "branch", "-q", "-D", "feature/gone")
    no_branch = project / "docs" / "plans" / "no-branch"
    no_branch.mkdir()
    (no_branch / "invariants.md").write_text("# Active Invariants\n\n## x\n\n### Rules\n\n- r\n")
    return project / "docs" / "plans"


def test_plan_clean_dry_run_removes_nothing(invoke, branches, snapshot):
    before = snapshot(branches)

    result = invoke("plan", "clean", "--dry-run")

    assert result.exit_code == 0
    assert result.stdout == "would complete gone (branch feature/gone no longer exists)\n"
    assert snapshot(branches) == before


def test_plan_clean_completes_plans_whose_branch_is_gone(invoke, branches):
    result = invoke("plan", "clean")

    assert result.exit_code == 0
    assert result.stdout == "completed gone (branch feature/gone no longer exists)\n"
    assert sorted(p.name for p in branches.iterdir()) == ["kept", "no-branch", "on-main"]
    assert invoke("plan", "clean").stdout == "no plan has lost its branch\n"


def test_plan_clean_keeps_the_plan_of_the_current_unborn_branch(invoke, project, make_skill):
    make_skill("alpha")
    invoke("activate", "alpha", "--slug", "fresh-repo")  # no commit yet: main is unborn
    assert invoke("plan", "clean").stdout == "no plan has lost its branch\n"
    assert (project / "docs" / "plans" / "fresh-repo" / "invariants.md").is_file()


# --- packs, config, compactions, hook -------------------------------------------------------


def test_packs_lists_the_six_shipped_packs(invoke):
    result = invoke("packs")
    assert result.exit_code == 0
    assert [line.split()[0] for line in result.stdout.splitlines()] == [
        "compaction-resilience",
        "context-governance",
        "deep-auto",
        "deep-execute",
        "deep-plan",
        "deep-review",
    ]
    assert all(re.search(r" \d+ rules ", line) for line in result.stdout.splitlines())


def test_config_show_defaults(invoke):
    result = invoke("config", "show")
    assert result.exit_code == 0
    assert result.stdout.startswith("# settings in force (defaults: no .ctxward/config.yaml)\n")
    assert "  capacity_bytes: 262144\n" in result.stdout
    settings = json.loads(invoke("config", "show", "--json").stdout)
    assert settings["dispatch"]["capacity_bytes"] == 262_144
    assert settings["injection"]["limit_chars"] == 9_000
    assert settings["source"] is None


def test_config_show_bad_file_is_exit_2(invoke, project):
    (project / ".ctxward").mkdir()
    (project / ".ctxward" / "config.yaml").write_text("dispatch: {capacity_bytes: 999999}\n")

    result = invoke("config", "show")

    assert result.exit_code == 2
    assert result.stderr == (
        "ctxward: error: .ctxward/config.yaml: dispatch.capacity_bytes: "
        "999999 is outside 1024..262144\n"
    )


def test_compactions_lists_survival_reports(invoke, plans, run_hook, load_payload):
    assert invoke("compactions", "--json").stdout.strip() == "[]"
    run_hook(load_payload("PostCompact.json", compact_summary="<summary>A1 and b1</summary>"))

    (report,) = json.loads(invoke("compactions", "--json").stdout)

    assert report["path"].startswith(".ctxward/compactions/")
    assert [ref["rule"] for ref in report["survived"]] == ["a1", "b1", "b1"]
    assert [ref["rule"] for ref in report["missing"]] == ["a2"]


@pytest.mark.parametrize(
    "event, fixture",
    [("pre-compact", "PreCompact.json"), ("session-start", "SessionStart.compact.json")],
)
def test_hook_runs_one_event_by_hand(invoke, plans, load_payload, event, fixture, monkeypatch):
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(plans.parent.parent))

    result = invoke("hook", event, stdin=json.dumps(load_payload(fixture)))

    assert result.exit_code == 0
    assert "a1" in result.stdout
    assert result.stderr == ""


def test_hook_refuses_another_events_payload(invoke, load_payload):
    result = invoke("hook", "pre-compact", stdin=json.dumps(load_payload("PostCompact.json")))

    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == (
        "ctxward: PreCompact: this hook handles PreCompact, but the payload is for PostCompact\n"
    )


def test_hook_with_an_unknown_event_is_a_usage_error(capsys):
    assert main(["hook", "notification"]) == 2


# --- demo -----------------------------------------------------------------------------------


def test_demo_shows_the_four_steps_quickly(record_property):
    started = time.perf_counter()
    result = CliRunner().invoke(cli, ["demo"])
    seconds = time.perf_counter() - started
    record_property("demo_seconds", round(seconds, 3))

    assert result.exit_code == 0, result.output
    steps = re.findall(r"^== (\d)\. (.+)$", result.stdout, re.MULTILINE)
    assert [number for number, _ in steps] == ["1", "2", "3", "4"]
    assert steps[0][1].startswith("ctxward activate deep-plan --slug demo")
    assert steps[1][1] == "PreCompact (trigger auto) -> exit 0"
    assert steps[2][1] == "SessionStart (source compact) -> exit 0"
    assert steps[3][1] == "PostCompact (trigger auto) -> exit 0, stdout ''"
    assert "COMPACTION RESILIENCE" in result.stdout
    assert '"missing": [' in result.stdout
    assert "a temporary folder, removed afterwards" in result.stdout
    assert seconds < 3.0  # the documented budget; it takes about 0.2 s


def test_demo_keep_leaves_the_project(tmp_path):
    kept = tmp_path / "demo-project"

    result = CliRunner().invoke(cli, ["demo", "--keep", str(kept)])

    assert result.exit_code == 0, result.output
    assert f"project: {kept.resolve()}\n" in result.stdout
    plan = kept / "docs" / "plans" / "demo"
    assert "## deep-plan" in (plan / "invariants.md").read_text(encoding="utf-8")
    assert (plan / ".compaction-payload.md").is_file()
    (report,) = (kept / ".ctxward" / "compactions").iterdir()
    assert len(json.loads(report.read_text(encoding="utf-8"))["missing"]) == 2


def test_demo_keep_refuses_a_folder_with_files(tmp_path):
    kept = tmp_path / "busy"
    kept.mkdir()
    (kept / "precious.txt").write_text("mine")

    result = CliRunner().invoke(cli, ["demo", "--keep", str(kept)])

    assert result.exit_code == 1
    assert "not empty" in result.stderr
    assert sorted(p.name for p in kept.iterdir()) == ["precious.txt"]


def test_importing_the_cli_loads_no_capability_command_module():
    """`ctxward hook` (the OpenCode plugin's entry) pays for no other command's imports."""
    import subprocess
    import sys

    probe = (
        "import sys, ctxward.cli; "
        "print(sorted(m for m in sys.modules if m.startswith('ctxward.commands.')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=30
    ).stdout
    assert out.strip() == "[]"
