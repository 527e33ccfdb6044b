"""The registered blocks synthesized one by one: encoder, SRAM interface, neuron tile, router and
the dense INT4 baseline tile, elaborated from rtl_gen.

Every block of :data:`rtl_gen.registry.BLOCKS` has an entry in :data:`SYNTHESIS`: a spec builder
(the netlist and its power runs) or :class:`Elsewhere` (the system, synthesized whole by
:mod:`synth_scripts.system_area`). Blocks are elaborated with their registered factories and
``amaranth.back.verilog`` (``emit_src`` off), one module at a time. The tiles, router and SRAM
interface use the paper's fan-in and the encoder a short vector (its logic does not depend on
the vector length; its link SRAM, here behavioural and so mapped to flip-flops, holds ``n_in``
words).

SRAM macros are excluded: the tiles and the SRAM wrapper are elaborated with ``sram_macro=True``;
Yosys turns each macro's read-data bus into a top-level input (``expose -input``) and deletes the
macro, so what remains is the interface logic. The read data then enters the power analysis as
an input port with the activity of the weight rows the golden events read.

Activity: every input port gets per-bit statistics of a golden stream at one beat per clock
(events of M-TTFS encoded activation codes, ``+-1`` weight rows, codes); control inputs are held
(``valid`` 1, ``ready`` 1, ``rst`` and load ports 0).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from golden_models import CodeSpace
from rtl_gen.sram import MACRO_STUB
from synth_scripts import activity, entries, operators

#: Output neurons of the synthesized tile (per-neuron figures divide by it).
SYNTH_TILE_NEURONS = 8
#: Vector length of the synthesized encoder (the depth of its link SRAM).
ENCODER_N_IN = 64
#: Mesh of the router (coordinates 2 bits each).
MESH = 4
#: Position of the router under test and the column its flits are sent to (eastwards).
ROUTER_XY, ROUTER_DST = (1, 1), (3, 1)


@dataclass
class BlockSpec:
    """One block to synthesize and the power runs to make on it."""

    name: str
    top: str
    what: str
    per: str
    verilog: str
    macro: bool
    config: dict
    ports: list[dict]
    runs: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)  # label -> port values
    per_unit: dict[str, float] = field(default_factory=dict)  # extra divisors, e.g. per neuron

    def read_commands(self, workdir: Path) -> list[str]:
        """Yosys commands that read the block (and cut out the SRAM macros)."""
        (workdir / f"{self.top}.v").write_text(self.verilog, encoding="utf-8")
        cmds = []
        if self.macro:
            (workdir / "sram_macro_stub.v").write_text(MACRO_STUB, encoding="utf-8")
            cmds.append("read_verilog -lib sram_macro_stub.v")
        cmds += [f"read_verilog {self.top}.v", f"hierarchy -top {self.top}", "proc", "flatten"]
        if self.macro:
            cmds += [
                "select -set rdata t:mttfs_sram_macro %x:+[RDATA] t:mttfs_sram_macro %d",
                "expose -input @rdata",
                "delete t:mttfs_sram_macro",
            ]
        return cmds

    def activities(self, inputs: dict[str, int]) -> dict[str, dict[str, list]]:
        """Per run label: per input port (as the netlist names them) per-bit statistics.

        Raises
        ------
        ValueError
            A run drives a port the netlist does not have (a renamed port would otherwise
            silently fall back to a held input).
        """
        out = {}
        for label, values in self.runs.items():
            unknown = sorted(set(values) - set(inputs))
            if unknown:
                raise ValueError(
                    f"{self.top}: run {label!r} drives ports {unknown} that the netlist lacks "
                    f"(it has {sorted(inputs)})"
                )
            acts = {}
            for port, width in inputs.items():
                if port == "clk":
                    continue
                v = values.get(port)
                if v is None:
                    v = np.zeros(activity.STREAM_LENGTH, dtype=np.int64)
                acts[port] = activity.bit_activity(v, width)
            out[label] = acts
        return out

    def report_entry(self, synth, power: dict, clock_ns: float) -> dict:
        generic, mapped = entries.synth_entry(synth)
        entry = {
            "name": self.name,
            "top": self.top,
            "what": self.what,
            "per": self.per,
            "config": self.config,
            "generic": generic,
            "mapped": mapped,
            "runs": {},
            "energy_pJ": None,
            "provenance": "rtl_gen components elaborated with amaranth.back.verilog; yosys synth "
            "-flatten" + ("; SRAM macros cut out (expose -input, delete)" if self.macro else ""),
        }
        for label, p in power.items():
            entry["runs"][label] = {
                "power": entries.power_entry(p),
                "energy_pJ": entries.energy(p["power_W"], clock_ns),
            }
        if "loaded" in entry["runs"]:
            e = dict(entry["runs"]["loaded"]["energy_pJ"])
            for unit, n in self.per_unit.items():
                e[f"per_{unit}"] = entries.sig(e["per_op"] / n)
            entry["energy_pJ"] = e
            if "idle" in entry["runs"]:
                idle = entry["runs"]["idle"]["energy_pJ"]["per_op"]
                entry["energy_pJ"]["idle_per_clock"] = idle
                entry["energy_pJ"]["above_idle"] = entries.sig(e["per_op"] - idle)
        return entry


def _rows(layout, weights: np.ndarray, addr: np.ndarray) -> np.ndarray:
    """Weight rows read for each address, packed with ``layout`` (neuron ``j`` element ``j``,
    1 = +1): :func:`rtl_gen.layouts.weight_row_layout`."""
    from rtl_gen.layouts import pack

    rows = {a: pack(layout, [int(w > 0) for w in weights[a]]) for a in np.unique(addr).tolist()}
    return np.array([rows[a] for a in addr.tolist()], dtype=np.int64)


def _pack(layout, values: dict[str, np.ndarray | int]) -> np.ndarray:
    """One word of ``layout`` per stream element (missing fields 0), packed by the layout.

    Each distinct element is packed once with :func:`rtl_gen.layouts.pack`.
    """
    from rtl_gen.layouts import pack

    n = activity.STREAM_LENGTH
    names = list(values)
    columns = [np.broadcast_to(np.asarray(values[k], dtype=np.int64), (n,)).tolist()
               for k in names]
    words: dict[tuple, int] = {}
    out = np.empty(n, dtype=np.int64)
    for i, key in enumerate(zip(*columns, strict=True)):
        word = words.get(key)
        if word is None:
            word = words[key] = pack(layout, dict(zip(names, key, strict=True)))
        out[i] = word
    return out


def _verilog(component, name: str) -> str:
    from amaranth.back import verilog

    return verilog.convert(component, name=name, emit_src=False)


@dataclass(frozen=True)
class Workload:
    """What every block's spec is built from: the configurations and the golden streams.

    ``cfg`` is the tile, SRAM, router and dense-tile configuration (the paper's fan-in,
    :data:`SYNTH_TILE_NEURONS`, SRAM macros, a :data:`MESH` square mesh), ``enc_cfg`` the encoder's
    (:data:`ENCODER_N_IN`); ``addr``, ``tau`` are golden events of M-TTFS encoded codes,
    ``rows`` the weight rows they read, ``codes`` a stream of activation codes.
    """

    T: int
    k: int
    cfg: object
    enc_cfg: object
    addr: np.ndarray
    tau: np.ndarray
    weights: np.ndarray
    codes: np.ndarray

    @property
    def ones(self) -> np.ndarray:
        return np.ones(activity.STREAM_LENGTH, dtype=np.int64)

    @property
    def zeros(self) -> np.ndarray:
        return np.zeros(activity.STREAM_LENGTH, dtype=np.int64)

    def rows(self, addr: np.ndarray) -> np.ndarray:
        """The weight rows read at ``addr``, packed as the tile's SRAM holds them."""
        from rtl_gen.layouts import weight_row_layout

        return _rows(weight_row_layout(self.cfg), self.weights, addr)


def workload(T: int, k: int) -> Workload:
    """The :class:`Workload` of ``T``, ``k`` (deterministic: fixed salts)."""
    from rtl_gen.params import RTLConfig

    cfg = RTLConfig(T=T, k=k, n_in=operators.LINEAR_FAN_IN, tile_neurons=SYNTH_TILE_NEURONS,
                    sram_macro=True, mesh_rows=MESH, mesh_cols=MESH)
    space = CodeSpace(T, "sym")
    addr, tau = activity.event_stream(space, k, cfg.n_in, salt=40)
    return Workload(
        T=T, k=k, cfg=cfg,
        enc_cfg=RTLConfig(T=T, k=k, n_in=ENCODER_N_IN, tile_neurons=SYNTH_TILE_NEURONS),
        addr=addr, tau=tau,
        weights=activity.binary_weights((cfg.n_in, SYNTH_TILE_NEURONS), salt=41).numpy(),
        codes=activity.activation_codes(space, activity.STREAM_LENGTH, activity.P_ZERO,
                                        salt=42).numpy(),
    )


def _spec(block, comp, **fields) -> BlockSpec:
    from rtl_gen.generate import port_list

    return BlockSpec(top=block.module, verilog=_verilog(comp, block.module),
                     ports=port_list(comp), **fields)


def tile_spec(w: Workload, block) -> BlockSpec:
    """The neuron tile in its integrate phase: one golden event per clock."""
    from rtl_gen.layouts import in_event_layout

    cfg = w.cfg
    return _spec(
        block, block.build(cfg), name="tile",
        what=f"neuron tile, N={SYNTH_TILE_NEURONS}, fan-in {cfg.n_in}, "
        f"{cfg.acc_width}-bit membranes, integrate phase",
        per="input event (integrate clock, N accumulates)", macro=True,
        config={"n_in": cfg.n_in, "tile_neurons": SYNTH_TILE_NEURONS, "T": w.T, "k": w.k,
                "acc_width": cfg.acc_width},
        runs={"loaded": {
            "i__valid": w.ones,
            "i__payload": _pack(in_event_layout(cfg), {"addr": w.addr, "tau": w.tau}),
            "o__ready": w.ones,
            "weights.bus__rdata": w.rows(w.addr),
        }},
        per_unit={"neuron": SYNTH_TILE_NEURONS},
    )


def dense_tile_spec(w: Workload, block) -> BlockSpec:
    """The dense INT4 baseline tile in its integrate phase: one code per clock, every row."""
    from rtl_gen.layouts import dense_in_layout

    cfg = w.cfg
    addr = np.arange(activity.STREAM_LENGTH, dtype=np.int64) % cfg.n_in
    codes = w.codes & ((1 << cfg.time_width) - 1)
    return _spec(
        block, block.build(cfg), name="dense_tile",
        what=f"dense INT4 baseline tile, N={SYNTH_TILE_NEURONS}, fan-in {cfg.n_in}, "
        f"{cfg.acc_width}-bit membranes, integrate phase",
        per="input code (integrate clock, N multiply-accumulates)", macro=True,
        config={"n_in": cfg.n_in, "tile_neurons": SYNTH_TILE_NEURONS, "T": w.T,
                "acc_width": cfg.acc_width},
        runs={"loaded": {
            "i__valid": w.ones,
            "i__payload": _pack(dense_in_layout(cfg), {"code": codes}),
            "o__ready": w.ones,
            "weights.bus__rdata": w.rows(addr),
        }},
        per_unit={"neuron": SYNTH_TILE_NEURONS},
    )


def sram_spec(w: Workload, block) -> BlockSpec:
    """The SRAM wrapper's interface logic, read at the golden events' addresses."""
    cfg = w.cfg
    return _spec(
        block, block.build(cfg), name="sram_interface",
        what=f"weight SRAM wrapper {cfg.n_in} x {cfg.weight_row_width} (macro excluded: "
        "interface logic and read counter only; the read data passes through)",
        per="row read", macro=True,
        config={"depth": cfg.n_in, "width": cfg.weight_row_width},
        runs={"loaded": {"bus__addr": w.addr, "bus__ren": w.ones}},
    )


def encoder_spec(w: Workload, block) -> BlockSpec:
    """The encoder taking one activation code per clock."""
    return _spec(
        block, block.build(w.enc_cfg), name="encoder",
        what=f"M-TTFS encoder, vector length {ENCODER_N_IN}, T={w.T}, k={w.k}",
        per="code offered (one per clock)", macro=False,
        config={"n_in": ENCODER_N_IN, "T": w.T, "k": w.k},
        runs={"loaded": {"i__valid": w.ones, "i__payload": w.codes, "o__ready": w.ones}},
    )


def router_spec(w: Workload, block) -> BlockSpec:
    """One router moving a flit per clock from west to east, and the same router idle."""
    from rtl_gen.generate import stream_ports

    cfg, n = w.cfg, activity.STREAM_LENGTH
    router = block.build(cfg)
    ready = {f"o_{p}__ready": w.ones for p in ("north", "east", "south", "west", "local")}
    pos = {"x": np.full(n, ROUTER_XY[0]), "y": np.full(n, ROUTER_XY[1])}
    flits = _pack(router.layout, {"dst_x": ROUTER_DST[0], "dst_y": ROUTER_DST[1],
                                  "addr": w.addr, "t": w.tau})
    return _spec(
        block, router, name="router",
        what=f"XY mesh router ({MESH}x{MESH}), 5 ports, flit "
        f"{stream_ports(router)['i_west']['payload_width']} bits; one flit per clock "
        "west to east",
        per="event moved one hop", macro=False,
        config={"mesh": MESH, "addr_width": cfg.in_addr_width, "time_width": cfg.time_width},
        runs={
            "loaded": {**ready, **pos, "i_west__valid": w.ones, "i_west__payload": flits},
            "idle": {**ready, **pos, "i_west__valid": w.zeros},
        },
        per_unit={"port": 5},
    )


@dataclass(frozen=True)
class Elsewhere:
    """A registered block the per-block flow does not synthesize, and where it is measured."""

    reason: str


#: Registered block name -> how ``synth`` measures it: ``spec(workload, block) -> BlockSpec``
#: for the per-block flow (one flattened netlist, power on golden streams), or
#: :class:`Elsewhere`. Every block of :data:`rtl_gen.registry.BLOCKS` has an entry
#: (``tests/test_registry.py``).
SYNTHESIS = {
    "encoder": encoder_spec,
    "sram": sram_spec,
    "tile": tile_spec,
    "router": router_spec,
    "system": Elsewhere("synthesized whole with its hierarchy kept by `matterhorn synth --system "
                        "RxC` (synth_scripts.system_area): area per instance, no power run"),
    "axi_tile": Elsewhere("the AXI shell alone is priced under the report's 'wrappers' "
                          "(synth_scripts.axi_cost), never among the blocks' unit costs"),
    "axi_system": Elsewhere("the AXI shell alone is priced under the report's 'wrappers' "
                            "(synth_scripts.axi_cost), never among the blocks' unit costs"),
    "dense_tile": dense_tile_spec,
    "attn_softmax": Elsewhere("its softmax unit is the block 'softmax', measured by "
                              "synth_scripts.unit_gates; the node's attn_prob encoder and "
                              "registers are not synthesized yet (docs/rtl_attention.md)"),
    "attention": Elsewhere("not synthesized yet (docs/rtl_attention.md): its key and value writes "
                           "are priced at the SRAM's per-bit E_weight, its reads and accumulates "
                           "as a tile's"),
    "softmax": Elsewhere("measured by synth_scripts.unit_gates at a model's sizes (area, energy "
                         "per row from a gate-level replay of recorded MiniLM rows, cycles per "
                         "row; `./run bench units`): a sequential unit whose energy is per row, "
                         "not per clock of one operand stream"),
    "add_norm": Elsewhere("measured by synth_scripts.unit_gates, as the softmax unit"),
}


def prepare(T: int, k: int, rtl_dir: Path) -> list[BlockSpec]:
    """Elaborate the registered blocks for ``T``, ``k`` and attach their golden-stream activities
    (:data:`SYNTHESIS`, in :data:`rtl_gen.registry.BLOCKS` order).

    Returns an empty list when ``rtl_gen`` cannot build blocks for ``T`` (it supports
    ``T <= 64``).
    """
    from rtl_gen.params import MAX_T
    from rtl_gen.registry import BLOCKS

    if T > MAX_T:
        return []
    w = workload(T, k)
    specs = []
    with warnings.catch_warnings():
        # components are built to be elaborated one by one; nothing is left unused
        warnings.simplefilter("ignore")
        for block in BLOCKS:
            how = SYNTHESIS[block.name]
            if not isinstance(how, Elsewhere):
                specs.append(how(w, block))
    return specs
