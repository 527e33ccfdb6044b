"""What a command says on the console, and how much (docs/reliability.md, "The console").

One setting for the whole process, chosen by ``matterhorn``'s ``--quiet``, ``--verbose`` and
``--debug`` (:func:`set_level`):

- standard output carries the command's result: :func:`out` (its verdict, the path of its
  report), :func:`detail` (more of it, with ``--verbose``); nothing with ``--quiet``;
- standard error carries progress (:class:`Steps`): on a terminal a bar with the steps done and
  an estimate of the time left (``tqdm``), otherwise one line per step with the elapsed time;
  nothing with ``--quiet``; and the errors, always.

Libraries below the command line report progress through :func:`steps`, never with ``print``:
what reaches the console is decided here, once.
"""

from __future__ import annotations

import math
import sys
import time

__all__ = [
    "DEBUG",
    "NORMAL",
    "QUIET",
    "VERBOSE",
    "Steps",
    "detail",
    "is_terminal",
    "level",
    "note",
    "out",
    "set_level",
    "steps",
]

QUIET, NORMAL, VERBOSE, DEBUG = 0, 1, 2, 3
_LEVEL = NORMAL


def set_level(value: int) -> None:
    """Set how much the process says (:data:`QUIET` .. :data:`DEBUG`)."""
    global _LEVEL
    if value not in (QUIET, NORMAL, VERBOSE, DEBUG):
        raise ValueError(f"console level must be one of 0..3, not {value!r}")
    _LEVEL = value


def level() -> int:
    return _LEVEL


def is_terminal() -> bool:
    """Whether standard error is a terminal (progress is then a bar, else lines)."""
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced by an object without it, or closed
        return False


def _in_worker() -> bool:
    """Whether this is a worker process (a local cluster's): its progress is not shown."""
    import multiprocessing

    return multiprocessing.parent_process() is not None


def out(text: str = "") -> None:
    """A line of the command's result on standard output (not with ``--quiet``)."""
    if _LEVEL >= NORMAL:
        print(text, flush=True)


def detail(text: str = "") -> None:
    """More of the result, on standard output with ``--verbose`` (or ``--debug``) only."""
    if _LEVEL >= VERBOSE:
        print(text, flush=True)


def note(text: str) -> None:
    """A line of progress on standard error that is not a step (not with ``--quiet``)."""
    if _LEVEL >= NORMAL:
        _write_err(text)


_OPEN: list[Steps] = []


def _write_err(text: str) -> None:
    bars = [s for s in _OPEN if s._bar is not None]
    if bars:  # above the bars, which are drawn again below it
        bars[0]._bar.write(text, file=sys.stderr)
    else:
        print(text, file=sys.stderr, flush=True)


#: Most progress lines of a nested piece of work off a terminal (and its last one).
NESTED_LINES = 10


class Alert(str):
    """A step's message that is always shown: off a terminal, :class:`Steps` thins its lines
    to a tenth of the steps; a failed step's line is never thinned away."""


class Steps:
    """Progress of ``total`` steps of one piece of work, on standard error.

    On a terminal: a ``tqdm`` bar (``what``, steps done of ``total``, the time left), removed
    when the work ends. Otherwise: one line per step (per ``every`` steps, and the last),
    ``[what i/total, 12 s] message``, for the two outermost levels of nested steps (the
    inner of the two: at most :data:`NESTED_LINES` lines and its last).
    With ``--quiet``: nothing. Use as a context manager; :meth:`advance` after each step,
    :meth:`say` for a line that is not a step (a failure worth reading at once).
    """

    def __init__(self, what: str, total: int | None = None, every: int = 1):
        self.what = what
        self.total = total
        self.every = every
        self.done = 0
        self.t0 = time.monotonic()
        self._bar = None
        self._open = False
        self._silent = True

    def __enter__(self) -> Steps:
        self._open = True
        terminal = is_terminal()
        # off a terminal, the lines of the two outermost levels (a flow's stages and a stage's
        # steps); deeper ones (the tool runs of a synthesis inside a stage) stay quiet
        self._silent = _LEVEL < NORMAL or _in_worker() or (not terminal and len(_OPEN) >= 2)
        if not terminal and _OPEN and self.total:
            # a stage's own steps, off a terminal: a line per tenth of them at most, so a
            # whole flow's log stays about a screen (a synthesis' 53 tool runs, a corpus' 632
            # sentences)
            self.every = max(self.every, math.ceil(self.total / NESTED_LINES))
        if not self._silent and terminal:
            from tqdm import tqdm

            self._bar = tqdm(total=self.total, desc=self.what, file=sys.stderr, leave=False,
                             dynamic_ncols=True, mininterval=0.5, unit="step")
        _OPEN.append(self)
        return self

    def __exit__(self, *exc) -> None:
        self._open = False
        if self in _OPEN:
            _OPEN.remove(self)
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def set_total(self, total: int) -> None:
        """The number of steps, once it is known (or grows)."""
        self.total = total
        if self._bar is not None:
            self._bar.total = total
            self._bar.refresh()

    def advance(self, message: str = "", n: int = 1) -> None:
        """``n`` steps are done; ``message`` says which."""
        self.done += n
        if self._silent:
            return
        if self._bar is not None:
            if message:
                self._bar.set_postfix_str(message[:60], refresh=False)
            self._bar.update(n)
            return
        if self.done % self.every and self.done != self.total and not isinstance(message, Alert):
            return
        of = f"/{self.total}" if self.total else ""
        elapsed = time.monotonic() - self.t0
        text = f"[{self.what} {self.done}{of}, {elapsed:.0f} s]"
        _write_err(f"{text} {message}" if message else text)

    def start(self, message: str) -> None:
        """The next step starts: on a terminal its name beside the bar, otherwise a line."""
        if self._silent:
            return
        if self._bar is not None:
            self._bar.set_postfix_str(message[:60])
            return
        of = f"/{self.total}" if self.total else ""
        elapsed = time.monotonic() - self.t0
        _write_err(f"[{self.what} {self.done}{of}, {elapsed:.0f} s] {message}")

    def say(self, message: str) -> None:
        """A line that is not a step (above the bar on a terminal)."""
        note(message)


def steps(what: str, total: int | None = None, every: int = 1) -> Steps:
    """:class:`Steps` for ``with console.steps("regress", len(jobs)) as s: ... s.advance(name)``."""
    return Steps(what, total, every)
