"""Drift detection (seed 002): stuck-pattern signatures in tool use, told to the model as facts.

Long agent sessions degrade: the same call repeated, failures in a row, two tools alternating,
one file rewritten again and again, searching without editing. ctxward watches every tool call
from PostToolUse / PostToolUseFailure (OpenCode: `tool.execute.after` and failed tool parts),
keeps a bounded window of the latest calls, and when a signature starts to hold, the hook's
`additionalContext` tells the model once, as one factual sentence per signature. A signature is
not reported again until it has stopped holding (edge-triggered: `Tracker.active`).

Signatures (seed 002 "Stuck-Pattern Signatures"; its thresholds are the defaults, config
`drift:` changes them, DEFAULT_LIMITS):

====================  ============================================================  =========
signature             holds when                                                    default
====================  ============================================================  =========
repetition            the same tool with the same normalised arguments, N times     3 in 10
                      among the last W calls
failure_spiral        N tool calls in a row failed                                  4
tool_cycling          the last N calls alternate A-B-A-B-A-B between two call keys  6
                      (key: tool + target file, or tool + shell program)
rework_churn          one file written (Write/Edit/MultiEdit/NotebookEdit, OpenCode 3 in 10
                      write/edit/patch) successfully N times among the last W calls
excessive_searching   N searches (Read, Grep, Glob, LS; shell ls/find/grep/rg/cat/  5
                      ...) since the last successful edit
silence               N tool calls since the model last wrote text, where the host  15
                      exposes text: Claude Code transcripts (`ctxward drift`), the
                      OpenCode plugin (`experimental.text.complete`); Claude Code's
                      hook payloads carry no assistant text, so the hook never sees it
====================  ============================================================  =========

What a call is reduced to (`entry`): the tool name, a 64-bit BLAKE2b digest of its normalised
arguments (keys sorted, `description` dropped, short strings with whitespace runs folded), the
target file of file tools (relative to the project), success or failure, search/write class,
and the host's call id. No argument text is written to disk but that file path and the name of
a shell command's program; the sentence for the model names the repeated call from the payload
at hand, scrubbed.

State on disk, per session (`.ctxward/sessions/<session id>...`, ids as
`sessionfiles.safe_id`):

- `<id>.tools.jsonl`: the observer's log, append-only. One line per call (`{"n", "t", "tool",
  "args", "file"?, "ok", "kind"?, "key"?, "id"?}`), one per signature that started to hold
  (`{"n", "t", "drift", "evidence"}`). A sub-agent's calls (their payloads carry the parent's
  session id and their own `agent_id`) have their own files, `<id>-agent-<agent id>...`.
  Opened with O_APPEND, each call's lines written with ONE write() while holding an exclusive
  flock on that same file: on POSIX an O_APPEND write moves to the end and writes as one step,
  and lines this small (a few hundred bytes) are never interleaved with another writer's; the
  lock also orders concurrent hooks of one session. A reader (`ctxward drift`) needs no lock: it
  may see a last line still missing, never half a line of another call. The log is the history;
  the per-call work never reads it.
- `<id>.drift.json`: the window and counters (`Tracker`), a few KB at most whatever the length of
  the session, read and rewritten whole on every call under the same lock: written to a
  temporary file and renamed over (atomic), not fsynced. The file is a cache of the log's tail:
  if it is missing or unreadable (a crash, a deletion), the next call rebuilds it by replaying
  the last TAIL_BYTES of the log, so no fsync is worth its cost on a per-tool-call path.

The hot path (`observed_quietly`, called by `hookio` before any event object is built) is
standard library only and O(1) per call: one stat of the config file, one lock, one read and one
atomic rewrite of the small state file, one appended write. It answers "nothing to say" unless
a signature just started to hold; then the full hook path runs `events.post_tool_use.handle`,
which recognises the call as already observed (by its tool_use_id, or within the same process),
takes the pending reports and renders them (Jinja2 is imported only then).

Library functions never print and never exit.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import time

from ctxward.core.confine import ensure_folder, refuse_links_on_the_way, refuse_links_to
from ctxward.core.sessionfiles import SESSIONS_DIRNAME, safe_id
from ctxward.errors import BadInput, CtxwardError

# `typing.TYPE_CHECKING` without importing typing: this module is on the PostToolUse hot path.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Mapping, Sequence
    from pathlib import Path
    from typing import Any

    from ctxward.core.project import Project

SIGNATURES = (
    "repetition",
    "failure_spiral",
    "tool_cycling",
    "rework_churn",
    "excessive_searching",
    "silence",
)
NAMES = {
    "repetition": "repetition loop",
    "failure_spiral": "failure spiral",
    "tool_cycling": "tool cycling",
    "rework_churn": "rework churn",
    "excessive_searching": "excessive searching",
    "silence": "silence drift",
}
# Each signature's thresholds: seed 002's table. `enabled` at the top switches the observer off.
DEFAULT_LIMITS: dict[str, Any] = {
    "enabled": True,
    "repetition": {"enabled": True, "count": 3, "window": 10},
    "failure_spiral": {"enabled": True, "count": 4},
    "tool_cycling": {"enabled": True, "calls": 6},
    "rework_churn": {"enabled": True, "writes": 3, "window": 10},
    "excessive_searching": {"enabled": True, "searches": 5},
    "silence": {"enabled": True, "calls": 15},
}
# (minimum, maximum) of each threshold: windows stay small, so the state stays small.
_RANGES = {
    ("repetition", "count"): (2, 50),
    ("repetition", "window"): (2, 50),
    ("failure_spiral", "count"): (2, 1000),
    ("tool_cycling", "calls"): (4, 50),
    ("rework_churn", "writes"): (2, 50),
    ("rework_churn", "window"): (2, 50),
    ("excessive_searching", "searches"): (2, 1000),
    ("silence", "calls"): (2, 10_000),
}
POST_TOOL_USE = "PostToolUse"
POST_TOOL_USE_FAILURE = "PostToolUseFailure"
EVENTS = (POST_TOOL_USE, POST_TOOL_USE_FAILURE)

LOG_SUFFIX = ".tools.jsonl"
STATE_SUFFIX = ".drift.json"
_ORPHAN_SECONDS = 60  # a state write takes microseconds; a temporary file this old is a crash's
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


# --- configuration ---------------------------------------------------------------------------


def default_limits() -> dict[str, Any]:
    """A fresh copy of DEFAULT_LIMITS (the `drift:` section when config.yaml has none), with the
    `context:` section's defaults under "context" (ctxward.drift.context rides on this state)."""
    from ctxward.drift.context import defaults

    copy: dict[str, Any] = json.loads(json.dumps(DEFAULT_LIMITS))
    copy["context"] = defaults()
    return copy


def parse_limits(value: object, where: str) -> dict[str, Any]:
    """Validate config.yaml's `drift:` section over the defaults; BadInput names the key."""
    limits = default_limits()
    if value is None:
        return limits
    if not isinstance(value, dict):
        raise BadInput(f"{where}: expected a mapping, got {type(value).__name__}")
    for key, raw in value.items():
        if key == "enabled":
            limits["enabled"] = _flag(raw, f"{where}.enabled")
            continue
        if key not in SIGNATURES:
            known = ", ".join(("enabled", *SIGNATURES))
            raise BadInput(f"{where}: unknown key {key!r} (known: {known})")
        if raw is None:
            continue
        if not isinstance(raw, dict):
            raise BadInput(f"{where}.{key}: expected a mapping, got {type(raw).__name__}")
        section = limits[key]
        for name, setting in raw.items():
            at = f"{where}.{key}.{name}"
            if name == "enabled":
                section["enabled"] = _flag(setting, at)
            elif (key, name) in _RANGES:
                section[name] = whole_number(setting, at, *_RANGES[(key, name)])
            else:
                allowed = ", ".join(sorted(["enabled", *(n for s, n in _RANGES if s == key)]))
                raise BadInput(f"{at}: unknown key (known: {allowed})")
    for key in ("repetition", "rework_churn"):
        count = "count" if key == "repetition" else "writes"
        if limits[key][count] > limits[key]["window"]:
            raise BadInput(
                f"{where}.{key}: {count} {limits[key][count]} is larger than its window "
                f"{limits[key]['window']}"
            )
    return limits


def _flag(value: object, where: str) -> bool:
    if not isinstance(value, bool):
        raise BadInput(f"{where}: expected true or false, got {value!r}")
    return value


flag = _flag  # config.yaml's switches (ctxward.drift.context too)


def whole_number(value: object, where: str, low: int, high: int) -> int:
    """A config.yaml count within low..high; BadInput names `where` otherwise."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadInput(f"{where}: expected a whole number, got {value!r}")
    if not low <= value <= high:
        raise BadInput(f"{where}: {value} is outside {low}..{high}")
    return value


def window_size(limits: Mapping[str, Any]) -> int:
    """How many calls the window keeps: the longest look-back any signature needs."""
    size: int = max(
        limits["repetition"]["window"],
        limits["rework_churn"]["window"],
        limits["tool_cycling"]["calls"],
    )
    return size


# --- what one call is reduced to -------------------------------------------------------------


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
    normal = json.dumps(
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


# --- the state machine -----------------------------------------------------------------------


class Tracker:
    """The bounded window and counters of one session; `observe` says what started to hold.

    Pure: no I/O. The hook path loads it from the state file, the transcript analysis and the
    tests drive it directly. Per call the work is bounded by the window size, never by the
    length of the session.
    """

    __slots__ = (
        "active",
        "context",
        "fails",
        "ids",
        "limits",
        "n",
        "pending",
        "quiet",
        "searches",
        "window",
    )

    def __init__(self, limits: Mapping[str, Any] | None = None) -> None:
        self.limits: Mapping[str, Any] = limits if limits is not None else default_limits()
        self.n = 0  # calls observed in the session
        self.window: list[list[Any]] = []  # the latest calls, oldest first
        self.fails = 0  # consecutive failed calls
        self.searches = 0  # searches since the last successful edit
        self.quiet: int | None = None  # calls since the last text; None: host shows no text
        self.active: list[str] = []  # signatures that hold now (reported when they started)
        self.pending: list[dict[str, Any]] = []  # reported here, not yet told to the model
        self.ids: list[str] = []  # ids of the latest calls (a call observed twice is skipped)
        # ctxward.drift.context's state: the transcript offset, tools told, stages told.
        self.context: dict[str, Any] = {}

    def observe(self, call: Sequence[Any], quiet: int | None = None) -> list[dict[str, Any]]:
        """Add one call; return the signatures that started to hold with it (with evidence).

        `quiet`: calls since the model's last text, when the host counts them itself.
        """
        self.n += 1
        self.window.append(list(call))
        del self.window[: max(0, len(self.window) - window_size(self.limits))]
        self.fails = 0 if call[OK] else self.fails + 1
        if call[KIND] == "write" and call[OK]:
            self.searches = 0
        elif call[KIND] == "search":
            self.searches += 1
        if quiet is not None:
            self.quiet = quiet
        elif self.quiet is not None:
            self.quiet += 1
        if call[ID]:
            self.ids.append(str(call[ID]))
            del self.ids[: max(0, len(self.ids) - RECENT_IDS)]
        holding = self.holding()
        started = [
            {"signature": name, "n": self.n, "evidence": holding[name]}
            for name in SIGNATURES
            if name in holding and name not in self.active
        ]
        self.active = [name for name in SIGNATURES if name in holding]
        return started

    def text(self) -> None:
        """The model wrote text to the user: silence stops holding."""
        self.quiet = 0
        self.active = [name for name in self.active if name != "silence"]

    def seen(self, call_id: str) -> bool:
        return bool(call_id) and call_id in self.ids

    def holding(self) -> dict[str, dict[str, Any]]:
        """Every signature that holds on the current window, with its evidence."""
        limits = self.limits
        found: dict[str, dict[str, Any]] = {}
        if not limits["enabled"]:
            return found
        on = {name for name in SIGNATURES if limits[name]["enabled"]}
        window = self.window
        if "repetition" in on:
            evidence = self._repetition(limits["repetition"])
            if evidence is not None:
                found["repetition"] = evidence
        if "failure_spiral" in on and self.fails >= limits["failure_spiral"]["count"]:
            failed = window[-min(self.fails, len(window)) :]
            found["failure_spiral"] = {"count": self.fails, "tools": _tally(failed, TOOL)}
        if "tool_cycling" in on:  # seed 002: A-B-A-B-A-B, A and B tools (their targets aside)
            calls = limits["tool_cycling"]["calls"]
            keys = [call[TOOL] for call in window[-calls:]]
            a, b = (keys[0], keys[1]) if len(keys) == calls else ("", "")
            if a != b and keys[0::2].count(a) + keys[1::2].count(b) == calls:
                found["tool_cycling"] = {"a": a, "b": b, "calls": calls}
        if "rework_churn" in on:
            evidence = self._churn(limits["rework_churn"])
            if evidence is not None:
                found["rework_churn"] = evidence
        if "excessive_searching" in on and (
            self.searches >= limits["excessive_searching"]["searches"]
        ):
            recent = [c for c in window if c[KIND] == "search"][-self.searches :]
            found["excessive_searching"] = {
                "searches": self.searches,
                "tools": _tally(recent, TOOL),
            }
        if "silence" in on and self.quiet is not None and self.quiet >= limits["silence"]["calls"]:
            found["silence"] = {"calls": self.quiet}
        return found

    def _repetition(self, limits: Mapping[str, Any]) -> dict[str, Any] | None:
        recent = self.window[-limits["window"] :]
        counts: dict[tuple[str, str], int] = {}
        for call in recent:
            counts[(call[TOOL], call[ARGS])] = counts.get((call[TOOL], call[ARGS]), 0) + 1
        if not counts:
            return None
        last = recent[-1]
        best = max(counts, key=lambda k: (counts[k], k == (last[TOOL], last[ARGS])))
        if counts[best] < limits["count"]:
            return None
        latest = next(c for c in reversed(recent) if (c[TOOL], c[ARGS]) == best)
        evidence: dict[str, Any] = {
            "tool": best[0],
            "args": best[1],
            "count": counts[best],
            "window": len(recent),
            "id": latest[ID],
        }
        if latest[FILE]:
            evidence["file"] = latest[FILE]
        return evidence

    def _churn(self, limits: Mapping[str, Any]) -> dict[str, Any] | None:
        recent = self.window[-limits["window"] :]
        writes: dict[str, int] = {}
        for call in recent:
            if call[KIND] == "write" and call[OK] and call[FILE]:
                writes[call[FILE]] = writes.get(call[FILE], 0) + 1
        if not writes:
            return None
        target = max(writes, key=lambda f: writes[f])
        if writes[target] < limits["writes"]:
            return None
        return {"file": target, "writes": writes[target], "window": len(recent)}

    # --- persistence --------------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        return {
            "v": STATE_VERSION,
            "n": self.n,
            "window": self.window,
            "fails": self.fails,
            "searches": self.searches,
            "quiet": self.quiet,
            "active": self.active,
            "pending": self.pending,
            "ids": self.ids,
            "context": self.context,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any], limits: Mapping[str, Any]) -> Tracker:
        """The tracker saved by `to_json`; ValueError when `data` is not one."""
        if data.get("v") != STATE_VERSION:
            raise ValueError("not a drift state of this version")
        tracker = cls(limits)
        try:
            tracker.n = _count(data["n"])
            tracker.window = [_call(item) for item in data["window"]]
            tracker.fails = _count(data["fails"])
            tracker.searches = _count(data["searches"])
            quiet = data["quiet"]
            tracker.quiet = None if quiet is None else _count(quiet)
            tracker.active = [str(name) for name in data["active"] if name in SIGNATURES]
            tracker.pending = [dict(item) for item in data["pending"]][-MAX_PENDING:]
            tracker.ids = [str(item) for item in data["ids"]][-RECENT_IDS:]
            tracker.context = _context_state(data.get("context"))
        except (KeyError, TypeError) as exc:
            raise ValueError(f"drift state is malformed: {exc}") from None
        del tracker.window[: max(0, len(tracker.window) - window_size(limits))]
        return tracker


def _context_state(value: object) -> dict[str, Any]:
    """The saved `ctxward.drift.context` state, its parts checked (absent before issue 21)."""
    state: dict[str, Any] = {}
    if not isinstance(value, dict):
        return state
    tail = value.get("tail")
    if isinstance(tail, list) and len(tail) == 2 and all(_is_count(n) for n in tail):
        state["tail"] = list(tail)
    told = value.get("told")
    if isinstance(told, list):
        state["told"] = [str(tool) for tool in told if isinstance(tool, str)][-64:]
    stages = value.get("stages")
    if isinstance(stages, list):
        state["stages"] = [n for n in stages if _is_count(n)][-10:]
    if _is_count(value.get("tokens")):
        state["tokens"] = value["tokens"]
    return state


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _count(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"expected a count, got {value!r}")
    return value


def _call(item: object) -> list[Any]:
    if not isinstance(item, list) or len(item) != 7:
        raise ValueError("a window entry is not a 7-item list")
    return item


def _tally(calls: Sequence[Sequence[Any]], field: int) -> dict[str, int]:
    counts: dict[str, int] = {}
    for call in calls:
        counts[call[field]] = counts.get(call[field], 0) + 1
    return counts


# --- the hook path (standard library only) -----------------------------------------------------

# The call the fast path of this process has observed: the handler that runs after it in the
# same process must not observe it twice (a payload without tool_use_id cannot be recognised).
_observed_here: str | None = None


def observed_quietly(data: Mapping[str, Any], env: Mapping[str, str]) -> bool:
    """hookio's hot path: observe this PostToolUse(Failure) call; True when there is nothing to
    say (no signature waiting to be told). Anything unusual (a bad payload, an unwritable
    folder, a bad config) answers False: the full path then observes or reports it properly.
    """
    global _observed_here
    try:
        name = data.get("hook_event_name")
        if name not in EVENTS:
            return False
        root = _root(data, env)
        if root is None:  # not a project: nothing is observed, no .ctxward/ is made there
            return True
        waiting = _observe(root, str(name), data, take=False)
    except Exception:  # noqa: BLE001 - the full path reports what went wrong, in one line
        return False
    if waiting:
        _observed_here = _fingerprint(data)
    return not waiting


def record(project_root: str | os.PathLike[str], event: str, data: Mapping[str, Any]) -> list[Any]:
    """The handler's side: observe the call (unless already observed) and take every report
    waiting for the model (they are removed: each is told once). Returns the reports."""
    if event not in EVENTS:
        raise BadInput(f"drift observes {', '.join(EVENTS)}, not {event}")
    return _observe(os.fspath(project_root), event, data, take=True)


def _root(data: Mapping[str, Any], env: Mapping[str, str]) -> str | None:
    """`project.find_project` without pathlib: $CLAUDE_PROJECT_DIR, else the nearest folder
    with .git or .ctxward above the payload's cwd; None when it is no project."""
    explicit = env.get("CLAUDE_PROJECT_DIR")
    if explicit:
        return os.path.realpath(explicit)
    cwd = data.get("cwd")
    start = os.path.realpath(cwd if isinstance(cwd, str) and cwd else os.getcwd())
    folder = start
    while True:
        if os.path.exists(os.path.join(folder, ".git")) or os.path.exists(
            os.path.join(folder, ".ctxward")
        ):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def _fingerprint(data: Mapping[str, Any]) -> str:
    return json.dumps(
        [
            data.get("session_id"),
            data.get("hook_event_name"),
            data.get("tool_use_id"),
            data.get("tool_name"),
            args_digest(data.get("tool_input")),
        ],
        default=str,
    )


def _observe(root: str, event: str, data: Mapping[str, Any], *, take: bool) -> list[Any]:
    global _observed_here
    session_id = data.get("session_id")
    if session_id is not None and not isinstance(session_id, str):
        raise BadInput(f"{event} payload field 'session_id' is not a string")
    tool = data.get("tool_name")
    if not isinstance(tool, str) or not tool:
        raise BadInput(f"{event} payload has no 'tool_name'")
    call_id = data.get("tool_use_id")
    call_id = call_id if isinstance(call_id, str) else ""
    quiet = data.get("calls_since_text")  # a host that counts it itself (the OpenCode plugin)
    quiet = quiet if isinstance(quiet, int) and not isinstance(quiet, bool) and quiet >= 0 else None
    folder = os.path.join(root, ".ctxward", SESSIONS_DIRNAME)
    here = _fingerprint(data) if take else None
    agent = data.get("agent_id")  # inside a sub-agent: its own window, not the parent's
    key = f"{session_id or ''}-agent-{agent}" if isinstance(agent, str) and agent else session_id
    with _Session(root, folder, key or "") as session:
        tracker = session.tracker
        if tracker is None:
            return []
        repeated = tracker.seen(call_id) or (here is not None and here == _observed_here)
        if not repeated:
            ok = event == POST_TOOL_USE
            call = entry(tool, data.get("tool_input"), ok, call_id, root)
            tail = None
            if quiet is None and not (isinstance(agent, str) and agent):  # not a sub-agent's
                tail = _read_transcript(tracker, data.get("transcript_path"))
                if tail is not None and tail.seen and (tail.text or tracker.quiet is None):
                    tracker.text()  # Claude Code: the model wrote text since the last call
            started = tracker.observe(call, quiet)
            told = _context_reports(tracker, tool, data.get("tool_response"), tail)
            now = _now()
            line: dict[str, Any] = {"n": tracker.n, "t": now, "tool": call[TOOL]}
            line["args"] = call[ARGS]
            if call[FILE]:
                line["file"] = call[FILE]
            line["ok"] = bool(call[OK])
            if call[KIND]:
                line["kind"] = call[KIND]
            if call[KEY] != f"{call[TOOL]}:{call[FILE]}":
                line["key"] = call[KEY]  # the shell program the cycling key names
            if call_id:
                line["id"] = call_id
            session.lines.append(line)
            for report in started:
                session.lines.append(
                    {"n": tracker.n, "t": now, "drift": report["signature"], **_evidence(report)}
                )
                tracker.pending = [
                    p for p in tracker.pending if p.get("signature") != report["signature"]
                ]
                tracker.pending.append({**report, "t": now})
            for report in told:
                session.lines.append(
                    {"n": tracker.n, "t": now, "context": report["signature"], **_evidence(report)}
                )
                tracker.pending.append({**report, "n": tracker.n, "t": now})
            del tracker.pending[: max(0, len(tracker.pending) - MAX_PENDING)]
        if here is not None and here == _observed_here:
            _observed_here = None
        waiting = list(tracker.pending)
        if take and waiting:
            tracker.pending = []
            session.changed = True
        return waiting


def _read_transcript(tracker: Tracker, path: object) -> Any:
    """What the session's transcript gained since the last call (`transcripttail.Tail`), its
    offset saved in the tracker; None when there is none to read."""
    if not isinstance(path, str) or not path:
        return None
    from ctxward.transcript.tail import scan

    saved = tracker.context.get("tail")
    offset, inode = saved if isinstance(saved, list) and len(saved) == 2 else (0, 0)
    if not isinstance(offset, int) or not isinstance(inode, int):
        offset, inode = 0, 0
    tail = scan(path, offset, inode)
    if tail is not None:
        tracker.context["tail"] = [tail.offset, tail.inode]
    return tail


def _context_reports(
    tracker: Tracker, tool: str, response: object, tail: Any
) -> list[dict[str, Any]]:
    """The large-output and pressure reports of this call (`ctxward.drift.context`)."""
    from ctxward.drift import context as contextcheck

    settings = tracker.limits.get("context")
    if not isinstance(settings, dict):
        settings = contextcheck.defaults()
    found = contextcheck.large_output(tracker.context, tool, response, settings)
    stage = contextcheck.pressure(tracker.context, tail, settings)
    if stage is not None:
        found.append(stage)
    return found


def _evidence(report: Mapping[str, Any]) -> dict[str, Any]:
    return {"evidence": report["evidence"]}


def _now() -> float:
    return round(time.time(), 3)


class _Session:
    """The locked state of one session: load (or rebuild) on enter, save and append on exit.

    `tracker` is None when drift detection is switched off in the config; then nothing is
    locked, appended or kept but the config's fingerprint, so the next call reads no YAML.
    """

    def __init__(self, root: str, folder: str, session_id: str) -> None:
        name = safe_id(session_id)
        self.root = root
        self.folder = folder
        self.log_path = os.path.join(folder, name + LOG_SUFFIX)
        self.state_path = os.path.join(folder, name + STATE_SUFFIX)
        self.tracker: Tracker | None = None
        self.lines: list[dict[str, Any]] = []
        self.changed = False
        self._fd = -1
        self._config_key = ""
        self._limits: dict[str, Any] = {}

    def __enter__(self) -> _Session:
        refuse_links_on_the_way(self.folder)  # a planted .ctxward or sessions link: not followed
        config = os.path.join(self.root, ".ctxward", "config.yaml")
        try:
            info = os.stat(config)
            self._config_key = f"{info.st_mtime_ns}:{info.st_size}:{info.st_ino}"
        except FileNotFoundError:
            self._config_key = "-"
        saved = self._read_state()
        if saved is not None and saved.get("config") == self._config_key:
            limits = saved.get("limits")
            if isinstance(limits, dict):
                self._limits = limits
        if not self._limits:
            self._limits = _load_limits(self.root) if self._config_key != "-" else default_limits()
            self.changed = True
        if not self._limits["enabled"]:
            if self.changed:
                ensure_folder(self.folder)
                self._write_state({"v": STATE_VERSION, "off": True})
            return self
        ensure_folder(self.folder)
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT
        try:
            self._fd = _open_regular(self.log_path, flags)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise CtxwardError(
                    f"{self.log_path}: refusing a symbolic link; the call is not observed"
                ) from None
            if exc.errno not in (errno.EINVAL, errno.ENXIO):  # ENXIO: a FIFO nobody reads
                raise
            raise CtxwardError(
                f"{self.log_path}: not a regular file (a FIFO?); the call is not observed"
            ) from None
        try:
            import fcntl
        except ImportError:  # no flock here: O_APPEND keeps each line whole; the window may race
            pass
        else:
            fcntl.flock(self._fd, fcntl.LOCK_EX)
        saved = self._read_state()  # again: another call may have written it while we waited
        try:
            if saved is None or saved.get("off"):
                raise ValueError("no state")
            self.tracker = Tracker.from_json(saved, self._limits)
        except ValueError:
            self.tracker = self._rebuild()
            self.changed = True
        return self

    def __exit__(self, kind: object, error: object, trace: object) -> None:
        try:
            if self.tracker is not None and error is None and (self.lines or self.changed):
                self._write_state(self.tracker.to_json())
                if self.lines:
                    data = "".join(
                        json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n"
                        for line in self.lines
                    )
                    os.write(self._fd, data.encode("utf-8", "surrogatepass"))
        finally:
            if self._fd >= 0:
                os.close(self._fd)  # closing releases the lock
                self._fd = -1

    def _read_state(self) -> dict[str, Any] | None:
        try:
            with open(_open_regular(self.state_path), "rb") as handle:
                data = json.loads(handle.read())
        except (OSError, ValueError, RecursionError):  # a damaged cache is rebuilt from the log
            return None
        return data if isinstance(data, dict) else None

    def _write_state(self, state: dict[str, Any]) -> None:
        body = {**state, "config": self._config_key, "limits": self._limits}
        raw = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode(
            "utf-8", "surrogatepass"
        )
        # One temporary name per state file, so that a crash's leftover is reused, not left. Under
        # the log's lock it is simply truncated; without it (drift switched off: no log is held)
        # it is created exclusively, and one left by a crash a minute ago is removed instead.
        tmp = self.state_path + ".tmp"
        flags = os.O_WRONLY | os.O_CREAT
        try:
            fd = _open_regular(tmp, flags | (os.O_TRUNC if self._fd >= 0 else os.O_EXCL))
        except FileExistsError:  # another call is writing it, or a crash left it
            try:
                if os.stat(tmp).st_mtime < time.time() - _ORPHAN_SECONDS:
                    os.unlink(tmp)
            except OSError:
                pass  # gone already
            return  # the state is a cache: the next call writes it
        except OSError:  # not a regular file (a FIFO planted there): it is ours by name
            try:  # noqa: SIM105 - contextlib would be one more import on every tool call
                os.unlink(tmp)
            except OSError:
                pass
            return
        try:
            os.write(fd, raw)
        finally:
            os.close(fd)
        os.replace(tmp, self.state_path)

    def _rebuild(self) -> Tracker:
        """The tracker replayed from the last TAIL_BYTES of the log (nothing re-reported)."""
        tracker = Tracker(self._limits)
        for line in _tail_lines(self.log_path, TAIL_BYTES):
            if "drift" in line:
                continue
            n = line.get("n")
            if line.get("text") is True:
                tracker.text()
            elif isinstance(line.get("tool"), str):
                kind = line.get("kind") if line.get("kind") in ("write", "search") else ""
                call = [
                    line["tool"],
                    str(line.get("key") or f"{line['tool']}:{line.get('file') or ''}"),
                    str(line.get("args", "")),
                    str(line.get("file") or ""),
                    1 if line.get("ok") else 0,
                    kind,
                    str(line.get("id") or ""),
                ]
                tracker.observe(call)
            if isinstance(n, int) and not isinstance(n, bool) and n >= tracker.n:
                tracker.n = n
        tracker.pending = []
        return tracker


def limits_of(root: str | os.PathLike[str]) -> dict[str, Any]:
    """The observer's limits for the project at `root` (config.yaml's `drift:` and `context:`)."""
    config = os.path.join(os.fspath(root), ".ctxward", "config.yaml")
    return _load_limits(os.fspath(root)) if os.path.exists(config) else default_limits()


def _load_limits(root: str) -> dict[str, Any]:
    """The `drift:` section of the project's config (YAML: only when the file changed)."""
    from pathlib import Path

    from ctxward.core.config import load
    from ctxward.core.project import Project

    limits: dict[str, Any] = load(Project(Path(root))).drift
    return limits


def _open_regular(path: str | os.PathLike[str], flags: int = os.O_RDONLY) -> int:
    """`os.open` that never blocks on a FIFO planted in a state file's place (OSError(EINVAL))
    and never follows a link planted there (O_NOFOLLOW: OSError(ELOOP)).

    fsutil.open_regular does the same; this module is on every tool call's path, and fsutil's
    imports (pathlib, hashlib) would double what it costs to import. The folder on the way is
    checked once per call (`_Session.__enter__`).
    """
    fd = os.open(path, flags | os.O_NONBLOCK | os.O_NOFOLLOW, 0o644)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, "not a regular file (a FIFO or a device?)", str(path))
    return fd


def _tail_lines(path: str, size: int) -> list[dict[str, Any]]:
    """The JSON objects on the last lines of `path`, within its last `size` bytes."""
    try:
        with open(_open_regular(path), "rb") as handle:
            handle.seek(0, os.SEEK_END)
            end = handle.tell()
            start = max(0, end - size)
            handle.seek(start)
            raw = handle.read(end - start)
    except OSError:
        return []
    lines = raw.split(b"\n")
    if start > 0:
        lines = lines[1:]  # the first one is probably cut
    return list(_objects(lines))


def _objects(lines: Iterable[bytes]) -> Iterator[dict[str, Any]]:
    """The lines that hold a JSON object; partial, damaged or absurdly nested ones are skipped."""
    for line in lines:
        try:
            value = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(value, dict):
            yield value


# --- reading a session back (`ctxward drift`; not the hook path) ------------------------------


def sessions_folder(project: Project) -> Path:
    return project.state_dir / SESSIONS_DIRNAME


def log_path(project: Project, session_id: str) -> Path:
    return sessions_folder(project) / f"{safe_id(session_id)}{LOG_SUFFIX}"


def newest_log(project: Project) -> Path | None:
    folder = sessions_folder(project)
    if not folder.is_dir():
        return None
    logs = [p for p in folder.glob(f"*{LOG_SUFFIX}") if p.is_file()]
    return max(logs, key=lambda p: p.stat().st_mtime, default=None)


def iter_log(path: Path) -> Iterator[dict[str, Any]]:
    """The JSON-object lines of a hook log (a partial last line is skipped)."""
    refuse_links_to(path, OSError)  # a planted sessions link is not read through
    with open(_open_regular(path), "rb") as handle:
        yield from _objects(handle)


def read_log(project: Project, path: Path) -> dict[str, Any]:
    """What the hook observed in one session: calls, every signature that fired, when."""
    calls = 0
    failures = 0
    firings: list[dict[str, Any]] = []
    for line in iter_log(path):
        if isinstance(line.get("tool"), str):
            calls += 1
            failures += 0 if line.get("ok") else 1
        elif isinstance(line.get("drift"), str) and line["drift"] in SIGNATURES:
            evidence = line.get("evidence")
            firings.append(
                {
                    "signature": line["drift"],
                    "name": NAMES[line["drift"]],
                    "call": line.get("n"),
                    "time": _iso(line.get("t")),
                    "evidence": _public(evidence) if isinstance(evidence, dict) else {},
                    "label": "",
                }
            )
    name = path.name[: -len(LOG_SUFFIX)]
    active: list[str] = []
    state = path.with_name(name + STATE_SUFFIX)
    try:
        with open(_open_regular(state), "rb") as handle:
            saved = json.loads(handle.read())
        if isinstance(saved, dict) and isinstance(saved.get("active"), list):
            active = [a for a in saved["active"] if isinstance(a, str) and a in SIGNATURES]
    except (OSError, ValueError, RecursionError):  # a damaged cache: the log alone speaks
        pass
    return {
        "session": name,
        "source": "hook log",
        "path": project.relative(path),
        "calls": calls,
        "failures": failures,
        "firings": firings,
        "active": active,
    }


def analyze_transcript(
    project: Project, path: Path, limits: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The same signatures computed from a Claude Code transcript (a session without the hook).

    Calls are observed in the order their results arrive (`is_error` = failed); the model's
    text blocks feed silence drift. Sub-agent records (`isSidechain`) are left out.
    """
    from ctxward.transcript import reader

    tracker = Tracker(limits if limits is not None else default_limits())
    tracker.quiet = 0  # a transcript shows the model's text
    open_calls: dict[str, tuple[str, dict[str, Any]]] = {}
    firings: list[dict[str, Any]] = []
    failures = 0
    session = ""
    root = str(project.root)
    for record in reader.iter_records(path, types={"assistant", "user"}):
        message = record.message
        if message is None or record.is_sidechain or record.is_api_error:
            continue
        session = session or record.session_id
        root = record.cwd or root  # file paths are shown relative to the session's folder
        if record.type == "assistant":
            if message.text.strip():
                tracker.text()
            for use in message.tool_uses:
                if len(open_calls) >= reader.MAX_OPEN_TOOL_USES:
                    open_calls.pop(next(iter(open_calls)))
                open_calls[use.id] = (use.name, use.input)
            continue
        for result in message.tool_results:
            opened = open_calls.pop(result.tool_use_id, None)
            if opened is None:
                continue
            tool, params = opened
            failures += 1 if result.is_error else 0
            call = entry(tool, params, not result.is_error, result.tool_use_id, root)
            for report in tracker.observe(call):
                firings.append(
                    {
                        "signature": report["signature"],
                        "name": NAMES[report["signature"]],
                        "call": report["n"],
                        "time": record.timestamp or None,
                        "evidence": _public(report["evidence"]),
                        "label": describe(tool, params, root)
                        if report["evidence"].get("id") in (None, result.tool_use_id)
                        else "",
                    }
                )
    return {
        "session": session or path.stem,
        "source": "transcript",
        "path": str(path),
        "calls": tracker.n,
        "failures": failures,
        "firings": firings,
        "active": list(tracker.active),
    }


def _public(evidence: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in evidence.items() if key not in ("id", "args")}


def _iso(stamp: object) -> str | None:
    if isinstance(stamp, bool) or not isinstance(stamp, (int, float)):
        return None
    from datetime import datetime, timezone

    moment = datetime.fromtimestamp(float(stamp), tz=timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


# --- telling the model (imports Jinja2: only when something fired) ----------------------------


# invariants.INVARIANTS_FILE, without importing that module (YAML, ~10 ms) to render a fact.
INVARIANTS_FILE = "invariants.md"
_LABEL_KEYS = frozenset(
    {
        "file_path",
        "notebook_path",
        "filePath",
        "path",
        "command",
        "url",
        "query",
        "pattern",
        "subagent_type",
        "skill",
    }
)


def describe(tool: str, tool_input: object, root: str = "") -> str:
    """What a call is about (the command, file or pattern), one line, scrubbed of secrets."""
    from ctxward.core.scrub import scrub
    from ctxward.transcript.measure import tool_key

    params = tool_input if isinstance(tool_input, dict) else {}
    # Scrubbed before tool_key shortens them: a secret cut in half would no longer be found.
    clean = {
        key: scrub(value)[0] if isinstance(value, str) else value
        for key, value in params.items()
        if key in _LABEL_KEYS
    }
    label = tool_key(tool, clean, root)
    if not label:
        value = clean.get("filePath")
        label = value if isinstance(value, str) else ""
    return label


def facts(project: Project, reports: Sequence[Mapping[str, Any]], data: Mapping[str, Any]) -> str:
    """The additionalContext for `reports`: one factual sentence per signature (template),
    scrubbed of secrets as a whole (the quoted call is scrubbed before it is shortened, too)."""
    from ctxward.core.render import render
    from ctxward.core.scrub import scrub

    root = str(project.root)
    current = data.get("tool_use_id")
    label = describe(str(data.get("tool_name") or ""), data.get("tool_input"), root)
    items = []
    for report in reports:
        evidence = dict(report.get("evidence") or {})
        same_call = bool(current) and evidence.get("id") == current
        items.append(
            {
                "signature": report.get("signature"),
                "name": NAMES.get(str(report.get("signature")), str(report.get("signature"))),
                "evidence": _public(evidence),
                "label": label if same_call or not evidence.get("id") else "",
            }
        )
    text = render("drift/context.md.j2", reports=items, plans=_plan_files(project)).strip()
    return scrub(text)[0]


def _plan_files(project: Project, limit: int = 3) -> list[str]:
    """The trusted active plans' invariants files (relative), at most `limit`, by name: the
    model is sent to re-read no plan that came untrusted with the repository (invariants.trust)."""
    from ctxward.invariants.rules import plans_for_the_model

    trusted = plans_for_the_model(project)[0]
    return [project.relative(plan.invariants_path) for plan in trusted[:limit]]


def report(
    project: Project,
    session: str | None,
    env: Mapping[str, str],
    *,
    from_transcript: bool = False,
) -> dict[str, Any]:
    """The drift report of one session, from its hook log or else its Claude Code transcript.

    `session`: a session id, the path of a hook log (`*.tools.jsonl`) or of a transcript; None
    picks the current session ($CLAUDE_CODE_SESSION_ID), else the newest hook log, else the
    project's newest transcript. `from_transcript` skips the hook log. BadInput when none is
    found or the file cannot be read.
    """
    import re
    from pathlib import Path

    from ctxward.transcript import reader

    if session and (os.sep in session or session.endswith(".jsonl")):
        path = Path(session).expanduser()
        if not path.is_file():
            raise BadInput(f"{session}: no such file")
        if path.name.endswith(LOG_SUFFIX) and not from_transcript:
            return _read(project, path, log=True)
        return _read(project, path, log=False)
    wanted = session or env.get("CLAUDE_CODE_SESSION_ID") or ""
    if wanted:
        log = log_path(project, wanted)
        if log.is_file() and not from_transcript:
            return _read(project, log, log=True)
        found = None
        if re.fullmatch(r"[A-Za-z0-9._-]+", wanted):
            folder = reader.projects_dir(env)
            exact = folder / reader.project_folder_name(project.root) / f"{wanted}.jsonl"
            candidates = [exact, *sorted(folder.glob(f"*/{wanted}.jsonl"))]
            found = next((p for p in candidates if p.is_file()), None)
        if found is not None:
            return _read(project, found, log=False)
        if session:
            raise BadInput(
                f"no hook log ({project.relative(log)}) and no Claude Code transcript "
                f"under {reader.projects_dir(env)} for session {session!r}"
            )
    if not from_transcript:
        newest = newest_log(project)
        if newest is not None:
            return _read(project, newest, log=True)
    found = reader.find_transcript(project.root, env)
    if found is None:
        raise BadInput(
            f"no hook log under {project.relative(sessions_folder(project))}/ and no Claude Code "
            f"transcript of this project under {reader.projects_dir(env)}; name a session"
        )
    return _read(project, found, log=False)


def _read(project: Project, path: Path, *, log: bool) -> dict[str, Any]:
    from ctxward.core.config import load

    try:
        if log:
            return read_log(project, path)
        return analyze_transcript(project, path, load(project).drift)
    except OSError as exc:
        raise BadInput(f"{path}: cannot read: {exc.strerror or exc}") from None
