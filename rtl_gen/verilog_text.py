"""A component's Verilog text as the generator writes it: no source paths, every all-zero
memory initialization one loop, the ``always @*`` blocks woken at time zero, the modules it
instantiates by name after it (:func:`to_verilog`). The one Verilog writer of
``rtl_gen.generate``, of a component that instantiates others by name (``rtl_gen.attention``)
and of the harnesses and netlists above."""

from __future__ import annotations

import re

from amaranth.back import verilog
from amaranth.lib import wiring

__all__ = ["collapse_zero_init", "named_signals", "start_up_trigger", "to_verilog", "verilog_ref"]


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


#: Yosys's time-zero trigger of a module's ``always @*`` blocks, declared with its initialiser.
_TRIGGER = re.compile(
    r"^  reg (?P<name>\\\$auto\$verilog_backend\.cc:\d+:dump_module\$\d+) += 0;\n", re.MULTILINE)


def start_up_trigger(text: str) -> str:
    """Give each module's ``always @*`` trigger its time-zero value in an ``initial`` statement
    instead of the declaration, so the blocks run once at time zero under every language mode.

    Yosys writes ``reg \\$auto$verilog_backend...$1 = 0;`` and reads it in every ``always @*``
    block: Verilog-2005 makes the initialiser an assignment at time zero, which wakes the
    blocks. SystemVerilog (Icarus ``-g2012``, cocotb's runner default) applies it before any
    process starts, so no block ever runs for inputs that never change, and outputs such as an
    idle tile's ``busy`` or ``s_axis__tready`` stay X. ``reg x; initial x = 1'h0;`` (the X to
    0 change, at the end of the module, after its ``always`` blocks) wakes them in both modes;
    Verilator and Yosys read the same initial value as before.
    """
    out = []
    for module in re.split(r"(?<=\nendmodule\n)", text):
        m = _TRIGGER.search(module)
        if m is not None:
            name = m["name"]
            end = module.rindex("endmodule")
            module = (module[:m.start()] + f"  reg {name} ;\n" + module[m.end():end]
                      + f"  initial {name} = 1'h0;\n" + module[end:])
        out.append(module)
    return "".join(out)


def to_verilog(component: wiring.Component, name: str) -> str:
    """Verilog of ``component`` as module ``name``: no source paths, zero memories as loops,
    the ``always @*`` blocks woken at time zero in every language mode (:func:`start_up_trigger`);
    then the modules it instantiates by name (its ``extra_verilog()``, if it has one)."""
    text = start_up_trigger(collapse_zero_init(
        verilog.convert(component, name=name, emit_src=False)))
    extra = getattr(component, "extra_verilog", None)
    return text + extra() if extra is not None else text


def named_signals(component: wiring.Component, name: str):
    """``component`` elaborated once, and where each of its signals that has a name in Verilog
    is in the text :func:`to_verilog` writes of it as module ``name``: ``(fragment, names)``,
    ``names`` Amaranth's ``SignalDict`` of signal -> its path below module ``name``
    (the instance names, then its wire: ``("qk", "weights", "$signature__data")``).

    The names are Amaranth's own (``amaranth.back.rtlil.convert_fragment``'s map, the one
    conversion :func:`to_verilog` makes, and Yosys's ``write_verilog -norename`` keeps them):
    a simulator of the generated Verilog can read the signals of the fragment's submodules
    by these paths (:func:`verilog_ref`)."""
    from amaranth.back import rtlil
    from amaranth.hdl import Fragment, Value

    # the port directions as amaranth.back.verilog.convert gives them (no public name)
    from amaranth.hdl._ir import PortDirection

    ports = {"__".join(map(str, path)): (Value.cast(value), PortDirection.Input
                                         if member.flow == wiring.In else PortDirection.Output)
             for path, member, value in component.signature.flatten(component)}
    fragment = Fragment.get(component, None)
    _, where = rtlil.convert_fragment(fragment, ports, name, emit_src=False)
    names = type(where)()  # a SignalDict (Amaranth's signals are not hashable)
    for sig, path in where.items():
        names[sig] = path[1:]
    return fragment, names


#: A Verilog simple identifier (else it is written escaped, ``\name ``, as Yosys writes it).
_SIMPLE_ID = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*")


def verilog_ref(path: tuple[str, ...] | list[str]) -> str:
    """A hierarchical reference to ``path`` (instance names, then a wire: a path of
    :func:`named_signals`), each part escaped where Yosys escapes it (``\\$x `` for ``$x``)."""
    return ".".join(p if _SIMPLE_ID.fullmatch(p) else f"\\{p} " for p in path)
