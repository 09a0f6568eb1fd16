"""What a compaction summary carries: its text without `<analysis>`, and which rules survived."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ctxward.invariants.model import RuleRef

_SUMMARY_BLOCK = re.compile(r"<summary>(.*?)(?:</summary>|\Z)", re.DOTALL)


def summary_text(compact_summary: str) -> str:
    """The part of a compaction reply the model keeps: the <summary> block when there is one.

    Claude Code strips the <analysis> block before handing the summary to the model (with or
    without a <summary> block), so a rule that survives only in the analysis did not survive.
    """
    kept = _without_analysis(compact_summary)
    blocks = _SUMMARY_BLOCK.findall(kept)
    return "\n".join(blocks) if blocks else kept


def _without_analysis(text: str) -> str:
    """`re.sub(r"<analysis>.*?</analysis>", "", text, flags=re.DOTALL)` in linear time: that
    regex scans to the end of the text from every unclosed `<analysis>` (100 KB of them: 9 s)."""
    kept = []
    cursor = 0
    while (start := text.find("<analysis>", cursor)) >= 0:
        end = text.find("</analysis>", start + len("<analysis>"))
        if end < 0:
            break  # no later tag is closed either
        kept.append(text[cursor:start])
        cursor = end + len("</analysis>")
    kept.append(text[cursor:])
    return "".join(kept)


def analysis_text(compact_summary: str) -> str:
    """The `<analysis>` blocks of a compaction reply (what the model never sees)."""
    blocks = []
    cursor = 0
    while (start := compact_summary.find("<analysis>", cursor)) >= 0:
        end = compact_summary.find("</analysis>", start + len("<analysis>"))
        if end < 0:
            break
        blocks.append(compact_summary[start + len("<analysis>") : end])
        cursor = end + len("</analysis>")
    return "\n".join(blocks)


def check_survival(
    rules: Sequence[RuleRef], compact_summary: str
) -> tuple[list[RuleRef], list[RuleRef]]:
    """Split `rules` into those the summary kept and those it altered or lost
    (`ctxward.invariants.verdicts.grade`, which says why)."""
    from ctxward.invariants.verdicts import KEPT, grade

    verdicts = grade(rules, compact_summary)
    survived = [v.ref for v in verdicts if v.verdict == KEPT]
    missing = [v.ref for v in verdicts if v.verdict != KEPT]
    return survived, missing
