"""The registry of hardware blocks: one descriptor per generated top-level block.

Every block the toolkit generates, tests, synthesizes and proves is one :class:`Block` in
:data:`BLOCKS`: its Verilog module name, the factory that builds its component from an
:class:`rtl_gen.params.RTLConfig`, what its manifest entry adds (counters, block facts), its
extra lint waivers, the unit-cost keys its synthesis produces, its mesh node ports (for the
blocks the system can place on a mesh node) and its doc page. ``generate`` (Verilog files,
``manifest.json``, lint) walks :data:`BLOCKS`; the packages above ``rtl_gen`` keep their
per-block parts in tables keyed by :attr:`Block.name` (``regression.benches.BENCH_KINDS``,
``synth_scripts.blocks.SYNTHESIS``, ``formal.properties.PROPERTIES``/``UNPROVEN``), and
``tests/test_registry.py`` fails when a registered block is missing from any of them.
Why the tables sit above and not in the descriptors: docs/architecture.md ("The block
registry").

Factories and the functions a descriptor needs from a heavy module are :class:`Ref` paths
(``"rtl_gen.tile:NeuronTile"``), imported on first use: importing the registry imports no block
module (and no torch), and a block module may import the registry without a cycle.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from golden_models.counters import (
    CONTEXT_COUNTER_DEFINITIONS,
    COUNTER_DEFINITIONS,
    DENSE_COUNTER_DEFINITIONS,
    ENCODER_COUNTER_DEFINITIONS,
    SCORE_COUNTER_DEFINITIONS,
    SOFTMAX_COUNTER_DEFINITIONS,
)
from rtl_gen.params import RTLConfig, check_config

__all__ = [
    "BLOCKS",
    "NODE_PORT_KINDS",
    "Block",
    "Node",
    "Ref",
    "block",
    "by_module",
    "components",
    "names",
    "node_blocks",
    "tiles",
]

#: What a mesh node's ``i`` takes and its ``o`` gives: M-TTFS events (``addr``, time, ``last``:
#: ``rtl_gen.layouts.in_event_layout`` / ``out_event_layout``) or dense codes
#: (``rtl_gen.layouts.dense_in_layout`` / ``dense_out_layout``).
NODE_PORT_KINDS = ("events", "codes")
#: The designs of a tile (:func:`tiles`): what ``compare`` sets against each other.
TILE_DESIGNS = ("spiking", "dense")


class Ref:
    """A callable named ``"rtl_gen.<module>:<attribute>"``, imported when first called.

    Only modules of ``rtl_gen`` may be named: a descriptor never points to a package above
    it (docs/architecture.md).

    Raises
    ------
    ValueError
        ``path`` is not of the form ``rtl_gen.<module>:<attribute>``.
    """

    def __init__(self, path: str):
        if (not isinstance(path, str) or path.count(":") != 1
                or not path.startswith("rtl_gen.")):
            raise ValueError(
                f"path must read 'rtl_gen.<module>:<attribute>', not {path!r}")
        self.path = path

    def resolve(self) -> Callable:
        module, attr = self.path.split(":")
        return getattr(importlib.import_module(module), attr)

    def __call__(self, *args, **kwargs):
        return self.resolve()(*args, **kwargs)

    def __repr__(self) -> str:
        return f"Ref({self.path!r})"

    def __eq__(self, other) -> bool:
        return isinstance(other, Ref) and other.path == self.path

    def __hash__(self) -> int:
        return hash(self.path)


@dataclass(frozen=True)
class Node:
    """How the system places a block on a mesh node (docs/rtl_system.md, "Node kinds").

    Parameters
    ----------
    i, o : {"events", "codes"}
        What the block's ``i`` takes and its ``o`` gives (:data:`NODE_PORT_KINDS`). Besides
        them the block has the tile's ``load`` port, ``busy`` and its counters; the system
        wraps a ``codes`` side in an adapter so every node speaks events on the mesh.
    image : Ref
        ``image(config, layer) -> [(target, addr, data)]``: the ``load`` beats that program the
        block with a golden :class:`golden_models.IntegerLayer` of ``N`` neurons (a codes-input
        block's layer has ``config.n_in`` rows: its adapter sends every address).
    run : Ref
        ``run(layer, inputs) -> (outputs, counters)``: the golden model of one window; inputs
        and outputs as the block sees them: events ``(index, time)`` tensors, or the code
        vector; ``counters`` with ``as_dict()`` in the order of its ``cnt_*`` ports.
    """

    i: str
    o: str
    image: Ref
    run: Ref

    def __post_init__(self) -> None:
        for name in ("i", "o"):
            if getattr(self, name) not in NODE_PORT_KINDS:
                raise ValueError(f"{name} must be one of {NODE_PORT_KINDS}, "
                                 f"not {getattr(self, name)!r}")


@dataclass(frozen=True)
class Block:
    """One generated top-level block.

    Parameters
    ----------
    name : str
        The registry key, used by every per-block table (``"tile"``).
    module : str
        Verilog module name of the generated file ``<module>.v`` (``"mttfs_tile"``).
    factory : Ref
        ``factory(config) -> wiring.Component`` for an :class:`RTLConfig`.
    doc : str
        The block's page, relative to the repository (``"docs/rtl_tile.md"``).
    summary : str
        One line: what the block is.
    counters : callable, optional
        ``counters(config) -> {name: width}``: its ``cnt_<name>`` ports, listed in the manifest
        with ``counter_meanings``.
    counter_meanings : mapping or callable
        Counter name -> what it counts; or ``counter_meanings(config) -> mapping`` when the
        counters follow the configuration (:meth:`meanings`).
        Counter name -> what it counts.
    manifest : callable, optional
        ``manifest(config, component) -> dict``: further fields of its manifest entry.
    lint_waivers : tuple of dict
        Verilator warnings waived for this module only, each ``{"warning", "reason"}``.
    unit_costs : tuple of str
        Unit-cost keys its synthesis produces in ``synth_report.json`` (``unit_costs_pJ``).
    node : Node, optional
        The block can sit on a mesh node of the system: its ports, image and golden run.
    design : {"spiking", "dense"}, optional
        The block is a neuron tile of this design (:func:`tiles`).
    """

    name: str
    module: str
    factory: Ref
    doc: str
    summary: str
    counters: Callable[[RTLConfig], dict[str, int]] | None = None
    counter_meanings: Mapping[str, str] | Callable = field(default_factory=dict)
    manifest: Callable | None = None
    lint_waivers: tuple[dict[str, str], ...] = ()
    unit_costs: tuple[str, ...] = ()
    node: Node | None = None
    design: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.factory, Ref):
            raise TypeError(f"factory of block {self.name!r} must be a Ref, not "
                            f"{self.factory!r}")
        if self.design is not None and self.design not in TILE_DESIGNS:
            raise ValueError(f"design must be one of {TILE_DESIGNS} or None, not "
                             f"{self.design!r}")

    def build(self, config: RTLConfig):
        """The block's component for ``config``."""
        return self.factory(check_config(config))

    def meanings(self, config: RTLConfig) -> Mapping[str, str]:
        """Counter name -> what it counts, for ``config`` (in the order of ``counters``)."""
        m = self.counter_meanings
        return m(check_config(config)) if callable(m) else m


# -- what the manifest entries add -------------------------------------------------------------


def _tile_counters(config: RTLConfig) -> dict[str, int]:
    return config.tile_counters


def _encoder_counters(config: RTLConfig) -> dict[str, int]:
    return config.encoder_counters


def _sram_manifest(config: RTLConfig, comp) -> dict[str, object]:
    return {"sram": {"depth": comp.depth, "width": comp.width, "macro": comp.macro,
                     "reads_port": "reads"}}


def _dense_manifest(config: RTLConfig, comp) -> dict[str, object]:
    from rtl_gen.layouts import dense_pack

    return {"dense": {
        "codes_per_beat": dense_pack(config),
        "input": "i: codes {code, last=0} in address order 0..n_in-1, then one marker "
        "beat {last=1}; the address is implicit",
        "output": "o: ceil(N/P) beats {addr = first neuron, codes = P codes of "
        "time_width bits, neuron addr+p at bits [p*time_width, (p+1)*time_width)}, "
        "then one marker beat {last=1}",
        "init": "the init rows hold the dense init D = B - mu_in * sum_i W "
        "(rtl_gen.dense.dense_load_beats)",
    }}


_PARTS = {"qk": ("query x key tile", SCORE_COUNTER_DEFINITIONS),
          "sm": ("softmax node", SOFTMAX_COUNTER_DEFINITIONS),
          "pv": ("probability x value tile", CONTEXT_COUNTER_DEFINITIONS)}


def _attention_meanings(config: RTLConfig) -> dict[str, str]:
    """What each counter of the attention path counts: ``<part>_<name>_h<h>`` is counter
    ``name`` of head ``h``'s ``qk``, ``sm`` or ``pv`` node; ``flits`` and ``hops`` the mesh's."""
    out = {}
    for name in _attention_counters(config):
        part, _, rest = name.partition("_")
        if part in _PARTS:
            counter, _, head = rest.rpartition("_h")
            what, defs = _PARTS[part]
            out[name] = f"{defs[counter]} ({what} of head {head})"
    out["flits"] = ("flits ejected in the window (scores, attn_prob events and a marker each "
                    "way per head)")
    out["hops"] = "the hops of those flits"
    return out


def _attention_counters(config: RTLConfig) -> dict[str, int]:
    from rtl_gen.attention import attention_counters

    return attention_counters(config)


def _attention_manifest(config: RTLConfig, comp) -> dict[str, object]:
    from rtl_gen.attention import attention_manifest

    return attention_manifest(comp)
def _softmax_manifest(config: RTLConfig, comp) -> dict[str, object]:
    from rtl_gen.softmax import softmax_widths

    w = softmax_widths(config)
    return {"softmax": {
        "seq_len": config.seq_len, "score_bits": config.score_width,
        "exp_frac_bits": config.exp_frac_bits, "recip_bits": w["recip"], "sum_bits": w["sum"],
        "input": "i: a row of L <= seq_len beats {score, valid}, then one marker beat {last=1}",
        "output": "o: L beats {code} (attention-probability codes, the row's order), then one "
        "marker beat {last=1}",
        "row_clocks": "3*L + (recip_bits - 15 + 1) + 7 at full rate (rtl_gen.softmax.row_clocks)",
    }}


def _add_norm_manifest(config: RTLConfig, comp) -> dict[str, object]:
    return {"add_norm": {
        "hidden": config.hidden, "residual_bits": config.residual_bits,
        "sum_bits": config.sum_bits, "residual_sum_width": config.residual_sum_width,
        "input": "r, v: hidden beats each {r}, {v} in channel order, taken in pairs",
        "output": "o: hidden beats {r, q[0..2]} (the new stream and its codes) in channel order",
        "row_clocks": "2*hidden + 64 at full rate (rtl_gen.add_norm.row_clocks)",
    }}


#: Every block, in the order ``generate`` writes them and the manifest lists them.
BLOCKS: tuple[Block, ...] = (
    Block("encoder", "mttfs_encoder", Ref("rtl_gen.encoder:Encoder"), "docs/rtl_encoder.md",
          "M-TTFS encoder: dense codes in, masked events in time order out",
          counters=_encoder_counters, counter_meanings=ENCODER_COUNTER_DEFINITIONS),
    Block("sram", "mttfs_sram", Ref("rtl_gen.sram:sram_from_config"), "docs/rtl_sram.md",
          "single-port SRAM of a tile's weight rows, behavioural or a macro wrapper",
          manifest=_sram_manifest),
    Block("tile", "mttfs_tile", Ref("rtl_gen.tile:NeuronTile"), "docs/rtl_tile.md",
          "M-TTFS neuron tile: integrate events, fire with the threshold walk, masked events out",
          counters=_tile_counters, counter_meanings=COUNTER_DEFINITIONS,
          node=Node(i="events", o="events", image=Ref("rtl_gen.tile:load_beats"),
                    run=Ref("rtl_gen.mapper:run_tile_node")),
          design="spiking"),
    Block("router", "mttfs_router", Ref("rtl_gen.router:router_from_config"),
          "docs/rtl_router.md", "XY mesh router, five ports, one flit per port and clock",
          unit_costs=("E_move_event_router",)),
    Block("system", "mttfs_system", Ref("rtl_gen.system:system_from_config"),
          "docs/rtl_system.md",
          "encoder, a mesh of node blocks with routers, sequencer and output merge"),
    Block("dense_tile", "dense_tile", Ref("rtl_gen.dense:DenseTile"), "docs/rtl_dense.md",
          "dense INT4 baseline tile: every code read, every output code sent",
          counters=Ref("rtl_gen.dense:dense_counters"),
          counter_meanings=DENSE_COUNTER_DEFINITIONS, manifest=_dense_manifest,
          node=Node(i="codes", o="codes", image=Ref("rtl_gen.dense:dense_load_beats"),
                    run=Ref("rtl_gen.mapper:run_dense_node")),
          design="dense"),
    Block("attn_softmax", "mttfs_attn_softmax", Ref("rtl_gen.attn_softmax:softmax_from_config"),
          "docs/rtl_attention.md",
          "softmax node of an attention head: raw scores in, attn_prob events out",
          counters=Ref("rtl_gen.attn_softmax:softmax_counters_of"),
          counter_meanings=SOFTMAX_COUNTER_DEFINITIONS),
    Block("attention", "mttfs_attention", Ref("rtl_gen.attention:attention_from_config"),
          "docs/rtl_attention.md",
          "attention path of a block on a heads x 3 mesh: run-time key and value tiles, "
          "softmax nodes, attn_out_in events out",
          counters=_attention_counters, counter_meanings=_attention_meanings,
          manifest=_attention_manifest),
    Block("softmax", "mttfs_softmax", Ref("rtl_gen.softmax:Softmax"), "docs/rtl_units.md",
          "softmax unit: a row of raw attention scores in, attention-probability codes out",
          manifest=_softmax_manifest),
    Block("add_norm", "mttfs_add_norm", Ref("rtl_gen.add_norm:AddNorm"), "docs/rtl_units.md",
          "residual-add + LayerNorm unit: stream and sums in, the next stream and its codes out",
          manifest=_add_norm_manifest),
    Block("axi_tile", "mttfs_axi_tile", Ref("rtl_gen.axi:axi_tile_from_config"),
          "docs/rtl_axi.md",
          "the tile behind AXI4-Stream in and out and an AXI4-Lite register file",
          manifest=Ref("rtl_gen.axi:block_manifest")),
    Block("axi_system", "mttfs_axi_system", Ref("rtl_gen.axi:axi_system_from_config"),
          "docs/rtl_axi.md",
          "the mesh system behind AXI4-Stream in and out and an AXI4-Lite register file",
          manifest=Ref("rtl_gen.axi:block_manifest")),
)


def names() -> tuple[str, ...]:
    """Every block's registry name, in :data:`BLOCKS` order."""
    return tuple(b.name for b in BLOCKS)


def block(name: str) -> Block:
    """The block registered as ``name``.

    Raises
    ------
    ValueError
        No block has that name; the message lists the registered ones.
    """
    for b in BLOCKS:
        if b.name == name:
            return b
    raise ValueError(f"block must be one of {names()}, not {name!r}")


def by_module(module: str) -> Block:
    """The block whose Verilog module is ``module`` (``ValueError`` if none)."""
    for b in BLOCKS:
        if b.module == module:
            return b
    raise ValueError(f"module must be one of {tuple(b.module for b in BLOCKS)}, not {module!r}")


def node_blocks() -> tuple[Block, ...]:
    """The blocks the system can place on a mesh node (:attr:`Block.node` set)."""
    return tuple(b for b in BLOCKS if b.node is not None)


def tiles() -> tuple[Block, ...]:
    """The neuron tiles (:attr:`Block.design` set), e.g. for ``compare``'s dense-vs-spiking."""
    return tuple(b for b in BLOCKS if b.design is not None)


def components(config: RTLConfig, modules=None) -> dict[str, object]:
    """Verilog module name -> component of every block for ``config``, in :data:`BLOCKS` order;
    of the blocks whose modules are in ``modules`` only, when given (``ValueError`` naming a
    module no block has)."""
    check_config(config)
    wanted = None if modules is None else {by_module(m).module for m in modules}
    if wanted == set():
        raise ValueError("modules must name at least one module (None: every one)")
    return {b.module: b.build(config) for b in BLOCKS if wanted is None or b.module in wanted}
