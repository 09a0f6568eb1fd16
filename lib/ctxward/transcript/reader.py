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
    ``.type .subtype .uuid .timestamp .session_id .agent_id .request_id .cwd``
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
import json
import os
import re
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass
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
CONTEXT_ATTACHMENTS = frozenset(
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


TYPE_PREFIX = b'{"type":"'


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

    OSError for anything but a regular file, or one past MAX_TRANSCRIPT_BYTES (`open_transcript`).
    """
    stats = stats if stats is not None else ReadStats()
    with open(open_transcript(path), "rb") as handle:
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


def open_transcript(path: str | os.PathLike[str]) -> int:
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
    if not data.startswith(TYPE_PREFIX):
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


def str_of(value: object) -> str:
    return value if isinstance(value, str) else ""


def int_of(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def dict_of(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


class _Text:
    """A string field of a view's dict, read on access: '' when absent or not a string."""

    __slots__ = ("key",)

    def __init__(self, key: str) -> None:
        self.key = key

    def __get__(self, view: Record | Message, owner: type | None = None) -> str:
        return str_of(view.raw.get(self.key))


class _Flag:
    """A true/false field of a view's dict, read on access: True only when it is `true`."""

    __slots__ = ("key",)

    def __init__(self, key: str) -> None:
        self.key = key

    def __get__(self, view: Record | Message, owner: type | None = None) -> bool:
        return view.raw.get(self.key) is True


class Record:
    """A view over one transcript line's dict; accessors never raise on odd shapes."""

    __slots__ = ("line", "offset", "raw", "size")
    # The line's top-level fields, read on access.
    type = _Text("type")
    subtype = _Text("subtype")
    uuid = _Text("uuid")
    timestamp = _Text("timestamp")
    session_id = _Text("sessionId")
    agent_id = _Text("agentId")
    request_id = _Text("requestId")
    cwd = _Text("cwd")
    is_sidechain = _Flag("isSidechain")
    is_meta = _Flag("isMeta")
    is_compact_summary = _Flag("isCompactSummary")

    def __init__(self, raw: dict[str, Any], line: int = 0, offset: int = 0, size: int = 0) -> None:
        self.raw = raw
        self.line = line
        self.offset = offset
        self.size = size

    def __repr__(self) -> str:
        return f"Record(type={self.type!r}, line={self.line})"

    @property
    def is_api_error(self) -> bool:
        if self.raw.get("isApiErrorMessage") is True:
            return True
        return dict_of(self.raw.get("message")).get("model") == "<synthetic>"

    @property
    def is_compact_boundary(self) -> bool:
        return self.type == "system" and self.subtype == "compact_boundary"

    @property
    def compact_metadata(self) -> dict[str, Any]:
        return dict_of(self.raw.get("compactMetadata") or self.raw.get("compact_metadata"))

    @property
    def attachment(self) -> dict[str, Any] | None:
        value = self.raw.get("attachment")
        return value if isinstance(value, dict) else None

    @property
    def attachment_type(self) -> str:
        return str_of((self.attachment or {}).get("type"))

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


def content_text(content: object) -> tuple[str, int]:
    """(the text parts of a tool_result's content joined by newlines, the number of images)."""
    if isinstance(content, str):
        return content, 0
    parts: list[str] = []
    images = 0
    for block in _blocks(content):
        kind = block.get("type")
        if kind == "text":
            parts.append(str_of(block.get("text")))
        elif kind == "image":
            images += 1
    return "\n".join(parts), images


def usage_of(message: Mapping[str, Any]) -> Usage | None:
    """The usage of an assistant message dict, or None when it carries none."""
    usage = message.get("usage")
    return usage_from(usage) if isinstance(usage, dict) else None


def usage_from(usage: Mapping[str, Any]) -> Usage:
    """A usage dict's token counts; 0 for what is absent or odd."""
    values = (
        usage.get("input_tokens", 0),
        usage.get("cache_read_input_tokens", 0),
        usage.get("cache_creation_input_tokens", 0),
        usage.get("output_tokens", 0),
    )
    for value in values:  # a loop, not all(): it runs once per request of an audit
        if type(value) is not int:
            return Usage._make(map(int_of, values))
    return Usage._make(values)


class Message:
    """A view over a record's `message` dict (role, content blocks, usage)."""

    __slots__ = ("raw",)
    role = _Text("role")
    id = _Text("id")
    model = _Text("model")
    stop_reason = _Text("stop_reason")

    def __init__(self, raw: dict[str, Any]) -> None:
        self.raw = raw

    @property
    def blocks(self) -> tuple[dict[str, Any], ...]:
        return _blocks(self.raw.get("content"))

    @property
    def text(self) -> str:
        texts = [str_of(b.get("text")) for b in self.blocks if b.get("type") == "text"]
        return "\n".join(text for text in texts if text)

    @property
    def tool_uses(self) -> tuple[ToolUse, ...]:
        return tuple(
            ToolUse(str_of(b.get("id")), str_of(b.get("name")), dict_of(b.get("input")))
            for b in self.blocks
            if b.get("type") == "tool_use"
        )

    @property
    def tool_results(self) -> tuple[ToolResult, ...]:
        results = []
        for block in self.blocks:
            if block.get("type") != "tool_result":
                continue
            text, images = content_text(block.get("content"))
            results.append(
                ToolResult(
                    str_of(block.get("tool_use_id")),
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
            agent_type = str_of(
                dict_of(json.loads(read_regular(meta, follow_links=True).decode("utf-8"))).get(
                    "agentType"
                )
            )
        found.append((candidate, agent_type))
    return found
