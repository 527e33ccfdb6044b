"""Interruption: SIGTERM treated like Ctrl-C, so every ``finally`` and context manager runs.

Python turns SIGINT into :class:`KeyboardInterrupt`, which unwinds the stack and lets
``staging_dir`` and ``tempfile.TemporaryDirectory`` remove their folders. SIGTERM (``kill``,
a job scheduler, a CI timeout) ends the process at once by default and leaves them behind;
inside :func:`terminate_as_interrupt` it raises :class:`Terminated` instead.

An exception raised while a finalizer (``__del__``) runs is printed and dropped by Python,
so a signal that arrives there would be lost and the run would go on to the end. Inside the
block, SIGTERM and SIGINT (unless SIGINT is ignored, as for a background job) are therefore
delivered again a moment later, through ``SIGALRM``, when they land in a finalizer.

Some code cannot take an exception in the middle: the SystemRDL compiler's C++ parser builds
its tree by calling into Python and drops or mangles an exception raised there (the run went
on to the end as if no signal had come, or failed later with a ``TypeError`` of a half-built
tree, an internal error). Such code runs inside :func:`deferred`: a signal that lands there is
delivered when the block ends.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

__all__ = ["Terminated", "deferred", "terminate_as_interrupt"]

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


#: The handler of the innermost :func:`terminate_as_interrupt` block, and how many
#: :func:`deferred` blocks are open (main thread only).
_active: _Deliver | None = None
_deferring = 0


class _Deliver:
    """The handler of SIGTERM, SIGINT and the retry alarm inside :func:`terminate_as_interrupt`."""

    def __init__(self):
        self.pending: int | None = None  # the signal waiting to be delivered again

    def __call__(self, signum, frame):
        if signum != signal.SIGALRM:
            self.pending = signum
        elif self.pending is None:
            return  # a stray alarm
        if _deferring:
            return  # delivered when the deferred block ends
        if _in_finalizer(frame):
            signal.setitimer(signal.ITIMER_REAL, RETRY_S)
            return
        self.deliver()

    def deliver(self) -> None:
        """Raise the pending signal's exception (nothing when none is pending)."""
        signo, self.pending = self.pending, None
        if signo is None:
            return
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
    global _active
    deliver = _Deliver()
    outer, _active = _active, deliver
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
        _active = outer


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """SIGTERM and SIGINT that land inside the block are delivered (raised) when it ends, even
    when it ends by an exception; for code that cannot be interrupted in the middle (see the
    module's text). Only inside :func:`terminate_as_interrupt`, in the main thread."""
    global _deferring
    if _active is None or threading.current_thread() is not threading.main_thread():
        yield
        return
    _deferring += 1
    try:
        yield
    finally:
        _deferring -= 1
        if not _deferring and _active is not None:
            _active.deliver()
