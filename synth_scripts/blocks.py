"""The generated blocks: neuron tile, encoder, router and SRAM interface, elaborated from rtl_gen.

Blocks are elaborated with ``rtl_gen``'s components and ``amaranth.back.verilog`` (``emit_src``
off), one module at a time. The tile, router and SRAM interface use the paper's fan-in and the
encoder a short vector (its logic does not depend on the vector length; its link SRAM, here
behavioural and so mapped to flip-flops, holds ``n_in`` words).

SRAM macros are excluded: the tile and the SRAM wrapper are elaborated with ``sram_macro=True``;
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

from golden_models import CodeSpace, Mask, encode_events
from rtl_gen.sram import MACRO_STUB
from synth_scripts import activity, operators, report

#: Output neurons of the synthesized tile (per-neuron figures divide by it).
TILE_NEURONS = 8
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
        generic, mapped = report.synth_entry(synth)
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
                "power": report.power_entry(p),
                "energy_pJ": report.energy(p["power_W"], clock_ns),
            }
        if "loaded" in entry["runs"]:
            e = dict(entry["runs"]["loaded"]["energy_pJ"])
            for unit, n in self.per_unit.items():
                e[f"per_{unit}"] = report.sig(e["per_op"] / n)
            entry["energy_pJ"] = e
            if "idle" in entry["runs"]:
                idle = entry["runs"]["idle"]["energy_pJ"]["per_op"]
                entry["energy_pJ"]["idle_per_clock"] = idle
                entry["energy_pJ"]["above_idle"] = report.sig(e["per_op"] - idle)
        return entry


def _events(space: CodeSpace, k: int, n_in: int, salt: int) -> tuple[np.ndarray, np.ndarray]:
    """Golden events (address, time) of M-TTFS encoded codes, vectors until the stream is full."""
    mask = Mask.at_zero(space, k)
    idx, tim = [], []
    v = 0
    while sum(map(len, idx)) < activity.STREAM_LENGTH:
        q = activity.activation_codes(space, n_in, activity.P_ZERO, salt=salt + v)
        i, t = encode_events(q, mask)
        idx.append(i.numpy())
        tim.append(t.numpy())
        v += 1
    n = activity.STREAM_LENGTH
    return np.concatenate(idx)[:n], np.concatenate(tim)[:n]


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


def prepare(T: int, k: int, rtl_dir: Path) -> list[BlockSpec]:
    """Elaborate the blocks for ``T``, ``k`` and attach their golden-stream activities.

    Returns an empty list when ``rtl_gen`` cannot build blocks for ``T`` (it supports
    ``T <= 64``).
    """
    from rtl_gen.encoder import Encoder
    from rtl_gen.generate import port_list, stream_ports
    from rtl_gen.layouts import in_event_layout, weight_row_layout
    from rtl_gen.params import MAX_T, RTLConfig
    from rtl_gen.router import router_from_config
    from rtl_gen.sram import SRAM
    from rtl_gen.tile import NeuronTile

    if T > MAX_T:
        return []
    cfg = RTLConfig(
        T=T,
        k=k,
        n_in=operators.LINEAR_FAN_IN,
        tile_neurons=TILE_NEURONS,
        sram_macro=True,
        mesh_rows=MESH,
        mesh_cols=MESH,
    )
    enc_cfg = RTLConfig(T=T, k=k, n_in=ENCODER_N_IN, tile_neurons=TILE_NEURONS)
    space = CodeSpace(T, "sym")
    n = activity.STREAM_LENGTH
    addr, tau = _events(space, k, cfg.n_in, salt=40)
    weights = activity.binary_weights((cfg.n_in, TILE_NEURONS), salt=41).numpy()
    rows = _rows(weight_row_layout(cfg), weights, addr)
    ones, zeros = np.ones(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
    specs = []
    with warnings.catch_warnings():
        # components are built to be elaborated one by one; nothing is left unused
        warnings.simplefilter("ignore")
        tile = NeuronTile(cfg)
        specs.append(
            BlockSpec(
                name="tile",
                top="mttfs_tile",
                what=f"neuron tile, N={TILE_NEURONS}, fan-in {cfg.n_in}, "
                f"{cfg.acc_width}-bit membranes, integrate phase",
                per="input event (integrate clock, N accumulates)",
                verilog=_verilog(tile, "mttfs_tile"),
                macro=True,
                config={
                    "n_in": cfg.n_in,
                    "tile_neurons": TILE_NEURONS,
                    "T": T,
                    "k": k,
                    "acc_width": cfg.acc_width,
                },
                ports=port_list(tile),
                runs={
                    "loaded": {
                        "i__valid": ones,
                        "i__payload": _pack(in_event_layout(cfg), {"addr": addr, "tau": tau}),
                        "o__ready": ones,
                        "weights.bus__rdata": rows,
                    }
                },
                per_unit={"neuron": TILE_NEURONS},
            )
        )
        sram = SRAM(depth=cfg.n_in, width=cfg.weight_row_width, macro=True)
        specs.append(
            BlockSpec(
                name="sram_interface",
                top="mttfs_sram",
                what=f"weight SRAM wrapper {cfg.n_in} x {cfg.weight_row_width} (macro excluded: "
                "interface logic and read counter only; the read data passes through)",
                per="row read",
                verilog=_verilog(sram, "mttfs_sram"),
                macro=True,
                config={"depth": cfg.n_in, "width": cfg.weight_row_width},
                ports=port_list(sram),
                runs={
                    "loaded": {
                        "bus__addr": addr,
                        "bus__ren": ones,
                    }
                },
            )
        )
        enc = Encoder(enc_cfg)
        specs.append(
            BlockSpec(
                name="encoder",
                top="mttfs_encoder",
                what=f"M-TTFS encoder, vector length {ENCODER_N_IN}, T={T}, k={k}",
                per="code offered (one per clock)",
                verilog=_verilog(enc, "mttfs_encoder"),
                macro=False,
                config={"n_in": ENCODER_N_IN, "T": T, "k": k},
                ports=port_list(enc),
                runs={
                    "loaded": {
                        "i__valid": ones,
                        "i__payload": activity.activation_codes(
                            space, n, activity.P_ZERO, salt=42
                        ).numpy(),
                        "o__ready": ones,
                    }
                },
            )
        )
        router = router_from_config(cfg)
        ready = {f"o_{p}__ready": ones for p in ("north", "east", "south", "west", "local")}
        pos = {"x": np.full(n, ROUTER_XY[0]), "y": np.full(n, ROUTER_XY[1])}
        flits = _pack(
            router.layout, {"dst_x": ROUTER_DST[0], "dst_y": ROUTER_DST[1], "addr": addr, "t": tau}
        )
        specs.append(
            BlockSpec(
                name="router",
                top="mttfs_router",
                what=f"XY mesh router ({MESH}x{MESH}), 5 ports, flit "
                f"{stream_ports(router)['i_west']['payload_width']} bits; one flit per clock "
                "west to east",
                per="event moved one hop",
                verilog=_verilog(router, "mttfs_router"),
                macro=False,
                config={
                    "mesh": MESH,
                    "addr_width": cfg.in_addr_width,
                    "time_width": cfg.time_width,
                },
                ports=port_list(router),
                runs={
                    "loaded": {**ready, **pos, "i_west__valid": ones, "i_west__payload": flits},
                    "idle": {**ready, **pos, "i_west__valid": zeros},
                },
                per_unit={"port": 5},
            )
        )
    return specs
