"""One run per compaction, however many wirings run the hook.

Claude Code runs every matching handler of every wiring (it merges only identical commands):
with the ctxward plugin enabled and ctxward's hooks in a settings file too, or in two settings
files, PreCompact and PostCompact each run twice per compaction, in parallel and with the same
payload (seen with 2.1.332: the same session_id and prompt_id, the runs ~100 ms apart). The
compaction prompt then got the instructions twice and two survival reports were written.

`first_run(event)` claims the run. Under the lock of its marker, the first caller writes
`.ctxward/runs/<event>-<key>` and goes on; a caller that finds a marker younger than WINDOW
seconds does nothing. The key is what identifies one compaction: the event, the payload's
session_id, prompt_id (the prompt the compaction belongs to; Codex: turn_id), trigger and
PostCompact's summary, and the transcript's size and mtime (the same for the doubled runs, seen
with 2.1.332; different for PreCompact and PostCompact, and for a later compaction). Markers
older than KEEP_SECONDS are removed when a new one is written and the state folders'
housekeeping is due (`fsutil.housekeeping_due`: at most every ten minutes).
"""

from __future__ import annotations

import hashlib
import os
import time

from ctxward.core.fsutil import atomic_write, housekeeping_due, locked, remove
from ctxward.errors import CtxwardError
from ctxward.hooktypes import HookEvent

WINDOW = 10.0  # seconds: the doubled runs start within ~0.1 s of each other
KEEP_SECONDS = 24 * 3600.0
_FIELDS = ("session_id", "prompt_id", "turn_id", "trigger", "compact_summary")


def first_run(event: HookEvent, now: float | None = None) -> bool:
    """Whether this is the first run of `event` for this compaction (and claim it if so)."""
    moment = time.time() if now is None else now
    folder = event.project.state_dir / "runs"
    marker = folder / f"{event.name}-{_key(event)}"
    try:
        with locked(marker, event.project.locks_dir):
            try:
                if moment - os.lstat(marker).st_mtime < WINDOW:
                    return False
            except FileNotFoundError:
                pass
            atomic_write(marker, f"{moment:.3f}\n")
            if housekeeping_due(event.project.state_dir, now=moment):
                _prune(folder, moment)
    except (OSError, CtxwardError):  # a full disk, a refused lock folder: the rules still go;
        return True  # at worst a doubled wiring doubles them, which is no loss
    return True


def _key(event: HookEvent) -> str:
    data = event.data
    parts = [repr(data.get(name)) for name in _FIELDS]
    transcript = data.get("transcript_path")
    try:
        info = os.stat(transcript) if isinstance(transcript, str) and transcript else None
    except (OSError, ValueError):
        info = None
    parts.append(f"{info.st_size}:{info.st_mtime_ns}" if info else "-")
    return hashlib.sha256("\0".join(parts).encode("utf-8", "replace")).hexdigest()[:32]


def _prune(folder: os.PathLike[str] | str, now: float) -> None:
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in entries:
        try:
            old = now - entry.stat(follow_symlinks=False).st_mtime > KEEP_SECONDS
        except OSError:
            continue
        if old and entry.name.count("-") == 1 and not entry.name.startswith("."):
            remove(entry.path)
