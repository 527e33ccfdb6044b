"""The attention path recorded for a node-by-node gate-level replay.

:class:`AttentionRecorder` is the ``runner`` of
:func:`rtl_gen.simulation.attention.simulate_attention`: beside the system's ports it records every
port of each head's nodes (query x key tile, softmax node, probability x value tile) and injectors,
the read data of their memories (which a netlist with its memories cut takes as inputs) and the
``writing`` of their run-time weight writers; :meth:`AttentionRecorder.node_trace` is one node's
trace, :meth:`~AttentionRecorder.window_marks` where each window starts,
:meth:`~AttentionRecorder.flits` the flits an injector sent (``synth_scripts.block_attention``
prices them).
"""

from __future__ import annotations

__all__ = ["AttentionRecorder"]


def _memories(fragment, path: tuple = ()) -> dict[str, object]:
    """Module path (``weights``, ``softmax.row``) of every memory under ``fragment`` -> the
    data of its one read port."""
    from amaranth.lib.memory import Memory

    out = {}
    for sub, name, _ in fragment.subfragments:
        mem = next((o for o in sub.origins or () if isinstance(o, Memory)), None)
        if mem is None:
            out.update(_memories(sub, (*path, name)))
        elif len(mem.read_ports) != 1:
            raise ValueError(f"memory {'.'.join((*path, name))} has {len(mem.read_ports)} "
                             "read ports; one is cut")
        else:
            out[".".join(path)] = mem.read_ports[0].data
    return out


def _writers(fragment, path: tuple = ()) -> dict[str, object]:
    """Module path -> ``writing`` of every :class:`rtl_gen.kv_tiles.RuntimeWeights` under
    ``fragment``: a key beat is written one row a clock after it is taken, while its node is
    otherwise idle, so the node's clock runs then too."""
    from rtl_gen.kv_tiles import RuntimeWeights

    out = {}
    for sub, name, _ in fragment.subfragments:
        comp = next((o for o in sub.origins or () if isinstance(o, RuntimeWeights)), None)
        if comp is not None:
            out[".".join((*path, name))] = comp.writing
        else:
            out.update(_writers(sub, (*path, name)))
    return out


def _node_probes(fragment) -> dict:
    """Per ``(head, part)`` of an elaborated :class:`AttentionSystem`: the node component, its
    memories' read data (:func:`_memories`) and its writers' ``writing`` (:func:`_writers`);
    per ``(head, "inject_x<x>")``: the injector."""
    from rtl_gen.attention import PARTS

    nodes = {}
    for sub, name, _ in fragment.subfragments:
        if not name.startswith("head"):
            continue
        h = int(name[4:])
        for node, part, _ in sub.subfragments:
            if part in PARTS:
                nodes[h, part] = (node.origins[0], _memories(node), _writers(node))
            elif part.startswith("inject_x"):
                nodes[h, part] = (node.origins[0], {}, {})
    return nodes


class AttentionRecorder:
    """``runner`` of :func:`rtl_gen.simulation.attention.simulate_attention`: records the system's
    ports and, beside them, every port of each head's nodes and injectors and the read data of their
    memories (:func:`synth_scripts.gatelevel.record`)."""

    def __init__(self):
        self.trace, self.nodes = None, {}

    def __call__(self, dut, bench) -> None:
        from rtl_gen.simulation import elaborated
        from synth_scripts.gatelevel.trace import port_signals, record

        top, _ = elaborated(dut)
        self.dut = dut
        self.nodes = _node_probes(top)
        probes = {}
        for (h, part), (comp, mems, writers) in self.nodes.items():
            for port, (_, sig) in port_signals(comp).items():
                probes[f"h{h}.{part}.{port}"] = sig
            for mpath, sig in mems.items():
                probes[f"h{h}.{part}.{mpath}.rdata"] = sig
            for wpath, sig in writers.items():
                probes[f"h{h}.{part}.{wpath}.writing"] = sig
        self.trace = record(dut, bench, extra_inputs=probes, top=top)

    def node_trace(self, h: int, part: str, cut: dict[str, int]):
        """The trace of node ``(h, part)``: its ports, each cut memory port of its netlist
        (``cut``, e.g. ``weights._0_``) from the read data of the memory of that path, and
        beside them (no port of the netlist) its writers' ``<path>.writing``."""
        from synth_scripts.gatelevel.trace import Trace, port_signals

        comp, mems, writers = self.nodes[h, part]
        prefix = f"h{h}.{part}."
        ports, values = {}, {}
        for port, (direction, sig) in port_signals(comp).items():
            ports[port] = {"dir": direction, "width": len(sig)}
            values[port] = self.trace.values[prefix + port]
        for port, width in cut.items():
            owner = [m for m in mems if port.rpartition(".")[0] == m]
            if len(owner) != 1:
                raise ValueError(f"node {part}: cut port {port!r} matches no memory of "
                                 f"{sorted(mems)}")
            ports[port] = {"dir": "in", "width": width}
            values[port] = self.trace.values[f"{prefix}{owner[0]}.rdata"]
        for wpath in writers:
            ports[f"{wpath}.writing"] = {"dir": "in", "width": 1}
            values[f"{wpath}.writing"] = self.trace.values[f"{prefix}{wpath}.writing"]
        return Trace(ports, values)

    def window_marks(self, start: int, windows: int) -> list[int]:
        """The trace's cycle where each of the ``windows`` windows after clock ``start`` begins:
        ``start``, then the clock after each output marker taken on the system's ``o`` (a
        sentence's start and its key and value writes fall in its first window)."""
        v = self.trace.values
        last = self.dut.o.payload.shape()["last"].offset
        ends = [c for c, (valid, ready, word) in enumerate(zip(
            v["o__valid"], v["o__ready"], v["o__payload"], strict=True))
            if c >= start and valid and ready and (word >> last) & 1]
        if len(ends) != windows:
            raise RuntimeError(f"the attention path took {len(ends)} output markers after its "
                               f"configuration, not one per window ({windows})")
        return [start, *(c + 1 for c in ends[:-1])]

    def flits(self, h: int, part: str) -> list[tuple[int, int]]:
        """The flits an injector sent: ``(addr, t)`` of each handshake on its ``o``."""
        from amaranth.hdl import Shape

        v = self.trace.values
        p = f"h{h}.{part}.o__"
        layout = self.nodes[h, part][0].o.payload.shape()

        def field(word: int, name: str) -> int:
            f = layout[name]
            return (word >> f.offset) & ((1 << Shape.cast(f.shape).width) - 1)

        return [(field(w, "addr"), field(w, "t"))
                for valid, ready, w in zip(v[p + "valid"], v[p + "ready"], v[p + "payload"],
                                           strict=True) if valid and ready]
