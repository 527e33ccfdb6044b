"""Interruption: SIGTERM treated like Ctrl-C, so every ``finally`` and context manager runs.

Python turns SIGINT into :class:`KeyboardInterrupt`, which unwinds the stack and lets
``staging_dir`` and ``tempfile.TemporaryDirectory`` remove their folders. SIGTERM (``kill``,
a job scheduler, a CI timeout) ends the process at once by default and leaves them behind;
inside :func:`terminate_as_interrupt` it raises :class:`Terminated` instead.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

__all__ = ["Terminated", "terminate_as_interrupt"]


class Terminated(KeyboardInterrupt):
    """Raised in the main thread when the process receives SIGTERM."""


def _raise(signum, frame):  # noqa: ARG001 (signal handler signature)
    raise Terminated(f"terminated by {signal.Signals(signum).name}")


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[bool]:
    """SIGTERM raises :class:`Terminated` inside the block (main thread only; elsewhere the
    block runs unchanged); the previous handler is restored after. Yields whether installed."""
    if threading.current_thread() is not threading.main_thread():
        yield False
        return
    previous = signal.signal(signal.SIGTERM, _raise)
    try:
        yield True
    finally:
        signal.signal(signal.SIGTERM, previous)
