"""The debate protocol of seed 002 ("Consensus Debate" § Protocol Design), computed, not judged.

A debate is plain JSON (what `.ctxward/debates/<id>.json` holds):

    {"id", "topic", "layer", "slug", "participants": [{"name", "role"}],
     "budget": {"maxRounds", "maxTokensPerRound", "maxWallClockMs", "convergenceRounds"},
     "rounds": [{"number", "attacker": Turn, "defender": Turn | null, "at_ms"}],
     "verdict": null | {...}, "filed": null | {...}, ...}

    Turn = {"agent", "role", "position", "counter_to", "evidence_refs", "confidence_change",
            "tokens"?, "position_hash", "counter_hash"}

The verdict after each round, the first rule that holds (§ Verdict Semantics, § Convergence
Detection):

1. TIMEOUT — the round arrived after `maxWallClockMs` from the opening;
2. BUDGET_EXHAUSTED — a turn of the round used more than `maxTokensPerRound` tokens (its
   `tokens`, else an estimate: a token per 4 characters of position, counter and references);
3. CONSENSUS_REACHED — the attacker signals "no further objections": `confidence_change` 0 and
   an empty `counter_to`;
4. with N = `convergenceRounds`: when the defender's position hash has not changed for the last
   N rounds (N + 1 equal hashes in a row),
   - CONSENSUS_REACHED (convergence) if the attacker brought a new counter in each of those N
     rounds (a `counter_to` whose hash no earlier round had) and the position survived;
   - DEADLOCK if the attacker's position did not change either;
5. BUDGET_EXHAUSTED — `maxRounds` rounds were argued without a verdict.

`close` on a debate without a verdict gives TIMEOUT past the wall clock, else BUDGET_EXHAUSTED
("closed by the caller"). Hashes are sha256 of the text lowercased with punctuation and
whitespace runs reduced to single spaces, so a reworded comma is no position change.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from ctxward.errors import BadInput

CONSENSUS_REACHED = "CONSENSUS_REACHED"
DEADLOCK = "DEADLOCK"
BUDGET_EXHAUSTED = "BUDGET_EXHAUSTED"
TIMEOUT = "TIMEOUT"
VERDICTS = (CONSENSUS_REACHED, DEADLOCK, BUDGET_EXHAUSTED, TIMEOUT)

# § Verdict Semantics: what the harness does with each verdict.
ACTIONS = {
    CONSENSUS_REACHED: "File the winning consensus as the permanent alignment record, then "
    "proceed to the next layer.",
    DEADLOCK: "File both positions and the deadlock analysis. Escalate to a human.",
    BUDGET_EXHAUSTED: "File the last positions and the exhaustion analysis. Use the last agreed "
    "position if there is one; otherwise escalate.",
    TIMEOUT: "File the partial transcript. Escalate.",
}

# § Integration Points: the layers' budgets (L1 spec: 3 rounds, ~2K tokens/round; L2 plan: 3,
# ~3K; L4 verify: 4, ~2K). § ConsensusBudget: 120 s wall clock, convergenceRounds 1.
LAYER_BUDGETS = {
    "spec": {"maxRounds": 3, "maxTokensPerRound": 2000},
    "plan": {"maxRounds": 3, "maxTokensPerRound": 3000},
    "verify": {"maxRounds": 4, "maxTokensPerRound": 2000},
}
DEFAULT_BUDGET = {
    "maxRounds": 3,
    "maxTokensPerRound": 2000,
    "maxWallClockMs": 120_000,
    "convergenceRounds": 1,
}
BUDGET_LIMITS = {
    "maxRounds": (1, 50),
    "maxTokensPerRound": (1, 1_000_000),
    "maxWallClockMs": (1, 7 * 24 * 3600 * 1000),
    "convergenceRounds": (1, 10),
}
ROLES = ("attacker", "defender")
NAME_PATTERN = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
MAX_TEXT_CHARS = 20_000  # a position or a counter: "succinct" (the seed); far past any real one
MAX_REFS = 50
MAX_PARTICIPANTS = 16
CHARS_PER_TOKEN = 4

_WORDS = re.compile(r"\w+")


def position_hash(text: str) -> str:
    """sha256 of `text` lowercased, punctuation dropped, whitespace runs as one space."""
    normal = " ".join(_WORDS.findall(text.casefold()))
    return hashlib.sha256(normal.encode("utf-8")).hexdigest()


def budget_for(layer: str, given: object) -> dict[str, int]:
    """The layer's budget (LAYER_BUDGETS over DEFAULT_BUDGET) with `given`'s keys over it."""
    budget = {**DEFAULT_BUDGET, **LAYER_BUDGETS.get(layer, {})}
    if given is None:
        return budget
    if not isinstance(given, dict):
        raise BadInput(f"budget: expected an object, got {_kind(given)}")
    for key, value in given.items():
        if key not in BUDGET_LIMITS:
            raise BadInput(f"budget: unknown key {key!r} (known: {', '.join(BUDGET_LIMITS)})")
        low, high = BUDGET_LIMITS[key]
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise BadInput(f"budget.{key}: expected a whole number in {low}..{high}, got {value!r}")
        budget[key] = value
    return budget


def _kind(value: object) -> str:
    if value is None:
        return "null"
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}.get(
        type(value), "a number"
    )


def _text(data: dict[str, Any], key: str, where: str, *, required: bool = True) -> str:
    value = data.get(key, None if required else "")
    if value is None and not required:
        return ""
    if not isinstance(value, str):
        raise BadInput(f"{where}.{key}: expected a string, got {_kind(value)}")
    if required and not value.strip():
        raise BadInput(f"{where}.{key}: must not be empty")
    if len(value) > MAX_TEXT_CHARS:
        raise BadInput(f"{where}.{key}: {len(value):,} characters, more than {MAX_TEXT_CHARS:,}")
    return value.strip()


def name(value: object, where: str) -> str:
    if not isinstance(value, str) or not NAME_PATTERN.fullmatch(value) or ".." in value:
        raise BadInput(
            f"{where}: expected 1-64 characters of a-z 0-9 . _ - starting with a letter or "
            f"digit, got {value!r}"
        )
    return value


def parse_opening(data: object) -> dict[str, Any]:
    """The validated fields of `debate open`'s JSON: topic, layer, slug, participants, budget."""
    if not isinstance(data, dict):
        raise BadInput(f"debate: expected a JSON object, got {_kind(data)}")
    known = {"topic", "layer", "slug", "participants", "budget"}
    unknown = sorted(set(data) - known)
    if unknown:
        raise BadInput(f"debate: unknown key {unknown[0]!r} (known: {', '.join(sorted(known))})")
    topic = _text(data, "topic", "debate")
    layer = name(data.get("layer"), "debate.layer")
    slug = name(data.get("slug") or _slugify(topic), "debate.slug")
    participants = data.get("participants")
    if not isinstance(participants, list) or not 2 <= len(participants) <= MAX_PARTICIPANTS:
        raise BadInput(f"debate.participants: expected 2-{MAX_PARTICIPANTS} agents {{name, role}}")
    agents = []
    for index, agent in enumerate(participants):
        where = f"debate.participants[{index}]"
        if not isinstance(agent, dict):
            raise BadInput(f"{where}: expected an object {{name, role}}, got {_kind(agent)}")
        role = agent.get("role")
        if role not in ROLES:
            raise BadInput(f"{where}.role: expected 'attacker' or 'defender', got {role!r}")
        agents.append({"name": _text(agent, "name", where), "role": role})
    for role in ROLES:
        if not any(agent["role"] == role for agent in agents):
            raise BadInput(f"debate.participants: no {role}")
    return {
        "topic": topic,
        "layer": layer,
        "slug": slug,
        "participants": agents,
        "budget": budget_for(layer, data.get("budget")),
    }


def _slugify(topic: object) -> str:
    if not isinstance(topic, str):
        return ""
    return "-".join(_WORDS.findall(topic.casefold().replace("_", " ")))[:64].strip("-")


def parse_turn(data: object, role: str, where: str) -> dict[str, Any]:
    """One validated Turn (§ Round Structure), with its hashes."""
    if not isinstance(data, dict):
        raise BadInput(f"{where}: expected a Turn object, got {_kind(data)}")
    known = {"agent", "role", "position", "counter_to", "evidence_refs", "confidence_change"}
    unknown = sorted(set(data) - known - {"tokens"})
    if unknown:
        raise BadInput(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(sorted(known))})")
    if data.get("role", role) != role:
        raise BadInput(f"{where}.role: expected {role!r}, got {data.get('role')!r}")
    refs = data.get("evidence_refs", [])
    if not isinstance(refs, list) or len(refs) > MAX_REFS:
        raise BadInput(f"{where}.evidence_refs: expected an array of at most {MAX_REFS} strings")
    for index, ref in enumerate(refs):
        if not isinstance(ref, str) or len(ref) > 1000:
            raise BadInput(f"{where}.evidence_refs[{index}]: expected a string (≤ 1000 chars)")
    change = data.get("confidence_change", 0)
    if isinstance(change, bool) or change not in (-1, 0, 1):
        raise BadInput(f"{where}.confidence_change: expected -1, 0 or +1, got {change!r}")
    position = _text(data, "position", where)
    counter = _text(data, "counter_to", where, required=False)
    tokens = data.get("tokens")
    if tokens is not None and (isinstance(tokens, bool) or not isinstance(tokens, int)):
        raise BadInput(f"{where}.tokens: expected a whole number, got {tokens!r}")
    if tokens is None:
        text = position + counter + "".join(refs)
        tokens = -(-len(text) // CHARS_PER_TOKEN)
    return {
        "agent": _text(data, "agent", where),
        "role": role,
        "position": position,
        "counter_to": counter,
        "evidence_refs": [ref.strip() for ref in refs],
        "confidence_change": change,
        "tokens": max(tokens, 0),
        "position_hash": position_hash(position),
        "counter_hash": position_hash(counter) if counter else "",
    }


def parse_round(data: object, number: int) -> dict[str, Any]:
    """`debate round`'s JSON {attacker: Turn, defender: Turn | null} as round `number`."""
    where = f"round {number}"
    if not isinstance(data, dict):
        raise BadInput(f"{where}: expected {{attacker, defender}}, got {_kind(data)}")
    unknown = sorted(set(data) - {"attacker", "defender"})
    if unknown:
        raise BadInput(f"{where}: unknown key {unknown[0]!r} (known: attacker, defender)")
    attacker = parse_turn(data.get("attacker"), "attacker", f"{where}.attacker")
    defender = data.get("defender")
    return {
        "number": number,
        "attacker": attacker,
        "defender": None
        if defender is None
        else parse_turn(defender, "defender", f"{where}.defender"),
    }


# --- verdicts ---------------------------------------------------------------------------------


def decide(debate: dict[str, Any], now_ms: int) -> dict[str, Any] | None:
    """The verdict after the debate's last round, or None while it goes on (rules 1-5 above)."""
    rounds: list[dict[str, Any]] = debate["rounds"]
    budget = debate["budget"]
    last = rounds[-1]
    late = _timeout(debate, now_ms, f"round {last['number']} came")
    if late is not None:
        return late
    for turn in (last["attacker"], last["defender"]):
        if turn is not None and turn["tokens"] > budget["maxTokensPerRound"]:
            return _verdict(
                debate,
                BUDGET_EXHAUSTED,
                f"round {last['number']}: {turn['agent']} used "
                f"{turn['tokens']:,} tokens (maxTokensPerRound {budget['maxTokensPerRound']:,})",
            )
    attacker = last["attacker"]
    if attacker["confidence_change"] == 0 and not attacker["counter_to"]:
        return _verdict(
            debate,
            CONSENSUS_REACHED,
            f"round {last['number']}: the attacker raised no further "
            "objections (confidence_change 0, no counter)",
        )
    window = budget["convergenceRounds"]
    if len(rounds) > window:
        recent = rounds[-(window + 1) :]
        defenders = [r["defender"]["position_hash"] if r["defender"] else None for r in recent]
        if defenders[0] is not None and len(set(defenders)) == 1:
            earlier = {r["attacker"]["counter_hash"] for r in rounds[:-window]}
            fresh = True
            for r in recent[1:]:
                counter = r["attacker"]["counter_hash"]
                fresh = fresh and bool(counter) and counter not in earlier
                earlier.add(counter)
            if fresh:
                return _verdict(
                    debate,
                    CONSENSUS_REACHED,
                    f"the defender's position survived {window} "
                    f"round(s) of new counters unchanged (rounds {recent[1]['number']}-"
                    f"{last['number']})",
                )
            if len({r["attacker"]["position_hash"] for r in recent}) == 1:
                return _verdict(
                    debate,
                    DEADLOCK,
                    f"neither position changed for {window} round(s) "
                    f"(rounds {recent[0]['number']}-{last['number']})",
                )
    if len(rounds) >= budget["maxRounds"]:
        return _verdict(
            debate,
            BUDGET_EXHAUSTED,
            f"{len(rounds)} of maxRounds {budget['maxRounds']} rounds argued without convergence",
        )
    return None


def close_verdict(debate: dict[str, Any], now_ms: int) -> dict[str, Any]:
    """The verdict `close` gives a debate that has none yet."""
    budget = debate["budget"]
    late = _timeout(debate, now_ms, "closed")
    if late is not None:
        return late
    return _verdict(
        debate,
        BUDGET_EXHAUSTED,
        f"closed by the caller after {len(debate['rounds'])} of "
        f"{budget['maxRounds']} rounds, without convergence",
    )


def _timeout(debate: dict[str, Any], now_ms: int, what: str) -> dict[str, Any] | None:
    """TIMEOUT when `now_ms` is past the wall clock (§ ConsensusBudget maxWallClockMs)."""
    elapsed = now_ms - debate["opened_ms"]
    limit = debate["budget"]["maxWallClockMs"]
    if elapsed <= limit:
        return None
    reason = f"{what} {elapsed:,} ms after the opening (maxWallClockMs {limit:,})"
    return _verdict(debate, TIMEOUT, reason)


def _verdict(debate: dict[str, Any], verdict: str, reason: str) -> dict[str, Any]:
    rounds = debate["rounds"]
    attacker = next((r["attacker"]["position"] for r in reversed(rounds)), None)
    defender = next((r["defender"]["position"] for r in reversed(rounds) if r["defender"]), None)
    return {
        "verdict": verdict,
        "reason": reason,
        "round": rounds[-1]["number"] if rounds else 0,
        "action": ACTIONS[verdict],
        "escalate": verdict != CONSENSUS_REACHED
        and not (verdict == BUDGET_EXHAUSTED and agreed_position(rounds)),
        "final_position": defender if verdict == CONSENSUS_REACHED else None,
        "agreed_position": defender if verdict == CONSENSUS_REACHED else agreed_position(rounds),
        "positions": {"attacker": attacker, "defender": defender},
    }


def agreed_position(rounds: list[dict[str, Any]]) -> str | None:
    """The last defender position that survived a round unchanged (its hash equal to the one of
    the round before), or None: BUDGET_EXHAUSTED's "last agreed position, if any"."""
    for before, after in zip(reversed(rounds[:-1]), reversed(rounds[1:]), strict=True):
        if (
            before["defender"]
            and after["defender"]
            and before["defender"]["position_hash"] == after["defender"]["position_hash"]
        ):
            position: str = after["defender"]["position"]
            return position
    return None
