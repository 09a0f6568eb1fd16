"""Atomic writes, file locks and stale temporary-file cleanup.

Every file ctxward writes goes through `atomic_write`: the bytes land in a temporary file in the
same folder, are fsynced, read back and validated, then renamed over the target. A crash leaves
either the old file or the new one, never half of one; a leftover temporary file is removed by
the next write into that folder once it is older than an hour.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import os
import stat
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from ctxward.errors import CtxwardError

_TMP_MARK = ".ctxward-tmp-"
_STALE_SECONDS = 3600


def atomic_write(
    path: Path, data: str | bytes, *, validate: Callable[[bytes], None] | None = None
) -> bool:
    """Write `data` to `path` atomically; return False (and write nothing) when it is unchanged.

    `validate` is called with the bytes read back from the temporary file; raising from it aborts
    the write and leaves the target untouched.
    """
    payload = data.encode("utf-8") if isinstance(data, str) else data
    if path.is_symlink():
        raise CtxwardError(f"{path}: refusing to write through a symbolic link")
    if path.exists() and not path.is_file():
        raise CtxwardError(
            f"{path}: not a regular file (a folder, a FIFO?); refusing to replace it"
        )
    if path.is_file() and path.read_bytes() == payload:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_tmp(path.parent)
    # os.urandom, not secrets: the name only has to be unique, and secrets costs an import.
    tmp = path.with_name(f".{path.name}{_TMP_MARK}{os.getpid()}-{os.urandom(4).hex()}")
    try:
        with open(tmp, "xb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        written = tmp.read_bytes()
        if written != payload:
            raise CtxwardError(f"{path}: read-back of the temporary file did not match")
        if validate is not None:
            validate(written)
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
    _fsync_dir(path.parent)
    return True


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _remove_stale_tmp(folder: Path) -> None:
    cutoff = time.time() - _STALE_SECONDS
    for candidate in folder.glob(f".*{_TMP_MARK}*"):
        with contextlib.suppress(OSError):
            if candidate.stat().st_mtime < cutoff:
                candidate.unlink()


@contextlib.contextmanager
def locked(target: Path, locks_dir: Path) -> Iterator[None]:
    """Hold an exclusive advisory lock for `target` (lock files live in `locks_dir`)."""
    locks_dir.mkdir(parents=True, exist_ok=True)
    key = hashlib.sha256(str(target.resolve()).encode("utf-8")).hexdigest()[:24]
    fd = os.open(locks_dir / f"{key}.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def read_regular(path: Path | str) -> bytes:
    """Read the regular file at `path`; never block on what stands in its place.

    A FIFO (or a device) planted where ctxward keeps a state file would make a plain read wait
    for a writer forever. It is opened without blocking and refused: OSError(EINVAL) naming the
    path, which every reader already handles as an unreadable file. Missing files raise
    FileNotFoundError and folders IsADirectoryError, as `Path.read_bytes` does.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, "is a folder", str(path))
        if not stat.S_ISREG(mode):
            raise OSError(errno.EINVAL, "not a regular file (a FIFO or a device?)", str(path))
        with open(fd, "rb", closefd=False) as handle:
            return handle.read()
    finally:
        os.close(fd)


def sha256_hex(data: str | bytes) -> str:
    """Return the hex sha256 of `data` (str is hashed as UTF-8)."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    return hashlib.sha256(raw).hexdigest()
