"""The named sub-components :class:`rtl_gen.system.System` is built from.

- :class:`SystemConfig`: the ``load`` port decoder and the configuration registers (one
  destination range per node, node configurations, layer count), which hold their values
  through ``rst``;
- :class:`Sequencer`: the inference state (running, producing layer ``p``, which tiles emitted
  their marker, pending marker beats) and the layer-window rule;
- :class:`EventFork`: an eager fork of the encoder's stream to the layer-0 tiles;
- :class:`Injector`: one tile's output events into flits, one per destination of its range;
- :class:`OutputMerge`: the final layer's tile outputs merged into the system output in
  ``(t, addr)`` order, then one marker.

Each takes the system's :class:`rtl_gen.params.RTLConfig` and has ``P = mesh_rows * mesh_cols``
node-indexed ports where it serves every node. The behaviour is described in
docs/rtl_system.md; each has its own tests in ``tests/test_rtl_system_parts.py``.
"""

from __future__ import annotations

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import stream
from amaranth.lib.wiring import In, Out

from rtl_gen.layouts import (
    SYSTEM_TARGETS,
    flit_layout,
    in_event_layout,
    load_layout,
    node_layout,
    out_event_layout,
    route_layout,
    system_load_layout,
    system_out_layout,
    system_widths,
)
from rtl_gen.params import ConfigComponent, RTLConfig

__all__ = ["EventFork", "Injector", "OutputMerge", "Sequencer", "SystemConfig"]


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
