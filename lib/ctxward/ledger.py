"""What ctxward has already put before the model in this context segment: one file per session.

Every channel that reaches the model after a compaction stays in the session's context until
the next one: the summary, SessionStart(compact), each SessionStart(resume) (Claude Code keeps
its text in the transcript; Codex keeps every SessionStart developer message, so each resume
stacked one more full copy: 1, 2, 3 …), the next UserPromptSubmit, and, after a manual
`/compact` in Claude Code, PreCompact's own stdout (2.1.332 echoes it into the `/compact`
record the model reads: `PreCompact [<command>] completed successfully: <stdout>`). So a rule
needs saying once per segment. The ledger says which rules were said, by fingerprint
(`ctxward.fingerprint`), and which the summary kept:

- PreCompact starts a segment (`begin`): what came before is summarised away. After a manual
  compaction in Claude Code the rules its stdout showed are already said (`shown`).
- SubagentStop of the compaction agent (Claude Code: `agent_type` "", the summary as
  `last_assistant_message`, before SessionStart(compact)) records the rules the summary kept.
- SessionStart (compact, resume) and UserPromptSubmit inject only what is neither said nor
  kept, and record what they showed. A resume with nothing new injects nothing; a changed plan
  injects only its changed rules.

`.ctxward/injected/<session id>.json`: `{"session_id", "shown": [fp], "kept": [fp], "seal"}`,
sealed under this user's key (`ctxward.trust.seal`): a file ctxward did not write here, for this
session (committed to the repository), counts as empty, so it can only cause a repetition, never
hide a rule. No session id, no ledger: every injection is made in full, as before.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterable

from ctxward.project import Project
from ctxward.sessionfiles import safe_id

LEDGER_DIRNAME = "injected"
STALE_DAYS = 2  # a ledger no hook touched for this long belongs to a finished session


class Said:
    """A session's ledger as read: fingerprints shown and kept in the current segment."""

    __slots__ = ("kept", "shown")

    def __init__(self, shown: Iterable[str] = (), kept: Iterable[str] = ()) -> None:
        self.shown = set(shown)
        self.kept = set(kept)

    @property
    def known(self) -> set[str]:
        """What the model already has: said by ctxward, or carried by the summary."""
        return self.shown | self.kept


def read(project: Project, session_id: str) -> Said:
    """The session's ledger; empty without a session id, or for a file ctxward did not seal."""
    if not session_id:
        return Said()
    from ctxward.fsutil import read_regular

    path = project.state_dir / LEDGER_DIRNAME / f"{safe_id(session_id)}.json"
    try:
        entry = json.loads(read_regular(path, limit=4 * 1024 * 1024).decode("utf-8"))
    except (OSError, ValueError, RecursionError):
        return Said()
    if not isinstance(entry, dict) or entry.get("session_id") != session_id:
        return Said()
    from ctxward.trust import is_sealed

    body = {key: value for key, value in entry.items() if key != "seal"}
    if not is_sealed(_sealed_bytes(body), entry.get("seal")):
        return Said()
    shown, kept = entry.get("shown"), entry.get("kept")
    if not (isinstance(shown, list) and isinstance(kept, list)):
        return Said()
    return Said(
        (fp for fp in shown if isinstance(fp, str)), (fp for fp in kept if isinstance(fp, str))
    )


def _sealed_bytes(body: dict[str, object]) -> bytes:
    return json.dumps(body, sort_keys=True, ensure_ascii=True).encode("ascii")


def _write(project: Project, session_id: str, said: Said) -> None:
    from ctxward.fsutil import atomic_write
    from ctxward.trust import seal

    body: dict[str, object] = {
        "session_id": session_id,
        "shown": sorted(said.shown),
        "kept": sorted(said.kept),
    }
    body["seal"] = seal(_sealed_bytes(body))
    path = project.state_dir / LEDGER_DIRNAME / f"{safe_id(session_id)}.json"
    atomic_write(path, json.dumps(body, indent=1) + "\n")


def _update(project: Project, session_id: str, change: Callable[[Said], None]) -> None:
    """Read, change and write the ledger under its lock; a failure costs only a repetition."""
    if not session_id:
        return
    from ctxward.errors import CtxwardError
    from ctxward.fsutil import locked

    path = project.state_dir / LEDGER_DIRNAME / f"{safe_id(session_id)}.json"
    with contextlib.suppress(OSError, CtxwardError), locked(path, project.locks_dir):
        said = read(project, session_id)
        change(said)
        _write(project, session_id, said)
        _remove_stale(project)


def begin(project: Project, session_id: str, shown: Iterable[str] = ()) -> None:
    """A compaction starts a new segment; `shown`: what its own channel already shows."""
    fresh = set(shown)

    def change(said: Said) -> None:
        said.shown, said.kept = set(fresh), set()

    _update(project, session_id, change)


def record(project: Project, session_id: str, shown: Iterable[str]) -> None:
    """`shown` was just put before the model in this segment."""
    new = set(shown)
    if new:
        _update(project, session_id, lambda said: said.shown.update(new))


def summary_kept(project: Project, session_id: str, kept: Iterable[str]) -> None:
    """The compaction summary of this segment carries `kept`."""
    found = set(kept)

    def change(said: Said) -> None:
        said.kept = set(found)

    _update(project, session_id, change)


def _remove_stale(project: Project) -> None:
    import time

    cutoff = time.time() - STALE_DAYS * 86_400
    with contextlib.suppress(OSError):
        for candidate in (project.state_dir / LEDGER_DIRNAME).iterdir():
            with contextlib.suppress(OSError):
                if candidate.stat().st_mtime < cutoff:
                    candidate.unlink()
