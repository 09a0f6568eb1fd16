"""What one tool call is reduced to: its window entry, the signature names, the tool classes."""

from __future__ import annotations

import os

from ctxward.core import hotjson
from ctxward.core.drift_settings import SIGNATURES

# `typing.TYPE_CHECKING` without importing typing: this module is on the PostToolUse hot path.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any


NAMES = {
    "repetition": "repetition loop",
    "failure_spiral": "failure spiral",
    "tool_cycling": "tool cycling",
    "rework_churn": "rework churn",
    "excessive_searching": "excessive searching",
    "silence": "silence drift",
}


POST_TOOL_USE = "PostToolUse"


POST_TOOL_USE_FAILURE = "PostToolUseFailure"


EVENTS = (POST_TOOL_USE, POST_TOOL_USE_FAILURE)


LOG_SUFFIX = ".tools.jsonl"


STATE_SUFFIX = ".drift.json"


ORPHAN_SECONDS = 60  # a state write takes microseconds; a temporary file this old is a crash's


STATE_VERSION = 1


TAIL_BYTES = 64 * 1024  # how much of the log a lost state is rebuilt from


RECENT_IDS = 32  # call ids remembered to recognise a call observed twice


MAX_PENDING = len(SIGNATURES) + 3  # + a large output, a pressure stage, an offload


MAX_PATH_CHARS = 300  # a target file longer than this is kept by its tail


MAX_NAME_CHARS = 100


_FOLD_CHARS = 4096  # strings up to this length have their whitespace runs folded


# Tool classes, by casefolded name (Claude Code names; OpenCode's lower-case ids).
WRITE_TOOLS = frozenset({"write", "edit", "multiedit", "notebookedit", "patch", "apply_patch"})


# Seed 002 "Excessive searching": ls/find/grep. Reading a file is not searching for one.
SEARCH_TOOLS = frozenset({"grep", "glob", "ls", "list"})


SHELL_TOOLS = frozenset({"bash", "shell"})


SEARCH_PROGRAMS = frozenset(
    {
        "ls",
        "find",
        "grep",
        "egrep",
        "fgrep",
        "rg",
        "fd",
        "fdfind",
        "ag",
        "ack",
        "tree",
        "locate",
    }
)


# Programs that may stand in a search's command line without making it one (`rg x | head`).
_PASSIVE = frozenset({"cd", "head", "tail", "wc", "sort", "uniq", "cut", "less", "cat"})


_FILE_KEYS = ("file_path", "notebook_path", "filePath")


_SHELL_SEPARATORS = ("&&", "||", ";", "|", "\n")


# Entry fields, in the order a window entry (a JSON list) stores them.
TOOL, KEY, ARGS, FILE, OK, KIND, ID = range(7)


def entry(
    tool: str,
    tool_input: object,
    ok: bool,
    call_id: str = "",
    root: str = "",
) -> list[Any]:
    """One tool call as a window entry: [tool, key, args digest, file, ok, kind, id]."""
    name = tool[:MAX_NAME_CHARS]
    params = tool_input if isinstance(tool_input, dict) else {}
    folded = name.casefold()
    target = _target_file(params, root)
    kind = ""
    program = ""
    if folded in WRITE_TOOLS:
        kind = "write"
    elif folded in SEARCH_TOOLS:
        kind = "search"
    elif folded in SHELL_TOOLS:
        command = params.get("command")
        programs = _programs(command) if isinstance(command, str) else []
        program = programs[0] if programs else ""
        if programs and all(p in SEARCH_PROGRAMS or p in _PASSIVE for p in programs):
            kind = "search" if any(p in SEARCH_PROGRAMS for p in programs) else ""
    key = f"{name}:{target or program}"
    return [name, key, args_digest(tool_input), target, 1 if ok else 0, kind, call_id]


def args_digest(tool_input: object) -> str:
    """16 hex digits of BLAKE2b over the normalised arguments (key order and spacing aside)."""
    normal = hotjson.dumps(
        _normalise(tool_input, top=True),
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        default=str,
    )
    digest: str = _blake2b(normal.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()
    return digest


def _blake2b(data: bytes, digest_size: int) -> Any:
    # The builtin module costs ~0.2 ms to import; `hashlib` (OpenSSL) ~2.5 ms.
    try:
        from _blake2 import blake2b
    except ImportError:  # pragma: no cover - a Python built without it
        from hashlib import blake2b
    return blake2b(data, digest_size=digest_size)


def _normalise(value: object, top: bool = False) -> object:
    if isinstance(value, dict):
        return {
            str(k): _normalise(v)
            for k, v in value.items()
            if not (top and k == "description")  # the model's wording of the same command
        }
    if isinstance(value, list):
        return [_normalise(item) for item in value]
    if isinstance(value, str) and len(value) <= _FOLD_CHARS:
        return " ".join(value.split())
    return value


def _target_file(params: Mapping[str, Any], root: str) -> str:
    for key in _FILE_KEYS:
        value = params.get(key)
        if isinstance(value, str) and value:
            path = value
            if root and path.startswith(root.rstrip("/") + "/"):
                path = path[len(root.rstrip("/")) + 1 :]
            return path[-MAX_PATH_CHARS:]
    return ""


def _programs(command: str) -> list[str]:
    """The program of each part of a shell command line (`a | b && c` -> [a, b, c])."""
    text = command
    for separator in _SHELL_SEPARATORS:
        text = text.replace(separator, "\x00")
    programs = []
    for part in text.split("\x00"):
        words = part.split()
        while words and "=" in words[0] and not words[0].startswith("="):
            words = words[1:]  # VAR=value before the program
        while words and words[0] in ("sudo", "command", "env", "time", "nice"):
            words = words[1:]
        if words:
            programs.append(os.path.basename(words[0]))
    return programs
