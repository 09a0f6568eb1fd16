"""What a Claude Code transcript gained since the last tool call: text, usage, a compaction.

Claude Code's hook payloads carry no assistant text and no token usage, but they name the
session's transcript (`transcript_path`), where the host appends one JSON line per content block
of each response (`"type": "assistant"`, with `message.usage` and `message.model`) and one
`{"type": "system", "subtype": "compact_boundary"}` line per compaction. The drift observer
(`ctxward.drift.observe`) reads only what was appended since the previous call, from a saved offset,
and at most MAX_TAIL_BYTES of it (the newest): silence drift learns whether the model wrote text
to the user, the context-pressure stages (`ctxward.pressure`) learn the last request's real
token count, and both learn when a compaction started a new context segment.

Bounded: one `open`, one `fstat`, one read of at most MAX_TAIL_BYTES. Only lines that name an
assistant record or a compaction boundary are parsed; a tool result line (often the largest)
is skipped by a substring test. A last line still being written (no newline yet) is left for the
next call. Standard library only: this runs on every tool call (`drift.observed_quietly`).
"""

from __future__ import annotations

import os

from ctxward.core import hotjson

MAX_TAIL_BYTES = 256 * 1024  # newer content than this since the last call: only its tail is read
_ASSISTANT = (b'"type":"assistant"', b'"type": "assistant"')
_BOUNDARY = b"compact_boundary"


class Tail:
    """What one scan found: the new offset (and the file's identity), and what was appended."""

    __slots__ = ("compacted", "context_tokens", "inode", "model", "offset", "seen", "text")

    def __init__(self, offset: int, inode: int) -> None:
        self.offset = offset
        self.inode = inode
        self.seen = False  # an assistant record was read: the file is a Claude Code transcript
        self.text = False  # the model wrote text (a non-empty text block)
        self.context_tokens: int | None = None  # the newest request's input (usage), if any
        self.model = ""
        self.compacted = False  # a compaction boundary was appended (a new context segment)


def scan(path: str, offset: int, inode: int, limit: int = MAX_TAIL_BYTES) -> Tail | None:
    """Read what `path` gained after `offset` (of the file `inode`); None when it cannot be read.

    A file replaced (another inode) or shorter than `offset` is read from its last `limit` bytes.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        import stat

        if not stat.S_ISREG(info.st_mode):
            return None
        size = info.st_size
        start = offset if info.st_ino == inode and 0 <= offset <= size else 0
        cut = size - start > limit
        if cut:
            start = size - limit
        os.lseek(fd, start, os.SEEK_SET)
        raw = os.read(fd, size - start)
    except OSError:
        return None
    finally:
        os.close(fd)
    end = raw.rfind(b"\n") + 1  # a line still being written waits for the next call
    tail = Tail(start + end, info.st_ino)
    lines = raw[:end].split(b"\n")
    if cut and lines:
        lines = lines[1:]  # the first line is probably cut
    for line in lines:
        if _BOUNDARY in line:
            tail.compacted = True
            tail.context_tokens = None  # the usage before a compaction is of the old segment
            continue
        if not any(marker in line for marker in _ASSISTANT):
            continue
        try:
            record = hotjson.loads(line)
        except (ValueError, RecursionError):
            continue
        _assistant(tail, record)
    return tail


def _assistant(tail: Tail, record: object) -> None:
    if not isinstance(record, dict) or record.get("type") != "assistant":
        return
    if record.get("isSidechain") is True or record.get("isApiErrorMessage") is True:
        return
    message = record.get("message")
    if not isinstance(message, dict):
        return
    tail.seen = True
    content = message.get("content")
    if isinstance(content, list):
        for block in content:
            if (
                isinstance(block, dict)
                and block.get("type") == "text"
                and isinstance(block.get("text"), str)
                and block["text"].strip()
            ):
                tail.text = True
    elif isinstance(content, str) and content.strip():
        tail.text = True
    usage = message.get("usage")
    if isinstance(usage, dict):
        total = 0
        for key in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"):
            value = usage.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                total += value
        if total:
            tail.context_tokens = total
            model = message.get("model")
            tail.model = model if isinstance(model, str) else ""
