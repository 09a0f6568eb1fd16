#!/usr/bin/env python3
"""Draw the plugin icon, .claude-plugin/icon.png: a shield over three lines of context.

Standard library only (zlib PNG writing), and deterministic: tests/test_packaging.py checks that
the committed file is what this script draws. Run it again after changing the drawing:

    python3 scripts/make_icon.py
"""

from __future__ import annotations

import math
import struct
import sys
import zlib
from collections.abc import Callable
from pathlib import Path

SIZE = 512  # Claude Code's plugin directory asks for a square PNG of 512 to 2048 px
ICON = Path(__file__).resolve().parent.parent / ".claude-plugin" / "icon.png"

Colour = tuple[int, int, int]
# One shape, one row: the horizontal spans (x0, x1) it covers at the row's centre line.
Spans = Callable[[float], list[tuple[float, float]]]

SLATE: Colour = (0x1D, 0x2B, 0x3A)
TEAL: Colour = (0x2B, 0xB5, 0xA0)
PAPER: Colour = (0xF4, 0xF1, 0xE8)


def rounded_rect(x0: float, y0: float, x1: float, y1: float, radius: float) -> Spans:
    def spans(y: float) -> list[tuple[float, float]]:
        if not y0 <= y <= y1:
            return []
        dy = max(y0 + radius - y, y - (y1 - radius), 0.0)
        inset = radius - math.sqrt(max(radius * radius - dy * dy, 0.0))
        return [(x0 + inset, x1 - inset)]

    return spans


def shield(centre: float, top: float, shoulder: float, tip: float, half: float) -> Spans:
    """Straight sides from `top` to `shoulder`, then a curve closing to a point at `tip`."""

    def spans(y: float) -> list[tuple[float, float]]:
        if not top <= y <= tip:
            return []
        t = max(y - shoulder, 0.0) / (tip - shoulder)
        width = half * (1.0 - t * t)
        return [(centre - width, centre + width)]

    return spans


def blend(under: tuple[int, int, int, int], colour: Colour, cover: float) -> tuple[int, ...]:
    if under[3] == 0:
        return (*colour, round(255 * cover))
    mixed = (round(c * cover + u * (1.0 - cover)) for c, u in zip(colour, under[:3], strict=True))
    return (*mixed, round(255 * cover + under[3] * (1.0 - cover)))


def paint(row: list[tuple[int, ...]], x0: float, x1: float, colour: Colour) -> None:
    """Fill [x0, x1) on one row; the two end pixels get their covered fraction (anti-aliasing)."""
    x0, x1 = max(x0, 0.0), min(x1, float(SIZE))
    if x1 <= x0:
        return
    first, last = int(x0), min(math.ceil(x1) - 1, SIZE - 1)
    if first == last:
        row[first] = blend(row[first], colour, x1 - x0)  # type: ignore[arg-type]
        return
    row[first] = blend(row[first], colour, first + 1 - x0)  # type: ignore[arg-type]
    row[first + 1 : last] = [(*colour, 255)] * (last - first - 1)
    row[last] = blend(row[last], colour, x1 - last)  # type: ignore[arg-type]


def layers() -> list[tuple[Spans, Colour]]:
    bar = 24.0
    lines = [(160.0, 144.0), (212.0, 112.0), (264.0, 80.0)]  # (top, length), centred
    return [
        (rounded_rect(0, 0, SIZE, SIZE, 96), SLATE),
        (shield(256, 104, 272, 424, 120), TEAL),
        *(
            (rounded_rect(256 - length / 2, top, 256 + length / 2, top + bar, bar / 2), PAPER)
            for top, length in lines
        ),
    ]


def render() -> bytes:
    """The icon as PNG bytes (RGBA, SIZE x SIZE)."""
    shapes = layers()
    raw = bytearray()
    for y in range(SIZE):
        row: list[tuple[int, ...]] = [(0, 0, 0, 0)] * SIZE
        for spans, colour in shapes:
            for x0, x1 in spans(y + 0.5):
                paint(row, x0, x1, colour)
        raw.append(0)  # PNG filter type 0 (none) for this row
        raw.extend(bytes(channel for pixel in row for channel in pixel))

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", SIZE, SIZE, 8, 6, 0, 0, 0)  # 8-bit RGBA, no interlace
    return b"".join(
        [
            b"\x89PNG\r\n\x1a\n",
            chunk(b"IHDR", header),
            chunk(b"IDAT", zlib.compress(bytes(raw), 9)),
            chunk(b"IEND", b""),
        ]
    )


def main() -> int:
    ICON.write_bytes(render())
    print(f"wrote {ICON} ({ICON.stat().st_size} bytes, {SIZE}x{SIZE})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
