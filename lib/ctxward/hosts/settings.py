"""Where each host reads its hooks, and how ctxward recognises its own handlers there."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ctxward.core.fsutil import read_regular_text
from ctxward.core.jsonedit import hooks_block, read_json
from ctxward.core.paths import shipped
from ctxward.core.project import Project
from ctxward.errors import BadInput, CtxwardError
from ctxward.hosts import HOSTS as HOSTS
from ctxward.hosts import wiring
from ctxward.hosts.wiring import CLAUDE as CLAUDE
from ctxward.hosts.wiring import CODEX as CODEX
from ctxward.hosts.wiring import GEMINI as GEMINI
from ctxward.hosts.wiring import OPENCODE as OPENCODE
from ctxward.hosts.wiring import HookCommand

SCOPES: dict[str, tuple[str, ...]] = {
    CLAUDE: ("local", "project", "user"),
    OPENCODE: ("project", "user"),
    CODEX: ("project", "user"),
}


DEFAULT_SCOPE = {CLAUDE: "local", OPENCODE: "project", CODEX: "project"}


# Gemini CLI: .gemini/settings.json (project: shared, portable) or ~/.gemini/settings.json.


SCOPES[GEMINI] = ("project", "user")


DEFAULT_SCOPE[GEMINI] = "project"


# Files meant for the repository: their commands name no path of this machine.
PORTABLE = frozenset({(CLAUDE, "project"), (CODEX, "project")}) | {(GEMINI, "project")}


PLUGIN_MARK = "// ctxward for OpenCode"


PLUGIN_NAME = "ctxward"  # the Claude Code plugin's name (.claude-plugin/plugin.json)


GEMINI_TRUST_NOTE = (
    "Gemini CLI runs a project's hooks only in a trusted folder: trust it once in Gemini "
    "(or headless: --skip-trust / GEMINI_CLI_TRUST_WORKSPACE=true)"
)


def settings_example_path() -> Path:
    return shipped("settings.example.json")


def opencode_plugin_path() -> Path:
    return shipped("hooks/opencode/ctxward.js")


def shipped_plugin() -> str:
    return opencode_plugin_path().read_text(encoding="utf-8")


def canonical_wiring() -> dict[str, list[dict[str, Any]]]:
    """The `hooks` block of settings.example.json: the events, matchers and timeouts install
    writes for Claude Code (its command there, `ctxward-hook`, names the program only)."""
    path = settings_example_path()
    data = json.loads(path.read_text(encoding="utf-8"))
    hooks = data.get("hooks") if isinstance(data, dict) else None
    if not isinstance(hooks, dict):
        raise CtxwardError(f"{path}: has no 'hooks' object")
    return hooks


def wiring_for(host: str, baked: str | None = None) -> dict[str, list[dict[str, Any]]]:
    """The `hooks` block `install HOST` writes for a JSON host, with `baked` as the program's
    absolute path (None: the portable commands)."""
    if host == CLAUDE:
        events = canonical_wiring()
    elif host == CODEX:
        from ctxward.hosts import codex

        claude = canonical_wiring()
        events = {
            event: [
                {**group, "matcher": codex.MATCHERS[event]} if event in codex.MATCHERS else group
                for group in claude[event]
            ]
            for event in codex.WIRED_EVENTS
        }
    elif host == GEMINI:
        from ctxward.hosts import gemini

        return gemini.wiring(lambda event: wiring.render(host, event, baked))
    else:
        raise BadInput(f"{host}: has no hooks block (known: {CLAUDE}, {CODEX}, {GEMINI})")
    return {
        event: [
            {
                **group,
                "hooks": [
                    {**handler, "command": wiring.render(host, event, baked)}
                    for handler in group["hooks"]
                ],
            }
            for group in groups
        ]
        for event, groups in events.items()
    }


def codex_wiring(baked: str | None = None) -> dict[str, list[dict[str, Any]]]:
    """What `install codex` writes (examples/codex/hooks.json is the portable form)."""
    return wiring_for(CODEX, baked)


def label_of(path: Path, project: Project) -> str:
    """The path as the user would type it: project-relative, ~/-relative, or absolute."""
    try:
        return path.resolve().relative_to(project.root).as_posix()
    except ValueError:
        pass
    with contextlib.suppress(ValueError, RuntimeError):
        return "~/" + path.resolve().relative_to(Path.home().resolve()).as_posix()
    return path.as_posix()


# --- where each host reads its hooks -------------------------------------------------------


def config_path(
    host: str, scope: str, project: Project, env: Mapping[str, str] | None = None
) -> Path:
    """The file `install HOST --scope SCOPE` writes."""
    env = os.environ if env is None else env
    if host not in SCOPES:
        raise BadInput(f"unknown host {host!r} (known: {', '.join(HOSTS)})")
    if scope not in SCOPES[host]:
        raise BadInput(f"{host}: unknown scope {scope!r} (known: {', '.join(SCOPES[host])})")
    # The user's own folders are resolved: a home or ~/.claude reached through a link is the
    # user's choice. A project's are not: there a link on the way is refused (fsutil).
    home = Path(env.get("HOME") or Path.home()).resolve()
    if host == CLAUDE:
        if scope == "user":
            return claude_config_dir(env) / "settings.json"
        name = "settings.local.json" if scope == "local" else "settings.json"
        return project.root / ".claude" / name
    if host == CODEX:
        if scope == "user":
            return Path(env.get("CODEX_HOME") or home / ".codex").resolve() / "hooks.json"
        return project.root / ".codex" / "hooks.json"
    if host == GEMINI:
        if scope == "user":
            return Path(env.get("GEMINI_CLI_HOME") or home).resolve() / ".gemini" / "settings.json"
        return project.root / ".gemini" / "settings.json"
    if scope == "user":
        return (home / ".config" / "opencode" / "plugin").resolve() / "ctxward.js"
    return project.root / ".opencode" / "plugin" / "ctxward.js"


def claude_config_dir(env: Mapping[str, str] | None = None) -> Path:
    """~/.claude, or $CLAUDE_CONFIG_DIR (resolved: a link there is the user's)."""
    env = os.environ if env is None else env
    home = Path(env.get("HOME") or Path.home())
    return Path(env.get("CLAUDE_CONFIG_DIR") or home / ".claude").resolve()


def identifies_ctxward(handler: Mapping[str, Any]) -> bool:
    """Whether a hook handler runs ctxward (so install may replace it and uninstall remove it)."""
    if handler.get("type", "command") != "command":
        return False
    command = handler.get("command")
    if not isinstance(command, str):
        return False
    words = _words(command)
    if words[:2] == ["/bin/sh", "-c"] and len(words) == 3:  # a Codex command's wrapper
        words = _words(words[2])
    args = handler.get("args")
    if isinstance(args, list):
        words += [arg for arg in args if isinstance(arg, str)]
    snippet = words[:3] == ["for", "p", "in"]  # hookcommand's: its candidates name the program
    for index, word in enumerate(words):
        name = word.replace("\\", "/").rsplit("/", 1)[-1].rstrip(");")
        if name == "ctxward-hook" or (snippet and name == "ctxward"):
            return True
        if name == "ctxward" and words[index + 1 : index + 2] == ["hook"]:
            return True
        if name.endswith(".py") and _is_checkout_script(word):
            return True
    return False


def _words(command: str) -> list[str]:
    try:
        return shlex.split(command)
    except ValueError:
        return command.split()


def canonical_command(host: str, event: str, handler: Mapping[str, Any]) -> HookCommand | None:
    """What `handler` carries when it is exactly a handler `install HOST` writes for `event`
    (a command `wiring.render` builds, with any baked path; no `args`); None otherwise.

    `ctxward doctor` runs a wired hook only through this: a settings file may come with a
    cloned repository, and a command that merely names ctxward (`ctxward-hook; curl ... | sh`,
    `X=1 ctxward-hook`, `./evil/ctxward-hook`) would run the repository's code.
    """
    if handler.get("type", "command") != "command" or "args" in handler:
        return None
    if host not in (CLAUDE, CODEX, GEMINI) or event not in wiring_for(host):
        return None
    return wiring.parse(host, event, handler.get("command"))


def canonical_argv(
    host: str, event: str, handler: Mapping[str, Any], env: Mapping[str, str] | None = None
) -> list[str] | None:
    """The argv (no shell) of what `handler` runs now, when it is one of install's and its
    program resolves (`wiring.resolve`); None otherwise."""
    command = canonical_command(host, event, handler)
    if command is None:
        return None
    program = wiring.resolve(command, env)
    return wiring.argv(command, program) if program is not None else None


def _is_checkout_script(word: str) -> bool:
    """`word` is `<checkout>/hooks/<event>.py` of a ctxward checkout (not a plugin's root)."""
    path = Path(word.replace("\\", "/"))
    if path.parent.name != "hooks" or word.startswith("${"):
        return False  # ${CLAUDE_PLUGIN_ROOT}/hooks/...: a plugin's hooks.json, never ours to edit
    return (path.parent.parent / "lib" / "ctxward").is_dir()


def other_wirings(
    host: str, scope: str | None, project: Project, env: Mapping[str, str] | None = None
) -> list[str]:
    """Every other place that runs ctxward's hooks for HOST (not `scope`'s file), as labels:
    ctxward's handlers in another scope's file, and for Claude Code the ctxward plugin enabled
    in any settings file. With `scope` None: every place, that file's included."""
    found = []
    for other in SCOPES[host]:
        path = config_path(host, other, project, env)
        label = label_of(path, project)
        if host == OPENCODE:
            if other != scope and _is_plugin_file(path):
                found.append(label)
            continue
        try:
            data = read_json(path, label)[0]
            hooks = hooks_block(data, label) or {}
        except CtxwardError:
            continue
        handlers = [h for groups in hooks.values() for g in groups for h in g["hooks"]]
        if other != scope and any(map(identifies_ctxward, handlers)):
            found.append(label)
        if host == CLAUDE:
            found += [
                f"the {name} plugin (enabledPlugins in {label})" for name in _enabled_plugins(data)
            ]
    return found


def _enabled_plugins(data: Mapping[str, Any]) -> list[str]:
    """The ctxward plugins a settings file enables (`"ctxward@<marketplace>": true`)."""
    plugins = data.get("enabledPlugins")
    if not isinstance(plugins, dict):
        return []
    return [
        name
        for name, on in plugins.items()
        if on is True and isinstance(name, str) and name.split("@", 1)[0] == PLUGIN_NAME
    ]


def _is_plugin_file(path: Path) -> bool:
    try:
        return read_regular_text(path, follow_links=True).startswith(PLUGIN_MARK)
    except (OSError, UnicodeDecodeError):
        return False
