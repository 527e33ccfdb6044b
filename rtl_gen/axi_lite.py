"""AXI4-Lite: the bus signature and the register file built from a compiled register map.

:func:`axi_lite_signature` is the slave's side of an AXI4-Lite bus (32-bit data, the five
channels AW, W, B, AR, R with their ``*valid``/``*ready`` handshakes). :class:`RegisterFile`
implements the registers of an :class:`rtl_gen.regmap.RegisterMap` (compiled from
``rtl_gen/regmap/mttfs_axi.rdl``) behind such a bus:

- a write is taken when ``awvalid`` and ``wvalid`` are both high (and ``wstall`` is low),
  honours ``wstrb`` per byte, and is answered on B: OKAY, or SLVERR for an address no register
  occupies or a register without a writable field (the write then changes nothing);
- a read is taken when ``rvalid`` is low and answered on R with the register's value, or 0 and
  SLVERR for an unmapped address;
- ``bvalid``/``rvalid`` and their response stay put until ``bready``/``rready``: the stream
  rule of every AXI channel (proven in ``formal/axi.py``).

One transaction per channel at a time; the byte address's two low bits are ignored (AXI4-Lite
accesses here are whole 32-bit words). docs/rtl_axi.md describes the register map.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from rtl_gen.params import check_int
from rtl_gen.regmap import Register, RegisterMap

__all__ = ["DATA_BITS", "OKAY", "SLVERR", "RegisterFile", "axi_lite_signature", "field_port"]

#: Data bits of the bus (AXI4-Lite allows 32 or 64; every register here is 32 bits).
DATA_BITS = 32
#: AXI response codes.
OKAY, SLVERR = 0b00, 0b10
#: Widest address the wrapper accepts.
MAX_ADDR_BITS = 32


def axi_lite_signature(addr_width: int) -> wiring.Signature:
    """The AXI4-Lite bus from the master's side (as ``amaranth.lib.stream.Signature`` is from
    the source's): a slave has it as ``In(axi_lite_signature(w))``. Members are the AXI names,
    lower case."""
    check_int("addr_width", addr_width, 1, MAX_ADDR_BITS)
    return wiring.Signature({
        "awaddr": Out(addr_width), "awprot": Out(3), "awvalid": Out(1), "awready": In(1),
        "wdata": Out(DATA_BITS), "wstrb": Out(DATA_BITS // 8), "wvalid": Out(1), "wready": In(1),
        "bresp": In(2), "bvalid": In(1), "bready": Out(1),
        "araddr": Out(addr_width), "arprot": Out(3), "arvalid": Out(1), "arready": In(1),
        "rdata": In(DATA_BITS), "rresp": In(2), "rvalid": In(1), "rready": Out(1),
    })


def field_port(register: Register, field: str, suffix: str = "") -> str:
    """Name of the hardware port of ``field`` of ``register``: ``<ident>__<field>[_suffix]``."""
    return f"{register.ident}__{field}" + (f"_{suffix}" if suffix else "")


class RegisterFile(wiring.Component):
    """The registers of ``regmap`` behind an AXI4-Lite slave.

    Parameters
    ----------
    regmap : RegisterMap
        The compiled map (:func:`rtl_gen.regmap.register_map`).
    addr_width : int
        Bits of ``awaddr``/``araddr``; the map must fit in ``2**addr_width`` bytes.

    Members
    -------
    bus : In(axi_lite_signature(addr_width))
    wstall : In(1)
        While high, no write is taken (the environment's pending work reads the stored fields).
    <reg>__<field> : In(width) or Out(width)
        One port per field the hardware sees (:func:`field_port`): ``hw`` fields are inputs
        (software reads them), ``store`` fields outputs (the stored value).
    <reg>__<field>_swmod : Out(1)
        High for one clock after software wrote the register of a ``store`` field with
        ``swmod``.
    <reg>__<field>_hwset : In(1)
        Sets a ``sticky`` field.

    Raises
    ------
    TypeError
        ``regmap`` is not a :class:`RegisterMap`.
    ValueError
        ``addr_width`` is out of range or too narrow for the map; the message names both.
    """

    def __init__(self, regmap: RegisterMap, addr_width: int):
        if not isinstance(regmap, RegisterMap):
            raise TypeError(f"regmap must be a RegisterMap, not {regmap!r}")
        check_addr_width(regmap, addr_width)
        self._regmap = regmap
        members: dict[str, object] = {"bus": In(axi_lite_signature(addr_width)),
                                      "wstall": In(1)}
        for reg in regmap.registers:
            for f in reg.fields:
                if f.kind == "hw":
                    members[field_port(reg, f.name)] = In(f.width)
                elif f.kind == "store":
                    members[field_port(reg, f.name)] = Out(f.width, init=f.reset)
                    if f.swmod:
                        members[field_port(reg, f.name, "swmod")] = Out(1)
                elif f.kind == "sticky":
                    members[field_port(reg, f.name, "hwset")] = In(1)
        super().__init__(members)

    @property
    def regmap(self) -> RegisterMap:
        return self._regmap

    def elaborate(self, platform):
        m = Module()
        bus = self.bus
        word = slice(2, len(bus.awaddr))
        sticky: dict[tuple[str, str], Signal] = {}
        for reg in self._regmap.registers:
            for f in reg.fields:
                if f.kind == "sticky":
                    s = sticky[reg.name, f.name] = Signal(f.width, init=f.reset,
                                                          name=f"{reg.ident}__{f.name}")
                    with m.If(getattr(self, field_port(reg, f.name, "hwset"))):
                        m.d.sync += s.eq(1)

        def value(reg: Register):
            """The register as software reads it."""
            parts, pos = [], 0
            for f in reg.fields:
                if f.lsb > pos:
                    parts.append(Const(0, f.lsb - pos))
                if f.kind == "const":
                    parts.append(Const(f.reset, f.width))
                elif f.kind == "sticky":
                    parts.append(sticky[reg.name, f.name])
                else:
                    parts.append(getattr(self, field_port(reg, f.name)))
                pos = f.lsb + f.width
            return Cat(*parts)

        # -- write: AW and W together, answered on B ---------------------------------------
        bvalid, bresp = Signal(), Signal(2)
        take_w = Signal()
        m.d.comb += [
            take_w.eq(bus.awvalid & bus.wvalid & ~bvalid & ~self.wstall),
            bus.awready.eq(take_w), bus.wready.eq(take_w),
            bus.bvalid.eq(bvalid), bus.bresp.eq(bresp),
        ]
        with m.If(bvalid & bus.bready):
            m.d.sync += bvalid.eq(0)
        strobe = Signal(DATA_BITS)
        m.d.comb += strobe.eq(Cat(*(b.replicate(8) for b in bus.wstrb)))
        for reg in self._regmap.registers:
            for f in reg.fields:
                if f.swmod:
                    m.d.sync += getattr(self, field_port(reg, f.name, "swmod")).eq(0)
        with m.If(take_w):
            m.d.sync += [bvalid.eq(1), bresp.eq(SLVERR)]
            with m.Switch(bus.awaddr[word]):
                for reg in self._regmap.registers:
                    if not reg.writable:
                        continue
                    with m.Case(reg.address >> 2):
                        m.d.sync += bresp.eq(OKAY)
                        for f in reg.fields:
                            bits = slice(f.lsb, f.lsb + f.width)
                            data, mask = bus.wdata[bits], strobe[bits]
                            if f.kind == "store":
                                port = getattr(self, field_port(reg, f.name))
                                m.d.sync += port.eq((port & ~mask) | (data & mask))
                                if f.swmod:
                                    m.d.sync += getattr(
                                        self, field_port(reg, f.name, "swmod")).eq(1)
                            elif f.kind == "sticky":
                                s = sticky[reg.name, f.name]
                                hwset = getattr(self, field_port(reg, f.name, "hwset"))
                                # a set in the same clock wins: the event is not lost
                                m.d.sync += s.eq((s & ~(data & mask)) | hwset)

        # -- read: AR, answered on R ------------------------------------------------------------
        rvalid, rresp, rdata = Signal(), Signal(2), Signal(DATA_BITS)
        take_r = Signal()
        m.d.comb += [
            take_r.eq(bus.arvalid & ~rvalid),
            bus.arready.eq(~rvalid),
            bus.rvalid.eq(rvalid), bus.rresp.eq(rresp), bus.rdata.eq(rdata),
        ]
        with m.If(rvalid & bus.rready):
            m.d.sync += rvalid.eq(0)
        with m.If(take_r):
            m.d.sync += [rvalid.eq(1), rresp.eq(SLVERR), rdata.eq(0)]
            with m.Switch(bus.araddr[word]):
                for reg in self._regmap.registers:
                    with m.Case(reg.address >> 2):
                        m.d.sync += [rresp.eq(OKAY), rdata.eq(value(reg))]
        return m


def check_addr_width(regmap: RegisterMap, addr_width: object) -> int:
    """Return ``addr_width`` if the map fits in ``2**addr_width`` bytes, else raise one line
    naming the map's size and the widths that would hold it."""
    lo = max(regmap.address_bits, 3)
    if isinstance(addr_width, bool) or not isinstance(addr_width, int):
        raise TypeError(f"axil_addr_width must be an integer, not {addr_width!r}")
    if not lo <= addr_width <= MAX_ADDR_BITS:
        raise ValueError(
            f"axil_addr_width must be in {lo}..{MAX_ADDR_BITS} for the {regmap.name} register "
            f"map ({regmap.size:#x} bytes), not {addr_width}")
    return addr_width
