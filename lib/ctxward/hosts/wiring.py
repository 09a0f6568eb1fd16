"""The command a host runs for one of ctxward's hooks: written by install, read back by doctor.

A host started without the user's shell PATH (an IDE, a desktop launcher) or on a machine
without ctxward must not run a guardless session: a bare `ctxward-hook` that is not found exits
127, which Claude Code treats as a non-blocking error, so an oversized Agent dispatch went
through unchecked. So the command is a short POSIX sh snippet (Claude Code runs a hook's command
with `sh -c`; Codex with `$SHELL -lc`, so its snippet is wrapped in `/bin/sh -c`), rendered from
templates/hosts/hook_command.sh.j2, that tries in turn:

1. the absolute path `install` found (`installed_program`: the program next to the running
   `ctxward`, as pre-commit bakes its interpreter) - left out of files meant to be shared
   (`portable`), where it would name one machine's home folder;
2. the program on the host's PATH (`command -v`);
3. `$HOME/.local/bin/<program>` (where pipx and `uv tool` put it).

A candidate that is not an absolute, executable path is skipped; one that cannot be executed
(exit 126/127: its interpreter is gone) passes to the next. When none runs, the dispatch guard
(PreToolUse) denies the call with one line saying what is missing and how to fix it, as the
deny JSON ctxward itself answers with (Claude Code 2.1.332 hands an exit-2 hook's stderr to the
model behind the whole command in brackets, so the line would come with 600 characters of
shell); SessionStart says it once per session in a `systemMessage`; every other hook exits 0
and says nothing. Any other non-zero exit of the program the guard ran becomes exit 2, which
blocks (a Python that cannot import ctxward exits 1, non-blocking): it fails closed.

`parse` recognises exactly what `render` writes (for any baked path), and `resolve` gives the
program such a command runs now, so `ctxward doctor` can run it as an argv without a shell.
The OpenCode plugin carries the same baked path in one marked line (`plugin_text`).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from collections.abc import Mapping

from ctxward.core.values import Value
from ctxward.hosts import CLAUDE as CLAUDE
from ctxward.hosts import CODEX as CODEX
from ctxward.hosts import GEMINI as GEMINI
from ctxward.hosts import OPENCODE as OPENCODE

# The program each host's hooks run.
PROGRAMS = {
    CLAUDE: "ctxward-hook",
    CODEX: "ctxward-hook",
    OPENCODE: "ctxward",
    GEMINI: "ctxward-hook",
}
GUARD_EVENT = "PreToolUse"  # its fallback blocks (exit 2)
# The hosts whose hooks guard, and the event that does: its fallback blocks.
GUARD_EVENTS = {CLAUDE: GUARD_EVENT, CODEX: GUARD_EVENT, GEMINI: "BeforeTool"}
NOTICE_EVENT = "SessionStart"  # its fallback says so once per session
_LOCAL_BIN = (".local", "bin")
# The one line of the OpenCode plugin that install rewrites (hooks/opencode/ctxward.js).
PLUGIN_LINE = 'const INSTALLED_BIN = ""'
_PLUGIN_PREFIX = "const INSTALLED_BIN = "


class HookCommand(Value):
    """What one command install wrote carries: its host, event and baked program (or None)."""

    host: str
    event: str
    baked: str | None

    @property
    def program(self) -> str:
        return PROGRAMS[self.host]


def program_on_path(program: str, env: Mapping[str, str] | None = None) -> str | None:
    """`program` as found on the absolute folders of PATH, or None.

    A relative PATH folder (`.`, `bin`) names the folder ctxward runs in, which may be a cloned
    repository: a `claude` or `ctxward-hook` committed there is not the user's program.
    """
    env = os.environ if env is None else env
    folders = [
        part for part in env.get("PATH", os.defpath).split(os.pathsep) if os.path.isabs(part)
    ]
    found = shutil.which(program, path=os.pathsep.join(folders))
    return found if found is not None and os.path.isabs(found) else None


def installed_program(
    host: str,
    *,
    argv0: str | None = None,
    executable: str | None = None,
    env: Mapping[str, str] | None = None,
) -> str | None:
    """The absolute path of HOST's program from the ctxward that runs now, or None.

    Next to the running `ctxward` script first (a pipx or `uv tool` link stays valid across
    upgrades, so links are not resolved), then next to the interpreter (`python -m ctxward`
    in a venv), then on PATH.
    """
    name = PROGRAMS[host]
    script = sys.argv[0] if argv0 is None else argv0
    folders = []
    if os.path.basename(script) == "ctxward":
        folders.append(os.path.dirname(os.path.abspath(script)))
    folders.append(os.path.dirname(os.path.abspath(executable or sys.executable)))
    for folder in folders:
        candidate = os.path.join(folder, name)
        if _runnable(candidate):
            return candidate
    return program_on_path(name, env)


def _runnable(path: str) -> bool:
    return os.path.isabs(path) and os.path.isfile(path) and os.access(path, os.X_OK)


def render(host: str, event: str, baked: str | None) -> str:
    """The command install writes for HOST's EVENT; `baked` None: the portable form."""
    from ctxward.core.render import render as render_template

    if baked is not None and not os.path.isabs(baked):
        raise ValueError(f"{baked!r}: a baked program must be an absolute path")
    name = PROGRAMS[host]
    candidates = [shlex.quote(baked)] if baked else []
    candidates += [f'"$(command -v {name})"', f'"$HOME/{"/".join(_LOCAL_BIN)}/{name}"']
    message = {
        "host": host,
        "program": name,
        "baked": baked or "",
        "guarded": host in GUARD_EVENTS,
    }
    guard = GUARD_EVENTS.get(host) == event
    answer: dict[str, object] = {}
    if guard and host == GEMINI:  # Gemini CLI's deny: the reason is the tool result
        line = render_template("hosts/hook_missing.txt.j2", kind="guard", **message).strip()
        answer = {"decision": "deny", "reason": line, "systemMessage": line}
    elif guard:
        line = render_template("hosts/hook_missing.txt.j2", kind="guard", **message).strip()
        decision = {"permissionDecision": "deny", "permissionDecisionReason": line}
        answer = {"hookSpecificOutput": {"hookEventName": event, **decision}}
        answer["systemMessage"] = line
    elif event == NOTICE_EVENT:
        text = render_template("hosts/hook_missing.txt.j2", kind="notice", **message).strip()
        answer = {"systemMessage": text}
    snippet = render_template(
        "hosts/hook_command.sh.j2",
        candidates=candidates,
        args=[shlex.quote(arg) for arg in _args(host, event)],
        guard=guard,
        answer=shlex.quote(json.dumps(answer, ensure_ascii=False)) if answer else "",
    ).strip()
    return f"/bin/sh -c {shlex.quote(snippet)}" if host == CODEX else snippet


def _args(host: str, event: str) -> list[str]:
    if host == CODEX:
        from ctxward.hosts.codex import hook_args

        return hook_args(event)
    if host == GEMINI:
        from ctxward.hosts.gemini import hook_args as gemini_args

        return gemini_args(event)
    return []


def parse(host: str, event: str, command: object) -> HookCommand | None:
    """The HookCommand when `command` is exactly what `render(host, event, ...)` writes."""
    if not isinstance(command, str) or host not in PROGRAMS:
        return None
    try:
        words = shlex.split(command)
        if host == CODEX:
            if words[:2] != ["/bin/sh", "-c"] or len(words) != 3:
                return None
            words = shlex.split(words[2])
    except ValueError:
        return None
    # `for p in CANDIDATE ...`: the first candidate is the baked path when there is one.
    first = words[3] if words[:3] == ["for", "p", "in"] and len(words) > 3 else ""
    baked = first if os.path.isabs(first) else None
    try:
        written = render(host, event, baked)
    except KeyError:  # an event this host's command has no arguments for
        return None
    return HookCommand(host, event, baked) if command == written else None


def resolve(command: HookCommand, env: Mapping[str, str] | None = None) -> str | None:
    """The program `command` runs now (its candidates in the snippet's order), or None."""
    env = os.environ if env is None else env
    if command.baked and _runnable(command.baked):
        return command.baked
    found = program_on_path(command.program, env)
    if found is not None:
        return found
    home = env.get("HOME")
    local = os.path.join(home, *_LOCAL_BIN, command.program) if home else ""
    return local if local and _runnable(local) else None


def argv(command: HookCommand, program: str) -> list[str]:
    """How `program` (what `resolve` found) is run for `command`: the snippet's argv."""
    return [program, *_args(command.host, command.event)]


# --- the OpenCode plugin ----------------------------------------------------------------------


def plugin_text(shipped: str, baked: str | None) -> str:
    """The shipped plugin with `baked` as its INSTALLED_BIN (the shipped text when None)."""
    if PLUGIN_LINE not in shipped:
        raise ValueError(f"the shipped OpenCode plugin has no `{PLUGIN_LINE}` line")
    if baked is None:
        return shipped
    if not os.path.isabs(baked):
        raise ValueError(f"{baked!r}: a baked program must be an absolute path")
    return shipped.replace(PLUGIN_LINE, _PLUGIN_PREFIX + json.dumps(baked), 1)


def plugin_baked(shipped: str, text: str) -> tuple[bool, str | None]:
    """(True, baked) when `text` is the shipped plugin with some INSTALLED_BIN; else (False,
    None)."""
    for line in text.splitlines():
        if line.startswith(_PLUGIN_PREFIX):
            try:  # the JSON string, then the line's comment
                value = json.JSONDecoder().raw_decode(line, len(_PLUGIN_PREFIX))[0]
            except ValueError:
                return False, None
            baked = value if isinstance(value, str) and value else None
            try:
                return text == plugin_text(shipped, baked), baked
            except ValueError:
                return False, None
    return False, None
