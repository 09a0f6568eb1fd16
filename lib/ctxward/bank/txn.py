"""All-or-nothing writes of several bank files: a redo journal, a lock, start-up recovery.

A promotion changes up to six files (01, 02, the ZZ artifact, `_xref/index.md`,
`_xref/_next_id.json`, the C7 archive) and deletes the `.tmp/` entries it consumed. Each file
alone is written atomically (tmp + fsync + rename); together they are made atomic by a journal:

1. Every new file is written into `<bank>/.txn/NNNN.new`, fsynced and validated (non-empty with a
   `#` heading for Markdown, a JSON object for `.json`). Nothing outside `.txn/` has changed.
2. `<bank>/.txn/journal.json` lists (target, staged file, sha256) and the deletions. It is
   written to a temporary name, fsynced and renamed: **this rename is the commit point.**
3. Each staged file is renamed over its target, deletions are done, the folders are fsynced.
4. The journal and `.txn/` are removed.

Start-up recovery (every bank command, under the lock, before it reads anything): a `.txn/`
with a journal is rolled forward (step 3 again: a staged file still present is renamed, one
already renamed is skipped; deleting a missing file is a no-op); a `.txn/` without a journal is
an uncommitted promotion and is removed. A crash therefore leaves the previous complete state
or, after recovery, the new complete state, never a mix. A reader that cannot take the lock can
still see a consistent state through `logical_files`, which overlays a committed journal.

Concurrency (seed 000 §14): one exclusive lock, `<bank>/.tmp/compress.lock` — `flock` where
`fcntl` exists, else an `O_CREAT|O_EXCL` lock file with stale-owner detection. Parallel
promotions serialize; each reads the state its predecessor committed, so nothing is lost. The L1
staging lock (`compress.stage`) is taken too, so a C8 stage cannot race a promotion that is
consuming `.tmp/`.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import shutil
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

from ctxward.bank.markup import has_heading
from ctxward.errors import CtxwardError
from ctxward.fsutil import read_regular

TXN_DIR = ".txn"
JOURNAL = "journal.json"
LOCK_FILE = "compress.lock"
STALE_TMP_SECONDS = 300  # seed 000 §11: stale `.tmp` files older than 5 minutes
_TMP_MARKS = (".ctxward-tmp-",)
_PROTECTED = "_notes"  # ADRs: never touched (seed 000 §10) — except our own _notes/archive/
_ARCHIVE = ("_notes", "archive")
_LOCK_POLL = 0.005
_LOCK_STALE_SECONDS = 600

# Test-only fault injection: called with a step name before each durable step of a commit.
FAULT_HOOK: Callable[[str], None] | None = None


def _fault(step: str) -> None:
    if FAULT_HOOK is not None:
        FAULT_HOOK(step)


# -- lock ----------------------------------------------------------------------------------------

if sys.platform != "win32":
    import fcntl

    HAVE_FLOCK = True
else:  # pragma: no cover - exercised through `portable=True` on POSIX
    HAVE_FLOCK = False


@contextlib.contextmanager
def bank_lock(bank: Path, *, portable: bool = False, timeout: float = 600.0) -> Iterator[None]:
    """Hold the bank's exclusive lock, `<bank>/.tmp/compress.lock` (seed 000 §14)."""
    folder = bank / ".tmp"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / LOCK_FILE
    if HAVE_FLOCK and not portable:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
        return
    owner = path.with_name(LOCK_FILE + ".owner")
    _acquire_exclusive(owner, timeout)
    try:
        yield
    finally:
        with contextlib.suppress(FileNotFoundError):
            owner.unlink()


def _acquire_exclusive(owner: Path, timeout: float) -> None:
    """The portable lock: create `owner` with O_EXCL; break it when its process is gone."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            fd = os.open(owner, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            fd = -1
        if fd < 0:
            if _stale_owner(owner):
                with contextlib.suppress(FileNotFoundError):
                    owner.unlink()
                continue
            if time.monotonic() > deadline:
                raise CtxwardError(f"{owner}: the memory bank stayed locked for {timeout:.0f} s")
            time.sleep(_LOCK_POLL)
            continue
        with os.fdopen(fd, "w") as handle:
            handle.write(str(os.getpid()))
        return


def _stale_owner(owner: Path) -> bool:
    try:
        text = read_regular(owner).decode("ascii").strip()
        age = time.time() - owner.stat().st_mtime
    except (OSError, UnicodeDecodeError):
        return False
    if not text.isdigit():
        return age > 5  # a writer that died between create and write
    try:
        os.kill(int(text), 0)
    except ProcessLookupError:
        return True
    except OSError as exc:  # EPERM: alive, someone else's
        return exc.errno != errno.EPERM and age > _LOCK_STALE_SECONDS
    return age > _LOCK_STALE_SECONDS * 6


# -- validation ----------------------------------------------------------------------------------


def validate(target: Path, data: bytes) -> None:
    """seed 000 §11: Markdown is non-empty and has a heading; JSON is an object."""
    if target.suffix == ".json":
        try:
            value = json.loads(data)
        except (ValueError, RecursionError):
            raise CtxwardError(f"{target.name}: write validation failed: not JSON") from None
        if not isinstance(value, dict):
            raise CtxwardError(f"{target.name}: write validation failed: not a JSON object")
    elif not has_heading(data):
        raise CtxwardError(f"{target.name}: write validation failed: empty or no heading")


def _check_target(bank: Path, target: Path) -> str:
    """`target` relative to the bank; refuses paths outside it and under _notes/ (not archive/)."""
    try:
        rel = target.relative_to(bank)
    except ValueError:
        raise ValueError(f"{target}: outside the memory bank {bank}") from None
    parts = rel.parts
    if not parts or ".." in parts or parts[0] == TXN_DIR:
        raise ValueError(f"{target}: not a bank file")
    if parts[0] == _PROTECTED and tuple(parts[:2]) != _ARCHIVE:
        raise ValueError(f"{rel}: _notes/ is never touched (seed 000 §10)")
    return rel.as_posix()


# -- commit and recovery -------------------------------------------------------------------------


def _fsync_file(path: Path, data: bytes) -> None:
    with open(path, "xb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


def _fsync_dir(folder: Path) -> None:
    with contextlib.suppress(OSError):  # some filesystems refuse a directory fsync
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def commit(
    bank: Path, writes: Mapping[Path, str | bytes], deletes: Sequence[Path] = ()
) -> list[str]:
    """Write and delete bank files as one transaction; return the changed paths (bank-relative).

    Unchanged files and deletions of missing files are dropped first; with nothing left, nothing
    is written at all. The caller holds the bank lock and has run `recover`.
    """
    staged: list[tuple[str, bytes]] = []
    for target, content in writes.items():
        rel = _check_target(bank, target)
        data = content.encode("utf-8") if isinstance(content, str) else content
        validate(target, data)
        if target.is_symlink():
            raise CtxwardError(f"{rel}: refusing to write through a symbolic link")
        if target.exists() and not target.is_file():
            raise CtxwardError(
                f"{rel}: not a regular file (a folder, a FIFO?); refusing to replace it"
            )
        if target.is_file() and read_regular(target) == data:
            continue
        staged.append((rel, data))
    removed = [
        _check_target(bank, target) for target in deletes if target.is_file() or target.is_symlink()
    ]
    if not staged and not removed:
        return []
    folder = bank / TXN_DIR
    if folder.exists():
        raise CtxwardError(f"{folder}: an unrecovered transaction is in the way")
    folder.mkdir(parents=True)
    _fault("begin")
    entries = []
    for index, (rel, data) in enumerate(staged):
        name = f"{index:04d}.new"
        _fsync_file(folder / name, data)
        if read_regular(folder / name) != data:
            raise CtxwardError(f"{rel}: read-back of the staged file did not match")
        entries.append({"target": rel, "staged": name, "sha256": hashlib.sha256(data).hexdigest()})
        _fault("staged")
    journal = {"version": 1, "writes": entries, "deletes": removed}
    _fsync_file(folder / (JOURNAL + ".part"), json.dumps(journal, indent=1).encode("utf-8"))
    _fault("journal-written")
    os.replace(folder / (JOURNAL + ".part"), folder / JOURNAL)
    _fsync_dir(folder)
    _fault("committed")
    _apply(bank, journal)
    return [entry["target"] for entry in entries] + removed


def _apply(bank: Path, journal: Mapping[str, object]) -> None:
    """Roll a committed journal forward (idempotent), then remove it."""
    folder = bank / TXN_DIR
    dirs: set[Path] = set()
    for entry in _writes(journal):
        target = bank / entry["target"]
        _check_target(bank, target)
        staged = folder / entry["staged"]
        if staged.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(staged, target)
            dirs.add(target.parent)
            _fault("renamed")
    for rel in _deletes(journal):
        target = bank / rel
        _check_target(bank, target)
        with contextlib.suppress(FileNotFoundError):
            target.unlink()
            dirs.add(target.parent)
            _fault("deleted")
    for parent in sorted(dirs):
        _fsync_dir(parent)
    _fault("applied")
    shutil.rmtree(folder)
    _fsync_dir(bank)


def _writes(journal: Mapping[str, object]) -> list[dict[str, str]]:
    raw = journal.get("writes")
    if not isinstance(raw, list):
        return []
    return [
        {"target": str(item["target"]), "staged": str(item["staged"])}
        for item in raw
        if isinstance(item, dict) and "target" in item and "staged" in item
    ]


def _deletes(journal: Mapping[str, object]) -> list[str]:
    raw = journal.get("deletes")
    return [str(item) for item in raw] if isinstance(raw, list) else []


def _read_journal(bank: Path) -> dict[str, object] | None:
    path = bank / TXN_DIR / JOURNAL
    try:
        value = json.loads(read_regular(path))
    except (OSError, ValueError, RecursionError):  # a FIFO too: `read_regular` never waits
        return None
    return value if isinstance(value, dict) else None


def recover(bank: Path) -> str | None:
    """Finish or undo an interrupted transaction: "rolled forward", "rolled back" or None."""
    folder = bank / TXN_DIR
    if not folder.exists():
        return None
    journal = _read_journal(bank)
    if journal is None:
        shutil.rmtree(folder, ignore_errors=True)
        _fsync_dir(bank)
        return "rolled back"
    _apply(bank, journal)
    return "rolled forward"


def logical_files(bank: Path, names: Sequence[str]) -> dict[str, bytes | None]:
    """The bank files `names` as a reader sees them: a committed journal's files win.

    Read-only (no recovery, no lock): what `recover` would leave.
    """
    journal = _read_journal(bank)
    staged = {}
    if journal is not None:
        staged = {entry["target"]: entry["staged"] for entry in _writes(journal)}
        deleted = set(_deletes(journal))
    else:
        deleted = set()
    out: dict[str, bytes | None] = {}
    for name in names:
        data: bytes | None = None
        if name in staged:
            with contextlib.suppress(FileNotFoundError):
                data = read_regular(bank / TXN_DIR / staged[name])
        if data is None and name not in deleted:
            with contextlib.suppress(FileNotFoundError, IsADirectoryError):
                data = read_regular(bank / name)
        out[name] = data
    return out


# -- start-up ------------------------------------------------------------------------------------


def remove_stale_tmp(bank: Path, now: float | None = None) -> list[str]:
    """Remove leftover temporary files (`*.tmp`, `*.ctxward-tmp-*`) older than 5 minutes.

    Looks in the bank's own folders; `_notes/` is skipped (ADRs), except `_notes/archive/`.
    """
    cutoff = (time.time() if now is None else now) - STALE_TMP_SECONDS
    removed: list[str] = []
    if not bank.is_dir():
        return removed
    for folder, subdirs, files in os.walk(bank):
        here = Path(folder)
        rel = here.relative_to(bank).parts
        if rel[:1] == (_PROTECTED,) and tuple(rel[:2]) != _ARCHIVE:
            subdirs[:] = []
            continue
        subdirs[:] = [d for d in subdirs if not (not rel and d == TXN_DIR)]
        for name in files:
            if not (name.endswith(".tmp") or any(mark in name for mark in _TMP_MARKS)):
                continue
            path = here / name
            with contextlib.suppress(OSError):
                if path.stat().st_mtime < cutoff:
                    path.unlink()
                    removed.append(path.relative_to(bank).as_posix())
    return removed
