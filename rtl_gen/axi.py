"""AXI wrappers of the tile and the system: AXI4-Stream in and out, an AXI4-Lite slave.

``mttfs_axi_tile`` and ``mttfs_axi_system`` put a generated block (``mttfs_tile``,
``mttfs_system``) behind the buses a user's SoC has (docs/rtl_axi.md):

- ``s_axis`` (AXI4-Stream in): the block's input. System: one code per beat in ``tdata``
  (two's complement for "sym"), ``n_in`` beats a vector, ``tlast`` on the last one (checked:
  a ``tlast`` anywhere else, or none there, sets ``STATUS.tlast_error``; the vector is framed
  by its count). Tile: one event ``{addr, tau}`` per beat; a beat with ``tlast`` is the
  window's end marker and carries no event.
- ``m_axis`` (AXI4-Stream out): output events ``{addr, t}`` in ``tdata``; a beat with
  ``tlast`` ends the window or inference and carries no event (``tdata`` 0).
- ``s_axil`` (AXI4-Lite slave): the registers of ``rtl_gen/regmap/mttfs_axi.rdl``:
  identification and configuration, status, load beats (``LOAD_DATA`` words, then
  ``LOAD_CMD`` sends the beat), the runs completed (``DONE``) and the activity counters.

The counters software reads are a snapshot the wrapper takes in the clock after a run ends
(its output marker taken), together with ``DONE``; while a run goes on they keep the last
run's values, so a read never mixes two runs.

The streams pass straight through (no register stage): the wrapper adds no clock to a window
or an inference. The logic of the wrapper is :class:`AxiShell` (what ``matterhorn synth``
prices, and what ``formal/axi.py`` proves the stream rule of); :class:`AxiTile` and
:class:`AxiSystem` join it to the block, as a Verilog instance of the block's own module
(``embed=False``, the generated Verilog) or as the block's component (``embed=True``, for
the Amaranth simulator).
"""

from __future__ import annotations

from amaranth.hdl import Cat, ClockSignal, Instance, Module, Mux, ResetSignal, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from rtl_gen.axi_lite import RegisterFile, axi_lite_signature, field_port
from rtl_gen.params import AXIS_WIDTHS, ConfigComponent, RTLConfig
from rtl_gen.regmap import register_map

__all__ = [
    "AxiShell",
    "AxiSystem",
    "AxiTile",
    "axi_system_from_config",
    "axi_tile_from_config",
    "axis_signature",
    "block_manifest",
    "companion_files",
    "counter_registers",
    "manifest_entry",
]

#: The block each wrapper carries: ``kind -> (wrapper module, block module)``.
BLOCKS = {"tile": ("mttfs_axi_tile", "mttfs_tile"), "system": ("mttfs_axi_system", "mttfs_system")}


def axis_signature(width: int) -> wiring.Signature:
    """An AXI4-Stream from the master's side: ``tdata``, ``tvalid``, ``tready``, ``tlast``."""
    if width not in AXIS_WIDTHS:
        raise ValueError(f"width must be one of {AXIS_WIDTHS}, not {width!r}")
    return wiring.Signature({"tdata": Out(width), "tvalid": Out(1), "tready": In(1),
                             "tlast": Out(1)})


def _block(kind: str, config: RTLConfig) -> wiring.Component:
    if kind == "tile":
        from rtl_gen.tile import NeuronTile

        return NeuronTile(config)
    from rtl_gen.system import System

    return System(config)


def counter_registers(kind: str, config: RTLConfig) -> dict[str, str]:
    """The block's counter port -> the register that holds its snapshot, in port order."""
    if kind == "tile":
        return {f"cnt_{n}": f"COUNTERS.{n}" for n in config.tile_counters}
    out = {}
    for node in range(config.mesh_rows * config.mesh_cols):
        for n in config.tile_counters:
            out[f"cnt_{n}_n{node}"] = f"NODE[{node}].{n}"
    out.update({f"cnt_enc_{n}": f"ENC_{n.upper()}" for n in config.encoder_counters})
    out.update({"cnt_flits": "FLITS", "cnt_hops": "HOPS"})
    return out


def _stream_fields(kind: str, config: RTLConfig) -> dict[str, tuple[int, int]]:
    """The fields ``tdata`` carries: ``{"in"|"out": (addr bits, time bits)}``; a code is
    ``(0, time bits)``."""
    from rtl_gen.layouts import system_widths

    tw = config.time_width
    if kind == "tile":
        return {"in": (config.in_addr_width, tw), "out": (config.out_addr_width, tw)}
    return {"in": (0, tw), "out": (system_widths(config)["out_addr"], tw)}


def check_axis_width(kind: str, config: RTLConfig) -> None:
    """Raise ``ValueError`` naming the stream and its bits when ``axis_width`` cannot carry a
    beat of ``kind``'s streams."""
    for side, (aw, tw) in _stream_fields(kind, config).items():
        what = ("input code {q}" if aw == 0 else f"{side}put event {{addr, t}}")
        if aw + tw > config.axis_width:
            fits = [w for w in AXIS_WIDTHS if w >= aw + tw]
            raise ValueError(
                f"axis_width {config.axis_width} cannot carry the {BLOCKS[kind][1]} {what} "
                f"({aw + tw} bits); use axis_width {' or '.join(map(str, fits))}")


class AxiShell(ConfigComponent):
    """The wrapper's own logic between the AXI buses and the block's ports.

    Parameters
    ----------
    config : RTLConfig
        The block's configuration; ``axil_addr_width`` and ``axis_width`` size the buses.
    kind : {"tile", "system"}
        Which block it carries.

    Members
    -------
    s_axil : In(axi_lite_signature(config.axil_addr_width))
    s_axis : In(axis_signature(config.axis_width))
    m_axis : Out(axis_signature(config.axis_width))
    block : Out(<the block's signature>.flip())
        The block's ports as seen from outside it: ``block.load`` and ``block.i`` are driven
        here, ``block.o``, ``block.busy`` and ``block.cnt_*`` read.

    Raises
    ------
    TypeError
        ``config`` is not an :class:`RTLConfig`.
    ValueError
        ``kind`` is unknown, ``axis_width`` cannot carry a beat, or the register map does not
        fit ``axil_addr_width``; each message names the value and what would be valid.
    """

    def __init__(self, config: RTLConfig, kind: str, *, src_loc_at: int = 0):
        if kind not in BLOCKS:
            raise ValueError(f"kind must be one of {tuple(BLOCKS)}, not {kind!r}")
        self._kind = kind
        self._inner = _block(kind, config)
        # The block's component is built for its signature (the one home of its ports); a
        # wrapper with the block as a Verilog instance never elaborates it, so Amaranth's
        # "created but never used" warning would be noise
        self._inner._MustUse__silence = True
        self._regmap = register_map(kind, config)
        super().__init__(config, src_loc_at=src_loc_at + 1)

    def _members(self, config: RTLConfig) -> dict[str, object]:
        check_axis_width(self._kind, config)
        from rtl_gen.axi_lite import check_addr_width

        check_addr_width(self._regmap, config.axil_addr_width)
        return {
            "s_axil": In(axi_lite_signature(config.axil_addr_width)),
            "s_axis": In(axis_signature(config.axis_width)),
            "m_axis": Out(axis_signature(config.axis_width)),
            "block": Out(self._inner.signature.flip()),
        }

    @property
    def kind(self) -> str:
        return self._kind

    @property
    def regmap(self):
        return self._regmap

    @property
    def inner(self) -> wiring.Component:
        """The block's component (its signature is the one home of its ports)."""
        return self._inner

    def elaborate(self, platform):
        cfg, kind, blk = self._config, self._kind, self.block
        m = Module()
        m.submodules.regs = regs = RegisterFile(self._regmap, cfg.axil_addr_width)
        wiring.connect(m, wiring.flipped(self.s_axil), regs.bus)
        rm = self._regmap

        def port(reg: str, field: str, suffix: str = ""):
            return getattr(regs, field_port(rm[reg], field, suffix))

        # -- load beats: LOAD_DATA words, then a LOAD_CMD write sends the beat -----------------
        # The beat's payload is read from the stored fields; while it waits, no register write
        # is taken, so the payload holds still until the block takes it (the stream rule).
        pending = Signal()
        load = blk.load
        words = [port(r.name, "data") for r in rm.registers if r.name.startswith("LOAD_DATA[")]
        m.d.comb += [
            load.valid.eq(pending),
            load.payload.addr.eq(port("LOAD_CMD", "addr")),
            load.payload.target.eq(port("LOAD_CMD", "target")),
            load.payload.data.eq(Cat(*words)),
            regs.wstall.eq(pending),
            port("STATUS", "load_pending").eq(pending),
            port("STATUS", "busy").eq(blk.busy),
        ]
        if kind == "system":
            m.d.comb += load.payload.node.eq(port("LOAD_CMD", "node"))
        with m.If(load.valid & load.ready):
            m.d.sync += pending.eq(0)
        with m.If(port("LOAD_CMD", "addr", "swmod")):
            m.d.sync += pending.eq(1)

        # -- s_axis -> the block's input ----------------------------------------------------------
        s = self.s_axis
        aw, tw = _stream_fields(kind, cfg)["in"]
        m.d.comb += [blk.i.valid.eq(s.tvalid), s.tready.eq(blk.i.ready)]
        if kind == "tile":
            m.d.comb += [blk.i.payload.addr.eq(s.tdata[:aw]),
                         blk.i.payload.tau.eq(s.tdata[aw:aw + tw]),
                         blk.i.payload.last.eq(s.tlast)]
            m.d.comb += port("STATUS", "tlast_error", "hwset").eq(0)
        else:
            m.d.comb += blk.i.payload.q.eq(s.tdata[:tw])
            # the vector is framed by its count; a TLAST elsewhere (or none on the last code)
            # is reported, not obeyed
            pos = Signal(range(max(cfg.n_in, 2)))
            end = Signal()
            m.d.comb += end.eq(pos == cfg.n_in - 1)
            with m.If(s.tvalid & s.tready):
                m.d.sync += pos.eq(Mux(end, 0, pos + 1))
                m.d.comb += port("STATUS", "tlast_error", "hwset").eq(s.tlast != end)

        # -- the block's output -> m_axis ---------------------------------------------------------
        o, ma = blk.o, self.m_axis
        m.d.comb += [
            ma.tvalid.eq(o.valid),
            ma.tdata.eq(Cat(o.payload.addr, o.payload.t)),
            ma.tlast.eq(o.payload.last),
            o.ready.eq(ma.tready),
        ]

        # -- DONE and the counter snapshot, in the clock after the output marker is taken ------
        snap = Signal()
        done = Signal(32)
        m.d.sync += snap.eq(ma.tvalid & ma.tready & ma.tlast)
        m.d.comb += port("DONE", "count").eq(done)
        with m.If(snap):
            m.d.sync += done.eq(done + 1)
        for cnt, reg in counter_registers(kind, cfg).items():
            live = getattr(blk, cnt)
            held = Signal(len(live), name=f"snap_{cnt}")
            with m.If(snap):
                m.d.sync += held.eq(live)
            m.d.comb += port(reg, "value").eq(held)
        return m


class _Wrapper(ConfigComponent):
    """An :class:`AxiShell` joined to its block (see :class:`AxiTile`, :class:`AxiSystem`)."""

    KIND = ""

    def __init__(self, config: RTLConfig, *, embed: bool = False, src_loc_at: int = 0):
        if not isinstance(embed, bool):
            raise TypeError(f"embed must be a bool, not {embed!r}")
        self._embed = embed
        self._shell = AxiShell(config, self.KIND, src_loc_at=src_loc_at + 1)
        super().__init__(config, src_loc_at=src_loc_at + 1)

    def _members(self, config: RTLConfig) -> dict[str, object]:
        sig = self._shell.signature.members
        return {name: sig[name] for name in ("s_axil", "s_axis", "m_axis")}

    @property
    def shell(self) -> AxiShell:
        return self._shell

    @property
    def regmap(self):
        return self._shell.regmap

    def elaborate(self, platform):
        m = Module()
        m.submodules.shell = shell = self._shell
        wiring.connect(m, wiring.flipped(self.s_axil), shell.s_axil)
        wiring.connect(m, wiring.flipped(self.s_axis), shell.s_axis)
        wiring.connect(m, shell.m_axis, wiring.flipped(self.m_axis))
        inner = shell.inner
        if self._embed:
            m.submodules.block = inner
            wiring.connect(m, shell.block, inner)
            return m
        # the block as an instance of its own generated module: same port names and directions
        ports = {"i_clk": ClockSignal(), "i_rst": ResetSignal()}
        for path, member in inner.signature.members.flatten():
            if not member.is_port:
                continue
            value = shell.block
            for part in path:
                value = getattr(value, part) if isinstance(part, str) else value[part]
            if hasattr(value, "as_value"):
                value = value.as_value()
            prefix = "i_" if member.flow == In else "o_"
            ports[prefix + "__".join(map(str, path))] = value
        m.submodules.block = Instance(BLOCKS[self.KIND][1], **ports)
        return m


class AxiTile(_Wrapper):
    """``mttfs_axi_tile``: the neuron tile behind AXI4-Stream and AXI4-Lite.

    Parameters
    ----------
    config : RTLConfig
    embed : bool
        ``True``: the tile's component inside (for the Amaranth simulator); ``False``: an
        instance of the generated module ``mttfs_tile`` (the Verilog that ``generate`` writes).

    Members
    -------
    s_axil : In(axi_lite_signature(config.axil_addr_width))
        Registers of ``mttfs_axi_tile`` in ``rtl_gen/regmap/mttfs_axi.rdl``.
    s_axis : In(axis_signature(config.axis_width))
        Input events ``{addr, tau}`` (LSB first); a ``tlast`` beat is the window's end marker.
    m_axis : Out(axis_signature(config.axis_width))
        Output events ``{addr, t}``; a ``tlast`` beat ends the window.

    Raises
    ------
    TypeError, ValueError
        As :class:`AxiShell`; ``embed`` not a bool.
    """

    KIND = "tile"


class AxiSystem(_Wrapper):
    """``mttfs_axi_system``: the mesh system behind AXI4-Stream and AXI4-Lite.

    Parameters
    ----------
    config : RTLConfig
    embed : bool
        ``True``: the system's component inside; ``False``: an instance of ``mttfs_system``.

    Members
    -------
    s_axil : In(axi_lite_signature(config.axil_addr_width))
        Registers of ``mttfs_axi_system`` in ``rtl_gen/regmap/mttfs_axi.rdl``.
    s_axis : In(axis_signature(config.axis_width))
        Input codes, one per beat, ``n_in`` a vector, ``tlast`` on the last.
    m_axis : Out(axis_signature(config.axis_width))
        Output events ``{addr, t}`` of the last layer; a ``tlast`` beat ends the inference.

    Raises
    ------
    TypeError, ValueError
        As :class:`AxiShell`; ``embed`` not a bool.
    """

    KIND = "system"


def axi_tile_from_config(config: RTLConfig) -> AxiTile:
    """The ``mttfs_axi_tile`` top module of ``config`` (the tile as an instance)."""
    return AxiTile(config, src_loc_at=1)


def axi_system_from_config(config: RTLConfig) -> AxiSystem:
    """The ``mttfs_axi_system`` top module of ``config`` (the system as an instance)."""
    return AxiSystem(config, src_loc_at=1)


def manifest_entry(name: str, config: RTLConfig) -> dict[str, object]:
    """What the manifest says of wrapper ``name`` beyond its ports: the block's module it
    instantiates (its file must be read with it), the stream formats and the register map."""
    kind = {v[0]: k for k, v in BLOCKS.items()}[name]
    fields = _stream_fields(kind, config)
    regmap = register_map(kind, config)

    def beat(aw, tw, time):
        if aw == 0:
            return [{"name": "q", "offset": 0, "width": tw, "signed": config.family == "sym"}]
        return [{"name": "addr", "offset": 0, "width": aw, "signed": False},
                {"name": time, "offset": aw, "width": tw, "signed": False}]

    return {
        "depends": [f"{BLOCKS[kind][1]}.v"],
        "axi": {
            "s_axis": {"tdata_width": config.axis_width,
                       "fields": beat(*fields["in"], "tau"),
                       "tlast": "end of the vector (last code)" if kind == "system"
                       else "window end marker, no event"},
            "m_axis": {"tdata_width": config.axis_width, "fields": beat(*fields["out"], "t"),
                       "tlast": "end marker, no event"},
            "s_axil": {"addr_width": config.axil_addr_width, "data_width": 32,
                       "register_map": regmap.name, "size": regmap.size,
                       "files": [f"{name}.h", f"{name}_regs.md", "mttfs_axi.rdl",
                                 *(f"{name}_driver.{x}" for x in "hc" if kind == "tile")],
                       "parameters": dict(regmap.parameters)},
        },
    }


def block_manifest(config: RTLConfig, component: wiring.Component) -> dict[str, object]:
    """:func:`manifest_entry` in the form ``manifest(config, component)`` of a block
    descriptor: the wrapper's module is known from the component."""
    return manifest_entry(BLOCKS[component.KIND][0], config)


def companion_files(config: RTLConfig, prefix: str = "") -> dict[str, str]:
    """File name -> text of what a user's software needs beside the wrappers' Verilog: per
    wrapper the C header and the Markdown register table (with the stream formats), and the
    SystemRDL source they come from, and the tile's C driver (:mod:`rtl_gen.firmware`); names
    (files, C identifiers) after ``prefix``."""
    from rtl_gen.firmware import tile_driver
    from rtl_gen.regmap import c_header, markdown, rdl_source

    files = {"mttfs_axi.rdl": rdl_source()}
    for kind, (name, block) in BLOCKS.items():
        name, block = prefix + name, prefix + block
        axi = manifest_entry(BLOCKS[kind][0], config)["axi"]
        rows = []
        for port in ("s_axis", "m_axis"):
            for f in axi[port]["fields"]:
                hi = f["offset"] + f["width"] - 1
                rows.append(f"| `{port}` | `{f['name']}` | {hi}:{f['offset']} | "
                            f"{'two' + chr(39) + 's complement' if f['signed'] else 'unsigned'} |")
            rows.append(f"| `{port}` | TLAST | - | {axi[port]['tlast']} |")
        streams = (
            f"\n## {name} streams\n\n"
            f"TDATA is {config.axis_width} bits; fields LSB first, other bits 0 "
            f"(docs/rtl_axi.md). The block is `{block}`.\n\n"
            "| port | field | bits | |\n| --- | --- | --- | --- |\n" + "\n".join(rows) + "\n")
        files[f"{name}.h"] = c_header(kind, config, prefix)
        if kind == "tile":
            files.update(tile_driver(config, prefix))
        files[f"{name}_regs.md"] = markdown(kind, config, prefix) + streams
    return files
