"""Interruption: SIGTERM treated like Ctrl-C, so every ``finally`` and context manager runs.

Python turns SIGINT into :class:`KeyboardInterrupt`, which unwinds the stack and lets
``staging_dir`` and ``tempfile.TemporaryDirectory`` remove their folders. SIGTERM (``kill``,
a job scheduler, a CI timeout) ends the process at once by default and leaves them behind;
:func:`terminate_as_interrupt` makes it raise :class:`Terminated` instead.
"""

from __future__ import annotations

import signal
import threading

__all__ = ["Terminated", "terminate_as_interrupt"]


class Terminated(KeyboardInterrupt):
    """Raised in the main thread when the process receives SIGTERM."""


def _raise(signum, frame):  # noqa: ARG001 (signal handler signature)
    raise Terminated(f"terminated by {signal.Signals(signum).name}")


def terminate_as_interrupt() -> bool:
    """Install the SIGTERM handler (main thread only); return whether it was installed."""
    if threading.current_thread() is not threading.main_thread():
        return False
    signal.signal(signal.SIGTERM, _raise)
    return True
