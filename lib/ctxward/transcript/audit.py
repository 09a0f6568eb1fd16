"""The context audit: what fills the context window, request by request (`ctxward audit`)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ctxward.transcript.measure import (
    Groups,
    input_size,
    json_size,
    rendered_size,
    scrubbed_key,
    tool_key,
    user_key,
    utf8_len,
    without_cwd,
)
from ctxward.transcript.reader import (
    CONTEXT_ATTACHMENTS,
    CONTEXT_TYPES,
    FOREIGN_PROBE_LINES,
    IMAGE_BYTES,
    KNOWN_TYPES,
    MAX_LINE_BYTES,
    MAX_OPEN_TOOL_USES,
    MAX_SERIES_POINTS,
    TYPE_PREFIX,
    ReadStats,
    Usage,
    content_text,
    dict_of,
    int_of,
    open_transcript,
    str_of,
    subagent_transcripts,
    usage_from,
)


@dataclass(slots=True)
class RequestPoint:
    """One API request: where it was, and how large its context was."""

    request_id: str
    segment: int
    line: int
    timestamp: str
    usage: Usage

    @property
    def context_tokens(self) -> int:
        return self.usage.context_tokens

    def as_dict(self) -> dict[str, Any]:
        return {
            "requestId": self.request_id,
            "segment": self.segment,
            "line": self.line,
            "timestamp": self.timestamp,
            "contextTokens": self.context_tokens,
            "inputTokens": self.usage.input_tokens,
            "cacheReadTokens": self.usage.cache_read_input_tokens,
            "cacheCreationTokens": self.usage.cache_creation_input_tokens,
            "outputTokens": self.usage.output_tokens,
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
        self.session = Groups()
        self.segment = Groups()
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
        self.cwd = str_of(raw.get("cwd"))
        self.session_id = self.session_id or str_of(raw.get("sessionId"))
        self.agent_id = self.agent_id or str_of(raw.get("agentId"))
        self.agent_type = self.agent_type or str_of(raw.get("attributionAgent"))

    # -- per record kind

    def user(self, raw: dict[str, Any]) -> None:
        message = raw.get("message")
        if not isinstance(message, dict):
            return
        content = message.get("content")
        if isinstance(content, str):
            if raw.get("isCompactSummary") is True:
                self.segment.add("compaction", "summary", utf8_len(content), 1)
            else:
                self.segment.add("user", user_key(raw, content), utf8_len(content), 1)
            return
        if not isinstance(content, list):
            return
        for block in content:
            kind = block.get("type") if isinstance(block, dict) else None  # None: skipped
            if kind == "tool_result":
                text, images = content_text(block.get("content"))
                size = utf8_len(text) + images * IMAGE_BYTES
                ident = block.get("tool_use_id")
                opened = self.open_uses.pop(ident, None) if isinstance(ident, str) else None
                if opened is None:
                    self.segment.add("(unknown tool)", "", size, 1)
                else:
                    self.segment.add(opened[0], opened[1], size, 0)
            elif kind == "text":
                tool = "compaction" if raw.get("isCompactSummary") is True else "user"
                key = "summary" if tool == "compaction" else "prompt"
                self.segment.add(tool, key, utf8_len(str_of(block.get("text"))), 1)
            elif kind == "image":
                self.segment.add("user", "image", IMAGE_BYTES, 1)

    def assistant(self, raw: dict[str, Any], line: int) -> None:
        if not self.agent_type:
            self.agent_type = str_of(raw.get("attributionAgent"))
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
                self.segment.add("assistant", "text", utf8_len(content), 1)
            return
        for block in content:
            kind = block.get("type") if isinstance(block, dict) else None  # None: skipped
            if kind == "tool_use":
                name = str_of(block.get("name")) or "(unnamed tool)"
                params = dict_of(block.get("input"))
                key = tool_key(name, params, self.cwd)
                ident = block.get("id")
                if isinstance(ident, str):
                    if len(self.open_uses) >= MAX_OPEN_TOOL_USES:
                        self.open_uses.pop(next(iter(self.open_uses)))
                    self.open_uses[ident] = (name, key)
                self.segment.add(name, key, input_size(params), 1)
            elif kind == "text":
                self.segment.add("assistant", "text", utf8_len(str_of(block.get("text"))), 1)
            elif kind == "thinking":
                self.segment.add(
                    "assistant", "thinking", utf8_len(str_of(block.get("thinking"))), 1
                )
            elif kind == "redacted_thinking":
                self.segment.add("assistant", "thinking", utf8_len(str_of(block.get("data"))), 1)

    def _request(
        self, raw: dict[str, Any], message: dict[str, Any], usage: dict[str, Any], line: int
    ) -> None:
        ident = str_of(raw.get("requestId")) or str_of(message.get("id")) or f"line-{line}"
        point = self.recent.get(ident)
        if point is not None:  # the same request again: its last record's usage wins
            point.usage = usage_from(usage)
            return
        point = RequestPoint(
            ident, len(self.segments) - 1, line, str_of(raw.get("timestamp")), usage_from(usage)
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
        kind = str_of(attachment.get("type")) or "(untyped)"
        if kind == "prompt_snapshot":
            size = sum(utf8_len(str_of(part)) for part in attachment.get("systemPrompt") or ())
            tools = attachment.get("tools")
            if tools:
                size += json_size(tools)
            self.system_bytes = max(self.system_bytes, size)
            return
        if "rendered" in raw:
            size = rendered_size(raw.get("rendered"))
        elif kind in CONTEXT_ATTACHMENTS:
            size = json_size(attachment.get("content"))
        else:
            return
        if not size:
            return
        detail = (
            str_of(attachment.get("hookName"))
            or str_of(attachment.get("filename"))
            or str_of(attachment.get("path"))
        )
        key = f"{kind}:{scrubbed_key(without_cwd(detail, self.cwd), 80)}" if detail else kind
        self.segment.add("attachment", key, size, 1)

    def boundary(self, raw: dict[str, Any], line: int) -> None:
        self.close_segment()
        meta = dict_of(raw.get("compactMetadata") or raw.get("compact_metadata"))
        self.segments.append(
            Segment(
                index=len(self.segments),
                start_line=line,
                trigger=str_of(meta.get("trigger")),
                pre_tokens=int_of(meta.get("preTokens") or meta.get("pre_tokens")),
                post_tokens=int_of(meta.get("postTokens")),
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
        self.segment = Groups()

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
    with open(open_transcript(path), "rb") as handle:
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
            if data.startswith(TYPE_PREFIX):
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
