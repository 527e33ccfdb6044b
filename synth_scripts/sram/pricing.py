"""A memory's energy from its recorded accesses, priced at its macros' measured energies.

A memory of the design (:class:`synth_scripts.sram.shapes.MemoryShape`) is banked into macros
(:func:`synth_scripts.sram.shapes.bank`: ``width`` side by side, ``depth`` stacked). Per clock
cycle of the run, each of its macros is in one of three states, each priced at the macro's
entry of the table (:mod:`synth_scripts.sram.table`):

| the memory's cycle | its macros |
| --- | --- |
| a read (a word) | ``width`` reads; the other ``width x (depth - 1)`` macros deselected |
| a write of a whole word | ``width`` writes; the others deselected |
| a write of one granule (a key code) | one write; the other ``width x depth - 1`` deselected |
| idle | every macro deselected |

With ``gated``, a macro's clock runs only in the cycles it is read or written (the deselected
macros and idle cycles cost nothing but leakage): the figure beside the block's clock-gated
total; without, every macro's clock runs every cycle of the run.

A granule is ``MemoryShape.granularity`` bits; the macro has no write mask, so a whole macro
word is driven: an upper bound of a masked write. And leakage: every macro's ``leakage_uW``
over the run's time (``cycles x clock period``).

:func:`cross_check` sets a macro's read energy per bit beside the per-bit SRAM figure the
block's pricing uses (Horowitz, ISSCC 2014, in the PDK table, :func:`synth_scripts.scaling.
sram_bit_pJ`) and beside OpenRAM's analytical model of the same macro.
"""

from __future__ import annotations

from dataclasses import dataclass

from synth_scripts.sram.macros import MACRO_SHAPES, Shape
from synth_scripts.sram.shapes import Banking, MemoryShape, bank
from synth_scripts.sram.table import NOMINAL, MacroTable, load

__all__ = ["MemoryEnergy", "cross_check", "horowitz_bit_pJ", "memory_energy"]


@dataclass(frozen=True)
class MemoryEnergy:
    """A memory's energy over a run, pJ: ``read``, ``write``, ``deselected`` (the clock of its
    idle macros), ``leakage``; ``banking`` and the table entry's ``source``."""

    read: float
    write: float
    deselected: float
    leakage: float
    banking: Banking
    source: str

    @property
    def dynamic(self) -> float:
        return self.read + self.write + self.deselected

    @property
    def total(self) -> float:
        return self.dynamic + self.leakage

    def to_json(self) -> dict:
        return {"read_pJ": self.read, "write_pJ": self.write, "deselected_pJ": self.deselected,
                "leakage_pJ": self.leakage, "total_pJ": self.total,
                "banking": self.banking.to_json(), "source": self.source}


def _count(name: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be a non-negative integer, not {value!r}")
    return value


def memory_energy(memory: MemoryShape, *, reads: int, writes: int = 0,
                  granule_writes: int = 0, idle_cycles: int = 0, cycles: int | None = None,
                  clock_ns: float, gated: bool = False, table: MacroTable | None = None,
                  corner: str = NOMINAL, shapes: tuple[Shape, ...] = MACRO_SHAPES
                  ) -> MemoryEnergy:
    """``memory``'s energy over a run (module docstring).

    ``reads``, ``writes`` (whole words) and ``granule_writes`` are the cycles with each kind of
    access; ``idle_cycles`` the cycles with none; ``cycles`` the run's length for leakage
    (default: the sum of the four); ``clock_ns`` its period; ``gated``: the macros' clocks run
    only when they are accessed. The table defaults to the shipped one.
    """
    reads, writes = _count("reads", reads), _count("writes", writes)
    granule_writes, idle_cycles = (_count("granule_writes", granule_writes),
                                   _count("idle_cycles", idle_cycles))
    busy = reads + writes + granule_writes + idle_cycles
    cycles = busy if cycles is None else _count("cycles", cycles)
    if cycles < reads + writes + granule_writes:
        raise ValueError(f"cycles={cycles} is fewer than the accesses "
                         f"({reads + writes + granule_writes})")
    if not clock_ns > 0:
        raise ValueError(f"clock_ns must be positive, not {clock_ns!r}")
    if granule_writes and memory.granularity is None:
        raise ValueError(f"memory {memory.path} writes whole words: granule_writes must be 0")
    table = load() if table is None else table
    b = bank(memory, shapes)
    e = table.entry(b.macro, corner)
    n, w = b.macros, b.width
    read = reads * w * e["read_pJ"]
    write = (writes * w + granule_writes) * e["write_pJ"]
    deselected = 0.0 if gated else e["deselected_pJ"] * (
        (reads + writes) * (n - w) + granule_writes * (n - 1) + idle_cycles * n)
    leakage = n * e["leakage_uW"] * 1e-6 * cycles * clock_ns * 1e-9 * 1e12
    return MemoryEnergy(read, write, deselected, leakage, b,
                        f"{table.source}: {b.macro.name} at {corner}")


def horowitz_bit_pJ(vdd: float, pdk_name: str = "nangate45") -> float:
    """The PDK table's per-bit SRAM read energy (Horowitz, ISSCC 2014) scaled to its node at
    ``vdd`` (Stillmaker & Baas), as :func:`synth_scripts.scaling.sram_bit_pJ` scales it to the
    liberty's nominal supply."""
    from synth_scripts.gatelevel import pdk
    from synth_scripts.scaling import energy_factor

    table = pdk.table(pdk_name)
    bit = table.sram_bit
    node = table.scaling["model"]
    return bit["pJ_per_bit"] * energy_factor(node, vdd) / energy_factor(bit["node"], bit["vdd_V"])


def cross_check(shapes: tuple[Shape, ...] = MACRO_SHAPES, table: MacroTable | None = None,
                corner: str = NOMINAL, pdk_name: str = "nangate45") -> list[dict]:
    """Per macro shape: its measured read energy per bit, the per-bit figure of the PDK table
    (Horowitz) at the macro's supply and at the liberty's (what the block's pricing charges
    today), OpenRAM's analytical access energy per bit, and the ratios."""
    from synth_scripts.gatelevel import pdk

    table = load() if table is None else table
    lib_vdd = pdk.table(pdk_name).supply_V
    rows = []
    for shape in shapes:
        e = table.entry(shape, corner)
        vdd = e["bench"]["vdd"]
        bit = e["read_pJ"] / shape.bits
        hz, hz_lib = horowitz_bit_pJ(vdd, pdk_name), horowitz_bit_pJ(lib_vdd, pdk_name)
        ana = e["openram_analytical"]["access_pJ"] / shape.bits
        rows.append({
            "shape": shape.name, "vdd_V": vdd, "read_pJ_per_bit": bit,
            "horowitz_pJ_per_bit": hz, "horowitz_at_liberty_pJ_per_bit": hz_lib,
            "liberty_vdd_V": lib_vdd, "openram_analytical_pJ_per_bit": ana,
            "macro_over_horowitz": bit / hz, "macro_over_horowitz_at_liberty": bit / hz_lib,
            "macro_over_openram_analytical": bit / ana,
        })
    return rows
