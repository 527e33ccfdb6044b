"""In-order scoreboard: observed transactions must equal expected ones, one for one, in order.

Pure Python (no simulator), so the self-checks that prove it can fail run in plain pytest too.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Mismatch:
    """One disagreement: ``kind`` is ``"value"``, ``"unexpected"`` or ``"missing"``."""

    stream: str
    index: int
    kind: str
    expected: object = None
    observed: object = None

    def __str__(self) -> str:
        return (
            f"{self.stream}[{self.index}] {self.kind}: expected {self.expected!r}, "
            f"observed {self.observed!r}"
        )


@dataclass
class InOrderScoreboard:
    """Compare a stream of observed items against the expected items, in order.

    Parameters
    ----------
    name : str
        Stream name used in mismatch reports.

    Members
    -------
    matched : int
        Items observed equal to the expected item at their position.
    mismatches : list of Mismatch
        Every disagreement so far (a missing item is only known at :meth:`finish`).
    """

    name: str
    matched: int = 0
    mismatches: list[Mismatch] = field(default_factory=list)
    _expected: deque = field(default_factory=deque)
    _seen: int = 0

    def expect(self, item: Hashable) -> None:
        self._expected.append(item)

    def expect_all(self, items: Iterable[Hashable]) -> None:
        for item in items:
            self.expect(item)

    @property
    def pending(self) -> int:
        """Expected items not observed yet."""
        return len(self._expected)

    @property
    def observed(self) -> int:
        return self._seen

    def observe(self, item: Hashable) -> bool:
        """Check one observed item; return whether it matched."""
        index = self._seen
        self._seen += 1
        if not self._expected:
            self.mismatches.append(Mismatch(self.name, index, "unexpected", None, item))
            return False
        want = self._expected.popleft()
        if want != item:
            self.mismatches.append(Mismatch(self.name, index, "value", want, item))
            return False
        self.matched += 1
        return True

    def finish(self) -> list[Mismatch]:
        """Report every expected item that never came as ``"missing"``; return all mismatches."""
        index = self._seen
        while self._expected:
            self.mismatches.append(
                Mismatch(self.name, index, "missing", self._expected.popleft(), None)
            )
            index += 1
        return self.mismatches

    def discard(self) -> None:
        """Forget pending expectations (after a reset aborted the window that produced them)."""
        self._expected.clear()

    @property
    def passed(self) -> bool:
        return not self.mismatches and not self._expected
