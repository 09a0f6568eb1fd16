"""A session id names its files as it is when it is file-safe, else by a digest of it."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxward.core.sessionfiles import safe_id

SAFE = re.compile(r"[A-Za-z0-9_-]{1,128}")
IDS = st.text(max_size=140) | st.text(
    alphabet="AZaz09_-.é/ \n", min_size=120, max_size=135
)  # near the length limit, with a few unsafe characters


@settings(max_examples=200)
@given(IDS)
def test_an_id_is_kept_exactly_when_it_is_file_safe(session_id):
    kept = safe_id(session_id) == session_id
    assert kept == bool(SAFE.fullmatch(session_id))
    if not kept:
        assert re.fullmatch(r"id-[0-9a-f]{16}", safe_id(session_id))


def test_the_edges():
    assert safe_id("a" * 128) == "a" * 128
    assert safe_id("a" * 129).startswith("id-")
    assert safe_id("").startswith("id-")
    assert safe_id("ab\n").startswith("id-")  # `$` would have let a newline through; fullmatch not
