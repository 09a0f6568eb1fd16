"""The one exception family for expected failures; its message is written for users.

Exit codes of the `ctxward` command (README "Exit codes"). The CLI maps errors to them in one
place: `CtxwardError` and its subclasses carry their own (`commands.Group.invoke`), click's
usage errors and every OSError are mapped in `cli.main`. Hooks use 0 and 1 only (hookio).

====  ===============  ==========================================================================
code  name             when
====  ===============  ==========================================================================
0     EXIT_OK          done (warnings, if any, on stderr)
1     EXIT_ERROR       an expected failure (one line), `doctor` found a failing check, `inline`
                       compressed nothing; for hooks: Claude Code's non-blocking error
2     EXIT_BAD_INPUT   the input was refused and nothing was written: a malformed command line,
                       a file that is not UTF-8, too large (its limit is named), a FIFO or a
                       device where a file was expected, a number too long to read, ...
3     EXIT_REJECTED    `dispatch check`: the guard rejected the prompt
4     EXIT_ESCALATED   `bank promote`: escalated (CRITICAL over budget); nothing written
5     EXIT_OS_ERROR    the system refused a read or a write: disk full (ENOSPC), read-only file
                       system (EROFS), permission (EACCES, EPERM), a path too long
                       (ENAMETOOLONG), a symbolic link or a non-folder on the way (ELOOP,
                       ENOTDIR), a file too large (EFBIG), ...; one line names the path and
                       the error. Every write is atomic: a file is either as it was or complete
====  ===============  ==========================================================================
"""

from __future__ import annotations

import errno
import os
import sys

EXIT_OK = 0
EXIT_ERROR = 1  # expected failure; for hooks: Claude Code's non-blocking error
EXIT_BAD_INPUT = 2  # CLI only: the user's input was refused and nothing was written
EXIT_REJECTED = 3  # CLI only: a dispatch was rejected by the guard
EXIT_ESCALATED = 4  # CLI only: `bank promote` escalated (CRITICAL over budget); nothing written
EXIT_OS_ERROR = 5  # CLI only: the system refused a read or a write (the line names the path)


def digits_problem() -> str:
    """What is wrong with a JSON or YAML text whose parser raised a plain ValueError: an
    integer longer than Python converts (`sys.get_int_max_str_digits()`, 4,300 by default)."""
    return f"an integer of more than {sys.get_int_max_str_digits():,} digits"


def printable(text: str) -> str:
    """`text` for a one-line diagnostic: control characters (a newline, a terminal escape)
    shown as their escapes instead of acting."""
    if text.isprintable():
        return text
    return "".join(
        char if char.isprintable() else char.encode("unicode_escape").decode("ascii")
        for char in text
    )


def os_problem(exc: OSError) -> str:
    """One line for an OSError: the path (or both, for a rename), the error and its errno
    name: `.ctxward/memory-bank: Read-only file system (EROFS)`."""
    names = [name for name in (exc.filename, exc.filename2) if name is not None]
    where = " -> ".join(
        printable(os.fsdecode(name) if isinstance(name, (str, bytes)) else str(name))
        for name in names
    )
    reason = printable(exc.strerror or str(exc) or type(exc).__name__)
    code = errno.errorcode.get(exc.errno or 0)
    text = f"{where}: {reason}" if where else reason
    return f"{text} ({code})" if code else text


class CtxwardError(Exception):
    """An expected failure: one line for the user, and the exit code the CLI should use."""

    exit_code = EXIT_ERROR

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class BadInput(CtxwardError):
    """The input (a file, a slug, a payload) was refused; nothing was written."""

    exit_code = EXIT_BAD_INPUT


class Escalated(CtxwardError):
    """The memory bank cannot take the promotion without a decision (seed 000 §18); nothing
    was written. The message names the options."""

    exit_code = EXIT_ESCALATED


class HookInputError(CtxwardError):
    """The host sent something a hook cannot read (bad JSON, wrong type, unknown event)."""


class BudgetExceeded(CtxwardError):
    """A hook ran past its time budget (`limits.BUDGET_SECONDS`): raised by hookio's watchdog,
    which then denies the dispatch or lets the hook give up quietly."""
