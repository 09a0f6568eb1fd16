"""What ctxward has already put before the model in this context segment: one file per session.

Every channel that reaches the model after a compaction stays in the session's context until
the next one: the summary, SessionStart(compact), each SessionStart(resume) (Claude Code keeps
its text in the transcript; Codex keeps every SessionStart developer message, so each resume
stacked one more full copy: 1, 2, 3 …), the next UserPromptSubmit, and, after a manual
`/compact` in Claude Code, PreCompact's own stdout (2.1.332 echoes it into the `/compact`
record the model reads: `PreCompact [<command>] completed successfully: <stdout>`). So a rule
needs saying once per segment. The ledger says which rules were said, by fingerprint
(`ctxward.core.fingerprint`), and which the summary kept:

- PreCompact starts a segment (`begin`): what came before is summarised away. After a manual
  compaction in Claude Code the rules its stdout showed are already said (`shown`).
- SubagentStop of the compaction agent (Claude Code: `agent_type` "", the summary as
  `last_assistant_message`, before SessionStart(compact)) records the rules the summary kept.
- SessionStart (compact, resume) and UserPromptSubmit inject only what is neither said nor
  kept, and record what they showed. A resume with nothing new injects nothing; a changed plan
  injects only its changed rules.

`.ctxward/injected/<session id>.json`: `{"session_id", "shown": [fp], "kept": [fp], "seal"}`,
sealed under this user's key (`invariants.trust.seal`): a file ctxward did not write here, for this
session (committed to the repository), counts as empty, so it can only cause a repetition, never
hide a rule. No session id, no ledger: every injection is made in full, as before.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterable
from pathlib import Path

from ctxward.core.project import Project
from ctxward.core.sessionfiles import safe_id

LEDGER_DIRNAME = "injected"
STALE_DAYS = 2  # a ledger no hook touched for this long belongs to a finished session


class Said:
    """A session's ledger as read: fingerprints shown and kept in the current segment, and what
    the latest SessionStart(resume) showed, with the transcript's size at that moment."""

    __slots__ = ("kept", "resumed", "resumed_at", "shown")

    def __init__(
        self,
        shown: Iterable[str] = (),
        kept: Iterable[str] = (),
        resumed: Iterable[str] = (),
        resumed_at: int = -1,
    ) -> None:
        self.shown = set(shown)
        self.kept = set(kept)
        self.resumed = set(resumed)
        self.resumed_at = resumed_at

    @property
    def known(self) -> set[str]:
        """What the model already has: said by ctxward, or carried by the summary."""
        return self.shown | self.kept


def path_of(project: Project, session_id: str) -> Path:
    """The session's ledger file (`safe_id` hashes an id that is not a plain name)."""
    return project.state_dir / LEDGER_DIRNAME / f"{safe_id(session_id)}.json"


def read(project: Project, session_id: str) -> Said:
    """The session's ledger; empty without a session id, or for a file ctxward did not seal."""
    if not session_id:
        return Said()
    from ctxward.core.fsutil import read_regular

    path = path_of(project, session_id)
    try:
        entry = json.loads(read_regular(path, limit=4 * 1024 * 1024).decode("utf-8"))
    except (OSError, ValueError, RecursionError):
        return Said()
    if not isinstance(entry, dict) or entry.get("session_id") != session_id:
        return Said()
    from ctxward.invariants.trust import is_sealed

    body = {key: value for key, value in entry.items() if key != "seal"}
    if not is_sealed(_sealed_bytes(body), entry.get("seal")):
        return Said()
    lists = [entry.get(key) for key in ("shown", "kept", "resumed")]
    at = entry.get("resumed_at")
    if not all(isinstance(v, list) for v in lists) or not isinstance(at, int):
        return Said()
    shown, kept, resumed = ([fp for fp in v if isinstance(fp, str)] for v in lists)  # type: ignore[union-attr]
    return Said(shown, kept, resumed, at)


def _sealed_bytes(body: dict[str, object]) -> bytes:
    return json.dumps(body, sort_keys=True, ensure_ascii=True).encode("ascii")


def _write(project: Project, session_id: str, said: Said) -> None:
    from ctxward.core.fsutil import atomic_write
    from ctxward.invariants.trust import seal

    body: dict[str, object] = {
        "session_id": session_id,
        "shown": sorted(said.shown),
        "kept": sorted(said.kept),
        "resumed": sorted(said.resumed),
        "resumed_at": said.resumed_at,
    }
    body["seal"] = seal(_sealed_bytes(body))
    path = path_of(project, session_id)
    atomic_write(path, json.dumps(body, indent=1) + "\n")


def _update(project: Project, session_id: str, change: Callable[[Said], None]) -> None:
    """Read, change and write the ledger under its lock; a failure costs only a repetition."""
    if not session_id:
        return
    from ctxward.core.fsutil import locked
    from ctxward.errors import CtxwardError

    path = path_of(project, session_id)
    with contextlib.suppress(OSError, CtxwardError), locked(path, project.locks_dir):
        said = read(project, session_id)
        change(said)
        _write(project, session_id, said)
        _remove_stale(project)


def begin(
    project: Project, session_id: str, shown: Iterable[str] = (), *, transcript: str = ""
) -> None:
    """A compaction starts a new segment; `shown`: what its own channel already shows.

    `transcript` (an auto compaction in Claude Code): when no model request was made since
    the latest SessionStart(resume), its text has not reached the model yet, and 2.1.332 puts
    it after the summary with the turn's prompt (seen in tests/e2e): it is carried into the new
    segment. A manual `/compact` drops it (seen too): no `transcript` then.
    """
    fresh = set(shown)

    def change(said: Said) -> None:
        carried = said.resumed if transcript and _unsent(transcript, said.resumed_at) else set()
        said.shown, said.kept = fresh | carried, set()
        said.resumed, said.resumed_at = set(), -1

    _update(project, session_id, change)


def record(
    project: Project, session_id: str, shown: Iterable[str], *, resumed_in: str | None = None
) -> None:
    """`shown` was just put before the model in this segment; `resumed_in`: by a
    SessionStart(resume), whose transcript is this path (see `begin`)."""
    new = set(shown)
    if not new and resumed_in is None:
        return

    def change(said: Said) -> None:
        said.shown.update(new)
        if resumed_in is not None:
            said.resumed, said.resumed_at = new, _size(resumed_in)

    _update(project, session_id, change)


def _size(path: str) -> int:
    import os

    try:
        return os.stat(path).st_size if path else -1
    except (OSError, ValueError):
        return -1


_TAIL = 8 * 1024 * 1024  # a turn's records since a resume: far less


def _unsent(transcript: str, since: int) -> bool:
    """Whether the transcript records no model request (an assistant record) after `since`."""
    if since < 0:
        return False
    try:
        with open(transcript, "rb") as handle:
            handle.seek(since)
            tail = handle.read(_TAIL + 1)
    except (OSError, ValueError):
        return False
    if len(tail) > _TAIL:
        return False
    for line in tail.splitlines():
        if b'"assistant"' not in line:
            continue
        try:
            if json.loads(line).get("type") == "assistant":
                return False
        except (ValueError, AttributeError, RecursionError):
            continue
    return True


def summary_kept(project: Project, session_id: str, kept: Iterable[str]) -> None:
    """The compaction summary of this segment carries `kept`."""
    found = set(kept)

    def change(said: Said) -> None:
        said.kept = set(found)

    _update(project, session_id, change)


def _remove_stale(project: Project) -> None:
    from ctxward.core.fsutil import prune_stale

    prune_stale(project.state_dir, project.state_dir / LEDGER_DIRNAME, STALE_DAYS * 86_400)
