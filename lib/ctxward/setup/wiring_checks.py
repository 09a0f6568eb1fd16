"""Doctor's checks of the host files: each host's wiring, the programs it runs, foreign commands
(reported, never run), unknown events, the OpenCode plugin, trust.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ctxward.core import jsonedit
from ctxward.core.fsutil import read_regular_text
from ctxward.core.project import Project
from ctxward.errors import CtxwardError, printable
from ctxward.hosts import settings as host_settings
from ctxward.hosts import wiring
from ctxward.hosts.claude_version import EVENT_SINCE, ClaudeVersion, format_version
from ctxward.hosts.wiring import HookCommand
from ctxward.setup import install, merge
from ctxward.setup.diagnosis import (
    CODEX_MATCHER_NEEDS,
    FAIL,
    INFO,
    MATCHER_NEEDS,
    OK,
    SCRUBBED_CHARS,
    SHOWN_CHARS,
    WARN,
    Check,
    WiredHook,
    matcher_matches,
)


def check_json_file(
    host: str,
    scope: str,
    project: Project,
    env: Mapping[str, str],
    version: ClaudeVersion,
    checks: list[Check],
) -> list[WiredHook]:
    path = host_settings.config_path(host, scope, project, env)
    label = host_settings.label_of(path, project)
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
        WiredHook(
            host, event, handler, label, host_settings.canonical_command(host, event, handler)
        )
        for event, groups in hooks.items()
        for group in groups
        for handler in group["hooks"]
        if _names_ctxward(handler)
    ]
    named = _with_programs(named, ident, scope, fix_install, env, checks)
    found = [hook for hook in named if host_settings.identifies_ctxward(hook.handler)]
    if host == install.CLAUDE:
        _unknown_event_check(ident, label, data, version, checks)
    if host == install.CODEX and any(host_settings.identifies_ctxward(h.handler) for h in named):
        checks.append(_codex_trust_check(ident, path, label, hooks, env))
    foreign = _foreign_commands(named, ident, scope, fix_install)
    checks += foreign
    if not found:
        if foreign:
            return []
        checks.append(Check(f"{ident}.wired", INFO, f"{label} parses; it does not run ctxward"))
        return []
    wanted = host_settings.wiring_for(host)
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
            if not any(host_settings.identifies_ctxward(handler) for handler in group["hooks"]):
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
                if not host_settings.identifies_ctxward(handler):
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
    return host_settings.identifies_ctxward(handler) or any(
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
        wired = hook.event in host_settings.wiring_for(hook.host)
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
                if host_settings.identifies_ctxward(hook.handler)
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
    text = printable(redact(text[:SCRUBBED_CHARS]))
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 1] + "…"


def _unknown_event_check(
    ident: str,
    label: str,
    data: Mapping[str, Any],
    version: ClaudeVersion,
    checks: list[Check],
) -> None:
    verdicts = merge.unknown_events(data, version)
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


def check_plugin(
    scope: str, project: Project, env: Mapping[str, str], checks: list[Check]
) -> str | None:
    """Check the OpenCode plugin file of `scope`; None when there is none of ctxward's, else
    the program doctor runs its hooks with ("" when none may run)."""
    path = host_settings.config_path(install.OPENCODE, scope, project, env)
    label = host_settings.label_of(path, project)
    ident = f"opencode.{scope}"
    if not path.is_file():
        return None
    try:
        text = read_regular_text(path, follow_links=True)
    except (OSError, UnicodeDecodeError) as exc:
        checks.append(Check(f"{ident}.plugin", FAIL, f"{label} cannot be read", str(exc)))
        return None
    if not text.startswith(host_settings.PLUGIN_MARK):
        checks.append(Check(f"{ident}.plugin", WARN, f"{label} exists but is not ctxward's plugin"))
        return None
    same, baked = wiring.plugin_baked(host_settings.shipped_plugin(), text)
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


def one_wiring(host: str, project: Project, env: Mapping[str, str]) -> Check:
    """Each hook runs once: ctxward is wired in one place per host."""
    places = host_settings.other_wirings(host, None, project, env)
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


def state_ignored(project: Project) -> Check | None:
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
