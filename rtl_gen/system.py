"""The M-TTFS system: encoder, a mesh of neuron tiles, and a layer-window sequencer.

One :class:`rtl_gen.tile.NeuronTile` sits at every node of a ``mesh_rows x mesh_cols``
:class:`rtl_gen.router.Mesh`. The mapper (:mod:`rtl_gen.mapper`) assigns each node a layer and
a slice of that layer's neurons, and programs it through the ``load`` port: the tile's SRAM
images, the node's route table (destination nodes and address offset) and its role.

Layer-sequential accumulate-then-fire:

- the encoder turns the input codes into events and broadcasts each one to every layer-0 tile
  (an eager fork: a beat is done when every layer-0 tile has taken it), marker beat included;
- a tile of layer ``l`` integrates the events that reach it, fires once its window's marker
  arrives, and emits its output events; a non-final tile's injector turns each event into one
  flit per route-table entry (``addr`` + offset, ``t``) into its router's local port;
- the sequencer tracks the producing layer ``p``: when every tile of layer ``p`` has emitted its
  marker and the mesh is empty (``busy`` low: a flit is always in some router FIFO until it is
  ejected), the layer-``p+1`` tiles have received every event, and the sequencer gives each of
  them a marker beat; then ``p`` advances;
- the final layer's tiles feed a merge that emits events on ``o`` in time order, ascending global
  address within a step (each tile's stream is sorted; the merge waits until every final tile
  shows its next event or has finished, then takes the least ``(t, addr)``), then one marker.

Nodes without a tile are disabled and never take part.
"""

from __future__ import annotations

from amaranth.hdl import Const, Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from rtl_gen import registry
from rtl_gen.encoder import Encoder
from rtl_gen.layouts import code_layout, system_load_layout, system_out_layout
from rtl_gen.params import ConfigComponent, RTLConfig, check_config, counter_ports
from rtl_gen.router import Mesh
from rtl_gen.system_parts import (
    EventFork,
    Injector,
    OutputMerge,
    Sequencer,
    SystemConfig,
    node_component,
)

__all__ = [
    "System",
    "system_from_config",
]

#: Width of the flit and hop totals.
TOTAL_WIDTH = 32


class System(ConfigComponent):
    """Encoder + ``mesh_rows x mesh_cols`` node blocks on an XY mesh + layer-window sequencer.

    Parameters
    ----------
    config : RTLConfig
        Tile, encoder and mesh parameters.
    nodes : sequence of str, optional
        The registered node block (:func:`rtl_gen.registry.node_blocks`) at each node
        ``y * cols + x``; default: a neuron tile (``"tile"``) everywhere. A block whose ``i``
        or ``o`` carries codes sits in a :class:`rtl_gen.system_parts.NodeAdapter`.

    Members
    -------
    load : In(stream.Signature(system_load_layout(config)))
        Configuration beats (:meth:`rtl_gen.mapper.SystemMap.load_beats`); accepted only while
        the system is idle (``busy`` low).
    i : In(stream.Signature(code_layout(config)))
        Input codes, ``n_in`` per inference, address order (the encoder's input).
    o : Out(stream.Signature(system_out_layout(config)))
        Output events of the last layer, then a ``last`` marker beat that ends the inference.
    busy : Out(1)
        An inference is running (from its first code to its output marker).
    cnt_<name>_n<node> : Out(width)
        Counters of the block at node ``y * cols + x`` (:meth:`node_counters`), of its last
        window (one plain port per node and counter, so the Verilog and manifest names agree).
    cnt_enc_events_out, cnt_enc_events_suppressed : Out(bits of n_in)
        Encoder counters of the last input vector.
    cnt_flits, cnt_hops : Out(32)
        Flits ejected and the sum of their hop counts, since the inference started.

    Route tables, node configurations and the layer count hold their values through ``rst``;
    the tiles' mask registers reset to the config values, so reload after a reset.

    Raises
    ------
    TypeError
        ``config`` is not an :class:`RTLConfig`, or ``nodes`` is not a sequence.
    ValueError
        ``nodes`` does not name one registered node block per node.
    """

    def __init__(self, config: RTLConfig, nodes=None, *, src_loc_at: int = 0):
        self._nodes = _check_nodes(check_config(config), nodes)
        super().__init__(config, src_loc_at=src_loc_at + 1)

    @property
    def nodes(self) -> tuple[str, ...]:
        """The registered block at each node."""
        return tuple(b.name for b in self._nodes)

    def node_counters(self, n: int) -> dict[str, int]:
        """Counter name -> width of the block at node ``n`` (its ``cnt_<name>_n<n>`` ports)."""
        return self._nodes[n].counters(self._config)

    def _members(self, config: RTLConfig) -> dict[str, object]:
        members = {
            "load": In(stream.Signature(system_load_layout(config))),
            "i": In(stream.Signature(code_layout(config))),
            "o": Out(stream.Signature(system_out_layout(config))),
            "busy": Out(1),
        }
        for n in range(config.mesh_rows * config.mesh_cols):
            members.update(counter_ports(self.node_counters(n), f"cnt_{{}}_n{n}"))
        members.update(counter_ports(config.encoder_counters, "cnt_enc_{}"))
        members.update(counter_ports({"flits": TOTAL_WIDTH, "hops": TOTAL_WIDTH}))
        return members

    def elaborate(self, platform):
        cfg = self._config
        m = Module()
        m.submodules.encoder = enc = Encoder(cfg)
        m.submodules.mesh = mesh = Mesh(cfg.mesh_rows, cfg.mesh_cols,
                                        addr_width=cfg.in_addr_width, time_width=cfg.time_width)
        m.submodules.config = conf = SystemConfig(cfg)
        m.submodules.sequencer = seq = Sequencer(cfg)
        m.submodules.fork = fork = EventFork(cfg)
        m.submodules.merge = merge = OutputMerge(cfg)
        nodes, injectors = self._place(m, enc)

        # configuration: load beats -> nodes and registers, refused while running
        wiring.connect(m, wiring.flipped(self.load), conf.load)
        m.d.comb += [conf.running.eq(seq.running), seq.n_layers.eq(conf.n_layers),
                     seq.mesh_busy.eq(mesh.busy), self.busy.eq(seq.running)]
        for n, node in enumerate(nodes):
            wiring.connect(m, conf.tile[n], node.load)
            m.d.comb += seq.node[n].eq(conf.node[n])

        start = self._input(m, enc, seq, fork)
        ejected = [self._node_input(m, n, node, fork.o[n], seq, conf,
                                    mesh.o[n // cfg.mesh_cols][n % cfg.mesh_cols])
                   for n, node in enumerate(nodes)]
        self._totals(m, start, ejected)
        for n, (node, inject) in enumerate(zip(nodes, injectors, strict=True)):
            self._node_output(m, n, node, inject, seq, conf, merge)
            wiring.connect(m, inject.o, mesh.i[n // cfg.mesh_cols][n % cfg.mesh_cols])

        m.d.comb += [
            merge.final.eq(seq.final),
            merge.done.eq(seq.done),
            merge.active.eq(seq.final_stage),
            seq.finish.eq(merge.o.valid & merge.o.ready & merge.o.payload.last),
        ]
        wiring.connect(m, merge.o, wiring.flipped(self.o))
        return m

    def _place(self, m: Module, enc) -> tuple[list, list]:
        """Every node's block (``<block>_x<x>_y<y>``) and injector; their counters out."""
        cfg = self._config
        nodes, injectors = [], []
        for n, block in enumerate(self._nodes):
            x, y = n % cfg.mesh_cols, n // cfg.mesh_cols
            m.submodules[f"{block.name}_x{x}_y{y}"] = node = node_component(cfg, block)
            m.submodules[f"inject_x{x}_y{y}"] = inject = Injector(cfg)
            nodes.append(node)
            injectors.append(inject)
            for name in self.node_counters(n):
                m.d.comb += getattr(self, f"cnt_{name}_n{n}").eq(getattr(node, f"cnt_{name}"))
        for name in cfg.encoder_counters:
            m.d.comb += getattr(self, f"cnt_enc_{name}").eq(getattr(enc, f"cnt_{name}"))
        return nodes, injectors

    def _input(self, m: Module, enc, seq, fork):
        """Input codes -> encoder -> fork to the layer-0 nodes; an inference starts with its
        first code. Returns the start strobe."""
        m.d.comb += [
            enc.i.valid.eq(self.i.valid & ~seq.enc_done),
            enc.i.payload.eq(self.i.payload),
            self.i.ready.eq(enc.i.ready & ~seq.enc_done),
        ]
        start = Signal()
        m.d.comb += [
            start.eq(self.i.valid & self.i.ready & ~seq.running),
            seq.start.eq(start),
            fork.clear.eq(start),
            fork.en.eq(seq.first),
            seq.enc_last.eq(enc.o.valid & enc.o.ready & enc.o.payload.last),
        ]
        wiring.connect(m, enc.o, fork.i)
        return start

    @staticmethod
    def _node_input(m: Module, n: int, node, forked, seq, conf, port):
        """Node ``n``'s input: the fork (layer 0), a pending marker, or its router's local
        output. Returns the ejection strobe and the ejected flit's hop count."""
        with m.If(seq.first[n]):
            m.d.comb += [
                node.i.valid.eq(forked.valid),
                node.i.payload.eq(forked.payload),
                forked.ready.eq(node.i.ready),
            ]
        with m.Elif(seq.mark[n]):
            m.d.comb += [node.i.valid.eq(1), node.i.payload.last.eq(1),
                         seq.mark_taken[n].eq(node.i.ready)]
        with m.Elif(conf.node[n].enable):
            m.d.comb += [
                node.i.valid.eq(port.valid),
                node.i.payload.addr.eq(port.payload.addr),
                node.i.payload.tau.eq(port.payload.t),
                port.ready.eq(node.i.ready),
            ]
        take = Signal(name=f"eject{n}")
        m.d.comb += take.eq(port.valid & port.ready)
        return take, port.payload.hops

    def _totals(self, m: Module, start, ejected) -> None:
        """Flit and hop totals; the first code of an inference clears them (no flit moves
        then)."""
        total_flits, total_hops = self.cnt_flits, self.cnt_hops
        with m.If(start):
            m.d.sync += [total_flits.eq(0), total_hops.eq(0)]
        with m.Else():
            m.d.sync += [
                total_flits.eq(total_flits + sum((t for t, _ in ejected), Const(0, 1))),
                total_hops.eq(total_hops + sum((Mux(t, h, 0) for t, h in ejected), Const(0, 1))),
            ]

    @staticmethod
    def _node_output(m: Module, n: int, node, inject, seq, conf, merge) -> None:
        """Node ``n``'s output: its marker to the sequencer, its events to its injector or (last
        layer) to the output merge."""
        ev = node.o.payload
        event = node.o.valid & ~ev.last
        m.d.comb += [
            seq.tile_done[n].eq(node.o.valid & ev.last),
            inject.i.valid.eq(event & ~seq.final[n]),
            inject.i.payload.eq(ev),
            inject.n_dst.eq(conf.node[n].n_dst),
            merge.i[n].valid.eq(event & seq.final[n]),
            merge.i[n].payload.eq(ev),
            merge.offset[n].eq(conf.node[n].out_offset),
        ]
        m.d.comb += inject.route.eq(conf.route[n])
        with m.If(ev.last):
            m.d.comb += node.o.ready.eq(1)
        with m.Elif(seq.final[n]):
            m.d.comb += node.o.ready.eq(merge.i[n].ready)
        with m.Else():
            m.d.comb += node.o.ready.eq(inject.i.ready)


def _check_nodes(config: RTLConfig, nodes) -> tuple:
    """The registered node blocks named by ``nodes`` (one per mesh node; ``None``: tiles)."""
    P = config.mesh_rows * config.mesh_cols
    if nodes is None:
        return (registry.block("tile"),) * P
    if isinstance(nodes, str) or not isinstance(nodes, (list, tuple)):
        raise TypeError(f"nodes must be a sequence of block names, not {nodes!r}")
    if len(nodes) != P:
        raise ValueError(f"nodes must name {P} blocks (one per node of the "
                         f"{config.mesh_rows}x{config.mesh_cols} mesh), not {len(nodes)}")
    allowed = tuple(b.name for b in registry.node_blocks())
    for i, name in enumerate(nodes):
        if name not in allowed:
            raise ValueError(f"nodes[{i}] must be a node block {allowed}, not {name!r}")
    return tuple(registry.block(name) for name in nodes)


def system_from_config(config: RTLConfig) -> System:
    """The ``mttfs_system`` top module of ``config`` (programmed later through ``load``)."""
    # src_loc_at=1: the caller, not this factory, is the creator Amaranth names (e.g. in its
    # warning about a component that was never elaborated)
    return System(config, src_loc_at=1)


# -- simulation driver -------------------------------------------------------------------------








