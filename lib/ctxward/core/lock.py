"""The one exclusive lock every shared file is written under: `flock`, or an owner file.

`exclusive(path)` holds an advisory `flock` on `path` where the platform has `fcntl` (imported
here, on first use: a platform without it must still run every hook). Without it, or when asked
(`portable=True`, which the tests use to exercise it on POSIX), the lock is an owner file
`<path>.owner` created with O_EXCL and holding the owner's pid; an owner whose process is gone,
or that is not a regular file (a link or a FIFO planted there), is broken and removed, never
read through. Neither form follows a symbolic link.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import time
from collections.abc import Iterator
from pathlib import Path

from ctxward.errors import CtxwardError

OWNER_SUFFIX = ".owner"
_POLL = 0.005
_STALE_SECONDS = 600  # an owner file older than this whose pid is someone else's: broken


def have_flock() -> bool:
    """Whether this platform has `fcntl.flock` (POSIX does; Windows does not)."""
    try:
        import fcntl  # noqa: F401
    except ImportError:
        return False
    return True


@contextlib.contextmanager
def exclusive(path: Path, *, portable: bool = False, timeout: float = 600.0) -> Iterator[None]:
    """Hold the exclusive lock `path` (its folder must exist and have been checked)."""
    if not portable and have_flock():
        import fcntl

        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        except OSError as exc:
            why = "a symbolic link" if exc.errno == errno.ELOOP else exc.strerror
            raise CtxwardError(f"{path}: cannot take the lock ({why})") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
        return
    owner = path.with_name(path.name + OWNER_SUFFIX)
    _acquire(owner, timeout)
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            os.unlink(owner)  # a link there is removed, never followed


def _acquire(owner: Path, timeout: float) -> None:
    """Create `owner` with O_EXCL; break it when its process is gone."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            # O_EXCL never follows a link: one planted at `owner` is "taken", then found stale
            fd = os.open(owner, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        except FileExistsError:
            fd = -1
        if fd < 0:
            if stale_owner(owner):
                with contextlib.suppress(OSError):
                    os.unlink(owner)
                continue
            if time.monotonic() > deadline:
                raise CtxwardError(f"{owner}: still locked after {timeout:.0f} s")
            time.sleep(_POLL)
            continue
        try:
            os.write(fd, str(os.getpid()).encode("ascii"))
        finally:
            os.close(fd)
        return


def stale_owner(owner: Path) -> bool:
    """Whether the owner file `owner` belongs to nobody any more (and may be broken)."""
    try:
        info = os.lstat(owner)
    except OSError:  # released meanwhile: try the O_EXCL create again (removing now could
        return False  # remove the owner file another process has just created)
    if stat.S_ISDIR(info.st_mode):
        raise CtxwardError(f"{owner}: a folder where a lock's owner file belongs")
    if not stat.S_ISREG(info.st_mode):
        return True  # a link or a FIFO: never one of ours (O_EXCL creates a regular file)
    age = time.time() - info.st_mtime
    try:
        from ctxward.core.fsutil import read_regular

        text = read_regular(owner).decode("ascii").strip()
    except (OSError, UnicodeDecodeError):
        return False
    if not text.isdigit():
        return age > 5  # a writer that died between create and write
    try:
        os.kill(int(text), 0)
    except (ProcessLookupError, OverflowError):  # gone, or no such process id
        return True
    except OSError as exc:  # EPERM: alive, someone else's
        return exc.errno != errno.EPERM and age > _STALE_SECONDS
    return age > _STALE_SECONDS * 6
