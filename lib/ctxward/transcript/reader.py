"""Claude Code transcripts (JSONL): a streaming reader, and the context audit built on it.

The transcript is not a published contract and changes between versions, so everything here is
defensive: every field is optional, unknown record types are passed through (or skipped when the
caller filters), and a line that is not a JSON object (a partial tail of a live session, a
corrupt line, a line longer than MAX_LINE_BYTES) is skipped and counted, never raised. Files are
read line by line in binary mode: memory does not grow with the file. Standard library only.

Reading API (stable: the context audit and session compression both build on it)
--------------------------------------------------------------------------------

``iter_records(path, *, types=None, stats=None) -> Iterator[Record]``
    One `Record` per JSON-object line, in file order. `types` (a set of top-level ``type``
    values) keeps only those records; bookkeeping lines that start with their type
    (``{"type":"api-request-blob",...``) are then skipped without being parsed. Pass a
    `ReadStats` to learn how many lines were read, skipped, malformed or oversized.
    Raises OSError only when the file cannot be opened: anything but a regular file (a FIFO,
    a device: OSError(EINVAL), never waited on) or a file past MAX_TRANSCRIPT_BYTES
    (OSError(EFBIG)), whether a hook payload or the user names it.

``iter_lines(path, stats=None) -> Iterator[RawLine]``
``parse_line(data) -> dict | None``
    The two halves of `iter_records`, for callers that pre-filter raw bytes themselves.
    ``RawLine(number, offset, data)``: 1-based line number, byte offset, the bytes.

``Record`` (a view over one raw dict; ``.raw`` is the dict itself)
    ``.type .subtype .uuid .parent_uuid .timestamp .session_id .agent_id .request_id .cwd``
    ``.is_sidechain .is_meta .is_compact_summary .is_api_error .is_compact_boundary``
    ``.compact_metadata`` (dict: trigger, preTokens, postTokens, ... when present)
    ``.attachment`` (dict or None) and ``.attachment_type``
    ``.message`` -> `Message` for ``user``/``assistant`` records, else None
    ``.usage`` -> `Usage` of an assistant record (None for API-error placeholders)
    ``.line .offset .size`` where it was in the file.

``Message``
    ``.role .id .model .stop_reason .blocks`` (content as a tuple of block dicts; a plain
    string content is one text block), ``.text`` (the text blocks joined by newlines),
    ``.tool_uses`` -> `ToolUse(id, name, input)`,
    ``.tool_results`` -> `ToolResult(tool_use_id, text, size, images, is_error)`,
    ``.usage`` -> `Usage(input_tokens, cache_read_input_tokens, cache_creation_input_tokens,
    output_tokens)` with ``.context_tokens`` (input + cache read + cache creation).

``last_assistant_text(path) -> str``
    The text of the last assistant message that has text ('' when none, or when `path` is not a
    regular file: it comes from a hook payload): one message may span several lines that share
    ``message.id``.

Context audit
-------------

``audit(path, *, top=10, subagents=True) -> Audit``: what fills the context window, by groups
``{tool, key, bytes, pctOfTotal, count}``, per compaction segment, with the context size of each
request from its usage (de-duplicated by requestId), plus one audit per sub-agent transcript
found under ``<session>/subagents/``. ``Audit.as_dict()`` is the JSON; ``unavailable(reason)``
the fail-soft answer. ``find_transcript(root, env)`` locates the current session's file.

What is counted, in UTF-8 bytes: a tool result's text (IMAGE_BYTES per image), attributed to
the tool call it answers; a tool call's input (its JSON, strings counted as their text); user
prompts; assistant text and thinking; an attachment's ``rendered`` text (what the model sees;
older attachments without it: their content, for the types that carry context); the compaction
summary; and the system prompt + tool schemas of the largest ``prompt_snapshot``, once per
segment. ``toolUseResult`` (Claude Code's own copy) and bookkeeping records are not context.
The number of groups is bounded (MAX_GROUPS): past it, the smallest fold into
``<tool> (other)``, so the totals stay exact and memory stays flat.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import json
import os
import re
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

MAX_LINE_BYTES = 16 * 1024 * 1024  # observed lines reach ~1.3 MB; anything far larger is foreign
# A whole transcript: observed sessions reach a few hundred MB (the audit reads 200 MB in a few
# seconds); a larger file is refused rather than read for minutes.
MAX_TRANSCRIPT_BYTES = 2 * 1024 * 1024 * 1024
IMAGE_BYTES = 6_400  # an image block counts as ~1,600 tokens (base64 is never decoded)
KEY_CHARS = 120
MAX_GROUPS = 20_000  # per scope; beyond it the smallest groups fold into "<tool> (other)"
MAX_OPEN_TOOL_USES = 4_096
MAX_SERIES_POINTS = 1_200
FOREIGN_PROBE_LINES = 2_000

# Top-level types that hold what the model sees; everything else is bookkeeping.
CONTEXT_TYPES = frozenset({"user", "assistant", "attachment", "system"})
KNOWN_TYPES = CONTEXT_TYPES | {
    "summary",
    "progress",
    "queue-operation",
    "last-prompt",
    "file-history-snapshot",
    "ai-title",
    "custom-title",
    "mode",
    "permission-mode",
    "cost-state",
    "tools-used",
    "atis-latch",
    "api-request",
    "api-request-shape",
    "api-request-blob",
    "worktree-state",
    "pr-link",
}
# Attachment types that carry context when an older version wrote no `rendered` field.
_CONTEXT_ATTACHMENTS = frozenset(
    {
        "hook_additional_context",
        "nested_memory",
        "file",
        "edited_text_file",
        "compact_file_reference",
        "queued_command",
        "skill_listing",
        "hook_blocking_error",
    }
)
_TYPE_PREFIX = b'{"type":"'


# --------------------------------------------------------------------------- reading


@dataclass(slots=True)
class ReadStats:
    """Counters of one read; `malformed` + `oversized` lines were skipped, never raised."""

    lines: int = 0
    bytes: int = 0
    records: int = 0
    malformed: int = 0
    oversized: int = 0
    skipped: int = 0  # well-formed lines filtered out by `types`
    known: int = 0  # records whose type is a known transcript type


class RawLine(NamedTuple):
    number: int
    offset: int
    data: bytes


def iter_lines(path: str | os.PathLike[str], stats: ReadStats | None = None) -> Iterator[RawLine]:
    """Yield each line's bytes; blank lines are dropped, oversized ones skipped and counted.

    OSError for anything but a regular file, or one past MAX_TRANSCRIPT_BYTES (`_opened`).
    """
    stats = stats if stats is not None else ReadStats()
    with open(_opened(path), "rb") as handle:
        readline = handle.readline
        offset = 0
        number = 0
        while True:
            data = readline(MAX_LINE_BYTES)
            if not data:
                return
            number += 1
            start = offset
            offset += len(data)
            if len(data) >= MAX_LINE_BYTES and not data.endswith(b"\n"):
                while data and not data.endswith(b"\n"):  # drain the rest of the giant line
                    data = readline(MAX_LINE_BYTES)
                    offset += len(data)
                stats.lines += 1
                stats.bytes = offset
                stats.oversized += 1
                continue
            stats.lines += 1
            stats.bytes = offset
            if data.isspace():
                continue
            yield RawLine(number, start, data)


def _opened(path: str | os.PathLike[str]) -> int:
    """A descriptor on the regular file at `path` (`fsutil.open_regular`: never a FIFO, never
    a device such as /dev/zero); OSError(EFBIG) past MAX_TRANSCRIPT_BYTES."""
    from ctxward.core.fsutil import open_regular

    fd = open_regular(path, follow_links=True)  # the host's file, wherever it keeps it
    if os.fstat(fd).st_size > MAX_TRANSCRIPT_BYTES:
        os.close(fd)
        raise OSError(errno.EFBIG, f"larger than {MAX_TRANSCRIPT_BYTES:,} bytes", str(path))
    return fd


def parse_line(data: bytes) -> dict[str, Any] | None:
    """The JSON object on one line, or None (malformed, partial, not UTF-8, not an object)."""
    try:
        value = json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError):  # JSONDecodeError, UnicodeDecodeError, too deep
        return None
    if not isinstance(value, dict) or (_escapes_surrogate(data) and _unsafe(value)):
        return None
    return value


def _escapes_surrogate(data: bytes) -> bool:
    """Whether a line may hold an escaped UTF-16 surrogate (a cheap test before `_unsafe`)."""
    return b"\\ud" in data or b"\\uD" in data


def _unsafe(value: object) -> bool:
    """A record holding a lone surrogate (no file or terminal can take it) counts as malformed."""
    from ctxward.core.limits import problem

    return problem(value, max_depth=10_000) is not None


def _prefixed_type(data: bytes) -> bytes | None:
    """The top-level type when the line starts with it (bookkeeping records), else None."""
    if not data.startswith(_TYPE_PREFIX):
        return None
    end = data.find(b'"', 9)
    return data[9:end] if end > 9 else None


def iter_records(
    path: str | os.PathLike[str],
    *,
    types: Collection[str] | None = None,
    stats: ReadStats | None = None,
) -> Iterator[Record]:
    """Yield a Record per JSON-object line (only `types`, when given); see the module doc."""
    stats = stats if stats is not None else ReadStats()
    wanted = None if types is None else frozenset(t.encode("utf-8") for t in types)
    for number, offset, data in iter_lines(path, stats):
        if wanted is not None:
            head = _prefixed_type(data)
            if head is not None and head not in wanted:
                stats.skipped += 1
                continue
        raw = parse_line(data)
        if raw is None:
            stats.malformed += 1
            continue
        kind = raw.get("type")
        if kind in KNOWN_TYPES:
            stats.known += 1
        if types is not None and kind not in types:
            stats.skipped += 1
            continue
        stats.records += 1
        yield Record(raw, number, offset, len(data))


def _str(value: object) -> str:
    return value if isinstance(value, str) else ""


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


class Record:
    """A view over one transcript line's dict; accessors never raise on odd shapes."""

    __slots__ = ("line", "offset", "raw", "size")

    def __init__(self, raw: dict[str, Any], line: int = 0, offset: int = 0, size: int = 0) -> None:
        self.raw = raw
        self.line = line
        self.offset = offset
        self.size = size

    def __repr__(self) -> str:
        return f"Record(type={self.type!r}, line={self.line})"

    def _s(self, key: str) -> str:
        return _str(self.raw.get(key))

    @property
    def type(self) -> str:
        return self._s("type")

    @property
    def subtype(self) -> str:
        return self._s("subtype")

    @property
    def uuid(self) -> str:
        return self._s("uuid")

    @property
    def parent_uuid(self) -> str:
        return self._s("parentUuid")

    @property
    def timestamp(self) -> str:
        return self._s("timestamp")

    @property
    def session_id(self) -> str:
        return self._s("sessionId")

    @property
    def agent_id(self) -> str:
        return self._s("agentId")

    @property
    def request_id(self) -> str:
        return self._s("requestId")

    @property
    def cwd(self) -> str:
        return self._s("cwd")

    @property
    def is_sidechain(self) -> bool:
        return self.raw.get("isSidechain") is True

    @property
    def is_meta(self) -> bool:
        return self.raw.get("isMeta") is True

    @property
    def is_compact_summary(self) -> bool:
        return self.raw.get("isCompactSummary") is True

    @property
    def is_api_error(self) -> bool:
        if self.raw.get("isApiErrorMessage") is True:
            return True
        return _dict(self.raw.get("message")).get("model") == "<synthetic>"

    @property
    def is_compact_boundary(self) -> bool:
        return self.type == "system" and self.subtype == "compact_boundary"

    @property
    def compact_metadata(self) -> dict[str, Any]:
        return _dict(self.raw.get("compactMetadata") or self.raw.get("compact_metadata"))

    @property
    def attachment(self) -> dict[str, Any] | None:
        value = self.raw.get("attachment")
        return value if isinstance(value, dict) else None

    @property
    def attachment_type(self) -> str:
        return _str((self.attachment or {}).get("type"))

    @property
    def usage(self) -> Usage | None:
        """An assistant record's usage (None for API-error placeholders); see `request_id`."""
        message = self.message
        if message is None or self.type != "assistant" or self.is_api_error:
            return None
        return message.usage

    @property
    def message(self) -> Message | None:
        if self.type not in ("user", "assistant"):
            return None
        value = self.raw.get("message")
        return Message(value) if isinstance(value, dict) else None


class ToolUse(NamedTuple):
    id: str
    name: str
    input: dict[str, Any]


class ToolResult(NamedTuple):
    tool_use_id: str
    text: str  # the text parts, joined by newlines
    size: int  # UTF-8 bytes of the text parts, plus IMAGE_BYTES per image
    images: int
    is_error: bool


class Usage(NamedTuple):
    input_tokens: int
    cache_read_input_tokens: int
    cache_creation_input_tokens: int
    output_tokens: int

    @property
    def context_tokens(self) -> int:
        """The size of the request's context: uncached input + cache read + cache creation."""
        return self.input_tokens + self.cache_read_input_tokens + self.cache_creation_input_tokens


def _blocks(content: object) -> tuple[dict[str, Any], ...]:
    if isinstance(content, str):
        return ({"type": "text", "text": content},)
    if isinstance(content, list):
        return tuple(block for block in content if isinstance(block, dict))
    return ()


def _content_text(content: object) -> tuple[str, int]:
    """(the text parts of a tool_result's content joined by newlines, the number of images)."""
    if isinstance(content, str):
        return content, 0
    parts: list[str] = []
    images = 0
    for block in _blocks(content):
        kind = block.get("type")
        if kind == "text":
            parts.append(_str(block.get("text")))
        elif kind == "image":
            images += 1
    return "\n".join(parts), images


def usage_of(message: Mapping[str, Any]) -> Usage | None:
    """The usage of an assistant message dict, or None when it carries none."""
    usage = message.get("usage")
    if not isinstance(usage, dict):
        return None
    return Usage(
        _int(usage.get("input_tokens")),
        _int(usage.get("cache_read_input_tokens")),
        _int(usage.get("cache_creation_input_tokens")),
        _int(usage.get("output_tokens")),
    )


class Message:
    """A view over a record's `message` dict (role, content blocks, usage)."""

    __slots__ = ("raw",)

    def __init__(self, raw: dict[str, Any]) -> None:
        self.raw = raw

    @property
    def role(self) -> str:
        return _str(self.raw.get("role"))

    @property
    def id(self) -> str:
        return _str(self.raw.get("id"))

    @property
    def model(self) -> str:
        return _str(self.raw.get("model"))

    @property
    def stop_reason(self) -> str:
        return _str(self.raw.get("stop_reason"))

    @property
    def blocks(self) -> tuple[dict[str, Any], ...]:
        return _blocks(self.raw.get("content"))

    @property
    def text(self) -> str:
        texts = [_str(b.get("text")) for b in self.blocks if b.get("type") == "text"]
        return "\n".join(text for text in texts if text)

    @property
    def tool_uses(self) -> tuple[ToolUse, ...]:
        return tuple(
            ToolUse(_str(b.get("id")), _str(b.get("name")), _dict(b.get("input")))
            for b in self.blocks
            if b.get("type") == "tool_use"
        )

    @property
    def tool_results(self) -> tuple[ToolResult, ...]:
        results = []
        for block in self.blocks:
            if block.get("type") != "tool_result":
                continue
            text, images = _content_text(block.get("content"))
            results.append(
                ToolResult(
                    _str(block.get("tool_use_id")),
                    text,
                    len(text.encode("utf-8")) + images * IMAGE_BYTES,
                    images,
                    block.get("is_error") is True,
                )
            )
        return tuple(results)

    @property
    def usage(self) -> Usage | None:
        return usage_of(self.raw)


def last_assistant_text(path: str | os.PathLike[str]) -> str:
    """The text of the last assistant message with text ('' when none or unreadable).

    `path` comes from a hook payload: anything but a regular file (a FIFO) is unreadable here,
    never waited on.
    """
    last_id: str | None = None
    parts: list[str] = []
    try:
        for record in iter_records(path, types=("assistant",)):
            message = record.message
            if message is None or record.is_api_error:
                continue
            text = message.text
            if not text:
                continue
            ident = message.id or record.request_id or record.uuid
            if ident != last_id:
                last_id, parts = ident, []
            parts.append(text)
    except OSError:
        return ""
    return "\n".join(parts)


# --------------------------------------------------------------------------- finding files


def projects_dir(env: Mapping[str, str]) -> Path:
    """Claude Code's transcript folder: $CLAUDE_CONFIG_DIR/projects, else ~/.claude/projects."""
    base = env.get("CLAUDE_CONFIG_DIR")
    home = Path(env.get("HOME") or Path.home())
    return (Path(base) if base else home / ".claude") / "projects"


def project_folder_name(root: Path) -> str:
    """The folder name Claude Code derives from a start directory (non-alphanumerics → '-')."""
    return re.sub(r"[^A-Za-z0-9]", "-", str(root))


def find_transcript(root: Path, env: Mapping[str, str]) -> Path | None:
    """The current session's transcript ($CLAUDE_CODE_SESSION_ID), else the project's newest."""
    base = projects_dir(env)
    folder = base / project_folder_name(root)
    session = env.get("CLAUDE_CODE_SESSION_ID", "")
    if session and re.fullmatch(r"[A-Za-z0-9._-]+", session):
        exact = folder / f"{session}.jsonl"
        if exact.is_file():
            return exact
        if base.is_dir():
            for candidate in base.glob(f"*/{session}.jsonl"):
                if candidate.is_file():  # found, not named: a FIFO is not a transcript
                    return candidate
    if not folder.is_dir():
        return None
    found = [p for p in folder.glob("*.jsonl") if p.is_file()]
    return max(found, key=lambda p: p.stat().st_mtime, default=None)


def subagent_transcripts(path: Path) -> list[tuple[Path, str]]:
    """Sub-agent transcripts of the session at `path`: [(file, agent type or '')], by name."""
    folder = path.with_suffix("") / "subagents"
    if not folder.is_dir():
        return []
    from ctxward.core.fsutil import read_regular

    found = []
    for candidate in sorted(folder.glob("agent-*.jsonl")):
        agent_type = ""
        meta = candidate.with_name(candidate.name[: -len(".jsonl")] + ".meta.json")
        with contextlib.suppress(OSError, ValueError):  # a FIFO too: never waited on
            agent_type = _str(
                _dict(json.loads(read_regular(meta, follow_links=True).decode("utf-8"))).get(
                    "agentType"
                )
            )
        found.append((candidate, agent_type))
    return found


# --------------------------------------------------------------------------- the audit


def _one_line(text: str, limit: int = KEY_CHARS) -> str:
    """`text` scrubbed, then on one line and cut to `limit` (in that order: a secret that spans
    lines or the cut, a PEM block in a heredoc say, is only recognised whole)."""
    flat = " ".join(_clean_key(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


_KEY_FIELDS = ("file_path", "notebook_path", "path", "command", "url", "query", "pattern")


def tool_key(name: str, params: Mapping[str, Any], cwd: str = "") -> str:
    """What a tool call is about: the file read, the command run, the agent type..."""
    if name in ("Agent", "Task"):
        return _one_line(_str(params.get("subagent_type")) or "general-purpose")
    if name == "Skill":
        return _one_line(_str(params.get("skill")) or _str(params.get("command")))
    if name in ("Grep", "Glob"):
        pattern = _str(params.get("pattern"))
        where = _str(params.get("path"))
        return _one_line(_relative(f"{pattern} in {where}" if where else pattern, cwd))
    for name_of_field in _KEY_FIELDS:
        value = params.get(name_of_field)
        if isinstance(value, str) and value:
            return _one_line(_relative(value, cwd))
    return ""


def _relative(text: str, cwd: str) -> str:
    if cwd and len(cwd) > 1:
        return text.replace(cwd.rstrip("/") + "/", "")
    return text


def _utf8_len(text: str) -> int:
    # surrogatepass: a lone surrogate (JSON may escape one) counts its 3 bytes, never raises
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def _rendered_size(rendered: object) -> int:
    if isinstance(rendered, str):
        return _utf8_len(rendered)
    total = 0
    if isinstance(rendered, list):
        for item in rendered:
            if isinstance(item, dict):
                total += _rendered_size(item.get("content"))
            elif isinstance(item, str):
                total += _utf8_len(item)
    return total


_ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def _json_size(value: object) -> int:
    """UTF-8 bytes of `value` as compact JSON (a string counts its text only)."""
    if isinstance(value, str):
        return _utf8_len(value)
    try:
        return _utf8_len(_ENCODE(value))
    except (TypeError, ValueError):
        return 0


def _input_size(params: dict[str, Any]) -> int:
    """A tool input's size as compact JSON, its strings counted as their text (no escapes)."""
    if not params:
        return 2
    size = 1 + len(params)  # the braces and the commas
    for key, value in params.items():
        if type(value) is not str:
            return _json_size(params)
        size += len(key) + 5 + _utf8_len(value)  # "key":"value"
    return size


def _usage_values(usage: Mapping[str, Any]) -> tuple[int, int, int, int]:
    """(input, cache read, cache creation, output) tokens; 0 for what is absent or odd."""
    values = (
        usage.get("input_tokens", 0),
        usage.get("cache_read_input_tokens", 0),
        usage.get("cache_creation_input_tokens", 0),
        usage.get("output_tokens", 0),
    )
    if all(type(value) is int for value in values):
        return values
    return (_int(values[0]), _int(values[1]), _int(values[2]), _int(values[3]))


@functools.lru_cache(maxsize=4096)
def _clean_key(key: str) -> str:
    """A group key scrubbed of secrets (a command line can hold one); keys repeat, so cached."""
    from ctxward.core.scrub import redact

    if not key:
        return key
    # A lone surrogate (JSON may escape one) can be neither printed nor written: made "?".
    return redact(key.encode("utf-8", "replace").decode("utf-8"))


def _user_key(raw: Mapping[str, Any], content: str) -> str:
    if content.startswith(("<local-command", "<command-")):
        return "command"
    return "meta" if raw.get("isMeta") is True else "prompt"


class _Groups:
    """Bytes and counts per (tool, key), bounded: the smallest fold into '<tool> (other)'."""

    __slots__ = ("data", "folded", "tools")

    def __init__(self) -> None:
        self.data: dict[tuple[str, str], list[int]] = {}
        self.tools: dict[str, int] = {}  # bytes per tool, kept as groups are added
        self.folded = 0

    def add(self, tool: str, key: str, size: int, count: int) -> None:
        self.tools[tool] = self.tools.get(tool, 0) + size
        entry = self.data.get((tool, key))
        if entry is None:
            if len(self.data) >= MAX_GROUPS:
                self._fold()
                entry = self.data.get((tool, key))
            if entry is None:
                entry = self.data[(tool, key)] = [0, 0]
        entry[0] += size
        entry[1] += count

    def _fold(self) -> None:
        ranked = sorted(self.data.items(), key=lambda item: item[1][0])
        for (tool, key), (size, count) in ranked[: len(ranked) // 2]:
            if key == "(other)":
                continue
            del self.data[(tool, key)]
            self.folded += 1
            other = self.data.setdefault((tool, "(other)"), [0, 0])
            other[0] += size
            other[1] += count

    def merge(self, other: _Groups) -> None:
        for (tool, key), (size, count) in other.data.items():
            self.add(tool, key, size, count)
        self.folded += other.folded

    @property
    def total(self) -> int:
        return sum(entry[0] for entry in self.data.values())

    def top(self, limit: int) -> list[dict[str, Any]]:
        """The `limit` largest groups; keys are scrubbed (a command line can hold a secret)."""
        total = self.total
        ranked = sorted(self.data.items(), key=lambda item: (-item[1][0], item[0]))
        return [
            {
                "tool": _clean_key(tool),
                "key": _clean_key(key),
                "bytes": size,
                "pctOfTotal": round(100.0 * size / total, 1) if total else 0.0,
                "count": count,
            }
            for (tool, key), (size, count) in ranked[:limit]
            if size or count
        ]

    def by_tool(self) -> dict[str, int]:
        return dict(self.tools)


@dataclass(slots=True)
class RequestPoint:
    """One API request: where it was, and how large its context was."""

    request_id: str
    segment: int
    line: int
    timestamp: str
    input_tokens: int
    cache_read_tokens: int
    cache_creation_tokens: int
    output_tokens: int

    @property
    def context_tokens(self) -> int:
        return self.input_tokens + self.cache_read_tokens + self.cache_creation_tokens

    def as_dict(self) -> dict[str, Any]:
        return {
            "requestId": self.request_id,
            "segment": self.segment,
            "line": self.line,
            "timestamp": self.timestamp,
            "contextTokens": self.context_tokens,
            "inputTokens": self.input_tokens,
            "cacheReadTokens": self.cache_read_tokens,
            "cacheCreationTokens": self.cache_creation_tokens,
            "outputTokens": self.output_tokens,
        }


@dataclass(slots=True)
class SeriesPoint:
    """For the chart: a request's measured context, and the bytes by tool that preceded it."""

    request: int  # index into Audit.requests
    segment: int
    context_tokens: int
    by_tool: dict[str, int]


@dataclass(slots=True)
class Segment:
    """The records between two compactions."""

    index: int
    start_line: int
    trigger: str = ""  # of the compaction that opened it ('' for the first segment)
    pre_tokens: int = 0
    post_tokens: int = 0
    total_bytes: int = 0
    requests: int = 0
    peak_context_tokens: int = 0
    last_context_tokens: int = 0
    top: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "startLine": self.start_line,
            "trigger": self.trigger or None,
            "preTokens": self.pre_tokens or None,
            "postTokens": self.post_tokens or None,
            "totalBytes": self.total_bytes,
            "requests": self.requests,
            "peakContextTokens": self.peak_context_tokens,
            "lastContextTokens": self.last_context_tokens,
            "top": self.top,
        }


@dataclass(slots=True)
class Audit:
    """What filled the context of one transcript (and of its sub-agents)."""

    path: str
    session_id: str = ""
    agent_id: str = ""
    agent_type: str = ""
    stats: ReadStats = field(default_factory=ReadStats)
    total_bytes: int = 0
    groups: int = 0
    folded_groups: int = 0
    top: list[dict[str, Any]] = field(default_factory=list)
    by_tool: dict[str, int] = field(default_factory=dict)
    segments: list[Segment] = field(default_factory=list)
    requests: list[RequestPoint] = field(default_factory=list)
    series: list[SeriesPoint] = field(default_factory=list)
    subagents: list[Audit] = field(default_factory=list)

    @property
    def peak_context_tokens(self) -> int:
        return max((r.context_tokens for r in self.requests), default=0)

    @property
    def last_context_tokens(self) -> int:
        return self.requests[-1].context_tokens if self.requests else 0

    def as_dict(self) -> dict[str, Any]:
        """The full JSON answer of `ctxward audit --json`."""
        body: dict[str, Any] = {"available": True}
        body.update(self._head())
        body["segments"] = [segment.as_dict() for segment in self.segments]
        body["requests"] = [request.as_dict() for request in self.requests]
        sub_total = sum(sub.total_bytes for sub in self.subagents)
        body["subagents"] = [
            {
                **sub._head(),
                "tool": "subagent",
                "key": sub.agent_type or sub.agent_id,
                "bytes": sub.total_bytes,
                "pctOfTotal": round(100.0 * sub.total_bytes / sub_total, 1) if sub_total else 0.0,
                "count": len(sub.requests),
            }
            for sub in self.subagents
        ]
        return body

    def _head(self) -> dict[str, Any]:
        return {
            "transcript": self.path,
            "sessionId": self.session_id or None,
            "agentId": self.agent_id or None,
            "agentType": self.agent_type or None,
            "lines": self.stats.lines,
            "bytesRead": self.stats.bytes,
            "records": self.stats.records,
            "malformedLines": self.stats.malformed + self.stats.oversized,
            "totalBytes": self.total_bytes,
            "groups": self.groups,
            "foldedGroups": self.folded_groups,
            "requestCount": len(self.requests),
            "peakContextTokens": self.peak_context_tokens,
            "lastContextTokens": self.last_context_tokens,
            "top": self.top,
        }


def unavailable(reason: str) -> dict[str, Any]:
    """The fail-soft answer: the audit could not read a transcript, and says why."""
    return {"available": False, "reason": reason}


class NotATranscript(ValueError):
    """The file was readable but holds no Claude Code transcript records."""


class _Series:
    """At most MAX_SERIES_POINTS points: when full, every other one goes and the stride doubles."""

    __slots__ = ("points", "seen", "stride")

    def __init__(self) -> None:
        self.points: list[SeriesPoint] = []
        self.stride = 1
        self.seen = 0

    def wants(self) -> bool:
        """Whether the next request becomes a point (counts it either way)."""
        self.seen += 1
        return (self.seen - 1) % self.stride == 0

    def add(self, point: SeriesPoint) -> None:
        self.points.append(point)
        if len(self.points) >= MAX_SERIES_POINTS:
            self.points = self.points[::2]
            self.stride *= 2


class _Walker:
    """One pass over one transcript; the state of the audit's streaming attribution."""

    def __init__(self, top: int) -> None:
        self.top_n = top
        self.session = _Groups()
        self.segment = _Groups()
        self.segments: list[Segment] = [Segment(index=0, start_line=1)]
        self.requests: list[RequestPoint] = []
        self.recent: dict[str, RequestPoint] = {}  # requestId -> point, last few only
        self.series = _Series()
        self.open_uses: dict[str, tuple[str, str]] = {}  # tool_use_id -> (tool, key)
        self.system_bytes = 0  # the largest prompt snapshot of the current segment
        self.cwd = ""
        self.session_id = ""
        self.agent_id = ""
        self.agent_type = ""

    def identify(self, raw: Mapping[str, Any]) -> None:
        """Take the session, agent and cwd from the first record that has them."""
        self.cwd = _str(raw.get("cwd"))
        self.session_id = self.session_id or _str(raw.get("sessionId"))
        self.agent_id = self.agent_id or _str(raw.get("agentId"))
        self.agent_type = self.agent_type or _str(raw.get("attributionAgent"))

    # -- per record kind

    def user(self, raw: dict[str, Any]) -> None:
        message = raw.get("message")
        if not isinstance(message, dict):
            return
        content = message.get("content")
        if isinstance(content, str):
            if raw.get("isCompactSummary") is True:
                self.segment.add("compaction", "summary", _utf8_len(content), 1)
            else:
                self.segment.add("user", _user_key(raw, content), _utf8_len(content), 1)
            return
        if not isinstance(content, list):
            return
        for block in content:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "tool_result":
                text, images = _content_text(block.get("content"))
                size = _utf8_len(text) + images * IMAGE_BYTES
                ident = block.get("tool_use_id")
                opened = self.open_uses.pop(ident, None) if isinstance(ident, str) else None
                if opened is None:
                    self.segment.add("(unknown tool)", "", size, 1)
                else:
                    self.segment.add(opened[0], opened[1], size, 0)
            elif kind == "text":
                tool = "compaction" if raw.get("isCompactSummary") is True else "user"
                key = "summary" if tool == "compaction" else "prompt"
                self.segment.add(tool, key, _utf8_len(_str(block.get("text"))), 1)
            elif kind == "image":
                self.segment.add("user", "image", IMAGE_BYTES, 1)

    def assistant(self, raw: dict[str, Any], line: int) -> None:
        if not self.agent_type:
            self.agent_type = _str(raw.get("attributionAgent"))
        message = raw.get("message")
        if not isinstance(message, dict):
            return
        if raw.get("isApiErrorMessage") is not True and message.get("model") != "<synthetic>":
            usage = message.get("usage")
            if isinstance(usage, dict):
                self._request(raw, message, usage, line)
        content = message.get("content")
        if not isinstance(content, list):
            if isinstance(content, str) and content:
                self.segment.add("assistant", "text", _utf8_len(content), 1)
            return
        for block in content:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "tool_use":
                name = _str(block.get("name")) or "(unnamed tool)"
                params = _dict(block.get("input"))
                key = tool_key(name, params, self.cwd)
                ident = block.get("id")
                if isinstance(ident, str):
                    if len(self.open_uses) >= MAX_OPEN_TOOL_USES:
                        self.open_uses.pop(next(iter(self.open_uses)))
                    self.open_uses[ident] = (name, key)
                self.segment.add(name, key, _input_size(params), 1)
            elif kind == "text":
                self.segment.add("assistant", "text", _utf8_len(_str(block.get("text"))), 1)
            elif kind == "thinking":
                self.segment.add("assistant", "thinking", _utf8_len(_str(block.get("thinking"))), 1)
            elif kind == "redacted_thinking":
                self.segment.add("assistant", "thinking", _utf8_len(_str(block.get("data"))), 1)

    def _request(
        self, raw: dict[str, Any], message: dict[str, Any], usage: dict[str, Any], line: int
    ) -> None:
        ident = _str(raw.get("requestId")) or _str(message.get("id")) or f"line-{line}"
        point = self.recent.get(ident)
        values = _usage_values(usage)
        if point is not None:  # the same request again: its last record's usage wins
            (
                point.input_tokens,
                point.cache_read_tokens,
                point.cache_creation_tokens,
                point.output_tokens,
            ) = values
            return
        point = RequestPoint(
            ident, len(self.segments) - 1, line, _str(raw.get("timestamp")), *values
        )
        self.requests.append(point)
        if len(self.recent) >= 64:
            self.recent.pop(next(iter(self.recent)))
        self.recent[ident] = point
        if self.series.wants():
            by_tool = self.segment.by_tool()
            if self.system_bytes:
                by_tool["system"] = by_tool.get("system", 0) + self.system_bytes
            self.series.add(
                SeriesPoint(len(self.requests) - 1, point.segment, point.context_tokens, by_tool)
            )

    def attachment(self, raw: dict[str, Any]) -> None:
        attachment = raw.get("attachment")
        if not isinstance(attachment, dict):
            return
        kind = _str(attachment.get("type")) or "(untyped)"
        if kind == "prompt_snapshot":
            size = sum(_utf8_len(_str(part)) for part in attachment.get("systemPrompt") or ())
            tools = attachment.get("tools")
            if tools:
                size += _json_size(tools)
            self.system_bytes = max(self.system_bytes, size)
            return
        if "rendered" in raw:
            size = _rendered_size(raw.get("rendered"))
        elif kind in _CONTEXT_ATTACHMENTS:
            size = _json_size(attachment.get("content"))
        else:
            return
        if not size:
            return
        detail = (
            _str(attachment.get("hookName"))
            or _str(attachment.get("filename"))
            or _str(attachment.get("path"))
        )
        key = f"{kind}:{_one_line(_relative(detail, self.cwd), 80)}" if detail else kind
        self.segment.add("attachment", key, size, 1)

    def boundary(self, raw: dict[str, Any], line: int) -> None:
        self.close_segment()
        meta = _dict(raw.get("compactMetadata") or raw.get("compact_metadata"))
        self.segments.append(
            Segment(
                index=len(self.segments),
                start_line=line,
                trigger=_str(meta.get("trigger")),
                pre_tokens=_int(meta.get("preTokens") or meta.get("pre_tokens")),
                post_tokens=_int(meta.get("postTokens")),
            )
        )
        self.open_uses.clear()

    def close_segment(self) -> None:
        segment = self.segments[-1]
        if self.system_bytes:
            self.segment.add("system", "prompt + tool schemas", self.system_bytes, 1)
            self.system_bytes = 0
        segment.total_bytes = self.segment.total
        segment.top = self.segment.top(self.top_n)
        self.session.merge(self.segment)
        self.segment = _Groups()

    def finish(self, audit: Audit) -> None:
        self.close_segment()
        for request in self.requests:
            segment = self.segments[request.segment]
            segment.requests += 1
            segment.peak_context_tokens = max(segment.peak_context_tokens, request.context_tokens)
            segment.last_context_tokens = request.context_tokens
        audit.total_bytes = self.session.total
        audit.groups = len(self.session.data)
        audit.folded_groups = self.session.folded
        audit.top = self.session.top(self.top_n)
        audit.by_tool = self.session.by_tool()
        audit.segments = self.segments
        audit.requests = self.requests
        audit.series = self.series.points
        audit.session_id = self.session_id
        audit.agent_id = self.agent_id
        audit.agent_type = self.agent_type


_AUDIT_TYPES = frozenset(t.encode("ascii") for t in CONTEXT_TYPES)
_KNOWN_TYPES_BYTES = frozenset(t.encode("ascii") for t in KNOWN_TYPES)


def audit_file(path: Path, *, top: int = 10) -> Audit:
    """Audit one transcript file (no sub-agents). OSError when unreadable (also: not a regular
    file, or past MAX_TRANSCRIPT_BYTES); NotATranscript.

    The hot loop of the audit: it reads lines itself (the same rules as `iter_lines`) and skips
    bookkeeping lines by their leading type without parsing them.
    """
    walker = _Walker(top)
    loads = json.loads
    audit_types, known_types, known_bytes = _AUDIT_TYPES, KNOWN_TYPES, _KNOWN_TYPES_BYTES
    number = known = records = skipped = malformed = oversized = 0
    identified = False
    with open(_opened(path), "rb") as handle:
        readline = handle.readline
        while True:
            data = readline(MAX_LINE_BYTES)
            if not data:
                break
            number += 1
            if len(data) >= MAX_LINE_BYTES and not data.endswith(b"\n"):
                while data and not data.endswith(b"\n"):
                    data = readline(MAX_LINE_BYTES)
                oversized += 1
                continue
            if data.startswith(_TYPE_PREFIX):
                head = data[9 : data.find(b'"', 9)]
                if head not in audit_types:
                    if head in known_bytes:
                        known += 1
                    skipped += 1
                    continue
            elif not known and number > FOREIGN_PROBE_LINES:
                break  # thousands of lines and not one transcript record: a foreign file
            try:
                raw = loads(data.decode("utf-8"))
            except (ValueError, RecursionError):
                if not data.isspace():
                    malformed += 1
                continue
            if not isinstance(raw, dict):  # (a lone surrogate is made safe in `_clean_key`)
                malformed += 1
                continue
            kind = raw.get("type")
            if kind not in known_types:
                skipped += 1
                continue
            known += 1
            records += 1
            if not identified:
                walker.identify(raw)
                identified = bool(walker.cwd)
            if kind == "assistant":
                walker.assistant(raw, number)
            elif kind == "user":
                walker.user(raw)
            elif kind == "attachment":
                walker.attachment(raw)
            elif kind == "system" and raw.get("subtype") == "compact_boundary":
                walker.boundary(raw, number)
        read = handle.tell()
    stats = ReadStats(number, read, records, malformed, oversized, skipped, known)
    if not known:
        raise NotATranscript(
            f"{path}: not a Claude Code transcript (no transcript records in "
            f"{number} lines, {malformed + oversized} malformed)"
        )
    audit = Audit(path=str(path), stats=stats)
    walker.finish(audit)
    return audit


def audit(path: Path, *, top: int = 10, subagents: bool = True) -> Audit:
    """Audit `path` and, when `subagents`, each transcript under <session>/subagents/."""
    result = audit_file(path, top=top)
    if subagents:
        for sub_path, agent_type in subagent_transcripts(path):
            try:
                sub = audit_file(sub_path, top=top)
            except (OSError, NotATranscript):
                continue
            sub.agent_type = agent_type or sub.agent_type
            if not sub.agent_id:
                sub.agent_id = sub_path.stem.removeprefix("agent-")
            result.subagents.append(sub)
    return result


# --------------------------------------------------------------------------- presentation

SUMMARY_LIMIT = 2048
_PALETTE = ("#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1")
_SYSTEM_COLOR = "#a0a9b4"
_OTHER_COLOR = "#d3cdc8"


def size_text(size: int) -> str:
    """A byte count for people: 512 B, 41.2 KB, 1.3 MB."""
    if size < 1024:
        return f"{size} B"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KB"
    return f"{size / (1024 * 1024):.1f} MB"


def _group_name(group: Mapping[str, Any], width: int) -> str:
    key = str(group.get("key") or "")
    name = f"{group.get('tool')} {key}" if key else str(group.get("tool"))
    return _one_line(name, width)


def summary(audit: Audit, names: int = 10) -> dict[str, Any]:
    """The `--summary` answer: counts and the first `names` group names, at most 2 KB of JSON.

    Additive: everything it leaves out is in the full answer (the same command without it).
    """
    body: dict[str, Any] = {
        "available": True,
        "summary": True,
        "transcript": audit.path if len(audit.path) <= 300 else "…" + audit.path[-299:],
        "lines": audit.stats.lines,
        "malformedLines": audit.stats.malformed + audit.stats.oversized,
        "requests": len(audit.requests),
        "segments": len(audit.segments),
        "peakContextTokens": audit.peak_context_tokens,
        "lastContextTokens": audit.last_context_tokens,
        "totalBytes": audit.total_bytes,
        "groups": audit.groups,
        "subagents": len(audit.subagents),
        "top": [
            f"{_group_name(group, 60)}: {size_text(group['bytes'])} "
            f"({group['pctOfTotal']}%, {group['count']}x)"
            for group in audit.top[:names]
        ],
        "more": "run without --summary for every group, segment, request and sub-agent",
    }
    while len(json.dumps(body, ensure_ascii=False, indent=2).encode("utf-8")) >= SUMMARY_LIMIT:
        if not body["top"]:
            break
        body["top"].pop()
    return body


def text_model(full: Mapping[str, Any]) -> dict[str, Any]:
    """`Audit.as_dict()` with sizes for people, for templates/audit/report.txt.j2."""

    def rows(groups: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{**group, "size": size_text(group["bytes"])} for group in groups]

    return {
        **full,
        "read": size_text(full["bytesRead"]),
        "total": size_text(full["totalBytes"]),
        "top": rows(full["top"]),
        "segments": [
            {**segment, "top": rows(segment["top"]), "total": size_text(segment["totalBytes"])}
            for segment in full["segments"]
        ],
        "subagents": [
            {**sub, "size": size_text(sub["bytes"]), "top": rows(sub["top"])}
            for sub in full["subagents"]
        ],
    }


def _overlap(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return a[0] < b[1] + 8 and b[0] < a[1] + 8


def _is_round(step: float) -> bool:
    """1, 2, 2.5 or 5 times a power of ten."""
    if step <= 0 or step != int(step):
        return False
    digits = str(int(step)).rstrip("0")
    return digits in ("1", "2", "25", "5")


def _kilo(tokens: int) -> str:
    return f"{tokens / 1000:.0f}k" if tokens >= 10_000 else f"{tokens:,}"


def _nice_ceiling(value: float) -> float:
    if value <= 0:
        return 1.0
    magnitude = 10.0 ** (len(str(int(value))) - 1)
    for step in (1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0):
        if value <= step * magnitude:
            return step * magnitude
    return 10.0 * magnitude


def page_model(audit: Audit, *, width: int = 1080, height: int = 380) -> dict[str, Any]:
    """Everything templates/audit/report.html.j2 draws: stacked areas, markers, bars, tables.

    Each request's measured context (input + cache read + cache creation tokens) is split
    across the categories in proportion to the bytes each had put into the current segment.
    """
    totals = dict(audit.by_tool)
    ranked = [tool for tool, _ in sorted(totals.items(), key=lambda kv: -kv[1]) if tool != "system"]
    shown = ranked[: len(_PALETTE)]
    categories = [("system", "system prompt + tools", _SYSTEM_COLOR)]
    categories += [(tool, tool, _PALETTE[i]) for i, tool in enumerate(shown)]
    if len(ranked) > len(shown):
        categories.append(("(other)", "other", _OTHER_COLOR))
    names = [name for name, _, _ in categories]
    points = audit.series
    left, right, top_margin, bottom = 70, 20, 20, 40
    plot_w, plot_h = width - left - right, height - top_margin - bottom
    peak = max((p.context_tokens for p in points), default=0)
    stacks: list[list[float]] = []
    for point in points:
        sizes = {name: 0 for name in names}
        for tool, size in point.by_tool.items():
            slot = tool if tool in sizes else "(other)"
            sizes[slot] = sizes.get(slot, 0) + size
        content = sum(sizes.values())
        if point.context_tokens and not content:  # nothing recorded yet: the base prompt
            sizes["system"] = content = point.context_tokens
        # No usage recorded: about 4 bytes a token.
        scale = point.context_tokens / content if point.context_tokens else 0.25
        stacks.append([sizes.get(name, 0) * scale for name in names])
        peak = max(peak, int(sum(stacks[-1])))
    y_max = _nice_ceiling(peak)
    count = max(len(audit.requests) - 1, 1)

    def x_of(request: float) -> float:
        return round(left + plot_w * request / count, 1)

    def y_of(tokens: float) -> float:
        return round(top_margin + plot_h * (1 - tokens / y_max), 1)

    xs = [x_of(point.request) for point in points]
    if len(xs) == 1:
        xs = [float(left)]
        stacks = stacks * 2
        xs.append(float(left + plot_w))
    areas = []
    base = [0.0] * len(stacks)
    for column, (_name, label, color) in enumerate(categories):
        upper = [base[i] + stack[column] for i, stack in enumerate(stacks)]
        if any(stack[column] for stack in stacks):
            forward = " L ".join(f"{x} {y_of(v)}" for x, v in zip(xs, upper, strict=True))
            backward = " L ".join(
                f"{x} {y_of(v)}" for x, v in reversed(list(zip(xs, base, strict=True)))
            )
            areas.append({"label": label, "color": color, "d": f"M {forward} L {backward} Z"})
        base = upper
    measured = " L ".join(
        f"{x_of(p.request)} {y_of(p.context_tokens)}" for p in points if p.context_tokens
    )
    markers: list[dict[str, Any]] = []
    for segment in audit.segments[1:]:
        first = next((i for i, r in enumerate(audit.requests) if r.segment == segment.index), None)
        if first is None:
            continue
        x = x_of(max(first - 0.5, 0))
        flip = x > width - right - 140  # near the right edge: the label goes left of the line
        span = (x - 140, x) if flip else (x, x + 140)
        row = next(
            (
                n
                for n in range(3)
                if all(m["row"] != n or not _overlap(m["span"], span) for m in markers)
            ),
            0,
        )
        markers.append(
            {
                "x": x,
                "span": span,
                "row": row,
                "anchor": "end" if flip else "start",
                "dx": -4 if flip else 4,
                "label": f"{segment.trigger or 'compaction'} compaction",
                "detail": (
                    f"{_kilo(segment.pre_tokens)} → {_kilo(segment.post_tokens)} tokens"
                    if segment.pre_tokens
                    else ""
                ),
            }
        )
    divisions = next((n for n in (4, 5, 3, 6, 2) if _is_round(y_max / n)), 4)
    ticks = [
        {"y": y_of(y_max * i / divisions), "label": f"{int(y_max * i / divisions):,}"}
        for i in range(divisions + 1)
    ]
    x_ticks: list[dict[str, Any]] = []
    if audit.requests:
        for i in range(6):
            index = round(count * i / 5) if len(audit.requests) > 1 else 0
            if x_ticks and x_ticks[-1]["request"] == index + 1:
                continue
            stamp = audit.requests[index].timestamp[11:16]
            x_ticks.append({"x": x_of(index), "request": index + 1, "time": stamp})
    hovers = []
    step = (xs[-1] - xs[0]) / max(len(points) - 1, 1) if points else 0
    for point, x in zip(points, xs, strict=False):  # one point is drawn at both ends
        parts = sorted(point.by_tool.items(), key=lambda kv: -kv[1])[:5]
        request = audit.requests[point.request]
        hovers.append(
            {
                "x": round(x - step / 2, 1),
                "w": round(max(step, 2), 1),
                "title": (
                    f"request {point.request + 1} ({request.timestamp[:19].replace('T', ' ')}): "
                    f"{point.context_tokens:,} tokens; "
                    + ", ".join(f"{tool} {size_text(size)}" for tool, size in parts)
                ),
            }
        )
    top_bytes = max((group["bytes"] for group in audit.top), default=0) or 1
    bars = [
        {
            **group,
            "name": _group_name(group, 90),
            "size": size_text(group["bytes"]),
            "width": round(100 * group["bytes"] / top_bytes, 1),
            "color": _SYSTEM_COLOR
            if group["tool"] == "system"
            else dict((n, c) for n, _, c in categories).get(group["tool"], _OTHER_COLOR),
        }
        for group in audit.top
    ]
    full = audit.as_dict()
    return {
        "title": audit.session_id or Path(audit.path).stem,
        "path": audit.path,
        "width": width,
        "height": height,
        "plot": {
            "left": left,
            "right": width - right,
            "top": top_margin,
            "bottom": height - bottom,
        },
        "areas": areas,
        "measured": f"M {measured}" if measured else "",
        "markers": markers,
        "ticks": ticks,
        "x_ticks": x_ticks,
        "hovers": hovers,
        "legend": [{"label": label, "color": color} for _, label, color in categories],
        "bars": bars,
        "stats": {
            "requests": len(audit.requests),
            "peak": f"{audit.peak_context_tokens:,}",
            "last": f"{audit.last_context_tokens:,}",
            "compactions": len(audit.segments) - 1,
            "content": size_text(audit.total_bytes),
            "lines": f"{audit.stats.lines:,}",
            "malformed": audit.stats.malformed + audit.stats.oversized,
            "subagents": len(audit.subagents),
        },
        "segments": text_model(full)["segments"],
        "subagents": text_model(full)["subagents"],
        "sampled": len(points) < len(audit.requests),
    }
