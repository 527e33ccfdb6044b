"""The attention piece of an encoder block priced in our gates, node by node.

:func:`price_attention`: the attention path (:class:`rtl_gen.attention.AttentionSystem`)
simulated once on the sequences (:func:`rtl_gen.simulation.attention.simulate_attention`, its output
checked against the captured ``attn_out_in`` codes) while the ports of each head's three nodes
are recorded (:class:`synth_scripts.gatelevel.attention.AttentionRecorder`); each node (the
query x key tile, the softmax node, the probability x value tile) is mapped alone, its key,
value or row memory cut out (``map_netlist(cut_memories=True)``), and replayed on its own
ports' trace (the configuration load subtracted; the key and value writes of every sentence
are counted). Its figures are assembled by
:func:`synth_scripts.block_gates.attention_piece`, as the calibration's are.

Why the attention path is priced node by node and not as one netlist: the whole
``AttentionSystem`` of the small random block (2 heads x 3 nodes, 6 routers, its key, value
and row memories as flip-flops) maps to about 60,000 NanGate cells (8,100 flip-flops), in 4.5
minutes of Yosys on two shared cores (``seq`` 12, ``d_k`` 16), and a replay of that size runs
at a few cycles a second in Icarus; its nodes alone, memories cut, are 2,800 (query x key),
3,100 (probability x value) and 6,500 (softmax) cells (``seq`` 8, ``d_k`` 4), one netlist each
replayed once per head. What the node-by-node figure leaves out is the glue between them (the
load and query forks, the output merge, the flit injectors and ejectors) and the routers' own
toggles, which are priced by hop (below).
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from synth_scripts.block_gates import (
    NODE_COMPONENT,
    PieceGates,
    attention_accesses,
    attention_piece,
    memory_shapes,
    window_sample,
)
from synth_scripts.block_pricing import Pricing, piece_flits, spread, unit_costs

__all__ = ["AttentionSequence", "attention_counters", "attention_shapes", "attention_sram",
           "price_attention", "softmax_features", "validate_attention", "window_features"]


@dataclass(frozen=True)
class AttentionSequence:
    """One sentence through the attention path: the query, key and value codes ``[S, heads *
    d_k]`` (before their masks), the valid keys ``[S]``, and the ``attn_out_in`` codes it must
    produce (before their mask)."""

    query: torch.Tensor
    keys: torch.Tensor
    values: torch.Tensor
    valid: torch.Tensor
    attn_out_in: torch.Tensor


def _node_component(acfg, part: str, dense: bool):
    from rtl_gen.attn_softmax import SoftmaxNode
    from rtl_gen.kv_tiles import ContextTile, DenseContextTile, ScoreTile

    if part == "qk":
        return ScoreTile(acfg, dense=dense)
    if part == "sm":
        return SoftmaxNode(acfg, dense=dense)
    return DenseContextTile(acfg) if dense else ContextTile(acfg)


def _node_netlist(pr: Pricing, acfg, part: str, dense: bool):
    """Node ``part`` mapped alone, its memories cut; kept in ``pr.cache`` by its Verilog."""
    from amaranth.back import verilog

    from synth_scripts.gatelevel.netlist import kept_verilog, map_netlist

    top = f"attn_{part}"
    text = kept_verilog(pr.netlist_dir, (top, f"dense={dense}", repr(acfg)),
                        lambda: verilog.convert(_node_component(acfg, part, dense), name=top,
                                                emit_src=False))
    key = (top, hashlib.sha256(text.encode()).hexdigest()[:16])
    nets = pr.cache.setdefault("nodes", {})
    if key not in nets:
        nets[key] = map_netlist(text, top, pr.lib_path,
                                pr.netlist_dir / f"{top}_{key[1]}", cut_memories=True)
    return nets[key]


def _run_attention(acfg, path, sequences: Sequence[AttentionSequence], dense: bool):
    """The sequences through the attention path at RTL, recorded, and checked against their
    ``attn_out_in`` codes (through the path's mask for the spiking design); returns the
    recorder and the windows per sequence."""
    from golden_models import decode_events, encode_events
    from rtl_gen.simulation.attention import simulate_attention
    from synth_scripts.gatelevel.attention import AttentionRecorder

    rec = AttentionRecorder()
    windows = simulate_attention(acfg, path, [(s.query, s.keys, s.values, s.valid)
                                              for s in sequences], dense=dense, runner=rec)
    width = acfg.heads * acfg.head_dim
    for s, wins in zip(sequences, windows, strict=True):
        for i, w in enumerate(wins):
            want = s.attn_out_in[i]
            if dense:
                got = torch.zeros(width, dtype=torch.int64)
                for a, c in w.events:
                    got[a] = c
            else:
                got = decode_events(torch.tensor([a for a, _ in w.events], dtype=torch.int64),
                                    torch.tensor([t for _, t in w.events], dtype=torch.int64),
                                    (width,), path.ctx_mask)
                want = decode_events(*encode_events(want, path.ctx_mask), (width,),
                                     path.ctx_mask)
            if not torch.equal(got, want):
                raise AssertionError(f"attention: token {i}: the RTL's attn_out_in codes "
                                     "differ from the captured ones")
    return rec, windows


def attention_counters(counters) -> Counter:
    """The attention path's counters over the run from each window's (per sequence, per
    window its counter ports and their values): the per-window ones summed, the key and value
    writes (counted per sequence) from each sequence's last window."""
    total = Counter()
    for wins in counters:
        for w in wins:
            total.update({n: v for n, v in w.items() if "_writes" not in n})
        total.update({n: v for n, v in wins[-1].items() if "_writes" in n})
    return total


def attention_sram(acfg, counters: Counter) -> tuple[int, int]:
    """Bits read and written in the key, value and softmax row memories over the run."""
    cb, sb = acfg.code_bits, acfg.score_bits + 1

    def total(name: str) -> int:
        return sum(v for n, v in counters.items() if n.startswith(f"cnt_{name}_h"))

    scores = total("sm_scores_in")
    # a key row holds a query dimension over the slots, a value row a slot's dimensions; the
    # softmax writes a row's scores once and reads them in its two later passes
    read = (total("qk_weight_row_reads") * acfg.seq_max * cb
            + total("pv_weight_row_reads") * acfg.head_dim * cb + 2 * scores * sb)
    write = (total("qk_key_writes") + total("pv_value_writes")) * cb + scores * sb
    return read, write


def window_features(counters, h: int, data) -> list[dict[str, int]]:
    """Per window of ``counters`` (per sequence, per window the attention path's counter ports
    and their values) the counters of head ``h``'s three nodes, named without the head
    (``cnt_qk_<name>_h<h>`` -> ``qk_<name>``; a node's window lasts as long as its head's
    slowest node works), a write counter (which holds its sequence's writes in each of its
    windows) in the sequence's first window only, ``sequence_start`` (1 in that window:
    the sequence's start and its key and value writes fall in it) and the softmax node's data
    features (``data``: per sequence :func:`softmax_features`)."""
    head, out = f"_h{h}", []
    for wins, feats in zip(counters, data, strict=True):
        for i, (w, f) in enumerate(zip(wins, feats, strict=True)):
            x = {"sequence_start": int(i == 0), **f[h]}
            for port, value in w.items():
                name = port.removeprefix("cnt_")
                if name.endswith(head) and name.split("_", 1)[0] in NODE_COMPONENT:
                    name = name[:-len(head)]
                    x[name] = int(value) if i == 0 or "_writes" not in name else 0
            out.append(x)
    return out


#: The softmax node's data features (:func:`softmax_features`): beside its counters, what its
#: logic's toggling follows that no counter tells.
SOFTMAX_FEATURES = ("sm_exp_toggles", "sm_code_toggles", "sm_max_updates")


def softmax_features(path, query, keys, values, valid, dense: bool) -> list[list[dict]]:
    """Per token, per head, the softmax node's data features of one sequence (the golden
    path's scores and probability codes, :class:`golden_models.attention.AttentionPath`):
    the bits its exponential bus flips over the row in slot order (summed in the sum pass and
    read again in the out pass, ``sm_exp_toggles``), those its probability code output flips
    (``sm_code_toggles``), and how often the row's running maximum rose as the scores came in
    (``sm_max_updates``). A row's exponentials decay away from its maximum: a longer row adds
    keys whose exponentials are small or zero and flip few bits, so the node's logic grows less
    than linearly in its keys, which its counters (linear in them) do not tell; fitted on a
    sample of short sentences and run on long ones, the dense softmax node's logic came out
    4 to 5 % over without them (docs/block_gates.md)."""
    from synth_scripts.gatelevel.measure import bus_flips

    rows = (path.run_dense(query, keys, values, valid) if dense
            else path.run(query, keys, values, valid).windows)
    ok = valid.tolist()
    out = []
    for row in rows:
        feats = []
        for w in row:
            exps = path.softmax.exponentials(w.scores.to(torch.int64), valid).tolist()
            top, rises = None, 0
            for a, v in zip(w.scores.tolist(), ok, strict=True):
                if v and (top is None or a > top):
                    top, rises = a, rises + 1
            flips = (bus_flips([0, *exps]), bus_flips([0, *w.prob_codes.tolist()]), rises)
            feats.append(dict(zip(SOFTMAX_FEATURES, flips, strict=True)))
        out.append(feats)
    return out


def _node_energies(pr: Pricing, acfg, path, sequences, rec, marks: list[int], design: str,
                   windows=None) -> tuple[dict, dict, list]:
    """Each head's nodes replayed from the first of the windows' ``marks`` (the clock after
    the configuration; each window's first clock, :meth:`AttentionRecorder.window_marks`): their
    energies summed per component (``compute``, ``nonlinear``, ``idle``, ``gated``; the cells'
    ``leakage``, inside the others, and per node kind ``<part>_leakage``), their
    cells, and with ``pr.windows`` each window of each node priced on its own (``windows``:
    the run's, per sequence, of ``sequences`` through the golden ``path``;
    ``PieceGates.samples``). With ``pr.replay_heads``, only that
    many heads, spread over the path (:func:`synth_scripts.block_pricing.spread`)."""
    from synth_scripts.gatelevel.attention import ENABLE_HOLD, NODE_ENABLE
    from synth_scripts.gatelevel.measure import replay_energy

    energy = Counter()
    cells, samples = {}, []
    start, cut = marks[0], marks if pr.windows else None
    counted = [[w.counters for w in wins] for wins in windows]
    data = None if cut is None else [softmax_features(path, s.query, s.keys, s.values, s.valid,
                                                      design == "dense") for s in sequences]
    for h in spread(acfg.heads, pr.replay_heads):
        for part, component in NODE_COMPONENT.items():
            net = _node_netlist(pr, acfg, part, design == "dense")
            writing = tuple(f"{w}.writing" for w in rec.nodes[h, part][2])
            e = replay_energy(net, rec.node_trace(h, part, net.cut), start, 1,
                              pr.work / "attention" / design / f"h{h}_{part}", pr.sim,
                              pr.clock_ns, enable_ports=(*NODE_ENABLE, *writing),
                              hold=ENABLE_HOLD, one_replay=True, marks=cut)
            if cut is not None:
                samples += [window_sample(part, h, x, w) for x, w in
                            zip(window_features(counted, h, data), e["windows"], strict=True)]
            energy[component] += e["free_pJ"] - e["idle_clock_pJ"]
            energy["idle"] += e["idle_clock_pJ"]
            energy["gated"] += e["gated_pJ"]
            energy[f"{part}_logic"] += e["free_pJ"] - e["idle_clock_pJ"]
            energy[f"{part}_idle_clock"] += e["idle_clock_pJ"]
            # the cells' leakage, inside the logic and the gated figure
            energy["leakage"] += e["leakage_pJ"]
            energy[f"{part}_leakage"] += e["leakage_pJ"]
            cells[part] = e["cells"]
    return energy, cells, samples


@dataclass
class _PathRun:
    """The attention path run once at RTL, recorded, its nodes priced: what
    :func:`price_attention` and :func:`validate_attention` share."""

    rec: object  # synth_scripts.gatelevel.attention.AttentionRecorder
    windows: list
    start: int  # the clock after the configuration
    energy: Counter  # the nodes' components (_node_energies)
    cells: dict
    samples: list  # each window of each node, with Pricing.windows
    counters: Counter
    inner: list  # the flits the injectors sent into the path's mesh
    router: dict  # the path's router (router_energy) on those flits

    @property
    def cycles(self) -> int:
        return self.rec.trace.cycles - self.start


def _path_run(pr: Pricing, acfg, path, sequences, design: str, recorder=None) -> _PathRun:
    from rtl_gen.attn_images import config_beats

    dense = design == "dense"
    if recorder is None:
        rec, windows = _run_attention(acfg, path, sequences, dense)
    else:
        rec, windows = recorder(acfg, path, sequences, dense, spread(acfg.heads, pr.replay_heads))
    marks = rec.window_marks(len(config_beats(acfg, path)), sum(len(w) for w in windows))
    start = marks[0]
    energy, cells, samples = _node_energies(pr, acfg, path, sequences, rec, marks, design,
                                           windows)
    inner = [f for h in range(acfg.heads) for x in (0, 1) for f in rec.flits(h, f"inject_x{x}")]
    router = pr.router(inner, acfg.flit_value_width, acfg.flit_addr_width,
                       mesh=(acfg.heads, 3), kind="attention_routers")
    counters = attention_counters([[w.counters for w in wins] for wins in windows])
    return _PathRun(rec, windows, start, energy, cells, samples, counters, inner, router)


def price_attention(pr: Pricing, acfg, path, sequences: Sequence[AttentionSequence],
                    design: str, streams, recorder=None) -> PieceGates:
    """The attention piece: the path (:class:`rtl_gen.attn_params.AttentionConfig` ``acfg``,
    golden constants ``path``) at RTL on ``sequences`` (recorded, checked), each head's nodes
    in gates, the key, value and row memories' bits, its input flits and the flits between its
    nodes. ``streams`` gives its input flits: ``(tile_config, [(codes, mask), ...])``, the
    query, key and value codes as the tiles that make them send them (:func:`piece_flits`).

    ``recorder``: where the run is recorded, ``recorder(acfg, path, sequences, dense, heads)
    -> (AttentionRecorder, windows)`` recording at least the nodes of ``heads`` (the ones
    replayed; e.g. the generated Verilog in a compiled simulator); default the Amaranth
    simulator, every node."""
    from rtl_gen.dense import dense_pack

    dense = design == "dense"
    run = _path_run(pr, acfg, path, sequences, design, recorder)
    energy, cells, counters, arouter = run.energy, run.cells, run.counters, run.router
    read, write = attention_sram(acfg, counters)
    tcfg, codes = streams
    flits = [f for c, mask in codes for w in piece_flits(tcfg, dense, c, mask) for f in w]
    width = tcfg.time_width * (dense_pack(tcfg) if dense else 1)
    router = pr.router(flits, width, tcfg.in_addr_width)
    hops = pr.hops("attention", len(flits))
    inner_hops = counters["cnt_hops"]
    cycles = run.cycles
    cells.update(router=router["cells"], attention_router=arouter["cells"])
    # a node's pitch: the mean area of a head's three nodes
    area = math.fsum(_node_netlist(pr, acfg, part, dense).area()
                     for part in NODE_COMPONENT) / len(NODE_COMPONENT)
    # the path's own routers are idle on the clocks they move nothing
    u = {**unit_costs(pr, router, area), "idle_per_clock": arouter["idle_per_clock_pJ"],
         **unit_costs(pr, arouter, area, "inner_")}
    # a node's cells leak the same every clock: what the calibration charges a window's clock
    replayed = len(spread(acfg.heads, pr.replay_heads))
    for part in NODE_COMPONENT:
        u[f"{part}_leak_per_clock"] = (energy[f"{part}_leakage"] / (replayed * cycles)
                                       if cycles else 0.0)
    plan = {}
    if pr.sram_table is not None:
        plan = {"shapes": attention_shapes(acfg, dense), "heads": acfg.heads}
    uses = [(plan["shapes"], attention_accesses(counters, h), cycles)
            for h in range(acfg.heads)] if plan else []
    return attention_piece(
        energy, read_bits=read, write_bits=write,
        sram=pr.sram.price(uses, read_bits=read, write_bits=write),
        flits=len(flits) + len(run.inner), hops=hops, inner_hops=inner_hops, heads=acfg.heads,
        cycles=cycles, unit_costs=u, cells=cells, counters=dict(counters), memories=plan,
        samples=run.samples)


def attention_shapes(acfg, dense: bool) -> dict[str, dict]:
    """The memory of each node kind of a head (the key memory, the softmax row buffer, the
    value memory), by node kind: ``MemoryShape.to_json()`` of the elaborated node's one
    memory."""
    out = {}
    for part in NODE_COMPONENT:
        [shape] = memory_shapes(_node_component(acfg, part, dense)).values()
        out[part] = shape
    return out


def _whole_trace(rec, comp, cut: dict[str, int]):
    """The trace of the whole :class:`AttentionSystem` netlist: the system's ports, and each
    cut memory port (``head<h>.<part>.<memory path>.<register>``) from the read data the
    recorder kept of that node's memory."""
    from synth_scripts.gatelevel.trace import Trace, port_signals

    ports = {p: rec.trace.ports[p] for p in port_signals(comp)}
    values = {p: rec.trace.values[p] for p in ports}
    for port, width in cut.items():
        where = port.rpartition(".")[0]
        owner = [f"h{h}.{part}.{m}.rdata" for (h, part), (_, mems, _) in rec.nodes.items()
                 for m in mems if where == f"head{h}.{part}.{m}"]
        if len(owner) != 1:
            raise ValueError(f"the whole path's cut port {port!r} matches {len(owner)} recorded "
                             "memories, not one")
        ports[port] = {"dir": "in", "width": width}
        values[port] = rec.trace.values[owner[0]]
    return Trace(ports, values)


def validate_attention(pr: Pricing, acfg, path, sequences: Sequence[AttentionSequence],
                       design: str, recorder=None) -> dict:
    """The attention path priced as :func:`price_attention` prices it (each head's nodes on
    their own netlists, the routers by hop and idle clock) against one replay of the whole
    :class:`rtl_gen.attention.AttentionSystem` netlist (nodes, routers, forks, injectors, the
    output merge; memories cut as the nodes' are) on the same recorded run: free-running pJ
    over the run after the configuration, each way, their ratio, and the cells.

    The validation of the method (docs/block_gates.md): the whole netlist is what the pieces
    stand for, and the pieces leave out only the glue between the nodes.
    """
    from amaranth.back import verilog

    from rtl_gen.attention import AttentionSystem
    from synth_scripts.gatelevel.measure import replay_energy
    from synth_scripts.gatelevel.netlist import map_netlist

    run = _path_run(pr, acfg, path, sequences, design, recorder)
    energy, arouter, cycles, start = run.energy, run.router, run.cycles, run.start
    hops = run.counters["cnt_hops"]
    idle_routers = max(3 * acfg.heads * cycles - hops, 0)
    nodes = energy["compute"] + energy["nonlinear"] + energy["idle"]
    routers = hops * arouter["per_hop_pJ"] + idle_routers * arouter["idle_per_clock_pJ"]

    comp = AttentionSystem(acfg, dense=design == "dense")
    text = verilog.convert(comp, name="attn_system", emit_src=False)
    key = hashlib.sha256(text.encode()).hexdigest()[:16]
    nets = pr.cache.setdefault("whole_attention", {})
    if key not in nets:
        nets[key] = map_netlist(text, "attn_system", pr.lib_path,
                                pr.netlist_dir / f"attn_system_{key}", cut_memories=True)
    net = nets[key]
    trace = _whole_trace(run.rec, comp, net.cut)
    # free-running only: beside the ports, a column that keeps the clock on at every edge
    trace.values["clock_on"] = [1] * trace.cycles
    whole = replay_energy(net, trace, start, 1, pr.work / "attention_whole" / design, pr.sim,
                          pr.clock_ns, enable_ports=("clock_on",), one_replay=True)
    pieces = nodes + routers
    return {
        "design": design, "cycles": cycles, "whole_pJ": whole["free_pJ"],
        "pieces_pJ": pieces, "nodes_pJ": nodes, "routers_pJ": routers,
        "ratio": pieces / whole["free_pJ"], "whole_cells": whole["cells"],
        "pieces_cells": sum(run.cells.values()) * acfg.heads
        + 3 * acfg.heads * arouter["cells"],
    }
