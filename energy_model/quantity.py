"""Typed physical values: SI base units inside, prefixes only when printing.

An energy estimate is a :class:`Quantity` in joules. Unit costs are quantities in joules per
operation, per bit, per event (and per hop for movement). Strings such as ``"pJ/op"`` are parsed
into a scale factor and a denominator once, at the edge, so nothing inside the model carries a
prefix.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

#: SI prefixes accepted on energies in input files.
PREFIXES = {"": 1.0, "m": 1e-3, "u": 1e-6, "n": 1e-9, "p": 1e-12, "f": 1e-15, "a": 1e-18}
#: Joules per millijoule: the paper's printing unit.
MJ = 1e-3
#: Joules per picojoule: the paper's unit-cost unit.
PJ = 1e-12


@dataclass(frozen=True)
class Quantity:
    """A value in an SI base unit.

    Parameters
    ----------
    value : float
        Magnitude in the base unit (``J``, ``J/op``, ...), never prefixed.
    unit : str
        The base unit, e.g. ``"J"`` or ``"J/bit/hop"``.
    """

    value: float
    unit: str = "J"

    def __post_init__(self) -> None:
        if isinstance(self.value, bool) or not isinstance(self.value, int | float):
            raise TypeError(f"value must be a real number, not {self.value!r}")
        if not math.isfinite(self.value):
            raise ValueError(f"value must be finite, not {self.value!r}")

    def to(self, prefix: str) -> float:
        """The magnitude with an SI ``prefix`` on the energy (``"m"`` gives mJ, ``"p"`` pJ)."""
        if prefix not in PREFIXES:
            raise ValueError(f"prefix must be one of {sorted(PREFIXES)}, not {prefix!r}")
        return self.value / PREFIXES[prefix]

    @property
    def mJ(self) -> float:
        """The magnitude in millijoules (or mJ per unit of the denominator)."""
        return self.to("m")

    @property
    def pJ(self) -> float:
        """The magnitude in picojoules (or pJ per unit of the denominator)."""
        return self.to("p")

    def __add__(self, other: Quantity) -> Quantity:
        if not isinstance(other, Quantity) or other.unit != self.unit:
            return NotImplemented
        return Quantity(self.value + other.value, self.unit)

    def __str__(self) -> str:
        return f"{format_sig(self.mJ)} m{self.unit}"


def format_sig(x: float, digits: int = 4) -> str:
    """``x`` to ``digits`` significant digits, plain notation (the paper's table style)."""
    if x == 0 or not math.isfinite(x):
        return f"{x:g}"
    exponent = math.floor(math.log10(abs(x)))
    decimals = max(digits - 1 - exponent, 0)
    return f"{x:.{decimals}f}"


def parse_energy_unit(unit: object, name: str) -> tuple[float, str]:
    """Split an energy-cost unit like ``"pJ/bit/hop"`` into (scale to J, denominator).

    The denominator is normalised: ``"bit*hop"``, ``"bit·hop"`` and ``"bit/hop"`` all become
    ``"bit/hop"``.

    Raises
    ------
    ValueError
        If the unit is not a prefixed joule over a denominator.
    """
    if not isinstance(unit, str):
        raise TypeError(f"unit of {name} must be a string like 'pJ/op', not {unit!r}")
    text = unit.strip()
    for sep in ("·", "*", "⋅"):
        text = text.replace(sep, "/")
    energy, _, denominator = text.partition("/")
    energy = energy.strip()
    if not energy.endswith("J") or energy[:-1] not in PREFIXES or not denominator:
        raise ValueError(
            f"unit of {name} must be an energy per item such as 'pJ/op' "
            f"(prefixes {', '.join(p + 'J' for p in PREFIXES)}), not {unit!r}"
        )
    denominator = "/".join(part.strip() for part in denominator.split("/"))
    return PREFIXES[energy[:-1]], denominator
