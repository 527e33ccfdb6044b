"""The attention path in the Amaranth simulator: an :class:`rtl_gen.attention.AttentionSystem`
programmed with a golden path and run on sequences, window by window
(:func:`simulate_attention`)."""

from __future__ import annotations

import random
from dataclasses import dataclass

from rtl_gen.attention import AttentionSystem
from rtl_gen.attn_params import AttentionConfig
from rtl_gen.params import port_values

__all__ = [
    "AttentionWindow",
    "simulate_attention",
    "window_marks",
]


def window_marks(columns, *, config_beats: int, last: int) -> list[int]:
    """Where each window begins in a recorded run of the attention path, from its system
    ports' values clock by clock (``columns``: ``load__valid``, ``load__ready``, ``o__valid``,
    ``o__ready``, ``o__payload``), and the run's end: the clock after its configuration (the
    ``config_beats``-th ``load`` handshake), then the clock after each output marker (a
    handshake on ``o`` whose payload's bit ``last`` is set) but the last, then the run's
    length. A sentence's first window holds its start and its key and value writes, the last
    window the clocks to the run's end: the windows a gate-level replay of the path is cut
    into, whoever recorded it (the Amaranth simulator or the fast harness)."""
    n = len(columns["o__valid"])
    loads = [c for c in range(n) if columns["load__valid"][c] and columns["load__ready"][c]]
    if len(loads) < config_beats:
        raise RuntimeError(f"the attention path took {len(loads)} load beats, not its "
                           f"{config_beats} configuration beats")
    start = loads[config_beats - 1] + 1
    ends = [c for c in range(start, n) if columns["o__valid"][c] and columns["o__ready"][c]
            and (columns["o__payload"][c] >> last) & 1]
    return [start, *(c + 1 for c in ends[:-1]), n]


@dataclass(frozen=True)
class AttentionWindow:
    """One simulated window: the ``o`` events ``(addr, t)``, every counter port, and the clocks
    from its first ``i`` beat offered to its output marker taken."""

    events: list[tuple[int, int]]
    counters: dict[str, int]
    cycles: int


@dataclass
class _Bench:
    """The testbench of :func:`simulate_attention`: its sequences' loads and windows, one
    random stream for the valid and ready draws."""

    dut: AttentionSystem
    cfg: AttentionConfig
    path: object
    o_ready: float
    i_valid: float
    rng: random.Random
    kv_order: str
    early_query: bool
    max_cycles: int
    dense: bool

    def __post_init__(self):
        from rtl_gen.simulation import packer

        self.ports = [n for n in port_values(self.dut) if n.startswith("cnt_")]
        self.pack = packer(self.dut.i)
        self.sign = 1 << (self.cfg.time_width - 1)
        self.results: list[list[AttentionWindow]] = []

    async def window(self, ctx, beats) -> AttentionWindow:
        """One window: its query beats in, its ``o`` events out up to the marker."""
        dut, sign = self.dut, self.sign
        # each beat packed once and set when it is first offered (it stays until taken)
        # (valid and ready set only when they change: every ctx.set settles the whole design)
        beats, events, cycles, n = [self.pack(b) for b in beats], [], 0, 0
        offered = was_ready = None
        if beats:
            ctx.set(*beats[0])
        while True:
            if cycles >= self.max_cycles:
                raise RuntimeError(f"the window did not end in {self.max_cycles} clocks")
            offer = n < len(beats) and (self.i_valid >= 1.0 or self.rng.random() < self.i_valid)
            if offer != offered:
                ctx.set(dut.i.valid, offer)
                offered = offer
            ready = self.o_ready >= 1.0 or self.rng.random() < self.o_ready
            if ready != was_ready:
                ctx.set(dut.o.ready, ready)
                was_ready = ready
            _, _, i_ready, valid, payload = await ctx.tick().sample(
                dut.i.ready, dut.o.valid, dut.o.payload)
            cycles += 1
            if offer and i_ready:
                n += 1
                if n < len(beats):
                    ctx.set(*beats[n])
            if valid and ready:
                if payload.last:
                    break
                t = int(payload.t)
                # the dense design's codes are two's complement
                events.append((int(payload.addr), (t ^ sign) - sign if self.dense else t))
        ctx.set(dut.i.valid, 0)
        ctx.set(dut.o.ready, 0)
        await ctx.tick()
        return AttentionWindow(events, {n: ctx.get(getattr(dut, n)) for n in self.ports}, cycles)

    async def writes_under_a_query(self, ctx, writes, first_beat) -> None:
        """The sequence's key and value writes while its first query beat is offered: the
        query must not be taken before they are complete."""
        dut = self.dut
        # the first query's beat is offered from now on; it must not be taken
        ctx.set(dut.i.valid, 1)
        ctx.set(dut.i.payload, first_beat)
        for b in writes:
            # the writes come with gaps (a producer that stalls), in which only the
            # sequence's completeness holds the query back
            ctx.set(dut.load.valid, 0)
            _, _, i_ready = await ctx.tick().sample(dut.i.ready)
            if i_ready:
                raise RuntimeError("a query beat was taken before the sequence's "
                                   "keys and values were complete")
            ctx.set(dut.load.valid, 1)
            ctx.set(dut.load.payload, b)
            while True:
                _, _, ld_ready, i_ready = await ctx.tick().sample(dut.load.ready, dut.i.ready)
                if i_ready:  # a write is still to be taken
                    raise RuntimeError("a query beat was taken before the sequence's "
                                       "keys and values were complete")
                if ld_ready:
                    break
        ctx.set(dut.load.valid, 0)

    async def run(self, ctx, sequences) -> None:
        from rtl_gen.attn_images import (
            config_beats,
            dense_query_beats,
            kv_beats,
            query_beats,
            sequence_beats,
        )
        from rtl_gen.simulation import stream_put

        cfg, dut = self.cfg, self.dut
        beats_of = dense_query_beats if self.dense else query_beats
        for b in config_beats(cfg, self.path):
            await stream_put(ctx, dut.load, b)
        for query, keys, values, valid in sequences:
            for b in sequence_beats(cfg, valid):
                await stream_put(ctx, dut.load, b)
            writes = kv_beats(cfg, keys, values, self.kv_order)
            wins = [beats_of(cfg, self.path, query[i]) for i in range(query.shape[0])]
            if self.early_query:
                await self.writes_under_a_query(ctx, writes, wins[0][0])
            else:
                for b in writes:
                    await stream_put(ctx, dut.load, b)
            self.results.append([await self.window(ctx, w) for w in wins])


def simulate_attention(
    cfg: AttentionConfig, path, sequences, *, o_ready: float = 1.0, i_valid: float = 1.0,
    seed: int = 0, kv_order: str = "slot", early_query: bool = False,
    max_cycles: int = 1_000_000, softmax=None, dense: bool = False, vcd: str | None = None,
    runner=None, component=None,
) -> list[list[AttentionWindow]]:
    """Program an :class:`AttentionSystem` with ``path`` and run ``sequences`` in the Amaranth
    simulator.

    Parameters
    ----------
    cfg : AttentionConfig
    path : golden_models.attention.AttentionPath
    sequences : sequence of (query, keys, values, valid)
        Codes ``[S, heads * d_k]`` and the valid keys ``[S]`` of each sequence.
    o_ready, i_valid : float
        Probability that ``o.ready`` / ``i.valid`` is high on a clock.
    kv_order : {"slot", "kind"}
        The order of the key and value writes (:func:`rtl_gen.attn_images.kv_beats`).
    early_query : bool
        Offer each sequence's first query while its keys and values are still being written
        (the design must hold it until they are complete).
    softmax : callable, optional
        The softmax node's factory (:class:`AttentionSystem`).
    dense : bool
        The dense design: the query codes in, the output codes ``(h * d_k + d, code)`` out
        (:func:`rtl_gen.attn_images.dense_reference`).
    runner : callable, optional
        ``runner(dut, bench)`` runs the testbench ``bench`` on the :class:`AttentionSystem`
        ``dut`` instead of :func:`rtl_gen.simulation.run_simulator` (``vcd`` is then unused):
        e.g. :func:`synth_scripts.gatelevel.record`, to keep what its nodes saw
        (``synth_scripts.block_attention``).
    component : AttentionSystem, optional
        The system to run instead of ``AttentionSystem(cfg, softmax, dense=dense)`` (a mutant,
        in tests).

    Returns
    -------
    list of list of AttentionWindow
        Per sequence, per token.
    """
    from rtl_gen.simulation import check_probability, run_simulator

    check_probability("o_ready", o_ready)
    check_probability("i_valid", i_valid)
    dut = AttentionSystem(cfg, softmax, dense=dense) if component is None else component
    tb = _Bench(dut, cfg, path, o_ready, i_valid, random.Random(seed), kv_order, early_query,
                max_cycles, dense)

    async def bench(ctx):
        await tb.run(ctx, sequences)

    if runner is None:
        run_simulator(dut, bench, vcd=vcd)
    else:
        runner(dut, bench)
    return tb.results
