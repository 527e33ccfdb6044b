"""The named sub-components :class:`rtl_gen.system.System` is built from.

- :class:`SystemConfig`: the ``load`` port decoder and the configuration registers (one
  destination range per node, node configurations, layer count), which hold their values
  through ``rst``;
- :class:`Sequencer`: the inference state (running, producing layer ``p``, which tiles emitted
  their marker, pending marker beats) and the layer-window rule;
- :class:`EventFork`: an eager fork of the encoder's stream to the layer-0 tiles;
- :class:`Injector`: one tile's output events into flits, one per destination of its range;
- :class:`OutputMerge`: the final layer's tile outputs merged into the system output in
  ``(t, addr)`` order, then one marker;
- :class:`CodeGather`, :class:`CodeEvents` and :class:`NodeAdapter`: a node block whose ``i`` or
  ``o`` carries dense codes (the dense tile) made to speak events on the mesh, and
  :func:`node_component`, which builds any registered node block for a node.

Each takes the system's :class:`rtl_gen.params.RTLConfig` and has ``P = mesh_rows * mesh_cols``
node-indexed ports where it serves every node. The behaviour is described in
docs/rtl_system.md; each has its own tests in ``tests/test_rtl_system_parts.py``.
"""

from __future__ import annotations

import dataclasses

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from rtl_gen.layouts import (
    SYSTEM_TARGETS,
    TARGETS,
    dense_in_layout,
    dense_out_layout,
    dense_pack,
    flit_layout,
    in_event_layout,
    load_layout,
    node_layout,
    out_event_layout,
    route_layout,
    system_load_layout,
    system_out_layout,
    system_widths,
    tile_config_layout,
)
from rtl_gen.mask import transmitted
from rtl_gen.params import ConfigComponent, RTLConfig, counter_ports

__all__ = [
    "CodeEvents",
    "CodeGather",
    "EventFork",
    "Injector",
    "NodeAdapter",
    "OutputMerge",
    "Sequencer",
    "SystemConfig",
    "check_node_ports",
    "node_component",
]


def _nodes(config: RTLConfig) -> int:
    return config.mesh_rows * config.mesh_cols


def _all(terms) -> object:
    out = Const(1, 1)
    for term in terms:
        out = out & term
    return out


class SystemConfig(ConfigComponent):
    """``load`` decoder: tile beats to the addressed tile, the rest into configuration registers.

    Members
    -------
    load : In(stream.Signature(system_load_layout(config)))
        Accepted only while ``running`` is low (and, for a tile target, the tile is ready).
    tile : Out(stream.Signature(load_layout(config))).array(P)
        Load beats of targets 0..3, to the tile at ``node``.
    running : In(1)
        An inference is running: every load beat waits.
    route : Out(route_layout(config)).array(P)
        ``route[n]``: the destination range of node ``n`` (target 4).
    node : Out(node_layout(config)).array(P)
        Node configurations (target 5).
    n_layers : Out(system_widths(config)["n_dst"])
        Layers of the chain (target 6).
    """

    def _members(self, config: RTLConfig) -> dict[str, object]:
        P = _nodes(config)
        return {
            "load": In(stream.Signature(system_load_layout(config))),
            "tile": Out(stream.Signature(load_layout(config))).array(P),
            "running": In(1),
            "route": Out(route_layout(config)).array(P),
            "node": Out(node_layout(config)).array(P),
            "n_layers": Out(system_widths(config)["n_dst"]),
        }

    def elaborate(self, platform):
        cfg = self._config
        m = Module()
        P = _nodes(cfg)
        # reset_less: the configuration survives rst, like SRAM contents
        n_layers = Signal(system_widths(cfg)["n_dst"], reset_less=True)
        node = [Signal(node_layout(cfg), name=f"node{n}", reset_less=True) for n in range(P)]
        route = [Signal(route_layout(cfg), name=f"route{n}", reset_less=True) for n in range(P)]
        m.d.comb += self.n_layers.eq(n_layers)
        for n in range(P):
            m.d.comb += [self.node[n].eq(node[n]), self.route[n].eq(route[n])]

        ld = self.load.payload
        tile_target = ld.target < 4
        tile_ready = Array(t.ready for t in self.tile)[ld.node] if P > 1 else self.tile[0].ready
        m.d.comb += self.load.ready.eq(~self.running & (~tile_target | tile_ready))
        for n, tile in enumerate(self.tile):
            m.d.comb += [
                tile.valid.eq(self.load.valid & ~self.running & tile_target & (ld.node == n)),
                tile.payload.target.eq(ld.target[:2]),
                tile.payload.addr.eq(ld.addr),
                tile.payload.data.eq(ld.data),
            ]
        with m.If(self.load.valid & self.load.ready):
            for n in range(P):
                with m.If(ld.node == n):
                    with m.If(ld.target == SYSTEM_TARGETS["route"]):
                        m.d.sync += route[n].eq(ld.data)
                    with m.If(ld.target == SYSTEM_TARGETS["node"]):
                        m.d.sync += node[n].eq(ld.data)
            with m.If(ld.target == SYSTEM_TARGETS["system"]):
                m.d.sync += n_layers.eq(ld.data)
        return m


class Sequencer(ConfigComponent):
    """Inference state and the layer-window rule.

    When every tile of the producing layer ``p`` has emitted its marker and the mesh is empty,
    the tiles of layer ``p+1`` have received every event: each gets a pending marker beat and
    ``p`` advances.

    Members
    -------
    node : In(node_layout(config)).array(P)
    n_layers : In(system_widths(config)["n_dst"])
        The configuration (:class:`SystemConfig`).
    start : In(1)
        The first code of an inference is taken: running, ``p = 0``, flags cleared.
    enc_last : In(1)
        The encoder's marker left the fork (to every layer-0 tile).
    tile_done : In(P)
        Node ``n``'s tile hands over its marker beat this clock.
    mark_taken : In(P)
        Node ``n``'s tile takes its pending marker beat this clock.
    mesh_busy : In(1)
        Some flit is in the mesh.
    finish : In(1)
        The system's output marker is taken: the inference ends.
    running, enc_done : Out(1)
        An inference is running; its input vector is complete (no more codes are taken).
    first, final : Out(P)
        Enabled nodes of layer 0 and of the last layer.
    done : Out(P)
        Node ``n``'s tile emitted its marker in this inference.
    mark : Out(P)
        A marker beat is pending for node ``n``.
    final_stage : Out(1)
        Running with ``p`` the last layer: the output merge may emit.
    """

    def _members(self, config: RTLConfig) -> dict[str, object]:
        P, sw = _nodes(config), system_widths(config)
        return {
            "node": In(node_layout(config)).array(P),
            "n_layers": In(sw["n_dst"]),
            "start": In(1),
            "enc_last": In(1),
            "tile_done": In(P),
            "mark_taken": In(P),
            "mesh_busy": In(1),
            "finish": In(1),
            "running": Out(1),
            "enc_done": Out(1),
            "first": Out(P),
            "final": Out(P),
            "done": Out(P),
            "mark": Out(P),
            "final_stage": Out(1),
        }

    def elaborate(self, platform):
        cfg = self._config
        m = Module()
        P, sw = _nodes(cfg), system_widths(cfg)
        node = self.node
        running, enc_done, done, mark = self.running, self.enc_done, self.done, self.mark
        p = Signal(sw["layer"])  # producing layer
        last_layer = Signal(sw["n_dst"])
        m.d.comb += last_layer.eq(self.n_layers - 1)
        for n in range(P):
            m.d.comb += [
                self.first[n].eq(node[n].enable & (node[n].layer == 0)),
                self.final[n].eq(node[n].enable & (node[n].layer == last_layer)),
            ]
        m.d.comb += self.final_stage.eq(running & (p == last_layer))

        with m.If(self.start):
            m.d.sync += [running.eq(1), p.eq(0), done.eq(0), mark.eq(0)]
        with m.If(self.enc_last):
            m.d.sync += enc_done.eq(1)
        for n in range(P):
            with m.If(self.mark_taken[n]):
                m.d.sync += mark[n].eq(0)
        for n in range(P):
            with m.If(self.tile_done[n]):
                m.d.sync += done[n].eq(1)
        with m.If(self.finish):
            m.d.sync += [running.eq(0), enc_done.eq(0), done.eq(0), p.eq(0)]

        layer_done = _all(~node[n].enable | (node[n].layer != p) | done[n] for n in range(P))
        with m.If(running & (p != last_layer) & layer_done & ~self.mesh_busy & (mark == 0)):
            m.d.sync += [
                mark.eq(Cat(*[node[n].enable & (node[n].layer == p + 1) for n in range(P)])),
                p.eq(p + 1),
            ]
        return m


class EventFork(ConfigComponent):
    """Eager fork: every enabled output takes each input beat once; then the input is done.

    Members
    -------
    i : In(stream.Signature(in_event_layout(config)))
    o : Out(stream.Signature(in_event_layout(config))).array(P)
        ``o[n]`` offers the input beat until it takes it (only while ``en[n]``).
    en : In(P)
        Outputs taking part; the others never hold the input back.
    clear : In(1)
        Forget which outputs took the current beat (start of an inference).
    """

    def _members(self, config: RTLConfig) -> dict[str, object]:
        P = _nodes(config)
        return {
            "i": In(stream.Signature(in_event_layout(config))),
            "o": Out(stream.Signature(in_event_layout(config))).array(P),
            "en": In(P),
            "clear": In(1),
        }

    def elaborate(self, platform):
        m = Module()
        P = _nodes(self._config)
        taken = Signal(P)  # output n took the current beat
        m.d.comb += self.i.ready.eq(_all(~self.en[n] | taken[n] | self.o[n].ready
                                         for n in range(P)))
        fire = self.i.valid & self.i.ready
        with m.If(self.clear):
            m.d.sync += taken.eq(0)
        with m.If(fire):
            m.d.sync += taken.eq(0)
        for n, o in enumerate(self.o):
            m.d.comb += [
                o.valid.eq(self.en[n] & self.i.valid & ~taken[n]),
                o.payload.eq(self.i.payload),
            ]
            with m.If(o.valid & o.ready & ~fire):
                m.d.sync += taken[n].eq(1)
        return m


class Injector(ConfigComponent):
    """One tile's output events into flits: one per destination of the node's range.

    The destinations of a tile are the ``n_dst`` consecutive nodes, in row-major order, that
    start at ``route.dst_x, route.dst_y`` (the mapper places each layer's tiles on consecutive
    nodes), so a node needs one range register, not a table of ``P`` entries.

    Members
    -------
    i : In(stream.Signature(out_event_layout(config)))
        Events (never a marker); each is taken with its last flit, or at once when ``n_dst``
        is 0.
    o : Out(stream.Signature(flit_layout(...)))
        Flits to destination ``e = 0..n_dst-1`` in turn (``(dst_x, dst_y)`` advanced ``e``
        nodes row-major), ``addr + offset``, ``t``, ``hops = 0``; the mesh's flit layout
        (``config.in_addr_width``, ``config.time_width``).
    route : In(route_layout(config))
        The node's destination range: first destination and address offset.
    n_dst : In(system_widths(config)["n_dst"])
        Destinations in the range.
    """

    def _members(self, config: RTLConfig) -> dict[str, object]:
        flit = flit_layout(config.mesh_rows, config.mesh_cols, config.in_addr_width,
                           config.time_width)
        return {
            "i": In(stream.Signature(out_event_layout(config))),
            "o": Out(stream.Signature(flit)),
            "route": In(route_layout(config)),
            "n_dst": In(system_widths(config)["n_dst"]),
        }

    def elaborate(self, platform):
        m = Module()
        cfg = self._config
        P = _nodes(cfg)
        sw = system_widths(cfg)
        idx = Signal(range(max(P, 2)))
        # the current destination: the range's first at idx == 0, else the walked registers
        walk_x = Signal(sw["dst_x"])
        walk_y = Signal(sw["dst_y"])
        cur_x = Signal(sw["dst_x"])
        cur_y = Signal(sw["dst_y"])
        m.d.comb += [
            cur_x.eq(Mux(idx == 0, self.route.dst_x, walk_x)),
            cur_y.eq(Mux(idx == 0, self.route.dst_y, walk_y)),
        ]
        ev = self.i.payload
        with m.If(self.i.valid):
            with m.If(self.n_dst == 0):
                m.d.comb += self.i.ready.eq(1)
            with m.Else():
                m.d.comb += [
                    self.o.valid.eq(1),
                    self.o.payload.dst_x.eq(cur_x),
                    self.o.payload.dst_y.eq(cur_y),
                    self.o.payload.addr.eq(ev.addr + self.route.offset),
                    self.o.payload.t.eq(ev.t),
                    # explicit, so every payload bit has a driver in the netlist
                    self.o.payload.hops.eq(0),
                ]
                with m.If(self.o.ready):
                    with m.If(idx == self.n_dst - 1):
                        m.d.sync += idx.eq(0)
                        m.d.comb += self.i.ready.eq(1)
                    with m.Else():
                        m.d.sync += idx.eq(idx + 1)
                        with m.If(cur_x == cfg.mesh_cols - 1):
                            m.d.sync += [walk_x.eq(0), walk_y.eq(cur_y + 1)]
                        with m.Else():
                            m.d.sync += [walk_x.eq(cur_x + 1), walk_y.eq(cur_y)]
        return m


class OutputMerge(ConfigComponent):
    """The final tiles' events in time order, ascending global address within a step; a marker.

    Waits until every final node shows an event or is done, then emits the least
    ``(t, addr + offset)``; once every final node is done, emits one marker beat.

    Members
    -------
    i : In(stream.Signature(out_event_layout(config))).array(P)
        Events (never a marker) of the final nodes' tiles.
    offset : In(system_widths(config)["out_addr"]).array(P)
        Global address of each node's neuron 0.
    final, done : In(P)
        Nodes of the last layer; nodes whose tile emitted its marker (:class:`Sequencer`).
    active : In(1)
        The last layer is producing (:attr:`Sequencer.final_stage`).
    o : Out(stream.Signature(system_out_layout(config)))
    """

    def _members(self, config: RTLConfig) -> dict[str, object]:
        P, sw = _nodes(config), system_widths(config)
        return {
            "i": In(stream.Signature(out_event_layout(config))).array(P),
            "offset": In(sw["out_addr"]).array(P),
            "final": In(P),
            "done": In(P),
            "active": In(1),
            "o": Out(stream.Signature(system_out_layout(config))),
        }

    def elaborate(self, platform):
        cfg = self._config
        m = Module()
        P, sw = _nodes(cfg), system_widths(cfg)
        final, done = self.final, self.done
        have = [self.i[n].valid for n in range(P)]
        all_present = _all(~final[n] | done[n] | have[n] for n in range(P))
        all_done = _all(~final[n] | done[n] for n in range(P))
        keys = []
        for n, i in enumerate(self.i):
            gaddr = Signal(sw["out_addr"], name=f"gaddr{n}")
            m.d.comb += gaddr.eq(i.payload.addr + self.offset[n])
            keys.append(Cat(gaddr, i.payload.t))
        best_valid = Const(0, 1)
        best_key = Const(0, len(keys[0]))
        best_idx = Const(0, range(max(P, 2)))
        for n in range(P):
            key = keys[n]
            better = have[n] & (~best_valid | (key < best_key))
            b_valid, b_key, b_idx = (Signal(name=f"best_valid{n}"),
                                     Signal(len(key), name=f"best_key{n}"),
                                     Signal(range(max(P, 2)), name=f"best_idx{n}"))
            m.d.comb += [
                b_valid.eq(best_valid | have[n]),
                b_key.eq(best_key),
                b_idx.eq(best_idx),
            ]
            with m.If(better):
                m.d.comb += [b_key.eq(key), b_idx.eq(n)]
            best_valid, best_key, best_idx = b_valid, b_key, b_idx
        out_w = sw["out_addr"]
        with m.If(self.active & all_present & best_valid):
            m.d.comb += [
                self.o.valid.eq(1),
                self.o.payload.addr.eq(best_key[:out_w]),
                self.o.payload.t.eq(best_key[out_w:out_w + cfg.time_width]),
            ]
            with m.If(self.o.ready):
                for n, i in enumerate(self.i):
                    with m.If(best_idx == n):
                        m.d.comb += i.ready.eq(1)
        with m.Elif(self.active & all_done):
            m.d.comb += [self.o.valid.eq(1), self.o.payload.last.eq(1)]
        return m


# -- node blocks whose ports carry codes ---------------------------------------------------------


class CodeGather(ConfigComponent):
    """A window's events in, its code vector out in address order (for a codes-input block).

    Members
    -------
    i : In(stream.Signature(in_event_layout(config)))
        Events ``(addr, tau)`` of one window in any order, then a marker beat.
    o : Out(stream.Signature(dense_in_layout(config)))
        Once the marker arrived: ``n_in`` codes, address ``a``'s the code ``c - tau`` of its
        event, or the silent code ``c - i_max`` when none came (the dead zone dropped it: the
        code an M-TTFS consumer reads for a missing event); then a marker beat.
    i_max : In(time_width)
        Silent centre of the input position.
    busy : Out(1)
        Sending the codes or the marker.
    """

    def _members(self, config: RTLConfig) -> dict[str, object]:
        return {
            "i": In(stream.Signature(in_event_layout(config))),
            "o": Out(stream.Signature(dense_in_layout(config))),
            "i_max": In(config.time_width),
            "busy": Out(1),
        }

    def elaborate(self, platform):
        cfg = self._config
        m = Module()
        n = cfg.n_in
        taus = [Signal(cfg.time_width, name=f"tau{a}") for a in range(n)]
        seen = Signal(n)  # address a had an event in this window
        idx = Signal(range(max(n, 2)))
        ev = self.i.payload
        with m.FSM(name="gather"):
            with m.State("COLLECT"):
                m.d.comb += self.i.ready.eq(1)
                with m.If(self.i.valid & ev.last):
                    m.d.sync += idx.eq(0)
                    m.next = "SEND"
                with m.Elif(self.i.valid):
                    for a in range(n):
                        with m.If(ev.addr == a):
                            m.d.sync += [taus[a].eq(ev.tau), seen[a].eq(1)]
            with m.State("SEND"):
                tau = Mux(seen.bit_select(idx, 1), Array(taus)[idx], self.i_max)
                m.d.comb += [self.busy.eq(1), self.o.valid.eq(1),
                             self.o.payload.code.eq(cfg.c - tau)]  # mod 2**time_width
                with m.If(self.o.ready):
                    m.d.sync += idx.eq(idx + 1)
                    with m.If(idx == n - 1):
                        m.next = "MARK"
            with m.State("MARK"):
                m.d.comb += [self.busy.eq(1), self.o.valid.eq(1), self.o.payload.last.eq(1)]
                with m.If(self.o.ready):
                    m.d.sync += seen.eq(0)
                    m.next = "COLLECT"
        return m


class CodeEvents(ConfigComponent):
    """A codes-output block's packed code beats out as masked events (for the mesh).

    Members
    -------
    i : In(stream.Signature(dense_out_layout(config)))
        Beats of ``P`` packed codes (neuron ``addr + p``, :func:`rtl_gen.layouts.dense_pack`),
        then a marker beat.
    o : Out(stream.Signature(out_event_layout(config)))
        For each neuron ``j < N`` in address order, the event ``(j, t = c - q_j)`` when ``t`` is
        outside the dead zone (:func:`rtl_gen.mask.transmitted`); then the marker. One code
        position per clock.
    i_max, k : In(time_width)
        The output mask.
    """

    def _members(self, config: RTLConfig) -> dict[str, object]:
        tw = config.time_width
        return {
            "i": In(stream.Signature(dense_out_layout(config))),
            "o": Out(stream.Signature(out_event_layout(config))),
            "i_max": In(tw),
            "k": In(tw),
        }

    def elaborate(self, platform):
        cfg = self._config
        m = Module()
        P, N, tw = dense_pack(cfg), cfg.tile_neurons, cfg.time_width
        beat = self.i.payload
        p = Signal(range(max(P, 2)))
        j = Signal(range(N + P))
        t = Signal(tw)
        m.d.comb += [j.eq(beat.addr + p), t.eq(cfg.c - beat.codes.word_select(p, tw))]
        send = (j < N) & transmitted(t, self.i_max, self.k)
        with m.If(self.i.valid & beat.last):
            m.d.comb += [self.o.valid.eq(1), self.o.payload.last.eq(1),
                         self.i.ready.eq(self.o.ready)]
        with m.Elif(self.i.valid):
            m.d.comb += [self.o.valid.eq(send), self.o.payload.addr.eq(j),
                         self.o.payload.t.eq(t)]
            with m.If(~send | self.o.ready):
                with m.If((p == P - 1) | (j >= N - 1)):
                    m.d.comb += self.i.ready.eq(1)
                    m.d.sync += p.eq(0)
                with m.Else():
                    m.d.sync += p.eq(p + 1)
        return m


def _event_members(config: RTLConfig, counters: dict[str, int]) -> dict[str, object]:
    """The mesh node ports: a tile's load, events in and out, busy, counters."""
    return {
        "load": In(stream.Signature(load_layout(config))),
        "i": In(stream.Signature(in_event_layout(config))),
        "o": Out(stream.Signature(out_event_layout(config))),
        "busy": Out(1),
        **counter_ports(counters),
    }


#: The payload layout of a node port of each kind, by direction.
_PORT_LAYOUTS = {("i", "events"): in_event_layout, ("i", "codes"): dense_in_layout,
                 ("o", "events"): out_event_layout, ("o", "codes"): dense_out_layout}


def check_node_ports(component, config: RTLConfig, block) -> None:
    """Raise ``ValueError`` unless ``component`` has the mesh node ports ``block.node`` names.

    ``load`` (the tile's load stream), ``i`` and ``o`` streams of the declared kinds, ``busy``
    and a ``cnt_<name>`` output per counter of the block.
    """
    want = {"load": In(stream.Signature(load_layout(config))), "busy": Out(1),
            **counter_ports(block.counters(config) if block.counters else {})}
    for name, flow in (("i", In), ("o", Out)):
        kind = getattr(block.node, name)
        want[name] = flow(stream.Signature(_PORT_LAYOUTS[name, kind](config)))
    members = component.signature.members
    wrong = sorted(n for n, member in want.items() if n not in members or members[n] != member)
    if wrong:
        raise ValueError(f"block {block.name!r} lacks the mesh node ports {wrong} of its "
                         f"declared kinds (i: {block.node.i}, o: {block.node.o})")


class NodeAdapter(ConfigComponent):
    """A node block whose ``i`` or ``o`` carries codes, made to speak events on the mesh.

    The block is a submodule ``block``; a codes input gets a :class:`CodeGather` in front, a
    codes output a :class:`CodeEvents` behind. Their masks are the node's: the tile config beat
    of its image (target 3, :func:`rtl_gen.layouts.tile_config_layout`), which the adapter
    keeps as it passes to the block (registers reset to the config's values, as a tile's).

    Parameters
    ----------
    config : RTLConfig
    block : rtl_gen.registry.Block
        A registered node block.
    inner : wiring.Component
        Its component for ``config`` (:func:`node_component` builds and checks it).

    Members
    -------
    load, i, o, busy, cnt_<name>
        As :class:`rtl_gen.tile.NeuronTile`'s, with the block's counters.
    """

    def __init__(self, config: RTLConfig, block, inner, *, src_loc_at: int = 0):
        self._block, self._inner = block, inner
        super().__init__(config, src_loc_at=src_loc_at + 1)

    def _members(self, config: RTLConfig) -> dict[str, object]:
        return _event_members(config, self._block.counters(config))

    def elaborate(self, platform):
        cfg, node = self._config, self._block.node
        m = Module()
        m.submodules.block = blk = self._inner
        wiring.connect(m, wiring.flipped(self.load), blk.load)
        masks = {name: Signal(cfg.time_width, name=name, init=getattr(cfg, name))
                 for name in ("i_max_in", "i_max_out", "k")}
        ld = self.load.payload
        with m.If(self.load.valid & self.load.ready & (ld.target == TARGETS["config"])):
            word = tile_config_layout(cfg)(ld.data[:cfg.config_width])
            m.d.sync += [reg.eq(word[name]) for name, reg in masks.items()]
        busy = blk.busy
        if node.i == "codes":
            m.submodules.gather = gather = CodeGather(cfg)
            m.d.comb += gather.i_max.eq(masks["i_max_in"])
            wiring.connect(m, wiring.flipped(self.i), gather.i)
            wiring.connect(m, gather.o, blk.i)
            busy = busy | gather.busy
        else:
            wiring.connect(m, wiring.flipped(self.i), blk.i)
        if node.o == "codes":
            m.submodules.emit = emit = CodeEvents(cfg)
            m.d.comb += [emit.i_max.eq(masks["i_max_out"]), emit.k.eq(masks["k"])]
            wiring.connect(m, blk.o, emit.i)
            wiring.connect(m, emit.o, wiring.flipped(self.o))
        else:
            wiring.connect(m, blk.o, wiring.flipped(self.o))
        m.d.comb += self.busy.eq(busy)
        for name in self._block.counters(cfg):
            m.d.comb += getattr(self, f"cnt_{name}").eq(getattr(blk, f"cnt_{name}"))
        return m


def node_component(config: RTLConfig, block) -> wiring.Component:
    """The component at a mesh node running registered node block ``block``: the block itself
    when it speaks events on both sides, else wrapped in a :class:`NodeAdapter`.

    Raises
    ------
    ValueError
        ``block`` is no node block, or its component lacks the node ports it declares.
    """
    if block.node is None:
        raise ValueError(f"block {block.name!r} has no mesh node ports")
    comp = block.build(dataclasses.replace(config, raw_sums=False))  # the mesh carries events
    check_node_ports(comp, config, block)
    if block.node.i == "events" and block.node.o == "events":
        return comp
    return NodeAdapter(config, block, comp)
