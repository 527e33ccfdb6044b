"""Proof harness of the AXI wrapper's stream rule (``rtl_gen.axi.AxiShell``, docs/formal.md).

The wrapper's own logic (its register file, load beats, stream adapters and counter snapshot)
sits between free AXI masters and a free block: the AXI4-Lite AW, W and AR channels and the
AXI4-Stream input obey the stream rule (assumed, as AXI requires of a master), the block's
output stream too (proven for the blocks themselves), and every ``ready``, ``busy`` and counter
is free. Asserted, for any such traffic: every output channel holds ``valid`` and its payload
until ``ready`` -- ``m_axis`` (``tdata``, ``tlast``), the load beat to the block, and the B and
R responses of the AXI4-Lite slave (``bresp``; ``rdata``, ``rresp``).

:func:`axi_properties` lists the property and its planted bugs for ``formal.properties``.
"""

from __future__ import annotations

from types import SimpleNamespace

from amaranth.hdl import Assert, Assume, Cat

from formal.harness import Harness, drive_input, drive_ready, stream_rule
from rtl_gen.params import RTLConfig

__all__ = ["AxiStream", "axi_properties"]


def _channel(valid, ready, *payload) -> SimpleNamespace:
    """An AXI channel seen as a stream (``valid``, ``ready``, ``payload``) for
    :func:`formal.harness.stream_rule`."""
    return SimpleNamespace(valid=valid, ready=ready, payload=Cat(*payload))


class AxiStream(Harness):
    """The stream rule on every output channel of the wrapper (system or tile)."""

    def __init__(self, config: RTLConfig, kind: str = "system", module=None, lite=None):
        super().__init__()
        if module is None:
            from rtl_gen import axi as module
        self.config = config
        if lite is not None:  # a planted bug of the register file: the shell built on it
            module = _with_register_file(module, lite)
        self.dut = module.AxiShell(config, kind)

    def _drive_channel(self, m, name: str, valid, payload: list) -> None:
        """Drive an AXI input channel from free inputs that obey the stream rule (assumed)."""
        free_valid = self.free(1, f"{name}_valid")
        m.d.comb += valid.eq(free_valid)
        for sig in payload:
            m.d.comb += sig.eq(self.free(len(sig), f"{name}_{sig.name}"))

    def check(self, m):
        m.submodules.dut = dut = self.dut
        bus, blk = dut.s_axil, dut.block
        channels = {
            "aw": (bus.awvalid, bus.awready, [bus.awaddr, bus.awprot]),
            "w": (bus.wvalid, bus.wready, [bus.wdata, bus.wstrb]),
            "ar": (bus.arvalid, bus.arready, [bus.araddr, bus.arprot]),
            "s_axis": (dut.s_axis.tvalid, dut.s_axis.tready, [dut.s_axis.tdata,
                                                              dut.s_axis.tlast]),
        }
        for name, (valid, ready, payload) in channels.items():
            self._drive_channel(m, name, valid, payload)
            stream_rule(m, _channel(valid, ready, *payload), Assume, name)
        m.d.comb += [bus.bready.eq(self.free(1, "bready")),
                     bus.rready.eq(self.free(1, "rready")),
                     dut.m_axis.tready.eq(self.free(1, "m_axis_tready")),
                     blk.busy.eq(self.free(1, "busy"))]
        # the block: its output obeys the stream rule, everything else is free
        drive_input(self, m, blk.o, "o")
        drive_ready(self, m, blk.load, "load")
        drive_ready(self, m, blk.i, "i")
        for path, _ in blk.signature.members.flatten():
            name = "__".join(map(str, path))
            if name.startswith("cnt_"):
                sig = getattr(blk, name)
                m.d.comb += sig.eq(self.free(len(sig), name))
        ma = dut.m_axis
        stream_rule(m, _channel(ma.tvalid, ma.tready, ma.tdata, ma.tlast), Assert, "m_axis")
        stream_rule(m, blk.load, Assert, "load")
        stream_rule(m, _channel(bus.bvalid, bus.bready, bus.bresp), Assert, "b")
        stream_rule(m, _channel(bus.rvalid, bus.rready, bus.rdata, bus.rresp), Assert, "r")


def _with_register_file(module, lite):
    """A copy of the wrapper module ``module`` whose shell uses ``lite``'s register file."""
    from formal.harness import mutant_module

    copy = mutant_module(module.__name__, "from rtl_gen.axi_lite import RegisterFile, ",
                         "from rtl_gen.axi_lite import ")
    copy.RegisterFile = lite.RegisterFile
    return copy


def _config() -> RTLConfig:
    # two nodes: a node field in LOAD_CMD; n_in = 2: the TLAST position counter wraps
    return RTLConfig(T=4, k=1, n_in=2, tile_neurons=1, mesh_rows=1, mesh_cols=2)


def _build(kind: str):
    def build(module=None):
        from rtl_gen import axi, axi_lite

        if module is None:
            return AxiStream(_config(), kind)
        if module.__file__ == axi_lite.__file__:
            return AxiStream(_config(), kind, axi, lite=module)
        return AxiStream(_config(), kind, module)
    return build


def axi_properties() -> tuple:
    """The wrapper's properties for :data:`formal.properties.PROPERTIES`."""
    from formal.harness import Mutant, Property

    shell, lite = "rtl_gen.axi", "rtl_gen.axi_lite"
    mutants = (
        Mutant("axi_load_payload_not_held", shell, "regs.wstall.eq(pending)",
               "regs.wstall.eq(0)",
               "register writes are taken while a load beat waits, so its payload changes "
               "under it", "load: stream rule"),
        Mutant("axi_rvalid_dropped", lite, "with m.If(rvalid & bus.rready):",
               "with m.If(rvalid):", "the read response is withdrawn after one clock, taken "
               "or not", "r: stream rule"),
        Mutant("axi_bvalid_dropped", lite, "with m.If(bvalid & bus.bready):",
               "with m.If(bvalid):", "the write response is withdrawn after one clock, taken "
               "or not", "b: stream rule"),
    )
    statement = ("m_axis, the load beat, and the AXI4-Lite B and R channels obey the stream "
                 "rule")
    return (
        Property("axi_stream_rule", "axi_system",
                 {"T": 4, "n_in": 2, "tile_neurons": 1, "mesh": "1x2", "axis_width": 32},
                 "prove", 6, statement, _build("system"), mutants, instance="shell"),
        Property("axi_tile_stream_rule", "axi_tile",
                 {"T": 4, "n_in": 2, "tile_neurons": 1, "axis_width": 32},
                 "prove", 6, statement, _build("tile"), mutants[:1], instance="shell"),
    )
