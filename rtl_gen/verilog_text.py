"""A component's Verilog text as the generator writes it: no source paths, every all-zero
memory initialization one loop, the modules it instantiates by name after it
(:func:`to_verilog`). The one Verilog writer of ``rtl_gen.generate``, of a component that
instantiates others by name (``rtl_gen.attention``) and of the harnesses and netlists above."""

from __future__ import annotations

import re

from amaranth.back import verilog
from amaranth.lib import wiring

__all__ = ["collapse_zero_init", "to_verilog"]


#: One row of a memory's ``initial`` block as Yosys writes it: ``    mem[12] = 8'h00;``.
_INIT_ROW = re.compile(
    r"    (?P<name>\\?[^\s\[]+ ?)\[(?P<index>\d+)\] = (?P<width>\d+)'h(?P<value>[0-9a-f]+);\n"
)
#: The loop variable, local to each block (a memory of this name keeps its rows).
_LOOP = "zero_init_i"
_INIT_BLOCK = re.compile(r"  initial begin\n((?:    [^\n]*\n)+?)  end\n")


def collapse_zero_init(text: str) -> str:
    """Write each memory's all-zero ``initial`` block as one loop instead of a row per word.

    Amaranth gives every memory an initial value, and Yosys writes it as one assignment per
    word: at ``n_in = 4096`` that is most of the Verilog. A block whose rows set words
    ``0..depth-1`` of one memory to zero, in order, becomes a named block with a ``for`` loop
    (Verilog-2001; Icarus, Verilator and Yosys read it). The contents, zero, are unchanged;
    any other initial block is left as it is (and one of a memory named like the loop variable).
    """
    count = 0

    def loop(match: re.Match) -> str:
        nonlocal count
        body = match.group(1)
        rows = list(_INIT_ROW.finditer(body))
        if len(rows) < 4 or sum(len(r.group(0)) for r in rows) != len(body):
            return match.group(0)
        names = {r.group("name") for r in rows}
        widths = {r.group("width") for r in rows}
        if (len(names) != 1 or len(widths) != 1 or _LOOP in names
                or any(int(r.group("index")) != i for i, r in enumerate(rows))
                or any(int(r.group("value"), 16) != 0 for r in rows)):
            return match.group(0)
        count += 1
        name, width = names.pop(), widths.pop()
        return (f"  initial begin : zero_init_{count}\n"
                f"    integer {_LOOP};\n"
                f"    for ({_LOOP} = 0; {_LOOP} < {len(rows)}; {_LOOP} = {_LOOP} + 1)\n"
                f"      {name}[{_LOOP}] = {width}'h0;\n"
                f"  end\n")

    return _INIT_BLOCK.sub(loop, text)


def to_verilog(component: wiring.Component, name: str) -> str:
    """Verilog of ``component`` as module ``name``: no source paths, zero memories as loops;
    then the modules it instantiates by name (its ``extra_verilog()``, if it has one)."""
    text = collapse_zero_init(verilog.convert(component, name=name, emit_src=False))
    extra = getattr(component, "extra_verilog", None)
    return text + extra() if extra is not None else text
