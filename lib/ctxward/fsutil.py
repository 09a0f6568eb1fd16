"""Atomic writes, file locks, reads that never block, and stale temporary-file cleanup.

Every file ctxward writes goes through `atomic_write` (or `atomic_write_many`, for a batch): the
bytes land in a temporary file in the same folder, are fsynced, read back and validated, then
renamed over the target, and the folder is fsynced. A crash leaves either the old file or the new
one, never half of one; a leftover temporary file is removed by the next write into that folder
once it is older than an hour. ctxward reads its own state through `open_regular`, which refuses
a FIFO planted in a file's place instead of waiting on it.

Containment: a cloned repository may commit a symbolic link anywhere in `.ctxward/` or
`docs/plans/` (`.ctxward -> ~/`). Every writer here, and every state reader, walks the path it is
given and refuses it when a symbolic link (or a `.`/`..` component) stands anywhere on the way:
`ensure_folder` creates folders one by one below the last real one, files are opened with
O_NOFOLLOW, temporary files with O_EXCL. Project paths are built from a resolved root, so a
link found on the way can only be one that somebody planted. Files ctxward does not own (a
host's transcript or settings, a skill, shipped data) are read with `follow_links=True`.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import os
import re
import stat
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TypeVar

from ctxward.errors import CtxwardError

# A "." or ".." component: a path with one could leave the folder it names.
_DOTTED = re.compile(r"(?:^|/)\.{1,2}(?:/|$)")

_TMP_MARK = ".ctxward-tmp-"
_T = TypeVar("_T")
_STALE_SECONDS = 3600


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
    _refuse_links_on_the_way(path.parent)
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


def _remove_stale_tmp(folder: Path) -> None:
    cutoff = time.time() - _STALE_SECONDS
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.name.startswith(".") and _TMP_MARK in entry.name:
                with contextlib.suppress(OSError):
                    if entry.stat(follow_symlinks=False).st_mtime < cutoff:
                        os.unlink(entry.path)


@contextlib.contextmanager
def locked(target: Path, locks_dir: Path) -> Iterator[None]:
    """Hold an exclusive advisory lock for `target` (lock files live in `locks_dir`)."""
    ensure_folder(locks_dir)
    key = hashlib.sha256(str(target.resolve()).encode("utf-8")).hexdigest()[:24]
    try:
        fd = os.open(locks_dir / f"{key}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            raise
        raise CtxwardError(f"{locks_dir / key}.lock: refusing a symbolic link") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


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
        _refuse_links_on_the_way(os.path.dirname(os.path.abspath(path)), error=OSError)
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


def ensure_folder(folder: str | os.PathLike[str], mode: int = 0o777) -> None:
    """Create `folder` and its missing parents, refusing a symbolic link anywhere on the way.

    The existing part of the path is walked component by component (`_refuse_links_on_the_way`);
    the missing folders are then made one at a time, so none is ever created through a link.
    """
    text = os.path.abspath(_undotted(folder))
    missing = []
    while not os.path.lexists(text):
        missing.append(text)
        text = os.path.dirname(text)
    _refuse_links_on_the_way(text)
    for path in reversed(missing):
        try:
            os.mkdir(path, mode)
        except FileExistsError:  # a concurrent writer made it: it must be a real folder too
            _refuse_links_on_the_way(path)


def remove(path: str | os.PathLike[str]) -> None:
    """Unlink the file at `path` (a link there is removed, never followed); missing is fine."""
    _refuse_links_on_the_way(os.path.dirname(os.path.abspath(_undotted(path))))
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


def move(source: str | os.PathLike[str], target: str | os.PathLike[str]) -> None:
    """`os.replace(source, target)` with both folders checked for links on the way."""
    for path in (source, target):
        _refuse_links_on_the_way(os.path.dirname(os.path.abspath(_undotted(path))))
    os.replace(source, target)


def _undotted(path: str | os.PathLike[str]) -> str:
    text = os.fspath(path)
    if _DOTTED.search(text):
        raise CtxwardError(f"{text}: refusing a path with a '.' or '..' component")
    return text


def _refuse_links_on_the_way(
    folder: str | os.PathLike[str], error: type[Exception] = CtxwardError
) -> None:
    """Raise `error` when a component of `folder` (itself included) is a symbolic link, or not
    a folder, or `folder` has a `.`/`..` component. Components that do not exist yet pass: only
    `ensure_folder` creates them, one by one."""
    text = os.path.abspath(os.fspath(folder))
    if _DOTTED.search(os.fspath(folder)):
        raise error(f"{os.fspath(folder)}: refusing a path with a '.' or '..' component")
    current = ""
    for part in text.split(os.sep)[1:]:
        if not part:
            continue
        current += os.sep + part
        try:
            mode = os.lstat(current).st_mode
        except FileNotFoundError:
            return
        if stat.S_ISLNK(mode):
            if error is OSError:
                raise OSError(errno.ELOOP, "a symbolic link is on the way", current)
            raise error(f"{current}: refusing to go through a symbolic link")
        if not stat.S_ISDIR(mode):
            if error is OSError:
                raise OSError(errno.ENOTDIR, "not a folder", current)
            raise error(f"{current}: not a folder")


def sha256_hex(data: str | bytes) -> str:
    """Return the hex sha256 of `data` (str is hashed as UTF-8)."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    return hashlib.sha256(raw).hexdigest()
