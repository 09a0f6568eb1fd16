"""The audit for people: the text summary and the HTML/SVG chart model."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ctxward.core.text import size_text
from ctxward.transcript.audit import Audit
from ctxward.transcript.measure import scrubbed_key

SUMMARY_LIMIT = 2048


_PALETTE = ("#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1")


_SYSTEM_COLOR = "#a0a9b4"


_OTHER_COLOR = "#d3cdc8"


def _group_name(group: Mapping[str, Any], width: int) -> str:
    key = str(group.get("key") or "")
    name = f"{group.get('tool')} {key}" if key else str(group.get("tool"))
    return scrubbed_key(name, width)


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
    """`Audit.as_dict()` with sizes for people, for templates/transcript/audit_report.txt.j2."""

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
    """Everything transcript/audit_report.html.j2 draws: stacked areas, markers, bars, tables.

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
