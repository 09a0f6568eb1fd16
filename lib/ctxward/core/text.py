"""Small text helpers every floor shares: flatten, cut, estimate tokens, show a byte count.

- `one_line(text)`: every run of whitespace (newlines included) made one space, ends stripped.
- `cut(text, limit)`: `text` if it fits, else its first `limit - 1` characters and "…" (the
  result is never longer than `limit`); `strip=True` drops the space before the "…".
- `cut_at_word(text, limit)`: `one_line(text)` cut at the last word in its second half, with
  trailing punctuation dropped before the "…" (summaries that must read as prose).
- `estimate_tokens(text)` / `tokens_of_size(size)`: the project's token estimate,
  ceil(UTF-8 bytes / 4).
- `size_text(size)` / `size_text_compact(size)`: a byte count for people. Two spellings, both
  shipped: `size_text` ("512 B", "41.2 KB", "1.3 MB") in reports and audits, and
  `size_text_compact` ("512B", "12KB", "1.3MB": whole kilobytes, no space) in the sub-agent
  reducer view, whose format the seed fixes.
"""

from __future__ import annotations

ELLIPSIS = "…"
_KB = 1024
_MB = 1024 * 1024


def one_line(text: str) -> str:
    """`text` on one line: each run of whitespace becomes one space, the ends are stripped."""
    return " ".join(text.split())


def cut(text: str, limit: int, *, strip: bool = False) -> str:
    """`text` if it has at most `limit` characters, else its first `limit - 1` and "…"."""
    if len(text) <= limit:
        return text
    head = text[: limit - 1]
    return (head.rstrip() if strip else head) + ELLIPSIS


def cut_at_word(text: str, limit: int) -> str:
    """`one_line(text)` in at most `limit` characters, cut between words when one ends in the
    second half (else mid-word), trailing ` ,;:-` dropped before the "…"."""
    text = one_line(text)
    if len(text) <= limit:
        return text
    head = text[: limit - 1]
    if " " in head[limit // 2 :]:
        head = head[: head.rfind(" ")]
    return head.rstrip(" ,;:-") + ELLIPSIS


def tokens_of_size(size: int) -> int:
    """The token estimate of `size` bytes: ceil(size / 4)."""
    return -(-size // 4)


def estimate_tokens(text: str) -> int:
    """The token estimate of `text`: ceil(UTF-8 bytes / 4)."""
    return tokens_of_size(len(text.encode("utf-8")))


def size_text(size: int) -> str:
    """A byte count for people: 512 B, 41.2 KB, 1.3 MB."""
    return _spelled(size, " ", f"{size / _KB:.1f}")


def size_text_compact(size: int) -> str:
    """The reducer view's spelling: 512B, 12KB (whole kilobytes, at least 1), 1.3MB."""
    return _spelled(size, "", str(max(round(size / _KB), 1)))


def _spelled(size: int, gap: str, kilobytes: str) -> str:
    if size < _KB:
        return f"{size}{gap}B"
    if size < _MB:
        return f"{kilobytes}{gap}KB"
    return f"{size / _MB:.1f}{gap}MB"
