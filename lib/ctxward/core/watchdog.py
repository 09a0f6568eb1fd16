"""The hook's time budget: a SIGALRM watchdog that interrupts whatever runs past it.

Standard library only: every hook process starts one (`hookio.run`).
"""

from __future__ import annotations

import time

from ctxward.errors import BudgetExceeded

# `typing.TYPE_CHECKING` without importing typing: this module is on the hot path.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, NoReturn

# Once the budget is spent the watchdog raises again at this interval until the hook is out, so
# an `except Exception` on the way (the best-effort steps have some) cannot hold it back; in a
# hook process, one that still runs _LAST_RESORT seconds later is ended from the alarm itself.
_WATCHDOG_REPEAT = 0.05
_LAST_RESORT = 1.0


class Watchdog:
    """A SIGALRM timer that raises BudgetExceeded in the main thread when the budget runs out.

    CPython runs a signal handler between bytecodes, and `re` and the YAML parser check for
    signals as they go, so even a call that would run for minutes is interrupted. `run` may be
    called in-process (tests, `ctxward hook`): the watchdog does nothing outside the main
    thread or where the platform has no SIGALRM, and it puts back the previous handler and
    timer when it ends. A timer already running (a test's deadline, say) keeps its deadline:
    when it comes first, its own handler is called.

    `expired` stays True once the budget ran out, even if the alarm was caught on the way: what
    the handler returns that late is not an answer. `overrun`, when given, is called from the
    alarm _LAST_RESORT seconds past the budget (it ends the process: the hook entries only).
    """

    __slots__ = ("_active", "_outer", "_previous", "deadline", "expired", "overrun", "seconds")

    def __init__(
        self,
        seconds: float,
        *,
        deadline: float | None = None,
        overrun: Callable[[], NoReturn] | None = None,
    ) -> None:
        self.seconds = seconds
        self.deadline = time.monotonic() + seconds if deadline is None else deadline
        self.overrun = overrun
        self.expired = False
        self._active = False
        self._previous: Any = None
        self._outer: tuple[float, float] | None = None  # (deadline, interval) of a timer before

    def __enter__(self) -> Watchdog:
        try:
            import signal

            self._previous = signal.signal(signal.SIGALRM, self._expire)
        except (ImportError, AttributeError, ValueError):  # no SIGALRM; not the main thread
            return self
        left, interval = signal.setitimer(signal.ITIMER_REAL, 0)
        if left > 0:
            self._outer = (time.monotonic() + left, interval)
        self._active = True
        self._arm()
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self._disarm()
        except BudgetExceeded:  # a last alarm on the way out: put everything back, then raise
            self._disarm()
            raise

    def budget(self, seconds: float) -> None:
        """Make the budget `seconds` from the start (the event is known only once read)."""
        self.deadline += seconds - self.seconds
        self.seconds = seconds
        if self._active:
            self._arm()

    def _arm(self) -> None:
        import signal

        due = self.deadline if self._outer is None else min(self.deadline, self._outer[0])
        signal.setitimer(signal.ITIMER_REAL, max(due - time.monotonic(), 1e-6), _WATCHDOG_REPEAT)

    def _expire(self, signum: int, frame: object) -> None:
        now = time.monotonic()
        if self._outer is not None and now >= self._outer[0] - 0.001:
            self._outer = None  # its deadline came first: its handler decides what happens
            if callable(self._previous):
                self._previous(signum, frame)
            self._arm()
            return
        if not self._active or now < self.deadline - 0.001:
            return
        self.expired = True
        if self.overrun is not None and now >= self.deadline + _LAST_RESORT:
            self.overrun()
        raise BudgetExceeded(f"ran past its {self.seconds:g} s budget")

    def _disarm(self) -> None:
        if not self._active:
            return
        import signal

        self._active = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        previous = signal.SIG_DFL if self._previous is None else self._previous
        signal.signal(signal.SIGALRM, previous)
        if self._outer is not None:  # the earlier timer goes on (at once if it is due)
            due, interval = self._outer
            signal.setitimer(signal.ITIMER_REAL, max(due - time.monotonic(), 1e-6), interval)
