"""Containment: no symbolic link and no `.`/`..` on the way to anything ctxward writes.

A cloned repository may commit a link anywhere in `.ctxward/` or `docs/plans/` (`.ctxward ->
~/`), and a path built from a payload may carry `..`. Project paths are built from a resolved
root, so a link found below it can only be one somebody planted: every writer refuses it, and
creates missing folders one by one (`ensure_folder`), never through a link. Files are then
opened with O_NOFOLLOW and temporary files with O_EXCL (fsutil; drift's own writer).

Standard library only (os, stat, errno): the drift observer imports this on every tool call.
"""

from __future__ import annotations

import errno
import os
import stat

from ctxward.errors import CtxwardError


def undotted(path: str | os.PathLike[str]) -> str:
    """`path` as text; CtxwardError when it has a `.` or `..` component."""
    text = os.fspath(path)
    if _dotted(text):
        raise CtxwardError(f"{text}: refusing a path with a '.' or '..' component")
    return text


def _dotted(text: str) -> bool:
    return any(part in (".", "..") for part in text.split(os.sep))


def refuse_links_on_the_way(
    folder: str | os.PathLike[str], error: type[Exception] = CtxwardError
) -> None:
    """Raise when a component of `folder` (itself included) is a symbolic link or not a folder,
    or when `folder` has a `.`/`..` component.

    `error` OSError raises OSError(ELOOP or ENOTDIR), which readers already treat as an
    unreadable file; anything else is raised with a message. Components that do not exist yet
    pass: only `ensure_folder` creates them.
    """
    given = os.fspath(folder)
    if _dotted(given):
        raise error(f"{given}: refusing a path with a '.' or '..' component")
    _walk(os.path.abspath(given), error)


def refuse_links_to(path: str | os.PathLike[str], error: type[Exception] = CtxwardError) -> None:
    """`refuse_links_on_the_way` for the folders that lead to the file `path` (not the file:
    that one is opened with O_NOFOLLOW, or removed, which never follows a link)."""
    given = os.fspath(path)
    if _dotted(given):
        raise error(f"{given}: refusing a path with a '.' or '..' component")
    _walk(os.path.dirname(os.path.abspath(given)), error)


def _walk(absolute: str, error: type[Exception]) -> None:
    current = ""
    for part in absolute.split(os.sep)[1:]:
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


def ensure_folder(folder: str | os.PathLike[str], mode: int = 0o777) -> None:
    """Create `folder` and its missing parents, refusing a symbolic link anywhere on the way.

    The existing part of the path is walked component by component; the missing folders are
    then made one at a time, so none is ever created through a link.
    """
    text = os.path.abspath(undotted(folder))
    missing = []
    while not os.path.lexists(text):
        missing.append(text)
        text = os.path.dirname(text)
    refuse_links_on_the_way(text)
    for path in reversed(missing):
        try:
            os.mkdir(path, mode)
        except FileExistsError:  # a concurrent writer made it: it must be a real folder too
            refuse_links_on_the_way(path)
