"""The attention path recorded for a node-by-node gate-level replay.

:class:`AttentionRecorder` is the ``runner`` of
:func:`rtl_gen.simulation.attention.simulate_attention`: beside the system's ports it records every
port of each head's nodes (query x key tile, softmax node, probability x value tile) and injectors,
the read data of their memories (which a netlist with its memories cut takes as inputs) and the
``writing`` of their run-time weight writers; :meth:`AttentionRecorder.node_trace` is one node's
trace, :meth:`~AttentionRecorder.window_marks` where each window starts,
:meth:`~AttentionRecorder.flits` the flits an injector sent (``synth_scripts.block_attention``
prices them). The same columns can be read from the generated Verilog in a compiled simulator
instead (the fast harness on Verilator: MiniLM's two shortest sentences in 1 s of simulation,
about 70 s in the Amaranth simulator): :meth:`AttentionRecorder.of_system` makes a recorder
with no run,
:meth:`~AttentionRecorder.verilog_probes` says where each column is in the Verilog, and
:meth:`~AttentionRecorder.take` takes the values read there.
"""

from __future__ import annotations

__all__ = ["ENABLE_HOLD", "NODE_ENABLE", "AttentionRecorder"]

#: A node's clock runs (when gated) on a clock where one of these ports is high, or its
#: writers' ``writing`` (:meth:`AttentionRecorder.enable_columns`), and on the
#: :data:`ENABLE_HOLD` clocks after: its registers settle on the edge after its last busy clock.
NODE_ENABLE = ("busy", "i__valid", "load__valid")
ENABLE_HOLD = 1


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


def _head_nodes(head) -> dict:
    """Per node of one head's fragment (``head``: an elaborated
    :class:`rtl_gen.attention.AttentionHead`): per ``part`` (``qk``, ``sm``, ``pv``) the node
    component, its memories' read data (:func:`_memories`) and its writers' ``writing``
    (:func:`_writers`); per ``inject_x<x>`` the injector."""
    from rtl_gen.attention import PARTS

    nodes = {}
    for node, part, _ in head.subfragments:
        if part in PARTS:
            nodes[part] = (node.origins[0], _memories(node), _writers(node))
        elif part.startswith("inject_x"):
            nodes[part] = (node.origins[0], {}, {})
    return nodes


def _node_probes(fragment) -> dict:
    """:func:`_head_nodes` of every head of an elaborated :class:`AttentionSystem`, by
    ``(head, part)``."""
    return {(int(name[4:]), part): node for sub, name, _ in fragment.subfragments
            if name.startswith("head") for part, node in _head_nodes(sub).items()}


def _probes(node) -> dict:
    """The signals recorded of one node (:func:`_head_nodes`), by the name of their column
    after ``h<h>.<part>.``: its ports, its memories' ``<path>.rdata``, its writers'
    ``<path>.writing``."""
    from synth_scripts.gatelevel.trace import port_signals

    comp, mems, writers = node
    return {**{port: sig for port, (_, sig) in port_signals(comp).items()},
            **{f"{m}.rdata": sig for m, sig in mems.items()},
            **{f"{w}.writing": sig for w, sig in writers.items()}}


class AttentionRecorder:
    """``runner`` of :func:`rtl_gen.simulation.attention.simulate_attention`: records the system's
    ports and, beside them, every port of each head's nodes and injectors and the read data of their
    memories (:func:`synth_scripts.gatelevel.record`). Or the same columns read from the
    generated Verilog in another simulator (:meth:`of_system`, :meth:`verilog_probes`,
    :meth:`take`)."""

    def __init__(self):
        self.trace, self.nodes, self.dut = None, {}, None

    def _attach(self, dut):
        """The system ``dut`` elaborated, its nodes found; the elaboration."""
        from rtl_gen.simulation import elaborated

        top, _ = elaborated(dut)
        self.dut, self.nodes = dut, _node_probes(top)
        return top

    def _columns(self) -> dict:
        """Every column beside the system's ports: ``h<h>.<part>.<name>`` -> its signal."""
        return {f"h{h}.{part}.{column}": sig for (h, part), node in self.nodes.items()
                for column, sig in _probes(node).items()}

    def __call__(self, dut, bench) -> None:
        from synth_scripts.gatelevel.trace import record

        top = self._attach(dut)
        self.trace = record(dut, bench, extra_inputs=self._columns(), top=top)

    @classmethod
    def of_system(cls, acfg, dense: bool):
        """A recorder of the attention path of ``acfg`` (the dense design's or the spiking one's)
        whose run is recorded elsewhere: its columns are :meth:`verilog_probes`, its trace what
        :meth:`take` is given."""
        from rtl_gen.attention import AttentionSystem

        rec = cls()
        rec._attach(AttentionSystem(acfg, dense=dense))
        return rec

    def verilog_probes(self, heads=None) -> list[tuple[str, str, int]]:
        """The columns :meth:`__call__` records, read from the generated Verilog of the path
        instead (``AttentionSystem(instances=True)``, the fast harness's): per column ``(name,
        reference, width)``, the reference below the path's instance: a system's port by its
        name, a node's ``head<h>.<node>.<...>`` by Amaranth's names in one head's module
        (:func:`rtl_gen.verilog_text.named_signals`), or a constant for a signal no logic
        drives or reads (Amaranth names no such signal: it holds its init value). ``heads``:
        the heads whose nodes are recorded (default all); every head's injectors are (their
        flits are priced)."""
        from rtl_gen.attention import DENSE_HEAD_MODULE, AttentionHead
        from rtl_gen.verilog_text import named_signals, verilog_ref
        from synth_scripts.gatelevel.trace import port_signals

        cfg, dense = self.dut.config, self.dut.head_module == DENSE_HEAD_MODULE
        out = [(port, port, len(sig)) for port, (_, sig) in port_signals(self.dut).items()]
        fragment, names = named_signals(AttentionHead(cfg, None, dense=dense),
                                        self.dut.head_module)
        nodes = _head_nodes(fragment)
        chosen = range(cfg.heads) if heads is None else heads
        for h in range(cfg.heads):
            for part, node in nodes.items():
                if h not in chosen and not part.startswith("inject_x"):
                    continue
                for column, sig in _probes(node).items():
                    ref = (f"head{h}.{verilog_ref(names[sig])}" if sig in names
                           else f"{len(sig)}'d{sig.init}")
                    out.append((f"h{h}.{part}.{column}", ref, len(sig)))
        return out

    def kept_probes(self, folder, heads=None) -> list[tuple[str, str, int]]:
        """:meth:`verilog_probes`, kept in ``folder``
        (:func:`synth_scripts.gatelevel.netlist.kept_elaborated`): naming one head's signals
        takes 7 s on MiniLM, every recording of the path did it."""
        from rtl_gen.attention import DENSE_HEAD_MODULE
        from synth_scripts.gatelevel.netlist import kept_elaborated

        dense = self.dut.head_module == DENSE_HEAD_MODULE
        chosen = None if heads is None else list(heads)
        return kept_elaborated(folder, ("verilog_probes", f"dense={dense}",
                                        repr(self.dut.config), repr(chosen)),
                               lambda: self.verilog_probes(heads))

    def take(self, values: dict[str, list[int]]) -> None:
        """The run recorded elsewhere: ``values`` per column of :meth:`verilog_probes`, clock
        edge by clock edge, as :meth:`__call__` records them."""
        from synth_scripts.gatelevel.trace import Trace, port_signals

        ports = {p: {"dir": d, "width": len(sig)}
                 for p, (d, sig) in port_signals(self.dut).items()}
        ports.update({c: {"dir": "in", "width": len(sig)} for c, sig in self._columns().items()})
        missing = [p for p in values if p not in ports]
        if missing:
            raise ValueError(f"columns {missing[:3]} are no column of the attention path")
        self.trace = Trace({p: ports[p] for p in values}, dict(values))

    def enable_columns(self, h: int, part: str) -> list[str]:
        """The columns node ``(h, part)``'s clock enable is made of (:data:`NODE_ENABLE`)."""
        writers = self.nodes[h, part][2]
        return [f"h{h}.{part}.{p}" for p in (*NODE_ENABLE, *(f"{w}.writing" for w in writers))]

    @classmethod
    def enable_plan(cls, acfg, dense: bool, folder=None) -> tuple[list, dict]:
        """What a run that measures the nodes' busy clocks records of the attention path of
        ``acfg`` (the dense design's or the spiking one's) and what it reads of it:
        ``(probes, columns)``, :meth:`enable_probes` and :meth:`enable_columns` by ``(head,
        part)``; kept in ``folder`` (:func:`synth_scripts.gatelevel.netlist.kept_elaborated`),
        so a later run does not elaborate the path again."""
        from rtl_gen.attention import PARTS
        from synth_scripts.gatelevel.netlist import kept_elaborated

        def make():
            rec = cls.of_system(acfg, dense)
            return rec.enable_probes(), {(h, part): rec.enable_columns(h, part)
                                         for h in range(acfg.heads) for part in PARTS}

        return kept_elaborated(folder, ("enable_probes", f"dense={dense}", repr(acfg)), make)

    def enable_probes(self) -> list[tuple[str, str, int]]:
        """The columns of :meth:`verilog_probes` that every head's nodes' clock enables are
        made of (:meth:`enable_columns`): what tells each node's busy clocks in a run."""
        from rtl_gen.attention import PARTS

        wanted = {c for h in range(self.dut.config.heads) for part in PARTS
                  for c in self.enable_columns(h, part)}
        return [probe for probe in self.verilog_probes() if probe[0] in wanted]

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

    def window_marks(self, config_beats: int, windows: int) -> list[int]:
        """The trace's cycle where each of its ``windows`` windows begins: the clock after its
        ``config_beats`` configuration beats, then the clock after each output marker taken on
        the system's ``o`` (a sentence's start and its key and value writes fall in its first
        window; :func:`rtl_gen.simulation.attention.window_marks`)."""
        from rtl_gen.simulation.attention import window_marks

        last = self.dut.o.payload.shape()["last"].offset
        marks = window_marks(self.trace.values, config_beats=config_beats, last=last)[:-1]
        if len(marks) != windows:
            raise RuntimeError(f"the attention path took {len(marks)} output markers after its "
                               f"configuration, not one per window ({windows})")
        return marks

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
