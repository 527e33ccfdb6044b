"""Interruption: SIGTERM treated like Ctrl-C, so every ``finally`` and context manager runs.

Python turns SIGINT into :class:`KeyboardInterrupt`, which unwinds the stack and lets
``staging_dir`` and ``tempfile.TemporaryDirectory`` remove their folders. SIGTERM (``kill``,
a job scheduler, a CI timeout) ends the process at once by default and leaves them behind;
inside :func:`terminate_as_interrupt` it raises :class:`Terminated` instead.

An exception raised while a finalizer (``__del__``) runs is printed and dropped by Python,
so a signal that arrives there would be lost and the run would go on to the end. Inside the
block, SIGTERM and SIGINT (unless SIGINT is ignored, as for a background job) are therefore
delivered again a moment later, through ``SIGALRM``, when they land in a finalizer.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

__all__ = ["Terminated", "terminate_as_interrupt"]

#: Delay before a signal that landed in a finalizer is delivered again (s).
RETRY_S = 0.01


class Terminated(KeyboardInterrupt):
    """Raised in the main thread when the process receives SIGTERM."""


def _in_finalizer(frame) -> bool:
    while frame is not None:
        if frame.f_code.co_name == "__del__":
            return True
        frame = frame.f_back
    return False


class _Deliver:
    """The handler of SIGTERM, SIGINT and the retry alarm inside :func:`terminate_as_interrupt`."""

    def __init__(self):
        self.pending: int | None = None  # the signal waiting to be delivered again

    def __call__(self, signum, frame):
        if signum != signal.SIGALRM:
            self.pending = signum
        elif self.pending is None:
            return  # a stray alarm
        if _in_finalizer(frame):
            signal.setitimer(signal.ITIMER_REAL, RETRY_S)
            return
        signo, self.pending = self.pending, None
        if signo == signal.SIGINT:
            raise KeyboardInterrupt
        raise Terminated(f"terminated by {signal.Signals(signo).name}")


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[bool]:
    """SIGTERM raises :class:`Terminated` inside the block (main thread only; elsewhere the
    block runs unchanged); the previous handlers are restored after. Yields whether installed."""
    if threading.current_thread() is not threading.main_thread():
        yield False
        return
    deliver = _Deliver()
    previous = {signal.SIGTERM: signal.signal(signal.SIGTERM, deliver),
                signal.SIGALRM: signal.signal(signal.SIGALRM, deliver)}
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        previous[signal.SIGINT] = signal.signal(signal.SIGINT, deliver)
    try:
        yield True
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        for signo, handler in previous.items():
            signal.signal(signo, handler)
