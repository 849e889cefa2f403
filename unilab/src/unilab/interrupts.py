"""SIGINT/SIGTERM during training: a clean stop at the next safe point, or within
:attr:`Interrupts.grace_s` seconds wherever the learner is (a first ``torch.compile`` can take
minutes), always followed by the final checkpoint and summary.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from contextlib import contextmanager
from typing import Iterator

from unilab_rl.runner import StopTraining

log = logging.getLogger(__name__)

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class TrainingInterrupted(StopTraining):
    """Raised in the main thread by SIGINT/SIGTERM so that the run saves and exits cleanly; the
    runner records status ``interrupted`` (SIGINT) or ``terminated`` (SIGTERM) and the error
    ``stopped by <signal>``.

    Attributes:
        signum: the signal that asked for the stop.
    """

    def __init__(self, signum: int) -> None:
        name = signal.Signals(signum).name
        super().__init__("interrupted" if signum == signal.SIGINT else "terminated", f"stopped by {name}")
        self.signum = signum
        self.signal_name = name

    def __str__(self) -> str:
        return self.signal_name


class Interrupts:
    """SIGINT/SIGTERM handling of a training run.

    The first signal is held and raised as :class:`TrainingInterrupted` at the next safe point:
    the end of a :meth:`deferred` block, which wraps each iteration's bookkeeping (metric writes,
    checkpoint saves), so the loop stops between iterations rather than wherever the main thread
    was (inside torch.compile's frame evaluation or CUDA-graph bookkeeping, say). If no safe point
    comes within :attr:`grace_s` seconds (the learner is compiling, or an iteration is long), a
    watchdog thread sends the signal to the main thread again and the handler raises there and
    then, outside a deferred block; the run still ends with its final checkpoint and summary.
    A second signal before that, sent at least :attr:`duplicate_window_s` after the first, raises
    at once too. Any signal once :attr:`closing` is set (final checkpoint and summary) is
    ignored, so the shutdown is never cut short.

    A stop outside a safe point can fall inside a gradient step: the final checkpoint then holds
    weights a part of one step further than its iteration count says (finite and loadable).

    Native code can take the handlers over behind Python's back: LLVM inside Triton (each
    in-process Triton compile of torch.compile on CUDA) installs its own SIGINT/SIGTERM handler
    with SA_RESETHAND | SA_NODEFER, which restores the previous one and re-raises. Python still
    reports our handler, but while LLVM's runs the disposition is SIG_DFL, so a second signal a
    few microseconds after the first (GNU ``timeout`` signals the process, then its whole group)
    kills the process at once: no message, no final checkpoint, a summary left at "running".
    :meth:`deferred` therefore installs the handlers again at the start of each block (each
    iteration's bookkeeping, just after the iteration's compiles); two signal(2) calls. The
    watchdog's signal comes :attr:`grace_s` after the first, never microseconds after it.
    """

    grace_s = 1.0
    """Seconds a held signal waits for the next safe point before it stops the run where it is:
    with the unwinding, the final checkpoint and the summary, the run has stopped within about
    2 s (the learning curve and the process exit follow)."""

    duplicate_window_s = 0.5
    """A repeat within this many seconds of the first signal is the same request (GNU ``timeout``
    and a terminal's Ctrl-C signal the process and its group), not a second one."""

    def __init__(self) -> None:
        self.pending: int | None = None
        self.raised = False
        self.closing = False
        self._depth = 0
        self._installed = False
        self._first_at = 0.0
        self._forced = False
        self._watchdog: threading.Timer | None = None

    def handler(self, signum, frame) -> None:  # noqa: ARG002
        if self.raised or self.closing:
            if not self._forced:
                log.warning("%s ignored: already stopping", signal.Signals(signum).name)
            return
        if self.pending is None:
            self.pending = signum
            self._first_at = time.monotonic()
            log.warning("%s: stopping after this iteration, or in %.1f s where it is (send it again to stop at once)",
                        signal.Signals(signum).name, self.grace_s)
            self._start_watchdog()
            return
        if not self._forced and time.monotonic() - self._first_at < self.duplicate_window_s:
            return  # the group copy of the first signal
        if self._depth:
            return  # inside a write: the block's end raises
        self.raised = True
        raise TrainingInterrupted(self.pending)

    def _start_watchdog(self) -> None:
        main = threading.main_thread().ident
        if main is None or not hasattr(signal, "pthread_kill"):
            return
        self._watchdog = threading.Timer(self.grace_s, self._escalate, args=(main,))
        self._watchdog.daemon = True
        self._watchdog.start()

    def _escalate(self, main_ident: int) -> None:
        """Watchdog thread: the held signal found no safe point in time; deliver it again to the
        main thread, whose handler now raises (unless a write is under way: its end raises)."""
        if not self._installed or self.raised or self.closing or self.pending is None or self._depth:
            return
        self._forced = True
        log.warning("no safe point within %.1f s: stopping where the run is", self.grace_s)
        signal.pthread_kill(main_ident, self.pending)

    def reinstall(self) -> None:
        """Install the handlers again (undoes a takeover by native code, see the class docs)."""
        if self._installed and threading.current_thread() is threading.main_thread():
            for s in SIGNALS:
                signal.signal(s, self.handler)

    @contextmanager
    def deferred(self) -> Iterator[None]:
        if not self._depth:
            self.reinstall()
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1
        if not self._depth and self.pending is not None and not self.raised and not self.closing:
            self.raised = True
            raise TrainingInterrupted(self.pending)

    @contextmanager
    def installed(self) -> Iterator[None]:
        previous = {s: signal.signal(s, self.handler) for s in SIGNALS}
        self._installed = True
        try:
            yield
        finally:
            self._installed = False
            if self._watchdog is not None:
                self._watchdog.cancel()
            for s, h in previous.items():
                signal.signal(s, h)


__all__ = ["Interrupts", "SIGNALS", "TrainingInterrupted"]
