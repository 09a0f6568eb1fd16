"""`ctxward doctor`: is ctxward wired, does it answer, are the plans in step with their skills?

Each check says what it found and, when something is wrong, how to fix it:

- the Claude Code version install and these checks go by (`ctxward.hosts.claude_version`);
- every host file ctxward may have written (Claude Code settings at local, project and user
  scope; Codex hooks.json at project and user scope; the OpenCode plugin file): it parses, it
  wires ctxward's events, its matchers cover what the handlers need (`Agent|Task`,
  `compact|resume`, `manual|auto`), it names no event the Claude Code version does not know
  (that would silently disable every hook in the file), the plugin file is the shipped one;
- the program each file's hooks run (`wiring.resolve`: the path install baked in, else
  PATH, else ~/.local/bin) exists: when none does, every sub-agent call is blocked and the other
  hooks do nothing, a failure; a baked path that is gone, a warning (PATH is this shell's: the
  host's may differ);
- Codex only runs hooks the user trusted (`/hooks`): each ctxward handler's trust as Codex
  records it in its config.toml (`hosts.codex_trust`: trusted, untrusted, modified, disabled);
  anything but trusted is a failure, since Codex skips such a hook without a word;
- one wiring per host: ctxward's hooks in two files, or in a settings file and the ctxward
  plugin (`enabledPlugins`), run every hook twice, a failure;
- each wired hook command runs and answers a synthetic payload within its timeout, in a scratch
  project with a shipped pack activated (so no file of the real project is touched). Only the
  exact commands `ctxward install` writes are run (`install.canonical_command`), as an argv
  list without a shell, and only when the program they resolve to is this ctxward's or the one
  on the absolute folders of PATH or in ~/.local/bin: a settings file may come with a cloned
  repository, and a command that merely names ctxward (`ctxward-hook; sh evil`,
  `X=1 ctxward-hook`, `./evil/ctxward-hook`) or bakes a path of the clone is reported, shown
  scrubbed and cut, and never run: a failure in a project's file, a warning in the user's own;
  a bare `ctxward-hook` of an older install (it fails open off PATH) is a failure everywhere;
- drift: each active plan's sections match their skill's current frontmatter (the **Full
  rules:** path), and each plan's payload is fresh;
- the project's config loads, and the G9 thresholds in force (thresholds.table at the capacity
  from .ctxward/config.yaml); in a git project, ctxward's state folder is git-ignored.

Library code: the checks come back as data; `ctxward doctor` renders them.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ctxward.core.fsutil import read_regular_text
from ctxward.core.project import Project
from ctxward.errors import CtxwardError, printable
from ctxward.hosts import wiring
from ctxward.hosts.claude_version import EVENT_SINCE, ClaudeVersion, format_version
from ctxward.hosts.wiring import HookCommand
from ctxward.setup import install, jsonedit

OK, WARN, FAIL, INFO = "ok", "warn", "fail", "info"
SLOW_SECONDS = 2.0  # a hook answer slower than this is a warning (PreToolUse runs per dispatch)
SHOWN_CHARS = 120  # a command that is not ctxward's is shown cut to this many characters
_SCRUBBED_CHARS = 4_000  # ... after scrubbing this much of it (a secret in it is not shown)
DOCTOR_PACK = "compaction-resilience"
DOCTOR_SLUG = "doctor"

# What each event's matcher must let through for ctxward's handler to do its job (Codex's
# sub-agent tools: hosts/codex.py DISPATCH_TOOLS).
CODEX_MATCHER_NEEDS = {"PreToolUse": ("spawn_agent", "multi_agent_v1send_input")}
MATCHER_NEEDS = {
    "PreToolUse": ("Agent", "Task"),
    "SessionStart": ("compact", "resume"),
    "PreCompact": ("manual", "auto"),
    "PostCompact": ("manual", "auto"),
    "BeforeTool": ("invoke_agent",),  # Gemini CLI's sub-agent tool: the dispatch guard
}
_EXACT_MATCHER = re.compile(r"[A-Za-z0-9_\- ,|]+")


@dataclass(frozen=True, slots=True)
class Check:
    """One finding: `status` ok | warn | fail | info; `fix` says what to run when not ok."""

    id: str
    status: str
    title: str
    detail: str = ""
    fix: str = ""

    def as_dict(self) -> dict[str, str | None]:
        return {
            "id": self.id,
            "status": self.status,
            "title": self.title,
            "detail": self.detail or None,
            "fix": self.fix or None,
        }


@dataclass(slots=True)
class Diagnosis:
    project: str
    version: ClaudeVersion
    checks: list[Check] = field(default_factory=list)
    thresholds: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not any(check.status == FAIL for check in self.checks)

    def counts(self) -> dict[str, int]:
        return {status: sum(c.status == status for c in self.checks) for status in (OK, WARN, FAIL)}

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "project": self.project,
            "claudeVersion": {
                "version": self.version.text,
                "source": self.version.source,
                "detail": self.version.detail or None,
            },
            "checks": [check.as_dict() for check in self.checks],
            "counts": self.counts(),
            "thresholds": self.thresholds,
        }


@dataclass(frozen=True, slots=True)
class WiredHook:
    """One ctxward handler found in a host file."""

    host: str
    event: str
    handler: Mapping[str, Any]
    where: str  # the file's label
    command: HookCommand | None  # None: not a command install writes
    argv: tuple[str, ...] | None = None  # how doctor runs it; None: not run

    @property
    def timeout(self) -> float:
        value = self.handler.get("timeout")
        if self.host == install.GEMINI:  # Gemini CLI's timeouts are in milliseconds
            value = value / 1000 if isinstance(value, (int, float)) else None
        return float(value) if isinstance(value, (int, float)) and value > 0 else 60.0

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.host, self.event, json.dumps(self.handler, sort_keys=True))


def matcher_matches(matcher: object, value: str) -> bool:
    """Claude Code's matcher rule: empty or `*` matches all; a plain list is exact; else regex."""
    if matcher in (None, "", "*"):
        return True
    if not isinstance(matcher, str):
        return False
    if _EXACT_MATCHER.fullmatch(matcher):
        return value in {part.strip() for part in re.split(r"[|,]", matcher)}
    try:
        return re.search(matcher, value) is not None
    except re.error:
        return False


def diagnose(
    project: Project,
    *,
    version: ClaudeVersion,
    env: Mapping[str, str] | None = None,
    run_hooks: bool = True,
) -> Diagnosis:
    """Run every check against `project`; nothing in the project is written."""
    env = dict(os.environ if env is None else env)
    result = Diagnosis(project=str(project.root), version=version)
    checks = result.checks
    checks.append(_version_check(version))
    wired: list[WiredHook] = []
    wired_hosts: set[str] = set()
    for host in (install.CLAUDE, install.CODEX):
        for scope in install.SCOPES[host]:
            found = _check_json_file(host, scope, project, env, version, checks)
            if found:
                wired_hosts.add(host)
                wired += found
    opencode: list[str] = []
    for scope in install.SCOPES[install.OPENCODE]:
        program = _check_plugin(scope, project, env, checks)
        if program is not None:
            wired_hosts.add(install.OPENCODE)
            if program:
                opencode.append(program)
    for scope in install.SCOPES[install.GEMINI]:  # Gemini CLI: the same JSON hooks shape
        found = _check_json_file(install.GEMINI, scope, project, env, version, checks)
        if found:
            wired_hosts.add(install.GEMINI)
            wired += found
    if install.GEMINI in wired_hosts:
        from ctxward.hosts.gemini_trust import trust_check

        checks.append(trust_check(project, env))
    for host in sorted(wired_hosts):
        checks.append(_one_wiring(host, project, env))
    if not wired_hosts:
        checks.append(
            Check(
                "hosts",
                WARN,
                "ctxward is not wired into any host",
                "no Claude Code settings, Codex hooks.json or OpenCode plugin file runs it",
                "ctxward install claude (or: ctxward install opencode / ctxward install codex)",
            )
        )
    if run_hooks:
        checks += _run_hooks(wired, opencode[:1], env)
    checks += _plan_checks(project)
    ignored = _state_ignored(project)
    if ignored is not None:
        checks.append(ignored)
    config_check, thresholds = _thresholds(project)
    checks.append(config_check)
    result.thresholds = thresholds
    return result


# --- version ---------------------------------------------------------------------------------


def _version_check(version: ClaudeVersion) -> Check:
    if version.source == "unknown":
        return Check(
            "claude.version",
            WARN,
            "Claude Code version not found: which events it knows cannot be checked",
            version.detail,
            "put `claude` on PATH, or pass --claude-version X (what `claude --version` prints)",
        )
    how = {
        "override": "given with --claude-version",
        "recorded": f"recorded in {version.detail}",
    }.get(version.source, version.detail)
    return Check("claude.version", INFO, f"Claude Code {version.text}", how)


# --- host files ------------------------------------------------------------------------------


def _check_json_file(
    host: str,
    scope: str,
    project: Project,
    env: Mapping[str, str],
    version: ClaudeVersion,
    checks: list[Check],
) -> list[WiredHook]:
    path = install.config_path(host, scope, project, env)
    label = install.label_of(path, project)
    ident = f"{host}.{scope}"
    fix_install = f"ctxward install {host} --scope {scope}"
    if not path.exists():
        return []
    try:
        data, _, _ = jsonedit.read_json(path, label)
        jsonedit.hooks_block(data, label)
    except CtxwardError as exc:
        checks.append(Check(f"{ident}.parse", FAIL, f"{label} cannot be read", str(exc)))
        return []
    hooks = data.get("hooks") or {}
    named = [
        WiredHook(host, event, handler, label, install.canonical_command(host, event, handler))
        for event, groups in hooks.items()
        for group in groups
        for handler in group["hooks"]
        if _names_ctxward(handler)
    ]
    named = _with_programs(named, ident, scope, fix_install, env, checks)
    found = [hook for hook in named if install.identifies_ctxward(hook.handler)]
    if host == install.CLAUDE:
        _unknown_event_check(ident, label, data, version, checks)
    if host == install.CODEX and any(install.identifies_ctxward(h.handler) for h in named):
        checks.append(_codex_trust_check(ident, path, label, hooks, env))
    foreign = _foreign_commands(named, ident, scope, fix_install)
    checks += foreign
    if not found:
        if foreign:
            return []
        checks.append(Check(f"{ident}.wired", INFO, f"{label} parses; it does not run ctxward"))
        return []
    wanted = install.wiring_for(host)
    if host == install.CLAUDE:
        wanted = {e: g for e, g in wanted.items() if version.knows(e) is not False}
    events = sorted({hook.event for hook in found})
    missing = [event for event in wanted if event not in events]
    checks.append(
        Check(
            f"{ident}.wired",
            WARN if missing else OK,
            f"{label} runs ctxward for {', '.join(events)}",
            f"not wired: {', '.join(missing)}" if missing else "",
            fix_install if missing else "",
        )
    )
    problems = []
    for event, needs in MATCHER_NEEDS.items():
        if host == install.CODEX:
            needs = CODEX_MATCHER_NEEDS.get(event, needs)
        for group in hooks.get(event, []):
            if not any(install.identifies_ctxward(handler) for handler in group["hooks"]):
                continue
            matcher = group.get("matcher")
            lacking = [value for value in needs if not matcher_matches(matcher, value)]
            if lacking:
                problems.append(f"{event} matcher {matcher!r} does not match {', '.join(lacking)}")
    if problems:
        checks.append(
            Check(
                f"{ident}.matchers",
                FAIL,
                f"{label}: a matcher misses calls",
                "; ".join(problems),
                fix_install,
            )
        )
    else:
        needed = {**MATCHER_NEEDS, **(CODEX_MATCHER_NEEDS if host == install.CODEX else {})}
        covered = ", ".join(f"{e} {'|'.join(needed[e])}" for e in events if e in needed)
        checks.append(Check(f"{ident}.matchers", OK, f"{label}: matchers cover {covered or 'all'}"))
    return found


def _codex_trust_check(
    ident: str, path: Path, label: str, hooks: Mapping[str, Any], env: Mapping[str, str]
) -> Check:
    """Whether Codex will run ctxward's handlers of this hooks.json: each one's trust as
    recorded in the user's Codex config.toml (`hosts.codex_trust`)."""
    from ctxward.hosts import codex_trust

    config = codex_trust.codex_home(env) / "config.toml"
    how = (
        "open Codex in this project, type /hooks, review each ctxward hook and trust it "
        "(a hook that changed since, after an install or an upgrade, needs trusting again)"
    )
    try:
        states = codex_trust.read_states(config)
    except (OSError, ValueError) as exc:
        return Check(f"{ident}.trust", WARN, f"{label}: Codex hook trust not checked", str(exc))
    source = path.resolve() if path.exists() else path
    found: dict[str, list[str]] = {}
    for event, groups in hooks.items():
        if event not in codex_trust.EVENT_LABELS:
            continue
        for g, group in enumerate(groups):
            for h, handler in enumerate(group["hooks"]):
                if not install.identifies_ctxward(handler):
                    continue
                status = codex_trust.trust_status(
                    states, source, event, g, h, group.get("matcher"), handler
                )
                found.setdefault(status, []).append(event)
    untrusted = {k: v for k, v in found.items() if k != codex_trust.TRUSTED}
    if not untrusted:
        return Check(f"{ident}.trust", OK, f"{label}: Codex trusts every ctxward hook")
    detail = "; ".join(f"{status}: {', '.join(events)}" for status, events in untrusted.items())
    return Check(
        f"{ident}.trust",
        FAIL,
        f"{label}: Codex will not run {sum(map(len, untrusted.values()))} ctxward hook(s)",
        f"{detail} (per {config}); Codex skips such a hook without a word",
        how,
    )


def _with_programs(
    named: list[WiredHook],
    ident: str,
    scope: str,
    fix_install: str,
    env: Mapping[str, str],
    checks: list[Check],
) -> list[WiredHook]:
    """`named` with the argv doctor may run each canonical hook with, and one check of the
    program the file's hooks run (found, gone, or another ctxward's, never run then)."""
    commands = {hook.command for hook in named if hook.command is not None}
    if not commands:
        return named
    where = named[0].where
    resolved = {command: wiring.resolve(command, env) for command in commands}
    trusted = {program for program in resolved.values() if program and _trusted(program, env)}
    checks.append(_program_check(ident, where, scope, fix_install, resolved, trusted))
    runnable = []
    for hook in named:
        program = resolved.get(hook.command) if hook.command is not None else None
        argv = None
        if hook.command is not None and program in trusted:
            argv = tuple(wiring.argv(hook.command, program))
        runnable.append(
            WiredHook(hook.host, hook.event, hook.handler, hook.where, hook.command, argv)
        )
    return runnable


def _program_check(
    ident: str,
    where: str,
    scope: str,
    fix_install: str,
    resolved: Mapping[HookCommand, str | None],
    trusted: set[str],
) -> Check:
    """What the program of a file's hooks is now (the first command speaks for the file)."""
    command, program = sorted(resolved.items(), key=lambda item: str(item[0]))[0]
    name = command.program
    places = (f"not at {command.baked}, " if command.baked else "") + "not on PATH, not in "
    places += "~/.local/bin"
    blocked = "every sub-agent call is blocked" if command.host == install.CLAUDE else "nothing"
    if program is None:
        return Check(
            f"{ident}.program",
            FAIL,
            f"{where}: its hooks cannot start: {name} is missing ({places})",
            f"the host runs them in vain: {blocked}, the other hooks do nothing"
            if command.host == install.CLAUDE
            else "the host runs them in vain: the hooks do nothing",
            f"pipx install ctxward, then: {fix_install}",
        )
    if program not in trusted:
        return Check(
            f"{ident}.program",
            WARN if scope == "user" else FAIL,
            f"{where}: its hooks run {program}, not this ctxward's",
            "not run by doctor: a path in a project's file may come with a clone",
            f"{fix_install} (names this ctxward's {name})",
        )
    if command.baked and program != command.baked:
        return Check(
            f"{ident}.program",
            WARN,
            f"{where}: {command.baked} is gone; its hooks fall back on {program}",
            "found on this shell's PATH: a host started with another PATH may not find it",
            f"{fix_install} (names the {name} found now)",
        )
    how = "named in the file" if command.baked else "found on PATH or in ~/.local/bin"
    return Check(f"{ident}.program", OK, f"{where}: its hooks run {program}", how)


def _trusted(program: str, env: Mapping[str, str]) -> bool:
    """Whether `program` is a ctxward program of this user: this ctxward's own, or the one
    on the absolute folders of PATH or in ~/.local/bin (a path a clone names is neither)."""
    real = os.path.realpath(program)
    name = os.path.basename(program)
    host = install.CLAUDE if name == wiring.PROGRAMS[install.CLAUDE] else install.CODEX
    mine = [
        wiring.installed_program(host, env=env),
        wiring.program_on_path(name, env),
        os.path.join(env.get("HOME", ""), ".local", "bin", name) if env.get("HOME") else None,
    ]
    return any(path and os.path.realpath(path) == real for path in mine)


def _names_ctxward(handler: Mapping[str, Any]) -> bool:
    """Whether a handler's command or args mention ctxward at all (`ctxward-hook|sh` too, which
    install does not take for its own)."""
    args = handler.get("args")
    words = [handler.get("command"), *(args if isinstance(args, list) else [])]
    return install.identifies_ctxward(handler) or any(
        isinstance(word, str) and "ctxward" in word for word in words
    )


def _foreign_commands(
    named: list[WiredHook], ident: str, scope: str, fix_install: str
) -> list[Check]:
    """One check per handler that names ctxward but is not what install writes: never run.

    A failure in a file of the project (it may have come with a clone, and the host runs it as
    it stands), a warning in the user's own file.
    """
    checks: list[Check] = []
    seen: dict[str, int] = {}
    for hook in named:
        if hook.command is not None:
            continue
        seen[hook.event] = seen.get(hook.event, 0) + 1
        number = seen[hook.event]
        wired = hook.event in install.wiring_for(hook.host)
        instead = (
            f"its own command there (`{fix_install} --dry-run` shows it)"
            if wired
            else f"nothing (ctxward does not wire {hook.event})"
        )
        legacy = _legacy(hook)
        checks.append(
            Check(
                f"{ident}.command.{hook.event}" + (f".{number}" if number > 1 else ""),
                WARN if scope == "user" and not legacy else FAIL,
                f"{hook.where}: {hook.event} runs `{shown_command(hook.handler)}`, "
                + (
                    "an older ctxward wiring that fails open off PATH"
                    if legacy
                    else "not a command ctxward installs"
                ),
                (
                    "a host that does not find it on its PATH lets every call through; "
                    if legacy
                    else f"not run by doctor: it names ctxward, but install writes {instead}; "
                )
                + "the host runs this one as it stands",
                f"{fix_install} (replaces it), or remove it"
                if install.identifies_ctxward(hook.handler)
                else f"remove it from {hook.where} (install does not take it for its own)",
            )
        )
    return checks


def _legacy(hook: WiredHook) -> bool:
    """The bare command of an older install: `ctxward-hook`, `ctxward hook EVENT --host codex`."""
    if "args" in hook.handler:
        return False
    if hook.host == install.CLAUDE:
        return bool(hook.handler.get("command") == "ctxward-hook")
    from ctxward.hosts import codex

    event = codex.HOOK_ARGS.get(hook.event)
    return event is not None and hook.handler.get("command") == f"ctxward hook {event} --host codex"


def shown_command(handler: Mapping[str, Any]) -> str:
    """A handler's command for a report: scrubbed, control characters escaped, cut short."""
    from ctxward.core.scrub import redact

    text = str(handler.get("command", ""))
    args = handler.get("args")
    if isinstance(args, list):
        text += " " + shlex.join(str(arg) for arg in args)
    text = printable(redact(text[:_SCRUBBED_CHARS]))
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 1] + "…"


def _unknown_event_check(
    ident: str,
    label: str,
    data: Mapping[str, Any],
    version: ClaudeVersion,
    checks: list[Check],
) -> None:
    verdicts = install.unknown_events(data, version)
    unknown = [event for event, known in verdicts.items() if known is False]
    unsure = [event for event, known in verdicts.items() if known is None]
    if unknown:
        checks.append(
            Check(
                f"{ident}.events",
                FAIL,
                f"{label} names events Claude Code {version.text} does not know: "
                + ", ".join(unknown),
                "one unknown event makes that version ignore every hook in the file",
                "upgrade Claude Code, or run ctxward install claude again (it leaves out events "
                "your version does not know; other tools' events you must move by hand)",
            )
        )
    elif unsure and version.version is None:
        dated = [(since, event) for event in unsure if (since := EVENT_SINCE.get(event))]
        newest = max(dated) if dated else None
        needs = f"Claude Code >= {format_version(newest[0])} ({newest[1]})" if newest else ""
        checks.append(
            Check(
                f"{ident}.events",
                WARN,
                f"{label} needs {needs or 'a Claude Code that knows its events'}: the version "
                "here is not known",
                "a Claude Code that does not know an event of the file ignores every hook in it",
                "pass --claude-version X (what `claude --version` prints)",
            )
        )
    elif unsure:
        checks.append(
            Check(
                f"{ident}.events",
                INFO,
                f"{label}: ctxward cannot tell whether Claude Code {version.text} knows "
                + ", ".join(unsure),
            )
        )


def _check_plugin(
    scope: str, project: Project, env: Mapping[str, str], checks: list[Check]
) -> str | None:
    """Check the OpenCode plugin file of `scope`; None when there is none of ctxward's, else
    the program doctor runs its hooks with ("" when none may run)."""
    path = install.config_path(install.OPENCODE, scope, project, env)
    label = install.label_of(path, project)
    ident = f"opencode.{scope}"
    if not path.is_file():
        return None
    try:
        text = read_regular_text(path, follow_links=True)
    except (OSError, UnicodeDecodeError) as exc:
        checks.append(Check(f"{ident}.plugin", FAIL, f"{label} cannot be read", str(exc)))
        return None
    if not text.startswith(install.PLUGIN_MARK):
        checks.append(Check(f"{ident}.plugin", WARN, f"{label} exists but is not ctxward's plugin"))
        return None
    same, baked = wiring.plugin_baked(install.shipped_plugin(), text)
    fix_install = f"ctxward install opencode --scope {scope}"
    if not same:
        checks.append(
            Check(
                f"{ident}.plugin",
                WARN,
                f"{label} differs from the plugin this ctxward ships",
                "an older ctxward, or edited by hand",
                fix_install,
            )
        )
        baked = None  # a line of a file ctxward did not write is not taken for its path
    else:
        checks.append(Check(f"{ident}.plugin", OK, f"{label} is the shipped plugin"))
    if env.get("CTXWARD_BIN"):  # the plugin runs it as given, and so does doctor
        program = wiring.program_on_path(env["CTXWARD_BIN"], env)
        how = "$CTXWARD_BIN"
        if program is None:
            checks.append(
                Check(f"{ident}.program", FAIL, f"{label}: $CTXWARD_BIN does not run", how)
            )
            return ""
        checks.append(Check(f"{ident}.program", OK, f"{label}: its hooks run {program}", how))
        return program
    command = HookCommand(install.OPENCODE, "", baked)
    resolved = {command: wiring.resolve(command, env)}
    trusted = {found for found in resolved.values() if found and _trusted(found, env)}
    checks.append(_program_check(ident, label, scope, fix_install, resolved, trusted))
    found = resolved[command]
    return found if found in trusted else ""


def _one_wiring(host: str, project: Project, env: Mapping[str, str]) -> Check:
    """Each hook runs once: ctxward is wired in one place per host."""
    places = install.other_wirings(host, None, project, env)
    if len(places) <= 1:
        return Check(f"{host}.wirings", OK, f"{host}: ctxward is wired once")
    return Check(
        f"{host}.wirings",
        FAIL,
        f"{host}: ctxward is wired {len(places)} times: every hook runs {len(places)} times",
        "; ".join(places),
        f"keep one: ctxward uninstall {host} --scope SCOPE"
        + (", or disable the plugin (claude plugin disable ctxward)" if host == "claude" else ""),
    )


def _state_ignored(project: Project) -> Check | None:
    """In a git project whose .ctxward/ exists, ctxward's state should not be committed."""
    if not (project.root / ".git").exists() or not project.state_dir.is_dir():
        return None
    if (project.state_dir / install.STATE_IGNORE).exists():
        return Check("state.gitignore", OK, ".ctxward/.gitignore keeps ctxward's state out of git")
    return Check(
        "state.gitignore",
        WARN,
        ".ctxward/ has no .gitignore: git would pick up this machine's state",
        "sessions, survival reports, offloaded content and logs are this machine's",
        "ctxward install claude (writes .ctxward/.gitignore), or ignore .ctxward/ but config.yaml",
    )


# --- running the hooks -----------------------------------------------------------------------


def _claude_payload(event: str, root: Path) -> dict[str, Any]:
    base: dict[str, Any] = {
        "session_id": "ctxward-doctor",
        "transcript_path": "",
        "cwd": str(root),
        "hook_event_name": event,
    }
    extra: dict[str, dict[str, Any]] = {
        # auto: after a manual one the model reads PreCompact's text, and SessionStart(compact)
        # of the same session then states no rule again (ctxward.invariants.ledger).
        "PreCompact": {"trigger": "auto", "custom_instructions": None},
        "SessionStart": {"source": "compact"},
        "PostCompact": {"trigger": "manual", "compact_summary": "ctxward doctor summary"},
        "SubagentStop": {
            "stop_hook_active": False,
            "agent_id": "doctor",
            "agent_type": "general-purpose",
            "last_assistant_message": "done",
        },
        "PreToolUse": {
            "tool_name": "Agent",
            "tool_use_id": "toolu_doctor",
            "tool_input": {
                "description": "doctor",
                "prompt": "Reply with OK.",
                "subagent_type": "general-purpose",
            },
        },
        "UserPromptSubmit": {"prompt": "ctxward doctor"},
        "PostToolUse": {
            "tool_name": "Read",
            "tool_use_id": "toolu_doctor",
            "tool_input": {"file_path": str(root / "README.md")},
            "tool_response": {"type": "text"},
        },
        "PostToolUseFailure": {
            "tool_name": "Bash",
            "tool_use_id": "toolu_doctor_failed",
            "tool_input": {"command": "false"},
            "error": "Exit code 1",
        },
    }
    return {**base, **extra.get(event, {})}


def _codex_payload(event: str, root: Path) -> dict[str, Any]:
    """A synthetic payload of Codex CLI 0.169.0's shape (hosts/codex.py) for `event`."""
    payload: dict[str, Any] = {
        "session_id": "ctxward-doctor",
        "turn_id": "doctor",
        "transcript_path": None,
        "cwd": str(root),
        "hook_event_name": event,
        "model": "doctor",
        "permission_mode": "default",
    }
    extra: dict[str, dict[str, Any]] = {
        "SessionStart": {"source": "compact"},
        "PreCompact": {"trigger": "manual"},
        "PostCompact": {"trigger": "manual", "compact_summary": "ctxward doctor summary"},
        "UserPromptSubmit": {"prompt": "ctxward doctor"},
        "PreToolUse": {
            "tool_name": "spawn_agent",
            "tool_use_id": "call_doctor",
            "tool_input": {"message": "Reply with OK."},
        },
        "PostToolUse": {
            "tool_name": "exec_command",
            "tool_use_id": "call_doctor_tool",
            "tool_input": {"cmd": "true"},
            "tool_response": "",
        },
    }
    return {**payload, **extra.get(event, {})}


def _gemini_payload(event: str, root: Path) -> dict[str, Any]:
    """What Gemini CLI 0.61.0 sends for `event` (tests/fixtures/gemini-cli-0.61.0/)."""
    payload: dict[str, Any] = {
        "session_id": "ctxward-doctor",
        "transcript_path": "",
        "cwd": str(root),
        "hook_event_name": event,
        "timestamp": "2026-01-01T00:00:00.000Z",
    }
    extra: dict[str, dict[str, Any]] = {
        "SessionStart": {"source": "resume"},
        "BeforeAgent": {"prompt": "ctxward doctor"},
        "BeforeModel": {  # the first request after a compression (its summary, then the ack)
            "llm_request": {
                "model": "doctor",
                "messages": [
                    {"role": "user", "content": "ctxward doctor summary"},
                    {"role": "model", "content": "Got it. Thanks for the additional context!"},
                    {"role": "user", "content": "ctxward doctor"},
                ],
            }
        },
        "PreCompress": {"trigger": "manual"},
        "BeforeTool": {
            "tool_name": "invoke_agent",
            "tool_input": {"agent_name": "generalist", "prompt": "Reply with OK."},
        },
        "AfterTool": {
            "tool_name": "read_file",
            "tool_input": {"file_path": str(root / "README.md")},
            "tool_response": {"llmContent": "", "returnDisplay": ""},
        },
    }
    return {**payload, **extra.get(event, {})}


_OPENCODE_RUNS: dict[str, tuple[str, Callable[[Path], dict[str, Any]]]] = {
    "pre-compact": (
        "PreCompact",
        lambda root: {
            "hook": "experimental.session.compacting",
            "input": {"sessionID": "ses_doctor"},
            "directory": str(root),
            "worktree": str(root),
        },
    ),
    "session-start": (
        "SessionStart",
        lambda root: {
            "hook": "experimental.chat.system.transform",
            "input": {"sessionID": "ses_doctor"},
            "directory": str(root),
            "worktree": str(root),
            "plugin": {"source": "compact"},
        },
    ),
    "pre-tool-use": (
        "PreToolUse",
        lambda root: {
            "hook": "tool.execute.before",
            "input": {"tool": "task", "sessionID": "ses_doctor", "callID": "call_doctor"},
            "output": {"args": {"description": "doctor", "prompt": "Reply with OK."}},
            "directory": str(root),
            "worktree": str(root),
        },
    ),
}
# The answer a correctly working hook gives in the scratch project (a rule is active there).
_EXPECTED_KEY = {
    (install.CLAUDE, "SessionStart"): "hookSpecificOutput",
    (install.CODEX, "SessionStart"): "hookSpecificOutput",
    (install.GEMINI, "BeforeModel"): "hookSpecificOutput",  # after a compression
    (install.OPENCODE, "SessionStart"): "system",
}


@dataclass(frozen=True, slots=True)
class _Run:
    host: str
    event: str
    argv: list[str]
    payload: dict[str, Any]
    timeout: float
    where: str


def _runs(wired: list[WiredHook], opencode: list[str], root: Path) -> list[_Run]:
    runs: list[_Run] = []
    seen: set[tuple[str, str, str]] = set()
    for hook in wired:
        if hook.key in seen or hook.argv is None:  # reported, never run
            continue
        seen.add(hook.key)
        make = _claude_payload if hook.host == install.CLAUDE else _codex_payload
        if hook.host == install.GEMINI:
            make = _gemini_payload
        runs.append(
            _Run(
                hook.host,
                hook.event,
                list(hook.argv),
                make(hook.event, root),
                hook.timeout,
                hook.where,
            )
        )
    for program in opencode:
        for name, (event, make_payload) in _OPENCODE_RUNS.items():
            argv = [program, "hook", name, "--host", "opencode"]
            runs.append(_Run(install.OPENCODE, event, argv, make_payload(root), 30.0, "plugin"))
    return runs


def _run_hooks(wired: list[WiredHook], opencode: list[str], env: Mapping[str, str]) -> list[Check]:
    """Run every hook doctor may run (`WiredHook.argv`; OpenCode's with `opencode`'s program)
    on a synthetic payload, in a scratch project."""
    if not any(hook.argv for hook in wired) and not opencode:
        return []
    checks = []
    with tempfile.TemporaryDirectory(prefix="ctxward-doctor-") as folder:
        root = Path(folder).resolve()
        (root / ".ctxward").mkdir()
        try:
            from ctxward.invariants.activate import activate

            activate(Project(root), DOCTOR_PACK, DOCTOR_SLUG)
        except CtxwardError as exc:
            return [Check("hooks.scratch", FAIL, "cannot set up the scratch project", str(exc))]
        run_env = {**env, "CLAUDE_PROJECT_DIR": str(root)}
        for run in _runs(wired, opencode, root):
            checks.append(_run_one(run, root, run_env))
    return checks


def _run_one(run: _Run, root: Path, env: Mapping[str, str]) -> Check:
    ident = f"hook.{run.host}.{run.event}"
    title = f"{run.host} {run.event}: `{shlex.join(run.argv)}`"
    fix = (
        "ctxward doctor --json shows the details; ctxward hook EVENT < payload.json runs it by hand"
    )
    program = run.argv[0]
    started = time.monotonic()
    try:
        done = subprocess.run(
            [program, *run.argv[1:]],
            input=json.dumps(run.payload).encode("utf-8"),
            capture_output=True,
            timeout=run.timeout,
            cwd=root,
            env=dict(env),
            check=False,
        )
    except subprocess.TimeoutExpired:
        return Check(ident, FAIL, title, f"no answer within its timeout of {run.timeout:g} s", fix)
    except OSError as exc:
        return Check(ident, FAIL, title, f"cannot start: {exc.strerror or exc}", fix)
    seconds = time.monotonic() - started
    stderr = " ".join(done.stderr.decode("utf-8", "replace").split())[:300]
    if done.returncode != 0:
        return Check(ident, FAIL, title, f"exit {done.returncode}: {stderr or 'no message'}", fix)
    stdout = done.stdout.decode("utf-8", "replace")
    answer: Any = None
    if stdout.lstrip().startswith("{"):
        try:
            answer = json.loads(stdout)
        except json.JSONDecodeError as exc:
            return Check(ident, FAIL, title, f"stdout is not valid JSON: {exc.msg}", fix)
    expected = _EXPECTED_KEY.get((run.host, run.event))
    if expected and not (isinstance(answer, dict) and answer.get(expected)):
        return Check(ident, FAIL, title, f"answered without {expected!r} for an active rule", fix)
    if isinstance(answer, dict) and (
        answer.get("hookSpecificOutput", {}).get("permissionDecision") == "deny"
        or "deny" in answer
        or answer.get("decision") == "deny"
    ):
        return Check(ident, FAIL, title, "denied a small, well-formed dispatch", fix)
    detail = f"answered in {seconds:.2f} s (timeout {run.timeout:g} s)"
    if seconds > SLOW_SECONDS:
        return Check(ident, WARN, title, detail + f"; slower than {SLOW_SECONDS:g} s", "")
    return Check(ident, OK, title, detail)


# --- plans and thresholds --------------------------------------------------------------------


def _plan_checks(project: Project) -> list[Check]:
    from ctxward.subagents import watch

    reports: list[watch.Report] = []
    plans = watch.readable_plans(project, reports)
    checks = [
        Check(f"plan.{r.plan}.read", FAIL, f"plan {r.plan}: cannot be read", r.detail)
        for r in reports
    ]
    if not plans and not reports:
        return [Check("plans", INFO, "no active plans")]
    for plan in plans:
        drifts = watch.plan_drifts(project, plan)
        bad = [d for d in drifts if d.state not in ("same", "no-path")]
        if not bad:
            checks.append(
                Check(
                    f"plan.{plan.slug}.drift",
                    OK,
                    f"plan {plan.slug}: {len(drifts)} section(s) match their skills' frontmatter",
                )
            )
        for found in bad:
            checks.append(_drift_check(project, found))
        state = plan.payload_state()
        checks.append(
            Check(
                f"plan.{plan.slug}.payload",
                OK if state == "fresh" else WARN,
                f"plan {plan.slug}: payload {state}",
                "" if state == "fresh" else "PreCompact distills it again before a compaction",
                "" if state == "fresh" else "ctxward watch --once",
            )
        )
    checks.extend(_branch_checks(project, plans))
    return checks


def _branch_checks(project: Project, plans: list[Any]) -> list[Check]:
    """Issue 17 item 5: stale plans (every branch they name is gone) and plans of other branches,
    which the hooks do not inject here (`plans.scope`)."""
    from ctxward.invariants.plans import plan_branches, scope

    found = scope(project, plans)
    checks = [
        Check(
            f"plan.{plan.slug}.branch",
            WARN,
            f"plan {plan.slug}: stale, its branch {', '.join(sorted(plan_branches(plan)))} "
            "no longer exists",
            "not injected; the next compaction completes it (if trusted here)",
            f"ctxward plan complete {plan.slug} (or: ctxward plan clean)",
        )
        for plan in found.gone
    ]
    checks.extend(
        Check(
            f"plan.{plan.slug}.branch",
            INFO,
            f"plan {plan.slug}: scoped to {', '.join(sorted(plan_branches(plan)))}, not injected "
            f"on {found.branch}",
        )
        for plan in found.elsewhere
    )
    return checks


def _drift_check(project: Project, found: Any) -> Check:
    where = project.relative(found.skill_path) if found.skill_path else "?"
    ident = f"plan.{found.plan}.drift.{found.section}"
    if found.state == "changed":
        detail = f"{where}: +{len(found.added)} rule(s), -{len(found.removed)} rule(s)"
        return Check(
            ident,
            FAIL,
            f"plan {found.plan}: skill {found.section} changed since it was activated",
            detail,
            "ctxward watch --once (activates the skill again into the plan)",
        )
    return Check(
        ident,
        FAIL,
        f"plan {found.plan}: skill {found.section}: {found.state}",
        f"{where}: {found.problem}",
        f"restore {where}, or: ctxward activate SKILL --slug {found.plan}",
    )


def _thresholds(project: Project) -> tuple[Check, dict[str, Any]]:
    from ctxward.core.config import Config, load
    from ctxward.guard import thresholds

    settings: Config | None = None
    try:
        settings = load(project)
    except CtxwardError as exc:
        check = Check("config", FAIL, ".ctxward/config.yaml cannot be used", str(exc))
    else:
        where = settings.source or "defaults (no .ctxward/config.yaml)"
        check = Check("config", OK, f"config loads: {where}")
    capacity = thresholds.DEFAULT_CAPACITY_BYTES
    by_agent: dict[str, int] = {}
    source = None
    if settings is not None:
        capacity = settings.dispatch.capacity_bytes
        by_agent = dict(settings.dispatch.capacity_by_agent)
        source = settings.source
    return check, {
        "capacityBytes": capacity,
        "capacityByAgent": by_agent,
        "source": source,
        "tiers": thresholds.table(capacity),
    }
