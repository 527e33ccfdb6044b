# amaranth: UnusedElaboratable=no
"""The parts of the attention path on their own, in the Amaranth simulator: the softmax unit
against golden_models.int_softmax.IntSoftmax on random and extreme rows; the run-time weight
memory's write rules (slots beyond the sequence and repeated writes ignored, the write count,
the written bits cleared by a sequence); the eager fork."""

from __future__ import annotations

import random

import pytest
import torch

from golden_models.int_softmax import IntSoftmax
from rtl_gen.attn_params import AttentionConfig
from rtl_gen.attn_softmax import SoftmaxUnit
from rtl_gen.kv_tiles import RuntimeWeights
from rtl_gen.simulation import run_simulator, stream_put


def _softmax_rows(cfg, sm, rows, unit=SoftmaxUnit):
    """``u`` of each ``(scores, valid)`` row from the unit (slots in a shuffled order)."""
    dut = unit(cfg)
    out = []

    async def bench(ctx):
        ctx.set(dut.mult, sm.mult)
        ctx.set(dut.shift, sm.shift)
        rng = random.Random(0)
        for scores, valid in rows:
            ctx.set(dut.length, len(scores))
            ctx.set(dut.valid, sum(1 << j for j, v in enumerate(valid) if v))
            beats = [{"addr": j, "score": s, "last": 0} for j, s in enumerate(scores)]
            rng.shuffle(beats)
            for b in [*beats, {"addr": 0, "score": 0, "last": 1}]:
                await stream_put(ctx, dut.i, b)
            got = []
            ctx.set(dut.o.ready, 1)
            while True:
                _, _, valid_o, p = await ctx.tick().sample(dut.o.valid, dut.o.payload)
                if valid_o:
                    if p.last:
                        break
                    got.append((int(p.addr), int(p.u)))
            ctx.set(dut.o.ready, 0)
            out.append(got)

    run_simulator(dut, bench)
    return out


@pytest.mark.parametrize("head_dim", [8, 32])
def test_softmax_unit_equals_int_softmax(head_dim):
    cfg = AttentionConfig(heads=1, head_dim=head_dim, seq_max=12, T=16)
    bound = cfg.score_bound
    sm = IntSoftmax.from_scale(3.0 / head_dim, 512, cfg.score_bits, 6)
    rng = random.Random(head_dim)
    rows = [
        ([rng.randint(-bound, bound) for _ in range(12)], [True] * 12),  # full range
        ([rng.randint(-40, 40) for _ in range(7)], [rng.random() < 0.7 for _ in range(7)]),
        ([5] * 9, [True] * 9),  # a constant row: equal probabilities
        ([bound, -bound, 0], [True, True, True]),  # the widest spread
        ([3, 1, 2, 9], [False] * 4),  # no valid key: every u is 0
        ([17], [True]),  # one key: u = 2**16
    ]
    got = _softmax_rows(cfg, sm, rows)
    for (scores, valid), row in zip(rows, got, strict=True):
        want = sm(torch.tensor(scores), torch.tensor(valid))
        assert row == list(enumerate(want.tolist())), (scores, valid)


def test_softmax_unit_mutant_is_caught():
    """The exponent's product truncated instead of rounded half up (the planted bug) gives
    other probabilities on the same rows."""
    from formal.harness import mutant_module

    mutant = mutant_module("rtl_gen.attn_softmax",
                           "t.eq(rshift_round(z * self.mult, self.shift, sb + MULT_BITS))",
                           "t.eq((z * self.mult) >> self.shift)")
    cfg = AttentionConfig(heads=1, head_dim=8, seq_max=12, T=16)
    sm = IntSoftmax.from_scale(0.02, 512, cfg.score_bits, 6)
    rng = random.Random(5)
    rows = [([rng.randint(-200, 200) for _ in range(12)], [True] * 12) for _ in range(3)]
    want = [list(enumerate(sm(torch.tensor(r), torch.tensor(v)).tolist())) for r, v in rows]
    assert _softmax_rows(cfg, sm, rows) == want
    assert _softmax_rows(cfg, sm, rows, mutant.SoftmaxUnit) != want


@pytest.mark.parametrize("orientation", ["columns", "rows"])
def test_runtime_weights_write_rules(orientation):
    """Beats of a slot beyond the sequence and repeated beats are ignored; the count and the
    folded init follow what was written; a new sequence forgets it all; a read shows this
    sequence's codes only."""
    cfg = AttentionConfig(heads=1, head_dim=4, seq_max=4, T=16, kv_pack=2)
    dut = RuntimeWeights(cfg, orientation, acc_width=12)
    log = {}

    def beat(slot, group, codes):
        return {"slot": slot, "group": group, "codes": codes}

    async def settle(ctx):
        for _ in range(3):
            await ctx.tick()

    async def read(ctx, row):
        ctx.set(dut.addr, row)
        ctx.set(dut.ren, 1)
        await ctx.tick()
        ctx.set(dut.ren, 0)
        return ctx.get(dut.rdata)

    async def bench(ctx):
        ctx.set(dut.accept, 1)
        ctx.set(dut.mu, 2)
        ctx.set(dut.length, 3)
        ctx.set(dut.start, 1)
        await ctx.tick()
        ctx.set(dut.start, 0)
        for b in (beat(0, 0, [1, -2]), beat(0, 1, [3, 4]), beat(3, 0, [7, 7]),
                  beat(0, 0, [5, 5]), beat(1, 0, [-8, 7]), beat(1, 1, [0, 1]),
                  beat(2, 0, [2, 2])):
            await stream_put(ctx, dut.w, b)
        await settle(ctx)
        log["incomplete"] = ctx.get(dut.complete)
        await stream_put(ctx, dut.w, beat(2, 1, [-1, -1]))
        await settle(ctx)
        log["complete"] = ctx.get(dut.complete)
        log["writes"] = ctx.get(dut.writes)
        log["init"] = [ctx.get(v) for v in dut.init]
        ctx.set(dut.accept, 0)
        log["rows"] = [await read(ctx, r) for r in range(dut.rows)]
        ctx.set(dut.start, 1)
        await ctx.tick()
        ctx.set(dut.start, 0)
        log["after_start"] = [await read(ctx, r) for r in range(dut.rows)]
        log["complete_after_start"] = ctx.get(dut.complete)

    run_simulator(dut, bench)
    keys = torch.tensor([[1, -2, 3, 4], [-8, 7, 0, 1], [2, 2, -1, -1], [0, 0, 0, 0]])
    mem = keys.T if orientation == "columns" else keys  # [rows, lanes]
    init = 2 * (keys.sum(1) if orientation == "columns" else keys.sum(0))
    assert not log["incomplete"] and log["complete"] and not log["complete_after_start"]
    assert log["writes"] == 12  # slot 3 is beyond the sequence, the repeat of (0, 0) ignored
    assert log["init"] == init.tolist()
    words = [sum((int(c) & 15) << (4 * j) for j, c in enumerate(row)) for row in mem.tolist()]
    assert log["rows"] == words
    assert log["after_start"] == [0] * dut.rows
