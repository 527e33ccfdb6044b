"""The router soak: parameters, the traffic model, Verilog, runs and the verdict.

The hardware (sources, sinks, checkers, fault stage) is :class:`regression.soak_rtl.SoakHarness`;
docs/rtl_router.md ("Soak") describes it. This module

- fixes a run's parameters (:class:`SoakParams`, probabilities in 256ths);
- computes in Python what each source sends (:func:`expected_traffic`: the same xorshift
  draws as the hardware, so the flit count of every (source, destination) pair is known before
  the run);
- converts the harness to Verilog and builds it for Verilator through
  :func:`regression.sim.build` (cached by content), and runs the cocotb bench
  ``cocotb_tests.tb_soak``, which only starts the run, waits for ``done`` and reads the counters;
- runs the same harness in the Amaranth simulator (:func:`simulate_soak`, short runs, any mesh
  factory: the mutant tests), optionally recording every ejected flit;
- judges a run (:func:`verdict`): no checker error, finished (not stalled, not timed out),
  ``busy`` low, every pair delivered exactly what it sent, and those counts equal the model's.
"""

from __future__ import annotations

import dataclasses
import hashlib
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from regression import sim
from regression.soak_rtl import FAULTS, SoakHarness, node_keys, xorshift32
from rtl_gen.params import check_int

__all__ = [
    "SoakParams",
    "SoakResult",
    "Traffic",
    "build_soak",
    "expected_traffic",
    "run_soak",
    "simulate_soak",
    "soak_verilog",
    "verdict",
]

TOPLEVEL = "mttfs_soak"
TB_MODULE = "cocotb_tests.tb_soak"


@dataclass(frozen=True)
class SoakParams:
    """One soak run. Probabilities are in 256ths (``256`` = every clock).

    ``flits`` is per source (the run moves ``flits * rows * cols``); ``hot`` is the hotspot node
    (``y * cols + x``), the target of a flit with probability ``p_hot / 256`` (else uniform);
    ``limit`` the clocks after which the run ends as timed out; ``fault`` a key of
    :data:`regression.soak_rtl.FAULTS`, applied to the ``fault_at``-th flit ejected at ``hot``.
    """

    rows: int = 4
    cols: int = 4
    seq_width: int = 16
    flits: int = 125
    seed: int = 1
    p_valid: int = 160
    p_ready: int = 192
    p_hot: int = 64
    hot: int = 5
    limit: int = 2**32 - 1
    fault: str = "none"
    fault_at: int = 0

    def __post_init__(self):
        for name, lo, hi in (("rows", 1, 64), ("cols", 1, 64), ("seq_width", 1, 32),
                             ("flits", 0, 2**32 - 2), ("seed", 0, 2**32 - 1),
                             ("p_valid", 1, 256), ("p_ready", 1, 256), ("p_hot", 0, 256),
                             ("hot", 0, self.rows * self.cols - 1), ("limit", 1, 2**32 - 1),
                             ("fault_at", 0, 2**32 - 1)):
            check_int(name, getattr(self, name), lo, hi, must_be="must be")
        if self.fault not in FAULTS:
            raise ValueError(f"fault must be one of {sorted(FAULTS)}, not {self.fault!r}")

    @property
    def nodes(self) -> int:
        return self.rows * self.cols

    @property
    def total(self) -> int:
        """Flits the run moves."""
        return self.flits * self.nodes

    def inputs(self) -> dict[str, int]:
        """Values of the harness's configuration inputs."""
        return {"seed": self.seed, "flits": self.flits, "p_valid": self.p_valid,
                "p_ready": self.p_ready, "p_hot": self.p_hot, "hot": self.hot,
                "limit": self.limit, "fault": FAULTS[self.fault], "fault_at": self.fault_at}


@dataclass(frozen=True)
class Traffic:
    """What the sources send: ``dsts[src]`` the destinations of source ``src`` in order."""

    dsts: list[list[int]]

    def pair_counts(self, nodes: int) -> list[int]:
        """Flits per pair, index ``src * nodes + dst``."""
        counts = [0] * (nodes * nodes)
        for s, ds in enumerate(self.dsts):
            for d in ds:
                counts[s * nodes + d] += 1
        return counts


def expected_traffic(p: SoakParams) -> Traffic:
    """The flits each source of the harness sends, from the same draws as the hardware."""
    P = p.nodes
    keys, _ = node_keys(P)
    out = []
    for n in range(P):
        s = (p.seed ^ keys[n]) or 1
        ds: list[int] = []
        while len(ds) < p.flits:
            s = xorshift32(s)
            if (s & 0xFF) < p.p_valid:
                ds.append(p.hot if ((s >> 8) & 0xFF) < p.p_hot else ((s >> 16) * P) >> 16)
        out.append(ds)
    return Traffic(out)


@dataclass
class SoakResult:
    """Counters of one run (as the bench read them) and the run's timing.

    ``pair_sent`` / ``pair_recv``: per pair ``src * P + dst``, mod ``2**seq_width``;
    ``node_sent`` / ``node_recv``: per node, 32-bit; ``busy_end``: ``busy`` when read out
    (some clocks after ``done``); ``seconds``: wall time from start to ``done``.
    """

    done: bool
    stalled: bool
    timed_out: bool
    busy_at_done: bool
    busy_end: bool
    cycles: int
    sent: int
    recv: int
    errors: dict[str, int]
    pair_sent: list[int]
    pair_recv: list[int]
    node_sent: list[int]
    node_recv: list[int]
    seconds: float = 0.0
    streams: dict = field(default_factory=dict)

    @classmethod
    def from_report(cls, report: Mapping) -> SoakResult:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in report.items() if k in names})

    @property
    def flits_per_second(self) -> float:
        return self.recv / self.seconds if self.seconds else 0.0

    @property
    def cycles_per_second(self) -> float:
        return self.cycles / self.seconds if self.seconds else 0.0


def verdict(p: SoakParams, r: SoakResult, traffic: Traffic | None = None) -> list[str]:
    """Problems of run ``r`` of ``p`` (empty: the run passed), each one line; ``traffic`` is
    :func:`expected_traffic` of ``p`` (computed when not given).

    Checks: finished by itself, every checker counter zero, ``busy`` low at ``done`` and at the
    read-out, every pair delivered in order what it sent (``pair_sent == pair_recv``), per-node
    totals agree, and the model's per-pair and per-node counts equal the hardware's.
    """
    out = []
    if not r.done:
        out.append("the run did not end")
    if r.stalled:
        out.append(f"stalled: {r.recv} of {r.sent} flits delivered, nothing moved for 256 clocks")
    if r.timed_out:
        out.append(f"timed out after {r.cycles} clocks")
    out += [f"{n}: {v} flits" for n, v in sorted(r.errors.items()) if v]
    if r.busy_at_done or r.busy_end:
        out.append("busy high at the end")
    if r.sent != p.total or r.recv != r.sent:
        out.append(f"{p.total} flits to send, {r.sent} sent, {r.recv} delivered")
    P, mod = p.nodes, 1 << p.seq_width
    bad = [i for i in range(P * P) if r.pair_sent[i] != r.pair_recv[i]]
    out += [f"pair {i // P}->{i % P}: sent {r.pair_sent[i]}, delivered {r.pair_recv[i]}"
            f" (mod 2**{p.seq_width})" for i in bad[:5]]
    traffic = expected_traffic(p) if traffic is None else traffic
    counts = traffic.pair_counts(P)
    want = [c % mod for c in counts]
    off = [i for i in range(P * P) if r.pair_sent[i] != want[i]]
    out += [f"pair {i // P}->{i % P}: the model sends {want[i]}, the hardware {r.pair_sent[i]}"
            for i in off[:5]]
    recv_want = [sum(counts[s * P + d] for s in range(P)) for d in range(P)]
    if r.node_sent != [len(d) for d in traffic.dsts] or r.node_recv != recv_want:
        out.append(f"per-node totals differ from the model: sent {r.node_sent}, delivered "
                   f"{r.node_recv}, model {recv_want}")
    return out


# -- Verilog and Verilator -----------------------------------------------------------------------


def soak_verilog(rows: int = 4, cols: int = 4, seq_width: int = 16) -> str:
    """Verilog of the harness (top module :data:`TOPLEVEL`), deterministic, no source paths."""
    from amaranth.back import verilog

    return verilog.convert(SoakHarness(rows, cols, seq_width=seq_width), name=TOPLEVEL,
                           emit_src=False)


def _harness_key(rows: int, cols: int, seq_width: int) -> str:
    """Cache key of the harness's Verilog: its parameters, this package's harness source and the
    generator's sources (:func:`regression.cache.params_key`)."""
    from regression import soak_rtl
    from regression.cache import params_key

    src = hashlib.sha256(Path(soak_rtl.__file__).read_bytes()).hexdigest()
    return params_key({"soak": [rows, cols, seq_width], "harness": src})


def build_soak(root: Path | str, rows: int = 4, cols: int = 4, seq_width: int = 16
               ) -> tuple[sim.Build, float]:
    """Verilator build of the harness in the build cache's layout (:mod:`regression.cache`):
    Verilog under ``root/rtl/soak-<key>`` (converted again only when the harness or the
    generator changes), the build under ``root/sim/verilator/`` (beside the regression's builds,
    sharing their cached Verilator runtime objects), reused while the Verilog is the same.
    Returns the build and the seconds the Verilator build took (about 0 when cached)."""
    from toolkit_base.files import write_atomic

    src = Path(root) / "rtl" / f"soak-{_harness_key(rows, cols, seq_width)}" / f"{TOPLEVEL}.v"
    if not src.is_file():
        src.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(src, soak_verilog(rows, cols, seq_width))
    t0 = time.perf_counter()
    b = sim.build("verilator", [src], TOPLEVEL,
                  Path(root) / "sim" / "verilator" / f"{TOPLEVEL}-{rows}x{cols}-{seq_width}")
    return b, time.perf_counter() - t0


def run_soak(b: sim.Build, p: SoakParams, run_dir: Path | str) -> SoakResult:
    """Run ``p`` on build ``b`` (cocotb bench :data:`TB_MODULE`); raises RuntimeError when the
    bench itself failed (no report)."""
    config = {"params": dataclasses.asdict(p), "inputs": p.inputs(), "nodes": p.nodes}
    res = sim.run(b, TB_MODULE, config, run_dir)
    if not res.report:
        raise RuntimeError(f"the soak bench wrote no report:\n{res.tail()}")
    return SoakResult.from_report(res.report)


# -- Amaranth simulator --------------------------------------------------------------------------


def simulate_soak(p: SoakParams, *, mesh=None, record: bool = False, grace: int = 64
                  ) -> SoakResult:
    """Run ``p`` in the Amaranth simulator (short runs: a few hundred clocks per second).

    ``mesh`` as for :class:`SoakHarness` (a mutant mesh); ``record`` keeps every flit the sinks
    take, ``streams[(src, dst)] = [(seq, hops, dst_x, dst_y), ...]`` in delivery order.
    """
    from amaranth.sim import Simulator

    dut = SoakHarness(p.rows, p.cols, seq_width=p.seq_width, mesh=mesh)
    P = p.nodes
    out: dict = {}
    streams: dict = {}

    async def bench(ctx):
        for name, value in p.inputs().items():
            ctx.set(getattr(dut, name), value)
        await ctx.tick().repeat(2)
        ctx.set(dut.start, 1)
        await ctx.tick()
        ctx.set(dut.start, 0)
        await ctx.tick().until(dut.done)
        await ctx.tick().repeat(grace)
        g = ctx.get
        pair_sent, pair_recv = [], []
        for i in range(P * P):
            ctx.set(dut.rd_sel, i)
            pair_sent.append(g(dut.rd_pair_sent))
            pair_recv.append(g(dut.rd_pair_recv))
        node_sent, node_recv = [], []
        for n in range(P):
            ctx.set(dut.rd_sel, n)
            node_sent.append(g(dut.rd_node_sent))
            node_recv.append(g(dut.rd_node_recv))
        out.update(
            done=bool(g(dut.done)), stalled=bool(g(dut.stalled)),
            timed_out=bool(g(dut.timed_out)), busy_at_done=bool(g(dut.busy_at_done)),
            busy_end=bool(g(dut.busy)), cycles=g(dut.cycles), sent=g(dut.sent),
            recv=g(dut.recv),
            errors={n: g(getattr(dut, n)) for n in ("err_dst", "err_hops", "err_order",
                                                    "err_stream")},
            pair_sent=pair_sent, pair_recv=pair_recv, node_sent=node_sent, node_recv=node_recv)

    async def monitor(ctx):
        sinks = dut.sinks
        async for _, _, *vals in ctx.tick().sample(*(k.take for k in sinks),
                                                   *(k.i.payload for k in sinks)):
            for n in range(P):
                if vals[n]:
                    f = vals[P + n]
                    streams.setdefault((int(f.t), n), []).append(
                        (int(f.addr), int(f.hops), int(f.dst_x), int(f.dst_y)))

    s = Simulator(dut)
    s.add_clock(1e-6)
    s.add_testbench(bench)
    if record:
        s.add_process(monitor)
    t0 = time.perf_counter()
    s.run()
    return SoakResult(**out, seconds=time.perf_counter() - t0, streams=streams)
