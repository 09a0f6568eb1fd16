"""Which entry an entry is (issue 16): its own identity, never only (date, phase, agent).

Seed 000 §17 keys an entry by (date, phase, agent) and overwrites on a new hash; one agent that
finishes three subtasks in one phase on one day would then keep only the last. Here an entry is
the same entry only when its own identity says so:

- an explicit id (`id`, `subtask_id`, `task_id`) → `id:<id>`;
- else an explicit subtask title (`subtask`, `title`, `task`) → `t:<title>` (case and spacing
  folded);
- else its content: `h:<content hash>` (seed 000 §17's hash) — a different text is another
  entry, the same text the same entry.

Only an entry with an explicit id or title can be *updated* (same identity, new hash); the
previous version is then archived, never dropped. The key of an entry is
`date|phase|agent|identity`; the agent keeps its case for display and is compared
case-insensitively only when the name is a known agent (the scoring tables' agents, e.g.
"Hermes" and "hermes"); two spellings of an unknown name are two agents.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from typing import Any

ID_FIELDS = ("id", "subtask_id", "task_id")
TITLE_FIELDS = ("subtask", "title", "task")
_SPACE = re.compile(r"\s+")


def _text(value: Any) -> str:
    from ctxward.compress.scoring import text_of

    return text_of(value)


def explicit(fields: Mapping[str, Any]) -> tuple[str, str] | None:
    """("id" | "title", value) when the entry names itself, else None."""
    for kind, names in (("id", ID_FIELDS), ("title", TITLE_FIELDS)):
        for name in names:
            value = _SPACE.sub(" ", _text(fields.get(name))).strip()
            if value:
                return kind, value
    return None


def of(fields: Mapping[str, Any], digest: str) -> str:
    """The identity of an entry with these fields and content hash `digest`."""
    found = explicit(fields)
    if found is None:
        return f"h:{digest}"
    kind, value = found
    folded = value.casefold().replace("|", "/")
    return f"id:{folded}" if kind == "id" else f"t:{folded}"


def is_explicit(identity: str) -> bool:
    """Whether an identity comes from the entry's own id or title (it can be updated)."""
    return identity.startswith(("id:", "t:"))


def agent_key(agent: str, known: Collection[str] = ()) -> str:
    """How an agent name compares: case-folded when it is a known agent, else as written."""
    name = agent.strip()
    return name.casefold() if name.casefold() in known else name


def key(date: str, phase: str, agent: str, identity: str) -> str:
    return f"{date}|{phase}|{agent}|{identity}"


def split(value: str) -> tuple[str, str, str, str]:
    """(date, phase, agent, identity) of a key; a key written before issue 16 has no identity."""
    parts = value.split("|", 3)
    parts += [""] * (4 - len(parts))
    return parts[0], parts[1], parts[2], parts[3]


def known_agents(tables: Any) -> frozenset[str]:
    """The agents the scoring tables name (relevance rows and columns), case-folded."""
    names: set[str] = set()
    for sender, row in getattr(tables, "relevance", {}).items():
        names.add(str(sender).casefold())
        names.update(str(receiver).casefold() for receiver in row)
    names.discard("*")
    return frozenset(names)
