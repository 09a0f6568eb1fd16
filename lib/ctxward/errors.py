"""The one exception family for expected failures; its message is written for users."""

from __future__ import annotations

# Documented exit codes (README "Exit codes"). The CLI maps errors to these in one place.
EXIT_OK = 0
EXIT_ERROR = 1  # expected failure; for hooks: Claude Code's non-blocking error
EXIT_BAD_INPUT = 2  # CLI only: the user's input was refused and nothing was written
EXIT_REJECTED = 3  # CLI only: a dispatch was rejected by the guard
EXIT_ESCALATED = 4  # CLI only: `bank promote` escalated (CRITICAL over budget); nothing written


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
