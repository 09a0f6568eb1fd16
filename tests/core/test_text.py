"""core.text: one line, cut with an ellipsis, the token estimate, byte counts for people."""

from __future__ import annotations

import pytest

from ctxward.core.text import (
    cut,
    cut_at_word,
    estimate_tokens,
    one_line,
    size_text,
    size_text_compact,
    tokens_of_size,
)


def test_one_line_folds_every_run_of_whitespace():
    assert one_line("  a\n\tb   c \r\n") == "a b c"
    assert one_line("") == ""


def test_cut_keeps_text_that_fits_and_ends_a_longer_one_with_an_ellipsis():
    assert cut("abcdef", 6) == "abcdef"
    assert cut("abcdefg", 6) == "abcde…"
    assert len(cut("x" * 500, 200)) == 200
    assert cut("abcd efgh", 6) == "abcd …"
    assert cut("abcd efgh", 6, strip=True) == "abcd…"


def test_cut_at_word_cuts_between_words_in_the_second_half():
    assert cut_at_word("one  two\nthree", 40) == "one two three"
    assert cut_at_word("alpha beta gamma delta", 15) == "alpha beta…"
    assert cut_at_word("alpha beta, gamma", 14) == "alpha beta…"  # the comma goes too
    assert cut_at_word("abcdefghijklmnop", 8) == "abcdefg…"  # no space late enough: mid-word


@pytest.mark.parametrize(
    ("text", "tokens"), [("", 0), ("abc", 1), ("abcd", 1), ("abcde", 2), ("é" * 2, 1), ("€", 1)]
)
def test_estimate_tokens_is_utf8_bytes_over_four_rounded_up(text, tokens):
    assert estimate_tokens(text) == tokens
    assert tokens_of_size(len(text.encode("utf-8"))) == tokens


@pytest.mark.parametrize(
    ("size", "spaced", "compact"),
    [
        (0, "0 B", "0B"),
        (512, "512 B", "512B"),
        (1024, "1.0 KB", "1KB"),
        (12 * 1024 + 300, "12.3 KB", "12KB"),
        (1024 * 1024 - 1, "1024.0 KB", "1024KB"),
        (int(1.3 * 1024 * 1024), "1.3 MB", "1.3MB"),
    ],
)
def test_the_two_spellings_of_a_byte_count(size, spaced, compact):
    assert size_text(size) == spaced
    assert size_text_compact(size) == compact
