"""The state machine: a window of recent calls, and which signature just started to hold."""

from __future__ import annotations

from ctxward.core.drift_settings import SIGNATURES, default_limits, window_size
from ctxward.drift.signatures import (
    ARGS,
    FILE,
    ID,
    KIND,
    MAX_PENDING,
    OK,
    RECENT_IDS,
    STATE_VERSION,
    TOOL,
)

# `typing.TYPE_CHECKING` without importing typing: this module is on the PostToolUse hot path.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any


class Tracker:
    """The bounded window and counters of one session; `observe` says what started to hold.

    Pure: no I/O. The hook path loads it from the state file, the transcript analysis and the
    tests drive it directly. Per call the work is bounded by the window size, never by the
    length of the session.
    """

    __slots__ = (
        "active",
        "context",
        "fails",
        "ids",
        "limits",
        "n",
        "pending",
        "quiet",
        "searches",
        "window",
    )

    def __init__(self, limits: Mapping[str, Any] | None = None) -> None:
        self.limits: Mapping[str, Any] = limits if limits is not None else default_limits()
        self.n = 0  # calls observed in the session
        self.window: list[list[Any]] = []  # the latest calls, oldest first
        self.fails = 0  # consecutive failed calls
        self.searches = 0  # searches since the last successful edit
        self.quiet: int | None = None  # calls since the last text; None: host shows no text
        self.active: list[str] = []  # signatures that hold now (reported when they started)
        self.pending: list[dict[str, Any]] = []  # reported here, not yet told to the model
        self.ids: list[str] = []  # ids of the latest calls (a call observed twice is skipped)
        # ctxward.drift.context's state: the transcript offset, tools told, stages told.
        self.context: dict[str, Any] = {}

    def observe(self, call: Sequence[Any], quiet: int | None = None) -> list[dict[str, Any]]:
        """Add one call; return the signatures that started to hold with it (with evidence).

        `quiet`: calls since the model's last text, when the host counts them itself.
        """
        self.n += 1
        self.window.append(list(call))
        del self.window[: max(0, len(self.window) - window_size(self.limits))]
        self.fails = 0 if call[OK] else self.fails + 1
        if call[KIND] == "write" and call[OK]:
            self.searches = 0
        elif call[KIND] == "search":
            self.searches += 1
        if quiet is not None:
            self.quiet = quiet
        elif self.quiet is not None:
            self.quiet += 1
        if call[ID]:
            self.ids.append(str(call[ID]))
            del self.ids[: max(0, len(self.ids) - RECENT_IDS)]
        holding = self.holding()
        started = [
            {"signature": name, "n": self.n, "evidence": holding[name]}
            for name in SIGNATURES
            if name in holding and name not in self.active
        ]
        self.active = [name for name in SIGNATURES if name in holding]
        return started

    def text(self) -> None:
        """The model wrote text to the user: silence stops holding."""
        self.quiet = 0
        self.active = [name for name in self.active if name != "silence"]

    def seen(self, call_id: str) -> bool:
        return bool(call_id) and call_id in self.ids

    def holding(self) -> dict[str, dict[str, Any]]:
        """Every signature that holds on the current window, with its evidence."""
        limits = self.limits
        found: dict[str, dict[str, Any]] = {}
        if not limits["enabled"]:
            return found
        on = {name for name in SIGNATURES if limits[name]["enabled"]}
        window = self.window
        if "repetition" in on:
            evidence = self._repetition(limits["repetition"])
            if evidence is not None:
                found["repetition"] = evidence
        if "failure_spiral" in on and self.fails >= limits["failure_spiral"]["count"]:
            failed = window[-min(self.fails, len(window)) :]
            found["failure_spiral"] = {"count": self.fails, "tools": _tally(failed, TOOL)}
        if "tool_cycling" in on:  # seed 002: A-B-A-B-A-B, A and B tools (their targets aside)
            calls = limits["tool_cycling"]["calls"]
            keys = [call[TOOL] for call in window[-calls:]]
            a, b = (keys[0], keys[1]) if len(keys) == calls else ("", "")
            if a != b and keys[0::2].count(a) + keys[1::2].count(b) == calls:
                found["tool_cycling"] = {"a": a, "b": b, "calls": calls}
        if "rework_churn" in on:
            evidence = self._churn(limits["rework_churn"])
            if evidence is not None:
                found["rework_churn"] = evidence
        if "excessive_searching" in on and (
            self.searches >= limits["excessive_searching"]["searches"]
        ):
            recent = [c for c in window if c[KIND] == "search"][-self.searches :]
            found["excessive_searching"] = {
                "searches": self.searches,
                "tools": _tally(recent, TOOL),
            }
        if "silence" in on and self.quiet is not None and self.quiet >= limits["silence"]["calls"]:
            found["silence"] = {"calls": self.quiet}
        return found

    def _repetition(self, limits: Mapping[str, Any]) -> dict[str, Any] | None:
        recent = self.window[-limits["window"] :]
        counts: dict[tuple[str, str], int] = {}
        for call in recent:
            counts[(call[TOOL], call[ARGS])] = counts.get((call[TOOL], call[ARGS]), 0) + 1
        if not counts:
            return None
        last = recent[-1]
        best = max(counts, key=lambda k: (counts[k], k == (last[TOOL], last[ARGS])))
        if counts[best] < limits["count"]:
            return None
        latest = next(c for c in reversed(recent) if (c[TOOL], c[ARGS]) == best)
        evidence: dict[str, Any] = {
            "tool": best[0],
            "args": best[1],
            "count": counts[best],
            "window": len(recent),
            "id": latest[ID],
        }
        if latest[FILE]:
            evidence["file"] = latest[FILE]
        return evidence

    def _churn(self, limits: Mapping[str, Any]) -> dict[str, Any] | None:
        recent = self.window[-limits["window"] :]
        writes: dict[str, int] = {}
        for call in recent:
            if call[KIND] == "write" and call[OK] and call[FILE]:
                writes[call[FILE]] = writes.get(call[FILE], 0) + 1
        if not writes:
            return None
        target = max(writes, key=lambda f: writes[f])
        if writes[target] < limits["writes"]:
            return None
        return {"file": target, "writes": writes[target], "window": len(recent)}

    # --- persistence --------------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        return {
            "v": STATE_VERSION,
            "n": self.n,
            "window": self.window,
            "fails": self.fails,
            "searches": self.searches,
            "quiet": self.quiet,
            "active": self.active,
            "pending": self.pending,
            "ids": self.ids,
            "context": self.context,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any], limits: Mapping[str, Any]) -> Tracker:
        """The tracker saved by `to_json`; ValueError when `data` is not one."""
        if data.get("v") != STATE_VERSION:
            raise ValueError("not a drift state of this version")
        tracker = cls(limits)
        try:
            tracker.n = _count(data["n"])
            tracker.window = [_call(item) for item in data["window"]]
            tracker.fails = _count(data["fails"])
            tracker.searches = _count(data["searches"])
            quiet = data["quiet"]
            tracker.quiet = None if quiet is None else _count(quiet)
            tracker.active = [str(name) for name in data["active"] if name in SIGNATURES]
            tracker.pending = [dict(item) for item in data["pending"]][-MAX_PENDING:]
            tracker.ids = [str(item) for item in data["ids"]][-RECENT_IDS:]
            tracker.context = _context_state(data.get("context"))
        except (KeyError, TypeError) as exc:
            raise ValueError(f"drift state is malformed: {exc}") from None
        del tracker.window[: max(0, len(tracker.window) - window_size(limits))]
        return tracker


def _context_state(value: object) -> dict[str, Any]:
    """The saved `ctxward.drift.context` state, its parts checked (absent before issue 21)."""
    state: dict[str, Any] = {}
    if not isinstance(value, dict):
        return state
    tail = value.get("tail")
    if isinstance(tail, list) and len(tail) == 2 and all(_is_count(n) for n in tail):
        state["tail"] = list(tail)
    told = value.get("told")
    if isinstance(told, list):
        state["told"] = [str(tool) for tool in told if isinstance(tool, str)][-64:]
    stages = value.get("stages")
    if isinstance(stages, list):
        state["stages"] = [n for n in stages if _is_count(n)][-10:]
    if _is_count(value.get("tokens")):
        state["tokens"] = value["tokens"]
    return state


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _count(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"expected a count, got {value!r}")
    return value


def _call(item: object) -> list[Any]:
    if not isinstance(item, list) or len(item) != 7:
        raise ValueError("a window entry is not a 7-item list")
    return item


def _tally(calls: Sequence[Sequence[Any]], field: int) -> dict[str, int]:
    counts: dict[str, int] = {}
    for call in calls:
        counts[call[field]] = counts.get(call[field], 0) + 1
    return counts
