"""Wire ctxward into a host, and take it out again, touching nothing else.

Claude Code (`.claude/settings.json` of a project, `.claude/settings.local.json`, or the user's
`~/.claude/settings.json`) and Codex (`.codex/hooks.json`, `~/.codex/hooks.json`) read hooks
from JSON files of the same shape; OpenCode loads a plugin file from a folder.

What is written comes from one source: the `hooks` block of settings.example.json (shipped in
the wheel as ctxward/data/settings.example.json). Codex gets the events it shares with Claude
Code (hosts/codex.py WIRED_EVENTS), with the same matchers and timeouts and its own command.
OpenCode gets hooks/opencode/ctxward.js (shipped as ctxward/data/opencode/ctxward.js).

Merging a JSON file:

- The file is parsed with `json` and must be an object; `hooks` an object of lists of matcher
  groups, each an object with a `hooks` list. Anything else is refused (BadInput, nothing
  written). JSON has no comments: a file with `//` or `/* */` comments is refused with a message
  saying so, rather than rewritten without them.
- ctxward's own handlers are found by their command (`identifies_ctxward`): `ctxward-hook`,
  `ctxward hook ...`, or a `hooks/<event>.py` of a ctxward checkout. Install replaces those with
  the canonical wiring (in place when they already form a group of their own, else appended);
  uninstall removes exactly those, then the groups, event lists and `hooks` object that removing
  them left empty. Every other key, event, group and handler stays where it was.
- What install writes is also the only thing `ctxward doctor` runs: `canonical_argv` says
  whether a handler is exactly one of install's (same command and args, for that host and
  event), compared with `wiring_for(host)`, the one place the commands come from.
- The file is written back with its own formatting (`rewrite`): every value that did not
  change is copied from the original text verbatim (inline objects, alignment, escapes, key
  order, the final newline); only the objects and lists that changed are written anew, with
  the file's indentation (2 or 4 spaces, tabs, or none). A backup of the previous bytes is
  written next to it first (`<name>.<UTC time>.ctxward-backup`). Nothing changed, nothing
  written: a second install is a no-op.

Claude Code versions: a settings file naming an event the running Claude Code does not know
disables every hook in that file (seen with 2.0.77 and PostCompact). So install writes only
the events the version knows (EVENT_SINCE); the others are left out, and said so. The version
comes from `--claude-version`, else `claude --version`; when neither gives one, install assumes
ASSUMED_VERSION (2.0.77, the oldest version ctxward was run against), which leaves PostCompact
out, and says how to include it.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ctxward.errors import BadInput, CtxwardError, digits_problem
from ctxward.fsutil import atomic_write, read_regular, read_regular_text
from ctxward.project import Project

CLAUDE = "claude"
OPENCODE = "opencode"
CODEX = "codex"
HOSTS = (CLAUDE, OPENCODE, CODEX)
SCOPES: dict[str, tuple[str, ...]] = {
    CLAUDE: ("project", "local", "user"),
    OPENCODE: ("project", "user"),
    CODEX: ("project", "user"),
}
# The program each host's hooks run (doctor checks that it resolves on PATH).
ENTRY_POINTS = {CLAUDE: "ctxward-hook", OPENCODE: "ctxward", CODEX: "ctxward"}

Version = tuple[int, int, int]

# The Claude Code version that introduced each hook event (CHANGELOG; reference
# claude-code-hooks.md §2). None: the event exists, its first version is not documented.
EVENT_SINCE: dict[str, Version | None] = {
    "PreToolUse": (1, 0, 38),
    "PostToolUse": (1, 0, 38),
    "Stop": (1, 0, 38),
    "SubagentStop": (1, 0, 41),
    "PreCompact": (1, 0, 48),
    "UserPromptSubmit": (1, 0, 54),
    "SessionStart": (1, 0, 62),
    "SessionEnd": (1, 0, 85),
    "SubagentStart": (2, 0, 43),
    "PermissionRequest": (2, 0, 45),
    "Setup": (2, 1, 10),
    "TaskCompleted": (2, 1, 33),
    "TeammateIdle": (2, 1, 33),
    "ConfigChange": (2, 1, 49),
    "WorktreeCreate": (2, 1, 50),
    "WorktreeRemove": (2, 1, 50),
    "InstructionsLoaded": (2, 1, 69),
    "PostCompact": (2, 1, 76),
    "Elicitation": (2, 1, 76),
    "ElicitationResult": (2, 1, 76),
    "StopFailure": (2, 1, 78),
    "CwdChanged": (2, 1, 83),
    "FileChanged": (2, 1, 83),
    "TaskCreated": (2, 1, 84),
    "PermissionDenied": (2, 1, 89),
    "MessageDisplay": (2, 1, 152),
    "DirectoryAdded": (2, 1, 219),
    "Notification": None,
    "UserPromptExpansion": None,
    # Not in the CHANGELOG (reference §2 has no version): the event list of the published npm
    # builds has it from 2.0.56 on, not in 2.0.55 (cli.js of @anthropic-ai/claude-code).
    "PostToolUseFailure": (2, 0, 56),
    "PostToolBatch": None,
}
ASSUMED_VERSION: Version = (2, 0, 77)
_VERSION = re.compile(r"(\d+)\.(\d+)\.(\d+)")
_BACKUP_SUFFIX = ".ctxward-backup"
MAX_SETTINGS_BYTES = 16 * 1024 * 1024  # a host's settings file; real ones are a few KB
PLUGIN_MARK = "// ctxward for OpenCode"

_PACKAGE = Path(__file__).resolve().parent
_CHECKOUT = _PACKAGE.parent.parent  # lib/ctxward -> repository root


# --- shipped files ---------------------------------------------------------------------------


def shipped_file(in_wheel: str, in_checkout: str) -> Path:
    """A file shipped under ctxward/data/ in the wheel, or at its place in a checkout."""
    for candidate in (_PACKAGE / "data" / in_wheel, _CHECKOUT / in_checkout):
        if candidate.is_file():
            return candidate
    raise CtxwardError(f"ctxward is installed without its {in_checkout} (reinstall ctxward)")


def settings_example_path() -> Path:
    return shipped_file("settings.example.json", "settings.example.json")


def opencode_plugin_path() -> Path:
    return shipped_file("opencode/ctxward.js", "hooks/opencode/ctxward.js")


def canonical_wiring() -> dict[str, list[dict[str, Any]]]:
    """The `hooks` block of settings.example.json: what `install claude` writes."""
    path = settings_example_path()
    data = json.loads(path.read_text(encoding="utf-8"))
    hooks = data.get("hooks") if isinstance(data, dict) else None
    if not isinstance(hooks, dict):
        raise CtxwardError(f"{path}: has no 'hooks' object")
    return hooks


def wiring_for(host: str) -> dict[str, list[dict[str, Any]]]:
    """The `hooks` block `install HOST` writes for a JSON host (every event it may wire)."""
    if host == CLAUDE:
        return canonical_wiring()
    if host == CODEX:
        return codex_wiring()
    raise BadInput(f"{host}: has no hooks block (known: {CLAUDE}, {CODEX})")


def codex_wiring() -> dict[str, list[dict[str, Any]]]:
    """What `install codex` writes: the shared events, with `ctxward hook EVENT --host codex`."""
    from ctxward.hosts import codex

    claude = canonical_wiring()
    wiring: dict[str, list[dict[str, Any]]] = {}
    for event in codex.WIRED_EVENTS:
        groups = []
        for group in claude[event]:
            handlers = [
                {**handler, "command": codex.command_for(event)} for handler in group["hooks"]
            ]
            groups.append({**group, "hooks": handlers})
        wiring[event] = groups
    return wiring


# --- Claude Code version ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ClaudeVersion:
    """The Claude Code version install and doctor go by, and where it came from."""

    version: Version
    source: str  # "override" | "detected" | "assumed"
    detail: str = ""  # why it was assumed, or the program that answered

    @property
    def text(self) -> str:
        return format_version(self.version)


def parse_version(text: str) -> Version | None:
    """The first X.Y.Z in `text` (`claude --version` prints '2.1.332 (Claude Code)')."""
    match = _VERSION.search(text)
    if match is None:
        return None
    major, minor, patch = (int(part) for part in match.groups())
    return major, minor, patch


def format_version(version: Version) -> str:
    return ".".join(str(part) for part in version)


def detect_claude_version(
    override: str | None = None,
    *,
    which: Callable[[str], str | None] | None = None,
    timeout: float = 15.0,
) -> ClaudeVersion:
    """`override` when given (BadInput when it is no version), else ask `claude --version`."""
    if override is not None:
        version = parse_version(override)
        if version is None:
            raise BadInput(f"--claude-version {override!r} is not a version like 2.1.76")
        return ClaudeVersion(version, "override")
    program = (which or program_on_path)("claude")
    if program is None:
        return ClaudeVersion(ASSUMED_VERSION, "assumed", "`claude` is not on PATH")
    try:
        result = subprocess.run(
            [program, "--version"],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return ClaudeVersion(ASSUMED_VERSION, "assumed", f"`claude --version` failed: {exc}")
    version = parse_version(result.stdout)
    if result.returncode != 0 or version is None:
        answer = " ".join((result.stdout + result.stderr).split())[:80] or "no output"
        return ClaudeVersion(
            ASSUMED_VERSION,
            "assumed",
            f"`claude --version` gave no version (exit {result.returncode}: {answer})",
        )
    return ClaudeVersion(version, "detected", program)


def event_known(event: str, version: Version) -> bool | None:
    """Whether Claude Code `version` knows `event`; None when ctxward cannot tell."""
    if event not in EVENT_SINCE:
        return None
    since = EVENT_SINCE[event]
    if since is None:
        return None
    return version >= since


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


# --- where each host reads its hooks ---------------------------------------------------------


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
            folder = Path(env.get("CLAUDE_CONFIG_DIR") or home / ".claude").resolve()
            return folder / "settings.json"
        name = "settings.local.json" if scope == "local" else "settings.json"
        return project.root / ".claude" / name
    if host == CODEX:
        if scope == "user":
            return Path(env.get("CODEX_HOME") or home / ".codex").resolve() / "hooks.json"
        return project.root / ".codex" / "hooks.json"
    if scope == "user":
        return (home / ".config" / "opencode" / "plugin").resolve() / "ctxward.js"
    return project.root / ".opencode" / "plugin" / "ctxward.js"


# --- recognising ctxward's own handlers ------------------------------------------------------


def identifies_ctxward(handler: Mapping[str, Any]) -> bool:
    """Whether a hook handler runs ctxward (so install may replace it and uninstall remove it)."""
    if handler.get("type", "command") != "command":
        return False
    command = handler.get("command")
    if not isinstance(command, str):
        return False
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    args = handler.get("args")
    if isinstance(args, list):
        words += [arg for arg in args if isinstance(arg, str)]
    for index, word in enumerate(words):
        name = word.replace("\\", "/").rsplit("/", 1)[-1]
        if name == "ctxward-hook":
            return True
        if name == "ctxward" and words[index + 1 : index + 2] == ["hook"]:
            return True
        if name.endswith(".py") and _is_checkout_script(word):
            return True
    return False


def canonical_argv(host: str, event: str, handler: Mapping[str, Any]) -> list[str] | None:
    """The argv that runs `handler` when it is exactly a handler `install HOST` writes for
    `event` (same type, command and args); None for anything else.

    `ctxward doctor` runs a wired hook only through this: a settings file may come with a
    cloned repository, and a command that merely names ctxward (`ctxward-hook; curl ... | sh`,
    `X=1 ctxward-hook`, `./evil/ctxward-hook`) would run the repository's code. The commands
    install writes are plain words, so the argv is their `shlex` split, run without a shell.
    """
    for group in wiring_for(host).get(event, []):
        for written in group["hooks"]:
            same = all(handler.get(key) == written.get(key) for key in ("type", "command", "args"))
            if same:
                return [*shlex.split(written["command"]), *written.get("args", [])]
    return None


def _is_checkout_script(word: str) -> bool:
    """`word` is `<checkout>/hooks/<event>.py` of a ctxward checkout (not a plugin's root)."""
    path = Path(word.replace("\\", "/"))
    if path.parent.name != "hooks" or word.startswith("${"):
        return False  # ${CLAUDE_PLUGIN_ROOT}/hooks/...: a plugin's hooks.json, never ours to edit
    return (path.parent.parent / "lib" / "ctxward").is_dir()


# --- JSON files ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class JsonStyle:
    """How a JSON file was formatted, so that it can be written back the same way."""

    indent: str | None = "  "
    separators: tuple[str, str] = (",", ": ")
    ensure_ascii: bool = False
    trailing_newline: bool = True

    def dumps(self, data: Any) -> str:
        text = json.dumps(
            data, indent=self.indent, separators=self.separators, ensure_ascii=self.ensure_ascii
        )
        return text + "\n" if self.trailing_newline else text


def detect_style(text: str) -> JsonStyle:
    """The indentation, separators, escaping and final newline of a JSON text."""
    indent: str | None = None
    for line in text.splitlines()[1:]:
        stripped = line.lstrip(" \t")
        if stripped and stripped != line:
            lead = line[: len(line) - len(stripped)]
            indent = "\t" if lead.startswith("\t") else " " * len(lead)
            break
    if indent is None:
        spaced = '": ' in text or re.search(r'"\s*:\s', text) is not None
        separators = (", ", ": ") if spaced else (",", ":")
    else:
        separators = (",", ": ")
    ascii_only = text.isascii() and "\\u" in text
    return JsonStyle(
        indent=indent,
        separators=separators,
        ensure_ascii=ascii_only,
        trailing_newline=text.endswith("\n") or not text,
    )


@dataclass(slots=True)
class _Node:
    """A JSON value's place in the original text (objects and arrays keep their children's)."""

    start: int
    end: int
    value: Any
    keys: dict[str, _Node] | None = None
    items: list[_Node] | None = None


_DECODER = json.JSONDecoder()
_SPACE = re.compile(r"[ \t\n\r]*")


def _parse_spans(text: str, index: int = 0) -> _Node:
    """Parse already-validated JSON, remembering where every value sits in `text`."""
    index = _SPACE.match(text, index).end()  # type: ignore[union-attr]
    char = text[index]
    if char not in "{[":
        value, end = _DECODER.raw_decode(text, index)
        return _Node(index, end, value)
    start, closing = index, "}" if char == "{" else "]"
    keys: dict[str, _Node] = {}
    items: list[_Node] = []
    index = _SPACE.match(text, index + 1).end()  # type: ignore[union-attr]
    while text[index] != closing:
        if char == "{":
            key, index = _DECODER.raw_decode(text, index)
            index = _SPACE.match(text, index).end() + 1  # type: ignore[union-attr]  # past ':'
            child = _parse_spans(text, index)
            keys[key] = child
        else:
            child = _parse_spans(text, index)
            items.append(child)
        index = _SPACE.match(text, child.end).end()  # type: ignore[union-attr]
        if text[index] == ",":
            index = _SPACE.match(text, index + 1).end()  # type: ignore[union-attr]
    if char == "{":
        value = {key: node.value for key, node in keys.items()}
        return _Node(start, index + 1, value, keys=keys)
    return _Node(start, index + 1, [node.value for node in items], items=items)


def _same(a: Any, b: Any) -> bool:
    """Equal, with the same types and the same key order (so the original text still fits)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[key], b[key]) for key in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def rewrite(text: str, data: Any, style: JsonStyle) -> str:
    """`data` as JSON text that reuses `text` verbatim for every value that did not change.

    Only the objects and arrays that changed are written anew, with the file's indentation;
    everything else (inline objects, aligned entries, escapes, number spellings) is copied.
    """
    if not text.strip():
        return style.dumps(data)
    root = _parse_spans(text)
    return text[: root.start] + _emit(text, data, root, 0, style) + text[root.end :]


def _emit(text: str, value: Any, node: _Node | None, level: int, style: JsonStyle) -> str:
    if node is not None and _same(value, node.value):
        return text[node.start : node.end]
    if not isinstance(value, (dict, list)) or not value:
        fresh = json.dumps(
            value, indent=style.indent, separators=style.separators, ensure_ascii=style.ensure_ascii
        )
        return fresh.replace("\n", "\n" + (style.indent or "") * level)
    parts: list[str] = []
    if isinstance(value, dict):
        keys = node.keys if node is not None and node.keys is not None else {}
        for key, item in value.items():
            name = json.dumps(key, ensure_ascii=style.ensure_ascii)
            child = _emit(text, item, keys.get(key), level + 1, style)
            parts.append(name + style.separators[1] + child)
        opening, closing = "{", "}"
    else:
        unused = list(node.items) if node is not None and node.items is not None else []
        for item in value:
            match = next((n for n in unused if _same(item, n.value)), None)
            if match is not None:
                unused.remove(match)
            parts.append(_emit(text, item, match, level + 1, style))
        opening, closing = "[", "]"
    if style.indent is None:
        return opening + style.separators[0].join(parts) + closing
    inner = style.indent * (level + 1)
    return (
        opening
        + "\n"
        + ",\n".join(inner + part for part in parts)
        + "\n"
        + style.indent * level
        + closing
    )


def _comment_at(text: str) -> int | None:
    """The line of the first `//` or `/*` outside a JSON string, None when there is none."""
    in_string = False
    escaped = False
    line = 1
    for index, char in enumerate(text):
        if char == "\n":
            line += 1
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char == "/" and text[index + 1 : index + 2] in ("/", "*"):
            return line
    return None


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise _DuplicateKey(key)
        seen[key] = value
    return seen


class _DuplicateKey(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def read_json(path: Path, label: str) -> tuple[dict[str, Any], str, bool]:
    """(data, text, existed) of a JSON config file; BadInput for anything not safely mergeable."""
    if path.is_symlink():
        raise BadInput(f"{label}: is a symbolic link; edit its target instead")
    try:
        # A host file: links are the user's. Far past any real settings file: refused.
        raw = read_regular(path, follow_links=True, limit=MAX_SETTINGS_BYTES)
    except FileNotFoundError:
        return {}, "", False
    except IsADirectoryError:
        raise BadInput(f"{label}: is a folder, not a JSON file") from None
    except OSError as exc:  # a FIFO too: `read_regular` never waits on one
        raise BadInput(f"{label}: cannot read: {exc.strerror}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadInput(f"{label}: not UTF-8 (byte {exc.start})") from None
    if not text.strip():
        return {}, text, True
    try:
        data = json.loads(text, object_pairs_hook=_no_duplicates)
    except _DuplicateKey as exc:
        raise BadInput(
            f"{label}: the key {exc.key!r} appears twice in one object; keep one and run again"
        ) from None
    except json.JSONDecodeError as exc:
        line = _comment_at(text)
        if line is not None:
            raise BadInput(
                f"{label}: has a comment at line {line}; JSON has no comments, and ctxward "
                "will not rewrite the file without them: remove them (or move the file's "
                "hooks by hand) and run again"
            ) from None
        raise BadInput(
            f"{label}: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno}); "
            "fix it and run again"
        ) from None
    except ValueError:  # json's only other error: an integer past sys.get_int_max_str_digits()
        raise BadInput(f"{label}: has {digits_problem()}; fix it and run again") from None
    except RecursionError:
        raise BadInput(f"{label}: nested too deeply to be a settings file; fix it") from None
    if not isinstance(data, dict):
        raise BadInput(f"{label}: is a JSON {type(data).__name__}, not an object")
    return data, text, True


def hooks_block(data: Mapping[str, Any], label: str) -> dict[str, Any] | None:
    """The file's `hooks` object after checking its shape; BadInput names the bad key."""
    hooks = data.get("hooks")
    if hooks is None:
        return None
    if not isinstance(hooks, dict):
        raise BadInput(f"{label}: 'hooks' is a {_json_type(hooks)}, not an object")
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            raise BadInput(f"{label}: hooks.{event} is a {_json_type(groups)}, not a list")
        for index, group in enumerate(groups):
            if not isinstance(group, dict):
                raise BadInput(f"{label}: hooks.{event}[{index}] is not an object")
            handlers = group.get("hooks")
            if not isinstance(handlers, list):
                raise BadInput(f"{label}: hooks.{event}[{index}].hooks is not a list")
            for position, handler in enumerate(handlers):
                if not isinstance(handler, dict):
                    raise BadInput(
                        f"{label}: hooks.{event}[{index}].hooks[{position}] is not an object"
                    )
    return hooks


def _json_type(value: object) -> str:
    names = {dict: "object", list: "list", str: "string", bool: "boolean", type(None): "null"}
    return names.get(type(value), "number")


# --- merging ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Change:
    """What install or uninstall did (or, in a dry run, would do) to one event."""

    event: str
    action: str  # added | updated | unchanged | removed | skipped
    reason: str = ""


def _strip_ours(groups: list[Any]) -> tuple[list[Any], int | None, bool]:
    """(groups without ctxward's handlers, index of the first group that was all ours, any?)."""
    kept: list[Any] = []
    first_own: int | None = None
    found = False
    for group in groups:
        handlers = group["hooks"]
        mine = [handler for handler in handlers if identifies_ctxward(handler)]
        if not mine:
            kept.append(group)
            continue
        found = True
        rest = [handler for handler in handlers if not identifies_ctxward(handler)]
        if rest:
            kept.append({**group, "hooks": rest})
        elif first_own is None:
            first_own = len(kept)
    return kept, first_own, found


def merge(
    data: dict[str, Any],
    wiring: Mapping[str, list[dict[str, Any]]],
    leave_out: Mapping[str, str],
    label: str,
) -> tuple[dict[str, Any], list[Change]]:
    """`data` with ctxward's wiring merged in (a new object; `data` is not changed).

    `leave_out` maps events of the wiring that must not be written to the reason; ctxward's
    handlers already under such an event are removed.
    """
    result = json.loads(json.dumps(data))  # a deep copy that keeps key order
    hooks = hooks_block(result, label)
    created = hooks is None
    if hooks is None:
        hooks = {}
        result["hooks"] = hooks
    changes: list[Change] = []
    for event, groups in wiring.items():
        current = hooks.get(event, [])
        if event in leave_out:
            kept, _, found = _strip_ours(current)
            if found:
                _set_or_drop(hooks, event, kept)
                changes.append(Change(event, "removed", leave_out[event]))
            else:
                changes.append(Change(event, "skipped", leave_out[event]))
            continue
        own = [group for group in current if any(map(identifies_ctxward, group["hooks"]))]
        if own == list(groups):
            changes.append(Change(event, "unchanged"))
            continue
        kept, position, found = _strip_ours(current)
        at = len(kept) if position is None else position
        hooks[event] = kept[:at] + [json.loads(json.dumps(g)) for g in groups] + kept[at:]
        changes.append(Change(event, "updated" if found else "added"))
    for event in list(hooks):
        if event not in wiring:
            kept, _, found = _strip_ours(hooks[event])
            if found:
                _set_or_drop(hooks, event, kept)
                changes.append(Change(event, "removed", "ctxward no longer wires this event"))
    if created and not hooks:
        del result["hooks"]  # everything was left out: add nothing, not even an empty block
    return result, changes


def unmerge(data: dict[str, Any], label: str) -> tuple[dict[str, Any], list[Change]]:
    """`data` without any ctxward handler (a new object); empty containers it left go too."""
    result = json.loads(json.dumps(data))
    hooks = hooks_block(result, label)
    changes: list[Change] = []
    if hooks is None:
        return result, changes
    for event in list(hooks):
        kept, _, found = _strip_ours(hooks[event])
        if found:
            _set_or_drop(hooks, event, kept)
            changes.append(Change(event, "removed"))
    if changes and not hooks:
        del result["hooks"]
    return result, changes


def _set_or_drop(hooks: dict[str, Any], event: str, groups: list[Any]) -> None:
    if groups:
        hooks[event] = groups
    else:
        hooks.pop(event, None)


def unknown_events(data: Mapping[str, Any], version: Version) -> dict[str, bool | None]:
    """Events named in a settings file that `version` does not know (False) or may not (None)."""
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return {}
    verdicts = {event: event_known(event, version) for event in hooks}
    return {event: known for event, known in verdicts.items() if known is not True}


# --- install / uninstall ---------------------------------------------------------------------


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
    warnings: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return self.before != self.after or self.removed

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
    now: datetime | None = None,
) -> Result:
    """Wire ctxward into HOST at SCOPE; return what changed (nothing is written on a dry run)."""
    path = config_path(host, scope, project, env)
    result = Result(host, scope, "install", path, label_of(path, project), dry_run)
    if host == OPENCODE:
        _install_plugin(result, now)
    else:
        if host == CLAUDE:
            version = claude_version or detect_claude_version()
            result.version = version
            wiring = canonical_wiring()
            leave_out = _too_new(wiring, version)
        else:
            wiring, leave_out = codex_wiring(), {}
        data, text, existed = read_json(path, result.label)
        result.existed, result.before = existed, text
        style = detect_style(text) if text.strip() else JsonStyle()
        merged, result.changes = merge(data, wiring, leave_out, result.label)
        if host == CLAUDE and result.version is not None:
            result.warnings += _foreign_unknown(merged, result.version, result.label)
        _finish_json(result, data, merged, text, style, now)
        if host == CODEX:
            result.warnings.append(
                "Codex runs a new or changed hook only once you trust it: review it under "
                "/hooks in Codex"
            )
    program = ENTRY_POINTS[host]
    if program_on_path(program, env) is None:
        result.warnings.append(
            f"`{program}` is not on this shell's PATH: the hooks will fail to start until it is "
            "(pipx install ctxward, or put the venv's bin/ on PATH)"
        )
    return result


def uninstall(
    host: str,
    scope: str,
    project: Project,
    *,
    dry_run: bool = False,
    env: Mapping[str, str] | None = None,
    now: datetime | None = None,
) -> Result:
    """Remove exactly what install added to HOST at SCOPE; return what changed."""
    path = config_path(host, scope, project, env)
    result = Result(host, scope, "uninstall", path, label_of(path, project), dry_run)
    if host == OPENCODE:
        _uninstall_plugin(result, now)
        return result
    data, text, existed = read_json(path, result.label)
    result.existed, result.before = existed, text
    if not existed:
        result.after = text
        return result
    style = detect_style(text) if text.strip() else JsonStyle()
    cleaned, result.changes = unmerge(data, result.label)
    _finish_json(result, data, cleaned, text, style, now)
    return result


def _too_new(wiring: Mapping[str, Any], version: ClaudeVersion) -> dict[str, str]:
    """Events of the wiring that Claude Code `version` does not know, with the reason."""
    leave_out = {}
    for event in wiring:
        since = EVENT_SINCE.get(event)
        if since is None:
            raise CtxwardError(
                f"settings.example.json wires {event}, whose first Claude Code version ctxward "
                "does not know (add it to ctxward.install.EVENT_SINCE)"
            )
        if version.version < since:
            leave_out[event] = f"needs Claude Code >= {format_version(since)}"
    return leave_out


def _foreign_unknown(data: Mapping[str, Any], version: ClaudeVersion, label: str) -> list[str]:
    warnings = []
    for event, known in unknown_events(data, version.version).items():
        if known is False:
            warnings.append(
                f"{label} names {event}, which Claude Code {version.text} does not know: that "
                "version ignores every hook in the file (not ctxward's entry; left as it is)"
            )
    return warnings


def _finish_json(
    result: Result,
    before: dict[str, Any],
    after: dict[str, Any],
    text: str,
    style: JsonStyle,
    now: datetime | None,
) -> None:
    if after == before and result.existed:
        result.after = text
        return
    result.after = rewrite(text, after, style)
    if result.dry_run or result.after == text:
        return
    if result.existed and text:
        result.backup = _backup(result.path, text.encode("utf-8"), now)
    atomic_write(result.path, result.after, validate=_valid_json)
    result.written = True


def _valid_json(data: bytes) -> None:
    json.loads(data.decode("utf-8"))


def _backup(path: Path, data: bytes, now: datetime | None) -> Path:
    """Write `data` next to `path` as <name>.<UTC time>[-N].ctxward-backup; never overwrite one."""
    stamp = (now or datetime.now(timezone.utc)).astimezone(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    target = path.with_name(f"{path.name}.{stamp}{_BACKUP_SUFFIX}")
    number = 1
    while target.exists() or target.is_symlink():
        number += 1
        target = path.with_name(f"{path.name}.{stamp}-{number}{_BACKUP_SUFFIX}")
    atomic_write(target, data)
    return target


def _install_plugin(result: Result, now: datetime | None) -> None:
    shipped = opencode_plugin_path().read_text(encoding="utf-8")
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
    result.before, result.after = current, shipped
    event = "plugin"
    if current == shipped:
        result.changes.append(Change(event, "unchanged"))
        return
    result.changes.append(Change(event, "updated" if result.existed else "added"))
    if result.dry_run:
        return
    if result.existed:
        result.backup = _backup(path, current.encode("utf-8"), now)
    atomic_write(path, shipped)
    result.written = True


def _uninstall_plugin(result: Result, now: datetime | None) -> None:
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
    if current != opencode_plugin_path().read_text(encoding="utf-8"):
        result.backup = _backup(path, current.encode("utf-8"), now)  # edited by hand: keep it
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    result.written = True


def label_of(path: Path, project: Project) -> str:
    """The path as the user would type it: project-relative, ~/-relative, or absolute."""
    try:
        return path.resolve().relative_to(project.root).as_posix()
    except ValueError:
        pass
    with contextlib.suppress(ValueError, RuntimeError):
        return "~/" + path.resolve().relative_to(Path.home().resolve()).as_posix()
    return path.as_posix()


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
