"""Opening the bank: the lock, start-up recovery, and every file read back into one State."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ctxward.bank import active, progress, txn, xref
from ctxward.core.project import Project
from ctxward.core.values import Value
from ctxward.errors import BadInput

INDEX = "_xref/index.md"
NEXT_ID = "_xref/_next_id.json"


@dataclass(slots=True)
class State:
    bank: Path
    texts: dict[str, str | None]  # each file as read (None: absent)
    active: active.ActiveContext
    log: progress.ProgressLog
    index: xref.Index
    ids: xref.Ids

    def path(self, name: str) -> Path:
        return self.bank / name


def read_file(bank: Path, name: str) -> str | None:
    """The bank file `name` (None: absent); BadInput when it is not UTF-8 or cannot be read."""
    from ctxward.core.fsutil import read_regular  # never waits on a FIFO in the file's place

    path = bank / name
    try:
        return read_regular(path).decode("utf-8")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError as exc:
        raise BadInput(f"{path}: not UTF-8 (byte {exc.start})") from None
    except OSError as exc:  # a folder or a FIFO where the file belongs, unreadable
        raise BadInput(f"{path}: cannot read: {exc.strerror or exc}") from None


def load(bank: Path) -> State:
    """Read every bank file (the caller holds the lock and has recovered)."""
    texts = {name: read_file(bank, name) for name in (active.FILE, progress.FILE, INDEX, NEXT_ID)}
    index = xref.parse_index(texts[INDEX] or "")
    return State(
        bank=bank,
        texts=texts,
        active=active.parse(texts[active.FILE] or ""),
        log=progress.parse(texts[progress.FILE] or ""),
        index=index,
        ids=xref.parse_ids(texts[NEXT_ID], index, str(bank / NEXT_ID)),
    )


class Opened(Value):
    bank: Path
    recovered: str | None
    stale_removed: tuple[str, ...]
    refused: str | None = None  # one line: a journal that was set aside, not replayed


def _check_bank(project: Project) -> Path:
    bank = project.bank_dir
    if bank.is_symlink() or (bank.exists() and not bank.is_dir()):
        raise BadInput(f"{project.relative(bank)}: not a folder")
    return bank


@contextlib.contextmanager
def session(project: Project, *, portable_lock: bool = False) -> Iterator[Opened]:
    """Lock the bank (and the L1 staging folder), recover, clean stale temporary files."""
    from ctxward.core.fsutil import locked

    bank = _check_bank(project)
    with txn.bank_lock(bank, portable=portable_lock), locked(bank / ".tmp", project.locks_dir):
        recovery = txn.recover(bank)
        stale = txn.remove_stale_tmp(bank)
        refused = recovery.refused.describe(project.relative) if recovery.refused else None
        yield Opened(bank, recovery.action, tuple(stale), refused)


def refuse_untrusted(project: Project) -> str | None:
    """Set aside a bank journal ctxward did not write; the line saying so (None: nothing was).

    The CLI runs this before any bank command, so the line is printed even when the command
    then fails; a journal ctxward did write is left for the command's own recovery (which
    reports it). Nothing is created when the bank has no `.txn/`.
    """
    bank = project.bank_dir
    if not os.path.lexists(bank / txn.TXN_DIR):
        return None
    _check_bank(project)
    with txn.bank_lock(bank):
        refused = txn.recover(bank, replay=False).refused
    return refused.describe(project.relative) if refused else None
