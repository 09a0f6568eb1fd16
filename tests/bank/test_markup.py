"""The bank's Markdown reads back what it wrote: markers, table cells, whole files (Hypothesis)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctxward.bank import active, progress
from ctxward.bank.active import ActiveContext, Phase, Row
from ctxward.bank.markup import cell, escaped, parse_marker, phase_matches, split_row
from ctxward.core.render import environment

# one-line text: what marker values and cells hold (newlines are folded to spaces by design)
line_text = (
    st.text(st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")), min_size=1, max_size=40)
    .map(lambda s: " ".join(s.split()))
    .filter(bool)
)


@pytest.mark.slow  # a heavy variant: the slow stage (CI) runs it
@given(st.dictionaries(st.from_regex(r"[a-z][a-z-]{0,8}", fullmatch=True), line_text, max_size=5))
def test_a_marker_carries_any_value_back(attrs: dict[str, str]) -> None:
    macro = '{% from "bank/_marker.j2" import marker %}{{ marker("entry", attrs) }}'
    text = environment().from_string(macro).render(attrs=escaped(attrs))
    assert text.count("-->") == 1 and text.endswith(" -->")
    assert parse_marker(text) == ("entry", attrs)


@given(st.lists(line_text, min_size=1, max_size=5))
def test_a_table_row_carries_any_cells_back(values: list[str]) -> None:
    row = "| " + " | ".join(cell(v) for v in values) + " |"
    assert split_row(row) == values


@pytest.mark.slow  # a heavy variant: the slow stage (CI) runs it
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["1", "2", "2a", "10"]),
            st.from_regex(r"[a-z]{1,8}", fullmatch=True),
            st.sampled_from(["CRITICAL", "HIGH", "MEDIUM", "LOW"]),
            st.floats(0, 1).map(lambda f: round(f, 2)),
            st.lists(line_text, min_size=1, max_size=3),
        ),
        max_size=8,
        unique_by=lambda t: (t[0], t[1]),
    )
)
def test_completed_phases_round_trip(rows: list[tuple[str, str, str, float, list[str]]]) -> None:
    doc = ActiveContext()
    modes = {"CRITICAL": "expanded", "HIGH": "standard", "MEDIUM": "standard", "LOW": "aggressive"}
    for phase, agent, band, score, lines in rows:
        target = doc.phases.setdefault(phase, Phase(phase, 12, 0))
        target.rows.append(
            Row(f"2026-01-02|{phase}|{agent}", "h", band, score, modes[band], agent, lines=lines)
        )
    text = active.render(doc, 100)
    back = active.parse(text)
    assert active.render(back, 100) == text
    assert sorted(r.key for r in back.rows()) == sorted(r.key for r in doc.rows())
    assert {r.key: r.lines for r in back.rows()} == {r.key: r.lines for r in doc.rows()}


@given(st.lists(line_text, max_size=6))
def test_the_progress_log_keeps_hand_written_text(notes: list[str]) -> None:
    notes = [n.lstrip("#<").strip() for n in notes if n.lstrip("#<").strip()]
    text = "# Progress Log\n\n" + "".join(f"{n}\n" for n in notes)
    text += "\n### 2026-01-02 — Phase 1: hermes\nby hand\n"
    log = progress.parse(text)
    if notes:  # (without notes, the blank lines under the title are folded to one)
        assert progress.render(log) == text
    section = log.section("2026-01-02", "1", "Hermes")
    assert section.put(progress.Item("summary", "h1", ["- added"]))
    assert not section.put(progress.Item("summary", "h1", ["- added"]))
    assert progress.render(log).count("### 2026-01-02 — Phase 1: hermes") == 1


def test_phase_gates() -> None:
    assert phase_matches("2", "2") and phase_matches("2", "2a") and phase_matches("2", "2b")
    assert not phase_matches("2", "20") and not phase_matches("2", "3")
    assert phase_matches("*", "anything")


def test_values_that_look_like_the_rule_come_back() -> None:
    """`:` and `-` are values, not the `|---|` rule (found by Hypothesis); `—` is not empty."""
    for values in ([":"], ["-"], ["--", ":-:"], ["—"], ["-", "a"], ["", "x"]):
        row = "| " + " | ".join(cell(v) for v in values) + " |"
        assert split_row(row) == values
    assert split_row("| --- | :-: |") is None
