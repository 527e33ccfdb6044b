"""What ``matterhorn sram`` prints: a measured macro, the shipped table, its cross-check and the
default designs' memories banked into macros."""

from __future__ import annotations

from pathlib import Path

from synth_scripts.sram.macros import Shape, openram_dir
from synth_scripts.sram.spice import Measurement
from synth_scripts.sram.table import TABLE, load, regenerate
from toolkit_base.tables import markdown_table

__all__ = ["against_shipped", "measured_line", "require_tools", "regenerate", "show"]

#: MiniLM (all-MiniLM-L6-v2) block 0 as the block's pricing generates it: hidden 384, 12 heads,
#: FFN 1536, 128 key slots a head (the energy workload's S), 512 positions a softmax row.
MINILM = {"hidden": 384, "heads": 12, "ffn": 1536, "seq_max": 128, "row_max": 512}


def require_tools() -> None:
    """OpenRAM and ngspice, or one line naming the missing one and how to install it."""
    from toolkit_base.toolchain import require

    openram_dir()
    require("ngspice")


def measured_line(m: Measurement) -> str:
    return (f"{m.shape.name} at {m.bench.corner_name}, {m.bench.period_ns:g} ns clock: read "
            f"{m.read_pJ:.3f} pJ, write {m.write_pJ:.3f} pJ, deselected {m.deselected_pJ:.3f} "
            f"pJ, leakage {m.leakage_uW:.2f} uW ({sum(m.seconds.values()):.0f} s)")


def table_lines(tab) -> list[str]:
    rows = [(m["shape"], m["corner"], f"{m['bench']['period_ns']:g}", f"{m['read_pJ']:.3f}",
             f"{m['cycles_pJ']['write_same']:.3f}", f"{m['cycles_pJ']['write_flip']:.3f}",
             f"{m['deselected_pJ']:.3f}", f"{m['leakage_uW']:.2f}",
             f"{m['provenance']['seconds_to_characterize']:.0f}") for m in tab.macros]
    return markdown_table(("macro", "corner", "clock ns", "read pJ", "write pJ (same)",
                           "write pJ (all flip)", "deselected pJ", "leakage uW", "seconds"),
                          rows, align="llrrrrrrr")


def cross_check_lines(tab) -> list[str]:
    from synth_scripts.sram.pricing import cross_check

    rows = [(r["shape"], f"{r['read_pJ_per_bit']:.4f}", f"{r['horowitz_pJ_per_bit']:.4f}",
             f"{r['macro_over_horowitz']:.2f}", f"{r['horowitz_at_liberty_pJ_per_bit']:.4f}",
             f"{r['macro_over_horowitz_at_liberty']:.2f}",
             f"{r['openram_analytical_pJ_per_bit']:.4f}",
             f"{r['macro_over_openram_analytical']:.2f}")
            for r in cross_check(tuple(tab.shapes()), tab)]
    return markdown_table(("macro", "read pJ/bit", "Horowitz pJ/bit (same V)", "ratio",
                           "Horowitz at NanGate's 1.1 V", "ratio", "OpenRAM analytical pJ/bit",
                           "ratio"), rows, align="lrrrrrrr")


def memory_lines() -> list[str]:
    from synth_scripts.sram.shapes import bank, block_memories

    rows = []
    for dense in (False, True):
        for unit, mems in block_memories(**MINILM, dense=dense).items():
            for m in mems:
                b = bank(m)
                rows.append(("dense" if dense else "M-TTFS", unit, m.path,
                             f"{m.words}x{m.bits}", str(m.granularity or "word"),
                             f"{b.width} x {b.depth} x {b.macro.name}"))
    return markdown_table(("design", "unit", "memory", "words x bits", "write granule",
                           "macros (width x depth x shape)"), rows, align="llllll")


def show() -> list[str]:
    tab = load()
    return [f"{TABLE.name} ({tab.doc['technology']})", "", *table_lines(tab), "",
            ("read energy per bit against the per-bit figure (Horowitz, ISSCC 2014) and "
             "OpenRAM's analytical model:"), "", *cross_check_lines(tab), "",
            "MiniLM block 0's memories:", "", *memory_lines()]


def against_shipped(shapes: list[Shape], table: Path, corner: str) -> list[str]:
    """Each measured shape's read, write and deselected energies against the shipped table's."""
    if table.resolve() == TABLE or not TABLE.exists():
        return []
    new, old = load(table), load()
    out = []
    for s in shapes:
        try:
            a, b = new.entry(s, corner), old.entry(s, corner)
        except ValueError:
            continue
        ratios = ", ".join(f"{k} {a[k] / b[k]:.3f}x" for k in
                           ("read_pJ", "write_pJ", "deselected_pJ", "leakage_uW"))
        out.append(f"{s.name} against the shipped table: {ratios}")
    return out
