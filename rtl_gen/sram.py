"""Synchronous single-port SRAM: the bus signature, a behavioural RAM and a macro wrapper.

The tile keeps weight rows, threshold rows and folded init values in SRAMs of this one
interface (docs/design.md, "The hardware"; docs/rtl_sram.md), so a memory compiler's macro can
replace the behavioural model without touching the tile: the wrapper keeps the same bus and read
counter.
"""

from __future__ import annotations

from amaranth.hdl import ClockSignal, Instance, Module
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from rtl_gen.params import check_config, check_int, index_width

__all__ = ["MACRO_MODEL", "MACRO_NAME", "MACRO_STUB", "SRAM", "SRAMSignature", "sram_from_config"]

#: Module name of the black-box macro the wrapper instantiates.
MACRO_NAME = "mttfs_sram_macro"


def _macro_module(rdata: str, body: str) -> str:
    """Verilog module of the macro: the one parameter and port list, ``body`` inside."""
    return f"""module {MACRO_NAME} #(
    parameter DEPTH = 1,
    parameter WIDTH = 1,
    parameter ADDR_WIDTH = 1
) (
    input wire CLK,
    input wire [ADDR_WIDTH-1:0] ADDR,
    input wire REN,
    output {rdata} [WIDTH-1:0] RDATA,
    input wire WEN,
    input wire [WIDTH-1:0] WDATA
);
{body}endmodule
"""


#: Behavioural stand-in for the memory compiler's macro (written only with ``sram_macro``).
MACRO_MODEL = """// Behavioural stand-in for the SRAM macro instantiated with sram_macro.
// Replace this file with the memory compiler's model; the ports and timing are the same:
// synchronous single port, RDATA shows mem[ADDR] after the edge where REN is high.
// Every row and RDATA start at 0, as the behavioural SRAM does (a real macro may not).
""" + _macro_module("reg", """    reg [WIDTH-1:0] mem [0:DEPTH-1];
    integer i;
    initial begin
        RDATA = {WIDTH{1'b0}};
        for (i = 0; i < DEPTH; i = i + 1) mem[i] = {WIDTH{1'b0}};
    end
    always @(posedge CLK) begin
        if (WEN) mem[ADDR] <= WDATA;
        if (REN) RDATA <= mem[ADDR];
    end
""")

#: Empty black box of the macro, for tools that must read the wrappers without a model (e.g.
#: Yosys ``read_verilog -lib`` before cutting the macros out): same parameters and ports.
MACRO_STUB = "(* blackbox *)\n" + _macro_module("wire", "")
#: Largest SRAM the generator makes (rows x bits), to catch runaway parameters early.
MAX_DEPTH = 1 << 16
MAX_WIDTH = 1 << 14


class SRAMSignature(wiring.Signature):
    """Bus of a synchronous single-port RAM, seen from the side that drives the address.

    Members
    -------
    addr : Out(addr_width)
        Row address, shared by reads and writes (single port).
    ren : Out(1)
        Read enable: ``rdata`` shows ``mem[addr]`` after the next clock edge, and holds while
        ``ren`` is low.
    rdata : In(data_width)
    wen : Out(1)
        Write enable: ``mem[addr] <= wdata`` at the clock edge.
    wdata : Out(data_width)

    Parameters
    ----------
    addr_width, data_width : int
    """

    def __init__(self, addr_width: int, data_width: int):
        check_int("addr_width", addr_width, 1, 32)
        check_int("data_width", data_width, 1, MAX_WIDTH)
        self._addr_width = addr_width
        self._data_width = data_width
        super().__init__({
            "addr": Out(addr_width),
            "ren": Out(1),
            "rdata": In(data_width),
            "wen": Out(1),
            "wdata": Out(data_width),
        })

    @property
    def addr_width(self) -> int:
        return self._addr_width

    @property
    def data_width(self) -> int:
        return self._data_width

    def __eq__(self, other):
        return (isinstance(other, SRAMSignature) and self.addr_width == other.addr_width
                and self.data_width == other.data_width)

    def __hash__(self):
        return hash((SRAMSignature, self._addr_width, self._data_width))

    def __repr__(self):
        return f"SRAMSignature({self._addr_width}, {self._data_width})"


class SRAM(wiring.Component):
    """Synchronous single-port RAM with a read counter.

    Parameters
    ----------
    depth : int
        Rows, 1..65536.
    width : int
        Bits per row, 1..16384.
    macro : bool
        ``False``: behavioural RAM on :class:`amaranth.lib.memory.Memory`. ``True``: a wrapper
        around a black box ``mttfs_sram_macro`` (parameters ``DEPTH``, ``WIDTH``,
        ``ADDR_WIDTH``; ports ``CLK``, ``ADDR``, ``REN``, ``RDATA``, ``WEN``, ``WDATA``).
    counter_width : int
        Width of the ``reads`` counter (wraps), 1..64.

    Members
    -------
    bus : In(SRAMSignature(max(1, ceil(log2(depth))), width))
    reads : Out(counter_width)
        Clock edges with ``ren`` high since reset: every read is counted.
    """

    def __init__(self, *, depth: int, width: int, macro: bool = False, counter_width: int = 32):
        check_int("depth", depth, 1, MAX_DEPTH)
        check_int("width", width, 1, MAX_WIDTH)
        if not isinstance(macro, bool):
            raise TypeError(f"macro must be a bool, not {macro!r}")
        check_int("counter_width", counter_width, 1, 64)
        self._depth = depth
        self._width = width
        self._macro = macro
        super().__init__({
            "bus": In(SRAMSignature(index_width(depth), width)),
            "reads": Out(counter_width),
        })

    @property
    def depth(self) -> int:
        return self._depth

    @property
    def width(self) -> int:
        return self._width

    @property
    def macro(self) -> bool:
        return self._macro

    def elaborate(self, platform):
        m = Module()
        bus = self.bus
        with m.If(bus.ren):
            m.d.sync += self.reads.eq(self.reads + 1)
        if self._macro:
            m.submodules.macro = Instance(
                MACRO_NAME,
                p_DEPTH=self._depth,
                p_WIDTH=self._width,
                p_ADDR_WIDTH=bus.addr.shape().width,
                i_CLK=ClockSignal(),
                i_ADDR=bus.addr,
                i_REN=bus.ren,
                o_RDATA=bus.rdata,
                i_WEN=bus.wen,
                i_WDATA=bus.wdata,
            )
            return m
        m.submodules.mem = mem = Memory(shape=self._width, depth=self._depth, init=[])
        rd = mem.read_port()
        wr = mem.write_port()
        m.d.comb += [
            rd.addr.eq(bus.addr),
            rd.en.eq(bus.ren),
            bus.rdata.eq(rd.data),
            wr.addr.eq(bus.addr),
            wr.en.eq(bus.wen),
            wr.data.eq(bus.wdata),
        ]
        return m


def sram_from_config(config) -> SRAM:
    """The stand-alone ``mttfs_sram`` of an :class:`rtl_gen.params.RTLConfig`: a tile's weight
    SRAM (``n_in`` rows of ``weight_row_width`` bits), a macro wrapper with ``sram_macro``."""
    check_config(config)
    return SRAM(depth=config.n_in, width=config.weight_row_width, macro=config.sram_macro)
