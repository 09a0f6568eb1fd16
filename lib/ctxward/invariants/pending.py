"""Invariants a compaction summary lost, waiting for the next prompt: one file per session.

PostCompact knows which active rules the summary dropped (the survival report), but its output
reaches nobody. It leaves the re-injection here, rendered and scrubbed, at
`.ctxward/pending/<session id>.json`; the next UserPromptSubmit of that session hands the text
to the model once (`take`) and the file is gone.

The UserPromptSubmit side runs on every prompt, so it is standard library only and costs one
`stat` of a path derived from the session id (`pending_path`) when nothing is pending. An id that
is unsafe as a file name (a slash, `..`, a NUL, too long) is replaced by a hash of it, the same
scheme as the survival reports (`ctxward.invariants.survival.report_name`).

The file: `{"session_id", "report", "rules": [{"slug", "skill", "rule"}], "context", "seal"}`,
where `context` is the additionalContext to inject, already within the injection limit, and
`seal` the HMAC of the rest under this user's key (`invariants.trust.seal`). A repository can commit
`.ctxward/pending/<id>.json` (a host that sends no session id makes the name predictable): an
entry ctxward did not seal here, for this session, is removed and reported, never injected.
Only trusted plans' rules are ever left here (events/post_compact.py).
"""

from __future__ import annotations

import contextlib
import os

from ctxward.core import hotjson
from ctxward.core.sessionfiles import safe_id
from ctxward.errors import CtxwardError

# `typing.TYPE_CHECKING` without importing typing: UserPromptSubmit imports this on every prompt
# (so do pathlib, hashlib and secrets cost more than the rest of a prompt with nothing pending).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from pathlib import Path
    from typing import Any

    from ctxward.core.project import Project
    from ctxward.invariants.model import Plan, RuleRef

PENDING_DIRNAME = "pending"
STALE_HOURS = 6  # a session that sent no prompt since: its entry is stale, removed and not used
_TAKEN = ".taken-"


def pending_dir(project: Project) -> Path:
    return project.state_dir / PENDING_DIRNAME


def pending_path(project: Project, session_id: str) -> Path:
    """Where `session_id`'s pending re-injection lives (it may not exist)."""
    return pending_dir(project) / f"{safe_id(session_id)}.json"


def nothing_pending(data: Mapping[str, Any], env: Mapping[str, str]) -> bool:
    """Whether a UserPromptSubmit payload surely finds nothing pending (one stat, no pathlib).

    The hook's hot path (`hookio`), before any event object is built: it answers only when
    $CLAUDE_PROJECT_DIR names the project, as Claude Code always sets it; anything else (no
    such variable, a session_id that is not a string) goes the full way, which reports it.
    """
    root = env.get("CLAUDE_PROJECT_DIR")
    session_id = data.get("session_id")
    if not root or not (session_id is None or isinstance(session_id, str)):
        return False
    name = safe_id(session_id or "") + ".json"
    return not os.path.isfile(
        os.path.join(os.path.realpath(root), ".ctxward", PENDING_DIRNAME, name)
    )


def take(project: Project, session_id: str) -> dict[str, Any] | None:
    """Claim and remove the session's pending entry; None when there is none (one stat).

    Claiming is a rename, so two prompts racing get the entry once between them. A file that is
    not a pending entry is removed and reported (CtxwardError), never injected.
    """
    import secrets
    import time

    path = pending_path(project, session_id)
    try:
        age = time.time() - path.stat().st_mtime
    except OSError:
        return None
    if age > STALE_HOURS * 3600:  # expired: the session went on without it for hours
        with contextlib.suppress(OSError):
            path.unlink()
        return None
    claimed = path.with_name(f"{path.name}{_TAKEN}{os.getpid()}-{secrets.token_hex(4)}")
    try:
        os.rename(path, claimed)
    except FileNotFoundError:
        return None  # another prompt took it first
    from ctxward.core.fsutil import read_regular

    try:
        raw = read_regular(claimed)
    except OSError:  # a FIFO or a folder swapped in after the check: not an entry
        raw = b""
    finally:
        with contextlib.suppress(FileNotFoundError):
            claimed.unlink()
    entry = _parse(raw)
    if entry is None:
        raise CtxwardError(f"{project.relative(path)}: not a pending re-injection; removed it")
    if not _sealed_here(entry, session_id):
        raise CtxwardError(
            f"{project.relative(path)}: a pending re-injection ctxward did not write here for "
            "this session (committed to the repository?); removed it, not injected"
        )
    return entry


def _sealed_here(entry: dict[str, Any], session_id: str) -> bool:
    from ctxward.invariants.trust import is_sealed

    unsealed = {key: value for key, value in entry.items() if key != "seal"}
    return entry.get("session_id") == session_id and is_sealed(
        _sealed_bytes(unsealed), entry.get("seal")
    )


def _sealed_bytes(entry: Mapping[str, Any]) -> bytes:
    """The bytes the seal covers: the entry without its seal, in one canonical form."""
    return hotjson.dumps(entry, ensure_ascii=False, sort_keys=True).encode("utf-8", "surrogatepass")


def _parse(raw: bytes) -> dict[str, Any] | None:
    try:
        entry = hotjson.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError):
        return None
    if not isinstance(entry, dict) or not isinstance(entry.get("context"), str):
        return None
    if not entry["context"].strip():
        return None
    from ctxward.core.limits import problem

    if problem(entry) is not None:  # hand-edited: a lone surrogate no answer can carry
        return None
    return entry


# --- the PostCompact side (may import the rest of ctxward) ------------------------------------


def render_lost(
    project: Project,
    plans: Sequence[Plan],
    missing: Sequence[RuleRef],
    *,
    report: Path | None = None,
) -> tuple[str, list[str]]:
    """The restatement of `missing` (scrubbed, within `injection.limit_chars`: the rest is
    offloaded and the preview names the file), and the fingerprints of the rules it shows."""
    from ctxward.core.config import load
    from ctxward.core.scrub import scrub
    from ctxward.invariants.inject import render_rules_shown

    lost = _only(plans, missing)  # scrubbed: the text and any offloaded rest
    limit = load(project).injection.limit_chars
    where = project.relative(report) if report is not None else ""
    text, shown = render_rules_shown(
        project, "invariants/lost_rules.md.j2", lost, limit, count=len(missing), report=where
    )
    printed = {scrub(r.rule)[0]: r.fingerprint for r in missing}  # shown holds scrubbed rules
    return scrub(text)[0], sorted({printed[r.rule] for r in shown if r.rule in printed})


def remember_lost(
    project: Project,
    session_id: str,
    plans: Sequence[Plan],
    missing: Sequence[RuleRef],
    *,
    report: Path | None = None,
) -> Path | None:
    """Leave the rules the summary lost or altered for the next prompt; clear the entry when
    there are none (`render_lost`). Returns the entry's path, or None when nothing is pending.

    The text names only those rules, as a fact: the caller leaves out what SessionStart(compact)
    has stated already (`ctxward.invariants.ledger`).
    """
    path = pending_path(project, session_id)
    if not missing:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        return None
    from ctxward.core.fsutil import atomic_write, locked
    from ctxward.core.scrub import scrub

    text, shown = render_lost(project, plans, missing, report=report)
    entry: dict[str, Any] = {
        "session_id": session_id,
        "report": project.relative(report) if report is not None else "",
        "rules": [{"slug": r.slug, "skill": r.skill, "rule": scrub(r.rule)[0]} for r in missing],
        "context": text,
        "shown": shown,
    }
    from ctxward.invariants.trust import seal

    entry["seal"] = seal(_sealed_bytes(entry))
    import json  # indented: hotjson writes on one line

    body = json.dumps(entry, ensure_ascii=False, indent=2) + "\n"
    with locked(path, project.locks_dir):
        atomic_write(path, body, validate=_validate)
    _remove_stale(project)
    return path


def _only(plans: Sequence[Plan], missing: Sequence[RuleRef]) -> list[Plan]:
    """The plans cut down to the `missing` rules (scrubbed), in order; emptied sections dropped."""
    from ctxward.core.scrub import scrub

    wanted = {(ref.slug, ref.skill, ref.rule) for ref in missing}
    kept = []
    for plan in plans:
        sections = []
        for section in plan.sections:
            rules = tuple(
                scrub(r)[0] for r in section.rules if (plan.slug, section.skill, r) in wanted
            )
            if rules:
                sections.append(section.replace(rules=rules))
        if sections:
            kept.append(plan.replace(sections=tuple(sections)))
    return kept


def _validate(data: bytes) -> None:
    if _parse(data) is None:
        raise CtxwardError("pending re-injection: the file did not read back as one")


def _remove_stale(project: Project) -> None:
    """Entries no prompt came for (and claims a crash left behind), older than STALE_HOURS,
    when the state folders' housekeeping is due (`fsutil.housekeeping_due`)."""
    from ctxward.core.fsutil import prune_stale

    prune_stale(project.state_dir, pending_dir(project), STALE_HOURS * 3600)
