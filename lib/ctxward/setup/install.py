"""Wire ctxward into a host, and take it out again, touching nothing else.

Claude Code (`.claude/settings.local.json` of a project, its `.claude/settings.json`, or the
user's `~/.claude/settings.json`) and Codex (`.codex/hooks.json`, `~/.codex/hooks.json`) read
hooks from JSON files of the same shape; OpenCode loads a plugin file from a folder.

What is written comes from one source: the events, matchers and timeouts of settings.example.json
(shipped in the wheel as ctxward/data/settings.example.json), each with the command
`ctxward.hosts.wiring.render` builds for it (`wiring_for`). Codex gets the events it shares with
Claude Code (hosts/codex.py WIRED_EVENTS), its PreToolUse matched on Codex's own sub-agent tools
(`spawn_agent|multi_agent_v1send_input|send_input`). OpenCode gets hooks/opencode/ctxward.js
(shipped as ctxward/data/hooks/opencode/ctxward.js) with the same baked path in its
INSTALLED_BIN line.

Where, by default (`DEFAULT_SCOPE`), and why:

- Claude Code: `local`, `.claude/settings.local.json`. It is this user's file in this project
  (Claude Code keeps it out of git), so its commands carry the absolute path of this machine's
  `ctxward-hook`: the project is guarded whatever PATH the host starts with (an IDE, a desktop
  launcher), and a clone is untouched, so a teammate without ctxward is not affected at all.
  `project` (`.claude/settings.json`) is for a team that commits the wiring: its commands carry
  no machine path, they find `ctxward-hook` on PATH or in ~/.local/bin, and a teammate who has
  neither gets every sub-agent call blocked with a one-line reason and no other error. `user`
  wires every project of this machine (and ctxward's state then appears in every repository
  Claude Code works in).
- Codex: `project` (`.codex/hooks.json`, portable: Codex runs a new hook only once each user
  trusted it); `user` carries the baked path.
- OpenCode: `project` (`.opencode/plugin/ctxward.js`); OpenCode has no per-user file in a
  project, so the plugin carries the baked path in both scopes (and falls back on PATH).

Merging a JSON file (`ctxward.core.jsonedit` reads and writes it back byte for byte, line endings
included):

- ctxward's own handlers are found by their command (`identifies_ctxward`): a command
  `wiring.render` writes (any baked path), `ctxward-hook`, `ctxward hook ...`, or a
  `hooks/<event>.py` of a ctxward checkout. Install replaces those with the canonical wiring (in
  place when they already form a group of their own, else appended); uninstall removes exactly
  those, then the groups, event lists and `hooks` object that removing them left empty. Every
  other key, event, group and handler stays where it was. A file left empty (`{}`) is removed
  with its backup: install created it.
- What install writes is also the only thing `ctxward doctor` runs: `canonical_command` says
  whether a handler is exactly one of install's for that host and event, and
  `wiring.resolve` which program it runs.
- One backup, rolling: the bytes before the latest change, in `<name>.ctxward-backup`.
  Nothing changed, nothing written: a second install is a no-op.
- In a git project, install writes `.ctxward/.gitignore` once (templates/setup/
  state.gitignore.j2): ctxward's state there is this machine's; `.ctxward/config.yaml` and
  `docs/plans/` are for the repository. A per-user file it wrote inside the project
  (`.claude/settings.local.json`, the OpenCode plugin) that git would pick up is added to this
  clone's `.git/info/exclude`, as Claude Code keeps the settings.local.json it creates out of
  git.

Claude Code versions (`ctxward.hosts.claude_version`): a settings file naming an event the running
Claude Code does not know disables every hook in that file, so install leaves out the events a
version is known to lack, and only those; a version that cannot be found is not guessed, every
event is wired, and the output (and `ctxward doctor`) says so.

One wiring at a time: the ctxward plugin (`enabledPlugins`) and ctxward's hooks in another
settings file both run every hook (`other_wirings`); install warns, doctor fails.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ctxward.core.fsutil import atomic_write, read_regular_text, remove
from ctxward.core.jsonedit import JsonStyle, detect_style, read_json, rewrite
from ctxward.core.project import Project
from ctxward.errors import BadInput, CtxwardError
from ctxward.hosts import settings as host_settings
from ctxward.hosts import wiring
from ctxward.hosts.claude_version import ClaudeVersion, format_version
from ctxward.hosts.settings import (
    GEMINI_TRUST_NOTE,
    PLUGIN_MARK,
    PORTABLE,
    config_path,
    label_of,
    other_wirings,
    shipped_plugin,
)
from ctxward.hosts.wiring import CLAUDE as CLAUDE
from ctxward.hosts.wiring import CODEX as CODEX
from ctxward.hosts.wiring import GEMINI as GEMINI
from ctxward.hosts.wiring import OPENCODE as OPENCODE
from ctxward.hosts.wiring import HookCommand
from ctxward.setup.merge import Change, merge, unknown_events, unmerge

BACKUP_SUFFIX = ".ctxward-backup"
STATE_IGNORE = ".gitignore"  # in .ctxward/


@dataclass(slots=True)
class Result:
    """What install or uninstall did to one host's file (or would do, in a dry run)."""

    host: str
    scope: str
    action: str  # install | uninstall
    path: Path
    label: str
    dry_run: bool
    changes: list[Change] = field(default_factory=list)
    before: str = ""
    after: str = ""
    existed: bool = False
    written: bool = False
    removed: bool = False
    backup: Path | None = None
    version: ClaudeVersion | None = None
    program: str | None = None  # the absolute path the commands carry (None: portable)
    state_ignore: Path | None = None  # .ctxward/.gitignore, when this run wrote it
    git_excluded: Path | None = None  # the .git/info/exclude this run added the file to
    warnings: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return self.before != self.after or self.removed

    @property
    def portable(self) -> bool:
        return (self.host, self.scope) in PORTABLE

    def as_dict(self) -> dict[str, Any]:
        return {
            "host": self.host,
            "scope": self.scope,
            "action": self.action,
            "path": str(self.path),
            "dryRun": self.dry_run,
            "changed": self.changed,
            "written": self.written,
            "removed": self.removed,
            "backup": str(self.backup) if self.backup else None,
            "program": self.program,
            "stateIgnore": str(self.state_ignore) if self.state_ignore else None,
            "gitExcluded": str(self.git_excluded) if self.git_excluded else None,
            "changes": [
                {"event": c.event, "action": c.action, "reason": c.reason or None}
                for c in self.changes
            ],
            "claudeVersion": (
                {
                    "version": self.version.text,
                    "source": self.version.source,
                    "detail": self.version.detail or None,
                }
                if self.version
                else None
            ),
            "warnings": list(self.warnings),
        }


def install(
    host: str,
    scope: str,
    project: Project,
    *,
    dry_run: bool = False,
    claude_version: ClaudeVersion | None = None,
    env: Mapping[str, str] | None = None,
    locate: Callable[[str], str | None] | None = None,
) -> Result:
    """Wire ctxward into HOST at SCOPE; return what changed (nothing is written on a dry run).

    `locate(host)` gives the absolute path of the program this ctxward runs the hooks with
    (default: `wiring.installed_program`); a file meant for the repository gets none.
    """
    path = config_path(host, scope, project, env)
    result = Result(host, scope, "install", path, label_of(path, project), dry_run)
    found = (locate or wiring.installed_program)(host)
    baked = None if result.portable else found
    result.program = baked
    if host == OPENCODE:
        _install_plugin(result, baked)
    else:
        leave_out: dict[str, str] = {}
        if host == CLAUDE:
            from ctxward.hosts.claude_version import detect

            version = claude_version or detect(env=env)
            result.version = version
            # Through the module: the blocks written and the events checked are one table.
            leave_out = _too_new(host_settings.canonical_wiring(), version)
        data, text, existed = read_json(path, result.label)
        result.existed, result.before = existed, text
        style = detect_style(text) if text.strip() else JsonStyle()
        merged, result.changes = merge(
            data, host_settings.wiring_for(host, baked), leave_out, result.label
        )
        if result.version is not None:
            result.warnings += _version_warnings(merged, result.version, result.label)
        _finish_json(result, data, merged, text, style)
        if host == CODEX:
            result.warnings.append(
                "Codex runs a new or changed hook only once you trust it: open Codex in this "
                "project, type /hooks, review and trust each ctxward hook (ctxward doctor "
                "checks it)"
            )
        if host == GEMINI:
            result.warnings.append(GEMINI_TRUST_NOTE)
    result.warnings += _program_warnings(result, found, env)
    if scope != "user":
        result.state_ignore = _ignore_state(project, dry_run)
        result.warnings += _exclude_from_git(result, project)
    result.warnings += [
        f"ctxward's hooks also run from {place}: every hook would run twice; keep one "
        "(ctxward uninstall, or disable the plugin)"
        for place in other_wirings(host, scope, project, env)
    ]
    return result


def uninstall(
    host: str,
    scope: str,
    project: Project,
    *,
    dry_run: bool = False,
    env: Mapping[str, str] | None = None,
) -> Result:
    """Remove exactly what install added to HOST at SCOPE; return what changed."""
    path = config_path(host, scope, project, env)
    result = Result(host, scope, "uninstall", path, label_of(path, project), dry_run)
    if host == OPENCODE:
        _uninstall_plugin(result)
        return result
    data, text, existed = read_json(path, result.label)
    result.existed, result.before = existed, text
    if not existed:
        result.after = text
        return result
    style = detect_style(text) if text.strip() else JsonStyle()
    cleaned, result.changes = unmerge(data, result.label)
    if result.changes and not cleaned:  # only ctxward's wiring was in it: install created it
        _remove_created(result)
        return result
    _finish_json(result, data, cleaned, text, style)
    return result


def _too_new(wiring: Mapping[str, Any], version: ClaudeVersion) -> dict[str, str]:
    """Events of the wiring that Claude Code `version` is known to lack, with the reason."""
    from ctxward.hosts.claude_version import EVENT_SINCE

    leave_out = {}
    for event in wiring:
        since = EVENT_SINCE.get(event)
        if since is None:
            raise CtxwardError(
                f"settings.example.json wires {event}, whose first Claude Code version ctxward "
                "does not know (add it to ctxward.hosts.claude_version.EVENT_SINCE)"
            )
        if version.knows(event) is False:
            leave_out[event] = f"needs Claude Code >= {format_version(since)}"
    return leave_out


def _version_warnings(data: Mapping[str, Any], version: ClaudeVersion, label: str) -> list[str]:
    warnings = []
    if version.source == "unknown":
        warnings.append(
            "the Claude Code version was not found, so every event is wired: a Claude Code "
            "older than 2.1.76 ignores every hook in a file naming PostCompact (run "
            "ctxward doctor; or install again with --claude-version X.Y.Z)"
        )
    for event, known in unknown_events(data, version).items():
        if known is False:
            warnings.append(
                f"{label} names {event}, which Claude Code {version.text} does not know: that "
                "version ignores every hook in the file (not ctxward's entry; left as it is)"
            )
    return warnings


def _program_warnings(
    result: Result, found: str | None, env: Mapping[str, str] | None
) -> list[str]:
    """What the user must know about the program the commands will find."""
    name = wiring.PROGRAMS[result.host]
    guarded = result.host in wiring.GUARD_EVENTS
    if found is None:
        blocked = " and every sub-agent call is blocked" if guarded else ""
        return [
            f"no `{name}` next to this ctxward or on PATH: until one is installed, the hooks do "
            f"nothing{blocked} (pipx install ctxward, then install again)"
        ]
    if not result.portable:
        return []
    reachable = wiring.resolve(HookCommand(result.host, "", None), env)
    if reachable is not None and os.path.realpath(reachable) == os.path.realpath(found):
        return []
    effect = "blocks every sub-agent call" if guarded else "runs no ctxward hook"
    mine = "local" if result.host == CLAUDE else "user"
    return [
        f"{result.label} is for the repository: its commands look for `{name}` on PATH and in "
        f"~/.local/bin, but this machine's is {found}; a host started without its folder on "
        f"PATH {effect} (`ctxward install {result.host} --scope {mine}` names it instead)"
    ]


def _finish_json(
    result: Result,
    before: dict[str, Any],
    after: dict[str, Any],
    text: str,
    style: JsonStyle,
) -> None:
    if after == before and result.existed:
        result.after = text
        return
    result.after = rewrite(text, after, style)
    if result.dry_run or result.after == text:
        return
    if result.existed and text:
        result.backup = _backup(result.path, text.encode("utf-8"))
    atomic_write(result.path, result.after, validate=_valid_json)
    result.written = True


def _remove_created(result: Result) -> None:
    """Uninstall of a file that held nothing but ctxward's wiring: the file goes, with its
    backup (the bytes of an earlier ctxward wiring)."""
    result.after = ""
    result.removed = True
    if result.dry_run:
        return
    remove(result.path)
    remove(backup_path(result.path))
    result.written = True


def _valid_json(data: bytes) -> None:
    json.loads(data.decode("utf-8"))


def backup_path(path: Path) -> Path:
    return path.with_name(path.name + BACKUP_SUFFIX)


def _backup(path: Path, data: bytes) -> Path:
    """Keep `data`, the bytes before this change, as <name>.ctxward-backup (one, rolling)."""
    target = backup_path(path)
    atomic_write(target, data)
    return target


def _install_plugin(result: Result, baked: str | None) -> None:
    wanted = wiring.plugin_text(shipped_plugin(), baked)
    path = result.path
    try:
        current = read_regular_text(path, follow_links=True)
        result.existed = True
    except FileNotFoundError:
        current = ""
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInput(f"{result.label}: cannot read it: {exc}") from None
    if result.existed and not current.startswith(PLUGIN_MARK):
        raise BadInput(
            f"{result.label}: exists and is not ctxward's plugin; move it away and run again"
        )
    result.before, result.after = current, wanted
    event = "plugin"
    if current == wanted:
        result.changes.append(Change(event, "unchanged"))
        return
    result.changes.append(Change(event, "updated" if result.existed else "added"))
    if result.dry_run:
        return
    if result.existed:
        result.backup = _backup(path, current.encode("utf-8"))
    atomic_write(path, wanted)
    result.written = True


def _uninstall_plugin(result: Result) -> None:
    path = result.path
    try:
        current = read_regular_text(path, follow_links=True)
    except FileNotFoundError:
        return
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInput(f"{result.label}: cannot read it: {exc}") from None
    result.existed = True
    result.before = current
    if not current.startswith(PLUGIN_MARK):
        raise BadInput(f"{result.label}: is not ctxward's plugin; left in place")
    result.changes.append(Change("plugin", "removed"))
    result.removed = True
    if result.dry_run:
        return
    if not wiring.plugin_baked(shipped_plugin(), current)[0]:
        result.backup = _backup(path, current.encode("utf-8"))  # edited by hand: keep it
    else:
        remove(backup_path(path))
    remove(path)
    result.written = True


def _ignore_state(project: Project, dry_run: bool) -> Path | None:
    """Write .ctxward/.gitignore in a git project that has none; return it when written."""
    from ctxward.core.render import render

    if not project.anchored or not (project.root / ".git").exists():
        return None
    path = project.state_dir / STATE_IGNORE
    if path.exists() or path.is_symlink():
        return None  # the user's own (or an earlier install's): never rewritten
    if not dry_run:
        atomic_write(path, render("setup/state.gitignore.j2"))
    return path


def _exclude_from_git(result: Result, project: Project) -> list[str]:
    """Keep a per-user file install wrote inside a git project out of git, as Claude Code does
    for the .claude/settings.local.json it creates (it adds it to the user's global excludes):
    here, one line in this clone's .git/info/exclude (never committed). A warning when that
    cannot be done."""
    if result.portable or result.action != "install" or not result.program:
        return []
    try:
        inside = result.path.relative_to(project.root).as_posix()
    except ValueError:
        return []
    if _git(project, "check-ignore", "-q", "--", inside) != (1, ""):
        return []  # ignored already (0), or not a work tree / no git (128, None)
    code, exclude = _git(project, "rev-parse", "--git-path", "info/exclude")
    if code != 0 or not exclude:
        return [f"{result.label} names this machine's program: keep it out of git"]
    path = Path(exclude) if os.path.isabs(exclude) else project.root / exclude
    line = f"/{inside}"
    if not result.dry_run:
        try:
            text = read_regular_text(path) if path.exists() else ""
            lead = "" if not text or text.endswith("\n") else "\n"
            atomic_write(path, f"{text}{lead}# ctxward install: this machine's wiring\n{line}\n")
        except (OSError, CtxwardError) as exc:
            return [
                f"{result.label} names this machine's program and git would commit it: add "
                f"`{line}` to .gitignore ({exc})"
            ]
    result.git_excluded = path
    return []


def _git(project: Project, *args: str) -> tuple[int, str | None]:
    """(exit code, stdout) of `git -C ROOT ARGS`; (128, None) when git cannot be run."""
    git = wiring.program_on_path("git")
    if git is None or not (project.root / ".git").exists():
        return 128, None
    try:
        done = subprocess.run(
            [git, "-C", str(project.root), *args],
            capture_output=True,
            text=True,
            timeout=15,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError):
        return 128, None
    return done.returncode, done.stdout.strip()


def diff(result: Result) -> list[str]:
    """The unified diff of the file's text, before -> after (for --dry-run)."""
    import difflib

    return list(
        difflib.unified_diff(
            result.before.splitlines(),
            result.after.splitlines(),
            fromfile=f"{result.label} (now)",
            tofile=f"{result.label} (after {result.action})",
            lineterm="",
        )
    )
