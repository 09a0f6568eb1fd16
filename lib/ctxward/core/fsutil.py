"""Atomic writes, file locks, reads that never block, and stale temporary-file cleanup.

Every file ctxward writes goes through `atomic_write` (or `atomic_write_many`, for a batch): the
bytes land in a temporary file in the same folder, are fsynced, read back and validated, then
renamed over the target, and the folder is fsynced. A crash leaves either the old file or the new
one, never half of one; a leftover temporary file is removed by the next write into that folder
once it is older than an hour. ctxward reads its own state through `open_regular`, which refuses
a FIFO planted in a file's place instead of waiting on it.

Containment (`ctxward.core.confine`): every writer here, and every state reader, refuses a path with
a symbolic link or a `.`/`..` component anywhere on the way; folders are created one by one
below the last real one, files are opened with O_NOFOLLOW, temporary files with O_EXCL. Files
ctxward does not own (a host's transcript or settings, a skill the user names, shipped data) are
read with `follow_links=True`.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import stat
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TypeVar

from ctxward.core.confine import ensure_folder as ensure_folder  # writers find it here too
from ctxward.core.confine import refuse_links_to
from ctxward.errors import CtxwardError

_TMP_MARK = ".ctxward-tmp-"
_T = TypeVar("_T")
_STALE_SECONDS = 3600
# A writer in another pid namespace (a container sharing the folder) looks dead from here: no
# file younger than this is taken for a leftover, whatever its pid says.
_GRACE_SECONDS = 60
_wrote = [0]  # batches written by this process: `sweep_after_writes` sweeps after a writer
_SWEEP_MAX = 20_000  # entries one sweep looks at, whatever a repository commits


def atomic_write(
    path: Path, data: str | bytes, *, validate: Callable[[bytes], None] | None = None
) -> bool:
    """Write `data` to `path` atomically; return False (and write nothing) when it is unchanged.

    `validate` is called with the bytes read back from the temporary file; raising from it aborts
    the write and leaves the target untouched.
    """
    return bool(atomic_write_many([(path, data)], validate=validate))


def atomic_write_many(
    items: Sequence[tuple[Path, str | bytes]],
    *,
    validate: Callable[[bytes], None] | None = None,
) -> list[Path]:
    """`atomic_write` each (path, data); return the paths written (unchanged ones are skipped).

    Every target is checked before anything is written. Each file is atomic on its own (a crash
    leaves it whole, old or new); the batch is not a transaction. In a large batch the fsyncs,
    which dominate, run on a few threads: a journalling file system commits concurrent fsyncs
    together (1,000 plan payloads: bench/precompact_plans.py).
    """
    pending = []
    for path, data in items:
        payload = data.encode("utf-8") if isinstance(data, str) else data
        if _current_bytes(path) != payload:
            pending.append((path, payload))
    if pending:
        _wrote[0] += 1
    folders = list(dict.fromkeys(path.parent for path, _ in pending))
    for folder in folders:
        ensure_folder(folder)
        _remove_stale_tmp(folder)
    try:
        _each(lambda item: _replace(*item, validate), pending)
    except BaseException:
        # Whatever was renamed is made durable, even when one failed; the write's own error is
        # the one reported (a full disk fails the folder's fsync too).
        with contextlib.suppress(OSError):
            _each(_fsync_dir, folders)
        raise
    _each(_fsync_dir, folders)
    return [path for path, _ in pending]


def _current_bytes(path: Path) -> bytes | None:
    """The bytes at `path` now; None when there is no file; CtxwardError for a link or FIFO."""
    refuse_links_to(path)
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(mode):
        raise CtxwardError(f"{path}: refusing to write through a symbolic link")
    if not stat.S_ISREG(mode):
        raise CtxwardError(
            f"{path}: not a regular file (a folder, a FIFO?); refusing to replace it"
        )
    return read_regular(path)


def _replace(path: Path, payload: bytes, validate: Callable[[bytes], None] | None) -> None:
    """Write `payload` to a fresh temporary file beside `path`, fsync, check, rename over."""
    # os.urandom, not secrets: the name only has to be unique, and secrets costs an import.
    tmp = path.with_name(f".{path.name}{_TMP_MARK}{os.getpid()}-{os.urandom(4).hex()}")
    renamed = False
    try:
        try:
            with open(tmp, "xb+") as handle:
                handle.write(payload)
                handle.flush()
                os.fsync(handle.fileno())
                written = os.pread(handle.fileno(), len(payload) + 1, 0)
        except OSError as exc:
            if exc.filename is not None:
                raise
            # A full disk fails the write or the fsync, whose errors name no file: name it.
            raise OSError(exc.errno, exc.strerror, str(path)) from exc
        if written != payload:
            raise CtxwardError(f"{path}: read-back of the temporary file did not match")
        if validate is not None:
            validate(written)
        os.replace(tmp, path)
        renamed = True
    finally:
        if not renamed:
            with contextlib.suppress(OSError):  # a leftover is removed by a later write
                tmp.unlink()


_PARALLEL_FROM = 16  # below this a thread pool costs more (its import: ~5 ms) than it saves
_THREADS = 4  # 2 to 16 tried on 2 cores: 4 was quickest (fsync waits, it does not compute)


def _each(action: Callable[[_T], object], items: Sequence[_T]) -> None:
    """Run `action` on every item, on a few threads for a large batch; re-raise the first error.

    Every item is attempted even when one fails, so a batch never stops halfway through a
    rename without the folder fsync that follows it.
    """
    if len(items) < _PARALLEL_FROM:
        errors = []
        for item in items:
            try:
                action(item)
            except Exception as exc:  # noqa: BLE001 - re-raised below, after the rest
                errors.append(exc)
        if errors:
            raise errors[0]
        return
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=_THREADS) as pool:
        futures = [pool.submit(action, item) for item in items]
    for future in futures:
        future.result()  # the first error, now that every item has been attempted


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, str(folder)) from exc
    finally:
        os.close(fd)


def _remove_stale_tmp(folder: str | os.PathLike[str], now: float | None = None) -> int:
    """Remove the leftover temporary files in `folder` (`is_leftover`); return how many."""
    removed = 0
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.name.startswith(".") and _TMP_MARK in entry.name:
                with contextlib.suppress(OSError):
                    if is_leftover(entry.name, entry.stat(follow_symlinks=False).st_mtime, now):
                        os.unlink(entry.path)
                        removed += 1
    return removed


def is_leftover(name: str, mtime: float, now: float | None = None) -> bool:
    """Whether a temporary file `name` (`.<target>.ctxward-tmp-<pid>-<hex>`) is a crash's
    leftover: its writer is gone (SIGKILL, a full disk), or it is older than an hour (a pid
    reused by another process)."""
    now = time.time() if now is None else now
    if mtime < now - _STALE_SECONDS:
        return True
    pid = name.rpartition(_TMP_MARK)[2].partition("-")[0]
    if not pid.isdigit() or int(pid) == os.getpid():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return mtime < now - _GRACE_SECONDS
    except OSError:  # EPERM: alive, another user's; an absurd pid: leave it to the hour
        return False
    return False


SWEEP_EVERY = 600.0  # seconds between two rounds of the state folders' housekeeping


def housekeeping_due(state_dir: Path, every: float = SWEEP_EVERY, now: float | None = None) -> bool:
    """Whether the state folders' housekeeping is due: the leftover sweep's stamp
    (`<state_dir>/locks/swept`, renewed by `sweep_leftovers`) is older than `every` seconds, or
    there is none. One lstat. The pruning of the per-session folders (the inject-once ledger,
    pending rules, once-per-compaction markers) waits for it too: a compaction does not scan
    them every time, whatever number of sessions they hold."""
    now = time.time() if now is None else now
    try:
        return os.lstat(_sweep_stamp(state_dir)).st_mtime <= now - every
    except FileNotFoundError:
        return True
    except OSError:
        return False


def prune_stale(state_dir: Path, folder: Path, max_age: float) -> None:
    """Remove the files in `folder` not modified for `max_age` seconds, when the housekeeping
    is due (`housekeeping_due`); whatever cannot be read or removed stays."""
    if not housekeeping_due(state_dir):
        return  # pruned less than ten minutes ago: not a scan of every session's file again
    cutoff = time.time() - max_age
    with contextlib.suppress(OSError):
        for candidate in folder.iterdir():
            with contextlib.suppress(OSError):
                if candidate.stat().st_mtime < cutoff:
                    candidate.unlink()


def _sweep_stamp(state_dir: Path) -> Path:
    return state_dir / "locks" / "swept"


def sweep_leftovers(state_dir: Path, plans_dir: Path, every: float = SWEEP_EVERY) -> int:
    """Remove crash leftovers below a project's two state folders, at most every `every` s.

    A writer killed between creating its temporary file and renaming it leaves the file in a
    folder that may never be written again; so the hooks and commands sweep every state folder
    now and then, not only the one they write (`sweep_after_writes`). One stat when it is not
    due (the stamp is
    `<state_dir>/locks/swept`); nothing when there is no state folder yet; the walk follows no
    link and stops after _SWEEP_MAX entries, so a hostile tree cannot make it slow.
    """
    now = time.time()
    if not housekeeping_due(state_dir, every, now) or not os.path.isdir(state_dir):
        return 0
    removed, seen = 0, 0
    pending = [os.fspath(state_dir), os.fspath(plans_dir)]
    while pending and seen < _SWEEP_MAX:
        folder = pending.pop()
        try:
            refuse_links_to(os.path.join(folder, "x"), error=OSError)
            with os.scandir(folder) as entries:
                for entry in entries:
                    seen += 1
                    if entry.is_dir(follow_symlinks=False):
                        pending.append(entry.path)
            removed += _remove_stale_tmp(folder, now)
        except OSError:
            continue
    with contextlib.suppress(CtxwardError, OSError):
        atomic_write(_sweep_stamp(state_dir), f"{int(now)}\n")
    return removed


@contextlib.contextmanager
def sweep_after_writes(state_dir: Path, plans_dir: Path) -> Iterator[None]:
    """Run the body; when it wrote anything, `sweep_leftovers` (never raising) afterwards.

    A run that writes nothing (most hooks) leaves nothing behind, not even the sweep's stamp.
    """
    before = _wrote[0]
    yield
    if _wrote[0] != before:
        with contextlib.suppress(Exception):  # housekeeping: it must never cost the answer
            sweep_leftovers(state_dir, plans_dir)


@contextlib.contextmanager
def locked(target: Path, locks_dir: Path) -> Iterator[None]:
    """Hold an exclusive lock for `target` (lock files live in `locks_dir`; `ctxward.core.lock`)."""
    from ctxward.core.lock import exclusive

    ensure_folder(locks_dir)
    key = hashlib.sha256(str(target.resolve()).encode("utf-8")).hexdigest()[:24]
    with exclusive(locks_dir / f"{key}.lock"):
        yield


def open_regular(path: str | os.PathLike[str], *, follow_links: bool = False) -> int:
    """A file descriptor open for reading on the regular file at `path`; never blocks.

    A FIFO (or a device) planted where ctxward keeps a state file would make a plain `open`
    wait for a writer forever. It is opened without blocking and refused: OSError(EINVAL) naming
    the path, which every reader already handles as an unreadable file. Missing files raise
    FileNotFoundError and folders IsADirectoryError, as `open` does. A symbolic link on the way
    (the file itself included) is OSError(ELOOP) unless `follow_links` (for files ctxward does
    not own). The caller owns the descriptor: `with open(open_regular(path), "rb") as handle:`
    streams the file.
    """
    flags = os.O_RDONLY | os.O_NONBLOCK
    if not follow_links:
        refuse_links_to(path, error=OSError)
        flags |= os.O_NOFOLLOW
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            raise
        raise OSError(errno.ELOOP, "refusing a symbolic link", str(path)) from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, "is a folder", str(path))
        if not stat.S_ISREG(mode):
            raise OSError(errno.EINVAL, "not a regular file (a FIFO or a device?)", str(path))
    except BaseException:
        os.close(fd)
        raise
    return fd  # O_NONBLOCK stays set: it changes nothing for a regular file


def read_regular(
    path: str | os.PathLike[str], *, follow_links: bool = False, limit: int | None = None
) -> bytes:
    """`Path.read_bytes` through `open_regular`; OSError(EFBIG) past `limit` bytes."""
    with open(open_regular(path, follow_links=follow_links), "rb") as handle:
        data = handle.read() if limit is None else handle.read(limit + 1)
    if limit is not None and len(data) > limit:
        raise OSError(errno.EFBIG, f"larger than {limit:,} bytes", str(path))
    return data


# What a command reads from a file the user names (a prompt, an entry, a text to scrub): far
# past any real one; refused with one line beyond it (scrubbing it all takes about a second).
MAX_NAMED_BYTES = 32 * 1024 * 1024


def read_named(path: str | os.PathLike[str], *, limit: int = MAX_NAMED_BYTES) -> bytes:
    """The bytes of a file the user named (links followed, as `cat` would), bounded in time and
    size: BadInput (exit 2) for a missing file, a folder, a FIFO or a device (opened without
    blocking and refused, never waited on) and a file past `limit` bytes (not read past it).
    Any other OSError (permission, a path too long) is left to the caller (`cli.main`: exit 5).
    """
    from ctxward.errors import BadInput

    try:
        return read_regular(path, follow_links=True, limit=limit)
    except FileNotFoundError:
        raise BadInput(f"{os.fspath(path)}: no such file") from None
    except IsADirectoryError:
        raise BadInput(f"{os.fspath(path)}: is a folder, not a file") from None
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.EFBIG):
            raise
        raise BadInput(f"{os.fspath(path)}: {exc.strerror}; refused") from None


def read_regular_text(
    path: str | os.PathLike[str],
    encoding: str = "utf-8",
    *,
    follow_links: bool = False,
    limit: int | None = None,
) -> str:
    """`Path.read_text` (strict decoding, universal newlines) through `read_regular`."""
    text = read_regular(path, follow_links=follow_links, limit=limit).decode(encoding)
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


def remove(path: str | os.PathLike[str]) -> None:
    """Unlink the file at `path` (a link there is removed, never followed); missing is fine."""
    refuse_links_to(path)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


def move(source: str | os.PathLike[str], target: str | os.PathLike[str]) -> None:
    """`os.replace(source, target)` with both folders checked for links on the way."""
    for path in (source, target):
        refuse_links_to(path)
    os.replace(source, target)


def sha256_hex(data: str | bytes) -> str:
    """Return the hex sha256 of `data` (str is hashed as UTF-8)."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    return hashlib.sha256(raw).hexdigest()
