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
  exact commands `ctxward install` writes are run (`host_settings.canonical_command`), as an argv
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

import os
from collections.abc import Mapping

from ctxward.core.project import Project
from ctxward.hosts import settings as host_settings
from ctxward.hosts.claude_version import ClaudeVersion
from ctxward.setup import install
from ctxward.setup.diagnosis import INFO, WARN, Check, Diagnosis, WiredHook
from ctxward.setup.hook_runs import hook_checks
from ctxward.setup.plan_checks import plan_checks, threshold_check
from ctxward.setup.wiring_checks import check_json_file, check_plugin, one_wiring, state_ignored


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
        for scope in host_settings.SCOPES[host]:
            found = check_json_file(host, scope, project, env, version, checks)
            if found:
                wired_hosts.add(host)
                wired += found
    opencode: list[str] = []
    for scope in host_settings.SCOPES[install.OPENCODE]:
        program = check_plugin(scope, project, env, checks)
        if program is not None:
            wired_hosts.add(install.OPENCODE)
            if program:
                opencode.append(program)
    for scope in host_settings.SCOPES[install.GEMINI]:  # Gemini CLI: the same JSON hooks shape
        found = check_json_file(install.GEMINI, scope, project, env, version, checks)
        if found:
            wired_hosts.add(install.GEMINI)
            wired += found
    if install.GEMINI in wired_hosts:
        from ctxward.hosts.gemini_trust import trust_check

        checks.append(trust_check(project, env))
    for host in sorted(wired_hosts):
        checks.append(one_wiring(host, project, env))
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
        checks += hook_checks(wired, opencode[:1], env)
    checks += plan_checks(project)
    ignored = state_ignored(project)
    if ignored is not None:
        checks.append(ignored)
    config_check, thresholds = threshold_check(project)
    checks.append(config_check)
    result.thresholds = thresholds
    return result


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
