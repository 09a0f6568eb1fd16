"""`ctxward install` / `uninstall`: merge into the host's file, touch nothing else, undo exactly."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxward.cli import cli
from ctxward.core.project import Project
from ctxward.errors import BadInput, CtxwardError
from ctxward.hosts import claude_version as claudeversion
from ctxward.hosts import codex as codex_host
from ctxward.hosts import settings as host_settings
from ctxward.hosts import wiring as hookcommand
from ctxward.hosts.claude_version import ClaudeVersion
from ctxward.setup import install

REPO = Path(__file__).resolve().parents[2]
NEW = ClaudeVersion((2, 1, 332), "override")
OLD = ClaudeVersion((2, 0, 77), "override")
# What `locate` gives these tests: this machine's program, as install would bake it.
BAKED = {"claude": "/opt/ctxward/bin/ctxward-hook", "codex": "/opt/ctxward/bin/ctxward-hook"}
BAKED["opencode"] = "/opt/ctxward/bin/ctxward"
USER_FILE = """{
    "permissions": {"allow": ["Bash(ls)"]},
    "hooks": {
        "PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "my-guard"}]}
        ]
    },
    "model": "opus"
}
"""


def example() -> dict:
    return json.loads((REPO / "settings.example.json").read_text(encoding="utf-8"))["hooks"]


def canonical(baked: str | None = None) -> dict:
    """What install writes for Claude Code: portable (project scope) or with `baked`."""
    return host_settings.wiring_for("claude", baked)


def settings_file(project: Path, text: str | None = None) -> Path:
    path = project / ".claude" / "settings.json"
    if text is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return path


def run(project: Path, *, version: ClaudeVersion = NEW, host: str = "claude", **kwargs):
    if host == "claude":
        kwargs["claude_version"] = version
    kwargs.setdefault("locate", BAKED.get)
    return install.install(host, kwargs.pop("scope", "project"), Project(project), **kwargs)


def undo(project: Path, host: str = "claude", **kwargs):
    return install.uninstall(host, kwargs.pop("scope", "project"), Project(project), **kwargs)


def backups(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.ctxward-backup"))


# --- the one source of the wiring -----------------------------------------------------------


def test_the_claude_wiring_is_settings_example_json_with_the_rendered_commands():
    assert host_settings.canonical_wiring() == example()
    for baked in (None, BAKED["claude"]):
        wiring = canonical(baked)
        assert list(wiring) == list(example())
        for event, groups in wiring.items():
            for group, source in zip(groups, example()[event], strict=True):
                (handler,) = group["hooks"]
                assert {**handler, "command": "ctxward-hook"} == source["hooks"][0]
                assert {k: v for k, v in group.items() if k != "hooks"} == {
                    k: v for k, v in source.items() if k != "hooks"
                }
                parsed = hookcommand.parse("claude", event, handler["command"])
                assert parsed == hookcommand.HookCommand("claude", event, baked)


def test_every_wired_event_has_a_known_first_claude_code_version():
    for event in example():
        assert claudeversion.EVENT_SINCE.get(event) is not None, event


def test_the_codex_example_is_the_portable_codex_wiring():
    codex_example = json.loads((REPO / "examples/codex/hooks.json").read_text(encoding="utf-8"))
    assert codex_example == {"hooks": host_settings.codex_wiring()}
    for event, groups in codex_example["hooks"].items():
        wanted = [codex_host.MATCHERS.get(event, g.get("matcher")) for g in example()[event]]
        assert [g.get("matcher") for g in groups] == wanted
    matcher = codex_example["hooks"]["PreToolUse"][0]["matcher"]
    assert matcher == "spawn_agent|multi_agent_v1send_input|send_input"


def test_the_wheel_ships_what_install_reads():
    pyproject = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    assert '"settings.example.json" = "ctxward/data/settings.example.json"' in pyproject
    assert '"hooks/opencode/ctxward.js" = "ctxward/data/hooks/opencode/ctxward.js"' in pyproject
    assert host_settings.opencode_plugin_path() == REPO / "hooks" / "opencode" / "ctxward.js"


# --- versions --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "version"),
    [
        ("2.1.332 (Claude Code)", (2, 1, 332)),
        ("claude 1.0.48\n", (1, 0, 48)),
        ("no version here", None),
        ("", None),
    ],
)
def test_parse_version(text, version):
    assert claudeversion.parse_version(text) == version


def fake_claude(tmp_path: Path, body: str) -> Path:
    folder = tmp_path / "bin"
    folder.mkdir(exist_ok=True)
    script = folder / "claude"
    script.write_text(f"#!/bin/sh\n{body}\n", encoding="utf-8")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return folder


def test_version_is_detected_with_claude_version(tmp_path, monkeypatch):
    folder = fake_claude(tmp_path, 'echo "2.1.80 (Claude Code)"')
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    found = claudeversion.detect()
    assert (found.version, found.source, found.detail) == (
        (2, 1, 80),
        "detected",
        str(folder / "claude"),
    )


def test_the_native_launcher_answers_when_claude_is_not_on_path(tmp_path, monkeypatch):
    launcher = tmp_path / "home" / ".local" / "bin"
    launcher.mkdir(parents=True)
    fake_claude(tmp_path, 'echo "2.1.90 (Claude Code)"').joinpath("claude").rename(
        launcher / "claude"
    )
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    found = claudeversion.detect()
    assert (found.version, found.source) == ((2, 1, 90), "detected")


def write_transcript(home: Path, name: str, version: str, age: float) -> Path:
    path = home / ".claude" / "projects" / "-work-x" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [{"type": "user", "version": "1.0.0"}, {"type": "assistant", "version": version}]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    moment = path.stat().st_mtime - age
    os.utime(path, (moment, moment))
    return path


def test_without_a_claude_the_version_is_read_from_what_claude_code_recorded(tmp_path, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert claudeversion.detect().source == "unknown"
    (home / ".claude.json").write_text('{"firstStartVersion": "2.0.70"}', encoding="utf-8")
    first = claudeversion.detect()
    assert (first.version, first.source, first.at_least) == ((2, 0, 70), "recorded", True)
    assert first.knows("PostCompact") is None  # upgraded since? a lower bound cannot say
    assert first.knows("PreCompact") is True
    newest = write_transcript(home, "b.jsonl", "2.1.332", age=0)
    write_transcript(home, "a.jsonl", "2.0.10", age=3600)
    found = claudeversion.detect()
    assert (found.version, found.source, found.detail) == ((2, 1, 332), "recorded", str(newest))
    versions = home / ".local" / "share" / "claude" / "versions"
    versions.mkdir(parents=True)
    for name in ("2.1.300", "2.1.310", "notes.txt"):
        (versions / name).write_text("", encoding="utf-8")
    native = claudeversion.detect()
    assert (native.version, native.source) == ((2, 1, 310), "recorded")


def test_an_unknown_version_is_not_guessed(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    found = claudeversion.detect()
    assert (found.version, found.source, found.text) == (None, "unknown", "unknown")
    assert "not on PATH" in found.detail
    assert found.knows("PostCompact") is None


def test_a_failing_claude_is_named_when_nothing_else_answers(tmp_path, monkeypatch):
    folder = fake_claude(tmp_path, "echo boom >&2; exit 3")
    monkeypatch.setenv("PATH", str(folder))
    found = claudeversion.detect()
    assert (found.version, found.source) == (None, "unknown")
    assert "exit 3: boom" in found.detail


def test_version_override():
    assert claudeversion.detect("2.1.76").version == (2, 1, 76)
    with pytest.raises(BadInput, match="not a version"):
        claudeversion.detect("latest")


def test_an_unknown_version_wires_every_event_and_says_so(project):
    unknown = ClaudeVersion(None, "unknown", "`claude` is not on PATH")
    result = run(project, version=unknown)
    hooks = json.loads(settings_file(project).read_text(encoding="utf-8"))["hooks"]
    assert list(hooks) == list(example())  # PostCompact included
    assert any("version was not found, so every event is wired" in w for w in result.warnings)


# --- where -----------------------------------------------------------------------------------


def test_config_paths(project, tmp_path):
    p = Project(project)
    home = tmp_path / "home"
    env = {"HOME": str(home)}
    assert (
        host_settings.config_path("claude", "project", p, env) == project / ".claude/settings.json"
    )
    assert (
        host_settings.config_path("claude", "local", p, env)
        == project / ".claude/settings.local.json"
    )
    assert host_settings.config_path("claude", "user", p, env) == home / ".claude/settings.json"
    moved = {**env, "CLAUDE_CONFIG_DIR": str(tmp_path / "cc")}
    assert host_settings.config_path("claude", "user", p, moved) == tmp_path / "cc/settings.json"
    assert host_settings.config_path("codex", "project", p, env) == project / ".codex/hooks.json"
    assert host_settings.config_path("codex", "user", p, env) == home / ".codex/hooks.json"
    codex_home = {**env, "CODEX_HOME": str(tmp_path / "cx")}
    assert host_settings.config_path("codex", "user", p, codex_home) == tmp_path / "cx/hooks.json"
    assert host_settings.config_path("opencode", "project", p, env) == (
        project / ".opencode/plugin/ctxward.js"
    )
    assert host_settings.config_path("opencode", "user", p, env) == (
        home / ".config/opencode/plugin/ctxward.js"
    )
    with pytest.raises(BadInput, match="unknown scope 'local'"):
        host_settings.config_path("codex", "local", p, env)


# --- what counts as ctxward's ----------------------------------------------------------------


def test_ctxward_handlers_are_recognised_by_their_command(tmp_path):
    checkout = tmp_path / "checkout"
    (checkout / "lib" / "ctxward").mkdir(parents=True)
    (tmp_path / "other" / "hooks").mkdir(parents=True)
    ours = [
        *(
            {"type": "command", "command": hookcommand.render(host, "SessionStart", baked)}
            for host in ("claude", "codex")
            for baked in (None, "/x y/bin/prog")
        ),
        {"type": "command", "command": "ctxward-hook"},
        {"type": "command", "command": "/home/u/.local/bin/ctxward-hook", "timeout": 5},
        {"type": "command", "command": "ctxward hook pre-compact --host codex"},
        {"command": "python3", "args": [f"{checkout}/hooks/pre_compact.py"]},
        {"type": "command", "command": f"python3 {checkout}/hooks/pre_tool_use.py"},
    ]
    theirs = [
        {"type": "command", "command": "my-guard"},
        {"type": "command", "command": "ctxward"},
        {"type": "command", "command": "echo ctxward-hook-ish"},
        {
            "type": "command",
            "command": "python3",
            "args": ["${CLAUDE_PLUGIN_ROOT}/hooks/pre_compact.py"],
        },
        {"type": "command", "command": f"python3 {tmp_path}/other/hooks/pre_compact.py"},
        {"type": "http", "url": "http://x/ctxward-hook"},
    ]
    assert [host_settings.identifies_ctxward(h) for h in ours] == [True] * len(ours)
    assert [host_settings.identifies_ctxward(h) for h in theirs] == [False] * len(theirs)


# --- install / uninstall: Claude Code ---------------------------------------------------------


def test_install_creates_the_settings_file(project):
    result = run(project)
    path = settings_file(project)
    assert result.written and not result.existed and result.backup is None
    assert result.program is None  # .claude/settings.json is for the repository
    assert json.loads(path.read_text(encoding="utf-8")) == {"hooks": canonical()}
    assert path.read_text(encoding="utf-8").startswith('{\n  "hooks": {\n    "PreCompact": [')
    assert [c.action for c in result.changes] == ["added"] * len(canonical())


def test_install_merges_and_keeps_every_other_byte(project):
    path = settings_file(project, USER_FILE)
    result = run(project)
    text = path.read_text(encoding="utf-8")
    # Untouched values are copied verbatim; the changed containers use the file's 4 spaces.
    assert text.startswith(
        '{\n    "permissions": {"allow": ["Bash(ls)"]},\n    "hooks": {\n        "PreToolUse": [\n'
        '            {"matcher": "Bash", "hooks": [{"type": "command", "command": "my-guard"}]},\n'
        "            {\n"
        '                "matcher": "Agent|Task",\n'
    )
    assert text.endswith('    },\n    "model": "opus"\n}\n')
    data = json.loads(text)
    assert list(data) == ["permissions", "hooks", "model"]
    assert data["hooks"]["PreToolUse"][0] == {
        "matcher": "Bash",
        "hooks": [{"type": "command", "command": "my-guard"}],
    }
    assert data["hooks"]["PreToolUse"][1:] == canonical()["PreToolUse"]
    (backup,) = backups(path.parent)
    assert result.backup == backup
    assert backup.read_text(encoding="utf-8") == USER_FILE


def test_install_twice_changes_nothing(project, snapshot):
    settings_file(project, USER_FILE)
    run(project)
    before = snapshot(project / ".claude")
    result = run(project)
    assert snapshot(project / ".claude") == before  # same bytes, inode and mtime: not rewritten
    assert not result.changed and not result.written and result.backup is None
    assert {c.action for c in result.changes} == {"unchanged"}


def test_uninstall_restores_the_original_bytes_with_one_rolling_backup(project):
    path = settings_file(project, USER_FILE)
    run(project)
    installed = path.read_text(encoding="utf-8")
    run(project, version=OLD)  # a change: the backup now holds the first install's bytes
    result = undo(project)
    assert path.read_text(encoding="utf-8") == USER_FILE
    assert {c.action for c in result.changes} == {"removed"}
    (backup,) = backups(path.parent)
    assert backup == path.with_name("settings.json.ctxward-backup") == result.backup
    assert backup.read_text(encoding="utf-8") != installed  # the bytes just before uninstall
    assert "hooks" in json.loads(backup.read_text(encoding="utf-8"))


def test_uninstall_drops_the_hooks_object_install_created(project):
    path = settings_file(project, '{\n  "model": "opus"\n}\n')
    run(project)
    undo(project)
    assert path.read_text(encoding="utf-8") == '{\n  "model": "opus"\n}\n'


def test_uninstall_of_a_file_without_ctxward_writes_nothing(project, snapshot):
    settings_file(project, USER_FILE)
    before = snapshot(project / ".claude")
    result = undo(project)
    assert not result.changed and result.changes == []
    assert snapshot(project / ".claude") == before


@pytest.mark.parametrize("scope", ["project", "local"])
def test_uninstall_removes_the_file_install_created(project, scope):
    run(project, scope=scope)
    run(project, scope=scope, version=OLD)  # an update: a backup of install's own bytes
    path = host_settings.config_path("claude", scope, Project(project))
    assert path.exists() and backups(path.parent)
    result = undo(project, scope=scope)
    assert result.removed and not path.exists()
    assert backups(path.parent) == []  # no `{}`, no backup of a file that was only ctxward's
    assert "removed " + result.label in invoke_text(result)


def invoke_text(result) -> str:
    from ctxward.core.render import render

    return render(
        "setup/install_result.txt.j2",
        r=result,
        diff=[],
        backup="",
        state_ignore="",
        git_excluded="",
        left_out=False,
    )


def test_a_crlf_file_keeps_its_line_endings_and_every_other_byte(project):
    original = USER_FILE.replace("\n", "\r\n")
    path = settings_file(project)
    path.parent.mkdir(parents=True)
    path.write_bytes(original.encode("utf-8"))
    run(project)
    written = path.read_bytes()
    assert b"\r\n" in written and b"\n" not in written.replace(b"\r\n", b"")
    assert written.startswith(b'{\r\n    "permissions": {"allow": ["Bash(ls)"]},\r\n')
    assert json.loads(written)["hooks"]["PreToolUse"][1:] == canonical()["PreToolUse"]
    undo(project)
    assert path.read_bytes() == original.encode("utf-8")


def test_uninstall_of_a_missing_file_is_a_no_op(project):
    result = undo(project)
    assert not result.changed and not settings_file(project).exists()


@pytest.mark.parametrize(
    ("original", "indent"),
    [
        ('{\n\t"model": "opus"\n}', "\t"),
        ('{\n  "model": "opus"\n}\n', "  "),
        ('{"model": "opus"}', None),
        ('{"model":"opus"}', None),
    ],
)
def test_indentation_and_final_newline_are_kept(project, original, indent):
    path = settings_file(project, original)
    run(project)
    text = path.read_text(encoding="utf-8")
    assert text.endswith("\n") == original.endswith("\n")
    if indent is None:
        assert "\n" not in text.strip()
        assert ('"model":"opus"' in text) == ('"model":"opus"' in original)
    else:
        assert f'\n{indent}"hooks": {{\n{indent}{indent}"PreCompact"' in text
    undo(project)
    assert path.read_text(encoding="utf-8") == original


def test_escapes_and_numbers_outside_ctxward_entries_are_kept(project):
    original = '{\n  "name": "caf\\u00e9",\n  "n": 1e3,\n  "hooks": {}\n}\n'
    path = settings_file(project, original)
    run(project)
    text = path.read_text(encoding="utf-8")
    assert '"name": "caf\\u00e9",\n  "n": 1e3,' in text


def test_an_older_ctxward_entry_is_replaced_in_place(project):
    old = {
        "hooks": {
            "PreToolUse": [
                {"matcher": "Task", "hooks": [{"type": "command", "command": "ctxward-hook"}]},
                {"matcher": "Bash", "hooks": [{"type": "command", "command": "my-guard"}]},
            ]
        }
    }
    path = settings_file(project, json.dumps(old, indent=2))
    result = run(project)
    groups = json.loads(path.read_text(encoding="utf-8"))["hooks"]["PreToolUse"]
    assert groups == [*canonical()["PreToolUse"], old["hooks"]["PreToolUse"][1]]
    assert ("PreToolUse", "updated") in [(c.event, c.action) for c in result.changes]


def test_a_shared_group_keeps_the_users_handler(project):
    mixed = {
        "hooks": {
            "SessionStart": [
                {
                    "matcher": "compact",
                    "hooks": [
                        {"type": "command", "command": "ctxward-hook"},
                        {"type": "command", "command": "their-tool restore"},
                    ],
                }
            ]
        }
    }
    path = settings_file(project, json.dumps(mixed))
    run(project)
    groups = json.loads(path.read_text(encoding="utf-8"))["hooks"]["SessionStart"]
    assert groups == [
        {"matcher": "compact", "hooks": [{"type": "command", "command": "their-tool restore"}]},
        *canonical()["SessionStart"],
    ]
    undo(project)
    after = json.loads(path.read_text(encoding="utf-8"))["hooks"]["SessionStart"]
    assert after == [groups[0]]  # ctxward's part of the shared group went with the install


def test_events_the_claude_code_version_does_not_know_are_left_out(project):
    path = settings_file(project)
    result = run(project, version=OLD)
    assert "PostCompact" not in json.loads(path.read_text(encoding="utf-8"))["hooks"]
    skipped = [c for c in result.changes if c.action == "skipped"]
    assert [(c.event, c.reason) for c in skipped] == [
        ("PostCompact", "needs Claude Code >= 2.1.76")
    ]
    run(project, version=NEW)
    assert "PostCompact" in json.loads(path.read_text(encoding="utf-8"))["hooks"]
    downgrade = run(project, version=OLD)  # ctxward's own PostCompact entry would disable the file
    assert "PostCompact" not in json.loads(path.read_text(encoding="utf-8"))["hooks"]
    assert ("PostCompact", "removed") in [(c.event, c.action) for c in downgrade.changes]


def test_post_tool_use_failure_needs_2_0_56(project):
    path = settings_file(project)
    older = ClaudeVersion((2, 0, 55), "override")
    result = run(project, version=older)
    hooks = json.loads(path.read_text(encoding="utf-8"))["hooks"]
    assert "PostToolUse" in hooks and "PostToolUseFailure" not in hooks
    skipped = [(c.event, c.reason) for c in result.changes if c.action == "skipped"]
    assert ("PostToolUseFailure", "needs Claude Code >= 2.0.56") in skipped
    run(project, version=ClaudeVersion((2, 0, 56), "override"))
    assert "PostToolUseFailure" in json.loads(path.read_text(encoding="utf-8"))["hooks"]


def test_when_every_event_is_left_out_nothing_is_added(project, monkeypatch):
    wiring = {"PostCompact": host_settings.canonical_wiring()["PostCompact"]}
    monkeypatch.setattr(host_settings, "canonical_wiring", lambda: wiring)
    path = settings_file(project, '{"model": "opus"}\n')
    result = run(project, version=OLD)
    assert not result.changed and path.read_text(encoding="utf-8") == '{"model": "opus"}\n'


def test_another_tools_unknown_event_is_left_alone_but_named(project):
    theirs = {"hooks": {"PostCompact": [{"hooks": [{"type": "command", "command": "x"}]}]}}
    path = settings_file(project, json.dumps(theirs))
    result = run(project, version=OLD)
    assert (
        json.loads(path.read_text(encoding="utf-8"))["hooks"]["PostCompact"]
        == (theirs["hooks"]["PostCompact"])
    )
    assert any("names PostCompact" in w and "ignores every hook" in w for w in result.warnings)


def test_a_wired_event_without_a_known_first_version_is_refused(project, monkeypatch):
    monkeypatch.setattr(host_settings, "canonical_wiring", lambda: {"Brand": [{"hooks": []}]})
    with pytest.raises(CtxwardError, match="Brand"):
        run(project)
    assert not settings_file(project).exists()


def test_dry_run_writes_nothing_and_shows_the_diff(project, snapshot):
    settings_file(project, USER_FILE)
    before = snapshot(project / ".claude")
    result = run(project, dry_run=True)
    assert result.changed and not result.written
    assert snapshot(project / ".claude") == before
    lines = install.diff(result)
    assert lines[0] == "--- .claude/settings.json (now)"
    assert '+                "matcher": "Agent|Task",' in lines


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{\n  // my hooks\n  "model": "opus"\n}\n', "has a comment at line 2"),
        ('{"model": "opus" /* x */}', "has a comment at line 1"),
        ('{"model": "opus",}', "not valid JSON (Expecting property name"),
        ("[1, 2]", "is a JSON list, not an object"),
        ('{"hooks": []}', "'hooks' is a list, not an object"),
        ('{"hooks": {"PreCompact": {}}}', "hooks.PreCompact is a object, not a list"),
        ('{"hooks": {"PreCompact": [{"hooks": "x"}]}}', "hooks.PreCompact[0].hooks is not a list"),
        ('{"hooks": {"PreCompact": [{"hooks": [1]}]}}', "hooks.PreCompact[0].hooks[0] is not an"),
        ('{"model": "a", "model": "b"}', "the key 'model' appears twice"),
    ],
)
def test_files_that_cannot_be_merged_safely_are_refused(project, snapshot, text, message):
    settings_file(project, text)
    before = snapshot(project / ".claude")
    with pytest.raises(BadInput) as caught:
        run(project)
    assert message in str(caught.value)
    assert str(caught.value).startswith(".claude/settings.json: ")
    assert snapshot(project / ".claude") == before


def test_a_url_in_a_string_is_not_a_comment(project):
    path = settings_file(project, '{"apiKeyHelper": "curl https://x//y"}')
    run(project)
    assert json.loads(path.read_text(encoding="utf-8"))["apiKeyHelper"] == "curl https://x//y"


def test_non_utf8_and_symlinked_files_are_refused(project, tmp_path):
    path = settings_file(project)
    path.parent.mkdir(parents=True)
    path.write_bytes(b'{"model": "\xff"}')
    with pytest.raises(BadInput, match="not UTF-8"):
        run(project)
    path.unlink()
    target = tmp_path / "real.json"
    target.write_text("{}", encoding="utf-8")
    path.symlink_to(target)
    with pytest.raises(BadInput, match="symbolic link"):
        run(project)


def test_user_scope_writes_under_home_with_the_baked_path(project, tmp_path):
    result = run(project, scope="user")
    path = tmp_path / "home" / ".claude" / "settings.json"
    assert json.loads(path.read_text(encoding="utf-8")) == {"hooks": canonical(BAKED["claude"])}
    assert result.program == BAKED["claude"]
    assert not settings_file(project).exists()
    assert result.state_ignore is None and not (project / ".ctxward").exists()


def test_local_scope_is_the_default_and_carries_this_machines_program(project):
    assert host_settings.DEFAULT_SCOPE == {
        "claude": "local",
        "opencode": "project",
        "codex": "project",
        "gemini": "project",
    }
    result = run(project, scope="local")
    assert result.path == project / ".claude" / "settings.local.json"
    data = json.loads(result.path.read_text(encoding="utf-8"))
    assert data == {"hooks": canonical(BAKED["claude"])}
    assert BAKED["claude"] in data["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
    assert not settings_file(project).exists()  # the repository's file: untouched


def test_a_project_file_names_no_path_of_this_machine(project):
    result = run(project, scope="project")
    text = settings_file(project).read_text(encoding="utf-8")
    assert "/opt/ctxward" not in text and str(Path.home()) not in text
    assert '\\"$(command -v ctxward-hook)\\"' in text
    assert any("is for the repository" in w and BAKED["claude"] in w for w in result.warnings)


def test_no_program_found_is_a_warning_and_the_commands_still_fall_back(project):
    result = run(project, scope="local", locate=lambda host: None)
    assert result.program is None
    data = json.loads(result.path.read_text(encoding="utf-8"))
    assert data == {"hooks": canonical()}  # the portable commands: PATH, ~/.local/bin
    assert any(
        "no `ctxward-hook` next to this ctxward or on PATH" in w
        and "every sub-agent call is blocked" in w
        for w in result.warnings
    )


def test_install_bakes_the_program_next_to_the_running_ctxward(tmp_path):
    folder = tmp_path / "venv" / "bin"
    folder.mkdir(parents=True)
    for name in ("ctxward", "ctxward-hook", "python"):
        (folder / name).write_text("#!/bin/sh\n", encoding="utf-8")
        (folder / name).chmod(0o755)
    found = hookcommand.installed_program(
        "claude", argv0=str(folder / "ctxward"), executable="/usr/bin/python3", env={"PATH": ""}
    )
    assert found == str(folder / "ctxward-hook")
    by_interpreter = hookcommand.installed_program(
        "opencode", argv0="-m", executable=str(folder / "python"), env={"PATH": ""}
    )
    assert by_interpreter == str(folder / "ctxward")
    assert (
        hookcommand.installed_program(
            "claude", argv0="/nowhere/ctxward", executable="/nowhere/python", env={"PATH": ""}
        )
        is None
    )


def test_the_state_folder_gets_a_gitignore_once(project, git):
    result = run(project, scope="local")
    ignore = project / ".ctxward" / ".gitignore"
    assert result.state_ignore == ignore
    assert ignore.read_text(encoding="utf-8").splitlines()[-3:] == [
        "*",
        "!.gitignore",
        "!config.yaml",
    ]
    for name in ("config.yaml", "sessions/s.yaml", "compactions/r.json", "offload/x.txt"):
        (project / ".ctxward" / name).parent.mkdir(parents=True, exist_ok=True)
        (project / ".ctxward" / name).write_text("x", encoding="utf-8")
    (project / "docs" / "plans" / "p").mkdir(parents=True)
    (project / "docs" / "plans" / "p" / "invariants.md").write_text("x", encoding="utf-8")
    tracked = git(project, "status", "--porcelain", "--untracked-files=all").splitlines()
    assert sorted(line[3:] for line in tracked if ".ctxward" in line or "docs" in line) == [
        ".ctxward/.gitignore",
        ".ctxward/config.yaml",
        "docs/plans/p/invariants.md",
    ]
    ignore.write_text("# mine\n", encoding="utf-8")
    again = run(project, scope="local", version=OLD)
    assert again.state_ignore is None and ignore.read_text(encoding="utf-8") == "# mine\n"


def test_a_local_file_git_would_commit_is_kept_out_of_this_clone(project, git):
    result = run(project, scope="local")
    exclude = project / ".git" / "info" / "exclude"
    assert result.git_excluded == exclude and not result.warnings
    assert exclude.read_text(encoding="utf-8").splitlines()[-1] == "/.claude/settings.local.json"
    status = git(project, "status", "--porcelain", "--untracked-files=all")
    assert ".claude/settings.local.json" not in status
    again = run(project, scope="local", version=OLD)  # ignored now: nothing added twice
    assert again.git_excluded is None
    assert exclude.read_text(encoding="utf-8").count("settings.local.json") == 1
    shared = run(project, scope="project")  # the repository's file is for git
    assert shared.git_excluded is None
    opencode = run(project, host="opencode")
    assert opencode.git_excluded == exclude
    assert exclude.read_text(encoding="utf-8").splitlines()[-1] == "/.opencode/plugin/ctxward.js"


def test_a_second_wiring_is_a_warning(project):
    settings_file(project, '{"enabledPlugins": {"ctxward@ctxward": true, "other@x": true}}')
    result = run(project, scope="local")
    doubled = [w for w in result.warnings if "every hook would run twice" in w]
    assert doubled == [
        "ctxward's hooks also run from the ctxward@ctxward plugin (enabledPlugins in "
        ".claude/settings.json): every hook would run twice; keep one (ctxward uninstall, or "
        "disable the plugin)"
    ]
    run(project, scope="project")
    again = run(project, scope="local", version=OLD)
    assert any(
        w.startswith("ctxward's hooks also run from .claude/settings.json:") for w in again.warnings
    )


# Property: whatever a user's settings hold, install then uninstall gives back the same bytes.
_names = st.text("abcdefghij-_", min_size=1, max_size=8)
_handler = st.fixed_dictionaries(
    {"type": st.just("command"), "command": _names.map(lambda n: f"tool-{n}")},
    optional={"timeout": st.integers(1, 600)},
)
_group = st.fixed_dictionaries(
    {"hooks": st.lists(_handler, min_size=1, max_size=2)},
    optional={"matcher": st.sampled_from(["Bash", "Agent|Task", "compact", "*", ""])},
)
_events = st.dictionaries(
    st.sampled_from(["PreToolUse", "SessionStart", "PreCompact", "Stop", "Notification"]),
    st.lists(_group, min_size=1, max_size=2),
    min_size=1,
    max_size=3,
)
_settings = st.dictionaries(
    _names, st.one_of(st.integers(), st.text(max_size=5), st.lists(st.booleans(), max_size=2))
).flatmap(
    lambda extra: st.one_of(st.just(extra), _events.map(lambda hooks: {**extra, "hooks": hooks}))
)


@pytest.mark.slow  # a heavy variant: the slow stage (CI) runs it
@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=_settings, indent=st.sampled_from([2, 4, "\t", None]), newline=st.booleans())
def test_install_then_uninstall_is_the_identity(project, data, indent, newline):
    text = json.dumps(data, indent=indent, ensure_ascii=False) + ("\n" if newline else "")
    path = settings_file(project, text)
    run(project)
    installed = json.loads(path.read_text(encoding="utf-8"))
    for event, groups in canonical().items():
        assert installed["hooks"][event][-len(groups) :] == groups
    undo(project)
    if data:
        assert path.read_text(encoding="utf-8") == text
    else:  # `{}` with ctxward's hooks added, then taken out: removed as install created it
        assert not path.exists()
    for backup in backups(path.parent):
        backup.unlink()


# --- Codex -----------------------------------------------------------------------------------


def test_install_codex_writes_the_shared_events(project, tmp_path):
    result = run(project, host="codex")
    path = project / ".codex" / "hooks.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data == {"hooks": host_settings.codex_wiring()}
    assert set(data["hooks"]) == {
        "PreCompact",
        "SessionStart",
        "PostCompact",
        "PreToolUse",
        "PostToolUse",
        "UserPromptSubmit",
    }
    command = data["hooks"]["SessionStart"][0]["hooks"][0]["command"]
    assert command.startswith("/bin/sh -c ") and '"$p" --host codex' in command
    guard = data["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
    assert "exit 2" in guard and "permissionDecision" in guard  # fails closed
    assert any("type /hooks" in warning for warning in result.warnings)
    install.uninstall("codex", "project", Project(project))
    assert not path.exists()
    user = run(project, host="codex", scope="user")
    assert json.loads(user.path.read_text(encoding="utf-8")) == {
        "hooks": host_settings.codex_wiring(BAKED["codex"])
    }


# --- OpenCode --------------------------------------------------------------------------------


def test_install_opencode_copies_the_plugin_with_the_baked_path(project, snapshot):
    result = run(project, host="opencode")
    path = project / ".opencode" / "plugin" / "ctxward.js"
    shipped = (REPO / "hooks" / "opencode" / "ctxward.js").read_text(encoding="utf-8")
    assert path.read_text(encoding="utf-8") == shipped.replace(
        'const INSTALLED_BIN = ""', f'const INSTALLED_BIN = "{BAKED["opencode"]}"'
    )
    assert hookcommand.plugin_baked(shipped, path.read_text(encoding="utf-8")) == (
        True,
        BAKED["opencode"],
    )
    assert [c.action for c in result.changes] == ["added"]
    before = snapshot(path.parent)
    again = run(project, host="opencode")
    assert [c.action for c in again.changes] == ["unchanged"] and not again.written
    assert snapshot(path.parent) == before


def test_install_opencode_updates_an_older_plugin_with_a_backup(project):
    path = project / ".opencode" / "plugin" / "ctxward.js"
    path.parent.mkdir(parents=True)
    path.write_text("// ctxward for OpenCode: an old version\n", encoding="utf-8")
    result = run(project, host="opencode")
    assert [c.action for c in result.changes] == ["updated"]
    assert result.backup is not None
    assert result.backup.read_text(encoding="utf-8").endswith("an old version\n")


def test_install_opencode_refuses_to_overwrite_another_plugin(project):
    path = project / ".opencode" / "plugin" / "ctxward.js"
    path.parent.mkdir(parents=True)
    path.write_text("export const Mine = async () => ({})\n", encoding="utf-8")
    with pytest.raises(BadInput, match="not ctxward's plugin"):
        install.install("opencode", "project", Project(project))
    with pytest.raises(BadInput, match="not ctxward's plugin"):
        install.uninstall("opencode", "project", Project(project))
    assert path.read_text(encoding="utf-8").startswith("export const Mine")


def test_uninstall_opencode_removes_the_plugin_and_keeps_edits_in_a_backup(project):
    run(project, host="opencode")
    path = project / ".opencode" / "plugin" / "ctxward.js"
    result = install.uninstall("opencode", "project", Project(project))
    assert result.removed and not path.exists() and result.backup is None
    assert backups(path.parent) == []
    run(project, host="opencode")
    path.write_text(path.read_text(encoding="utf-8") + "// my edit\n", encoding="utf-8")
    edited = install.uninstall("opencode", "project", Project(project))
    assert not path.exists()
    assert edited.backup is not None and edited.backup.read_text().endswith("// my edit\n")


# --- the CLI ---------------------------------------------------------------------------------


def invoke(project: Path, *args: str):
    return CliRunner().invoke(cli, ["-C", str(project), *args])


def test_cli_install_claude_text(project, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no claude, no ctxward-hook on PATH
    result = invoke(project, "install", "claude")
    assert result.exit_code == 0, result.output
    program = hookcommand.installed_program("claude")
    assert program is not None  # the ctxward-hook next to this interpreter
    lines = result.output.splitlines()
    assert lines[: 3 + len(example())] == [
        "ctxward install claude --scope local: .claude/settings.local.json",
        "Claude Code unknown (not found: `claude` is not on PATH, and no version is recorded "
        f"under {tmp_path / 'home' / '.claude'})",
        f"hooks run {program} (else the one on PATH or in ~/.local/bin)",
        *(f"  {'added':<10} {event}" for event in example()),
    ]
    assert "created .claude/settings.local.json" in result.output
    assert "wrote .ctxward/.gitignore" in result.output
    assert "warning: the Claude Code version was not found, so every event is wired" in (
        result.output
    )
    again = invoke(project, "install", "claude")
    assert (
        "Nothing to do: .claude/settings.local.json already has ctxward's wiring." in again.output
    )


def test_cli_writing_commands_outside_a_project_exit_2_or_work_with_c(tmp_path, monkeypatch):
    folder = tmp_path / "not-a-project"
    folder.mkdir()
    monkeypatch.chdir(folder)
    for args in (["activate", "deep-review", "--slug", "s"], ["install", "claude"]):
        result = CliRunner().invoke(cli, args)
        assert result.exit_code == 2, result.output
        assert result.output.count("\n") == 1 and "is not a project" in result.output
        assert "-C DIR" in result.output
    assert list(folder.iterdir()) == []  # no docs/, no .ctxward/, no .claude/
    folder.joinpath(".ctxward").mkdir()  # -C names it a project; now it works
    done = CliRunner().invoke(cli, ["-C", str(folder), "activate", "deep-review", "--slug", "s"])
    assert done.exit_code == 0, done.output
    assert (folder / "docs" / "plans" / "s" / "invariants.md").is_file()


def test_cli_install_json_and_dry_run(project):
    result = invoke(
        project, "install", "claude", "--claude-version", "2.1.332", "--dry-run", "--json"
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["dryRun"] is True and data["changed"] is True and data["written"] is False
    assert data["claudeVersion"] == {"version": "2.1.332", "source": "override", "detail": None}
    assert [c["event"] for c in data["changes"]] == list(example())
    assert data["scope"] == "local" and data["program"]
    assert not (project / ".claude").exists()


def test_cli_dry_run_prints_a_diff(project):
    result = invoke(project, "install", "codex", "--dry-run")
    assert result.exit_code == 0, result.output
    assert "(dry run: nothing written)" in result.output
    assert "+++ .codex/hooks.json (after install)" in result.output
    assert '+        "matcher": "compact|resume",' in result.output
    assert "+++ .ctxward/.gitignore" not in result.output and "would write" in result.output


def test_cli_refusal_is_one_line_and_exit_2(project):
    settings_file(project, "{\n  // hi\n}\n")
    result = invoke(
        project, "install", "claude", "--scope", "project", "--claude-version", "2.1.332"
    )
    assert result.exit_code == 2
    assert result.output.count("\n") == 1
    assert result.output.startswith(
        "ctxward: error: .claude/settings.json: has a comment at line 2"
    )


def test_cli_bad_claude_version_is_exit_2(project):
    result = invoke(project, "install", "claude", "--claude-version", "soon")
    assert result.exit_code == 2
    assert "not a version like 2.1.76" in result.output


def test_cli_uninstall_every_host(project):
    assert invoke(project, "install", "claude", "--claude-version", "2.1.332").exit_code == 0
    assert invoke(project, "install", "opencode").exit_code == 0
    assert invoke(project, "install", "codex").exit_code == 0
    for host in ("claude", "opencode", "codex"):
        result = invoke(project, "uninstall", host)
        assert result.exit_code == 0, result.output
        assert "removed" in result.output
    assert not (project / ".opencode" / "plugin" / "ctxward.js").exists()


def test_cli_uninstall_help_has_an_example():
    for host in ("claude", "opencode", "codex"):
        result = CliRunner().invoke(cli, ["uninstall", host, "--help"])
        assert f"ctxward uninstall {host} --dry-run" in result.output


@pytest.mark.parametrize("baked", [None, "/it's a/bin/prog", "/a\nb/c", "/x$(touch y)/`id`/p"])
@pytest.mark.parametrize("host", ["claude", "codex"])
def test_every_command_install_writes_is_read_back_exactly(host, baked):
    for event in host_settings.wiring_for(host):
        command = hookcommand.render(host, event, baked)
        assert hookcommand.parse(host, event, command) == hookcommand.HookCommand(
            host, event, baked
        )
        assert host_settings.identifies_ctxward({"type": "command", "command": command})
        assert hookcommand.parse(host, event, command + " ") is None  # exact, or not install's
