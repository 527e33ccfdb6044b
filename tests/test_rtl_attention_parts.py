# amaranth: UnusedElaboratable=no
"""The parts of the attention path on their own, in the Amaranth simulator: the softmax node
(the project's softmax unit and the attn_prob encoder) against the golden path on random and
extreme rows; the run-time weight
memory's write rules (slots beyond the sequence and repeated writes ignored, the write count,
the written bits cleared by a sequence); the eager fork."""

from __future__ import annotations

import random

import pytest
import torch

from golden_models.attention import AttentionPath
from golden_models.mttfs import encode_events
from rtl_gen.attn_images import config_beats, sequence_beats
from rtl_gen.attn_params import AttentionConfig
from rtl_gen.attn_softmax import SoftmaxNode, softmax_counters
from rtl_gen.kv_tiles import RuntimeWeights
from rtl_gen.simulation import run_simulator, stream_put


def _node_rows(cfg, path, rows, node=SoftmaxNode):
    """The ``attn_prob`` events ``(slot, t)`` and the counters of each ``(scores, valid)`` row
    from a softmax node loaded with ``path`` (the scores in slot order, as the query x key tile
    sends them)."""
    dut = node(cfg)
    names = list(softmax_counters(cfg))
    out = []

    async def bench(ctx):
        for b in config_beats(cfg, path):
            await stream_put(ctx, dut.load, b)
        for scores, valid in rows:
            for b in sequence_beats(cfg, torch.tensor(valid)):
                await stream_put(ctx, dut.load, b)
            beats = [{"addr": j, "score": s, "last": 0} for j, s in enumerate(scores)]
            for b in [*beats, {"addr": 0, "score": 0, "last": 1}]:
                await stream_put(ctx, dut.i, b)
            got = []
            ctx.set(dut.o.ready, 1)
            while True:
                _, _, valid_o, p = await ctx.tick().sample(dut.o.valid, dut.o.payload)
                if valid_o:
                    if p.last:
                        break
                    got.append((int(p.addr), int(p.t)))
            ctx.set(dut.o.ready, 0)
            await ctx.tick()
            out.append((got, {n: ctx.get(getattr(dut, f"cnt_{n}")) for n in names}))

    run_simulator(dut, bench)
    return out


def _golden_rows(path, rows):
    out = []
    for scores, valid in rows:
        v = torch.tensor(valid)
        u, codes, tau = path._probabilities(torch.tensor([scores]), v)
        idx, tm = encode_events(codes[0], path.prob_mask)
        T = path.prob_mask.T
        compares = sum(T - 1 if t == T - 1 else t + 1 for t in tau[0].tolist())
        out.append((list(zip(idx.tolist(), tm.tolist(), strict=True)),
                    {"scores_in": len(scores), "exp_ops": sum(valid), "divisions": 1,
                     "compare_ops": compares, "events_out": int(idx.numel()),
                     "events_suppressed": len(scores) - int(idx.numel())}))
    return out


def _rows(cfg, rng):
    bound, S = cfg.score_bound, cfg.seq_max
    return [
        ([rng.randint(-bound, bound) for _ in range(S)], [True] * S),  # full range
        ([rng.randint(-40, 40) for _ in range(7)], [rng.random() < 0.7 for _ in range(7)]),
        ([5] * 9, [True] * 9),  # a constant row: equal probabilities
        ([bound, -bound, 0], [True, True, True]),  # the widest spread
        ([3, 1, 2, 9], [False] * 4),  # no valid key: every probability is 0
        ([17], [True]),  # one key: probability 1
    ]


@pytest.mark.parametrize(("head_dim", "k"), [(8, 1), (32, 0)])
def test_softmax_node_equals_golden(head_dim, k):
    """The node (the project's softmax unit, then the attn_prob encoder) on random and extreme
    rows: every event and counter equal the golden path's (IntSoftmax, the walk, the mask)."""
    cfg = AttentionConfig(heads=1, head_dim=head_dim, seq_max=12, T=16)
    path = AttentionPath.random(head_dim, T=16, k=k, seq_len=12, seed=head_dim)
    rows = _rows(cfg, random.Random(head_dim))
    assert _node_rows(cfg, path, rows) == _golden_rows(path, rows)


def test_softmax_node_mutant_is_caught():
    """A node that gives the unit every key as valid (the padding mask lost: the planted bug)
    gives other events on a padded row."""
    from formal.harness import mutant_module

    mutant = mutant_module("rtl_gen.attn_softmax",
                           "u.valid.eq(regs.seq.valid.bit_select(p.addr, 1))", "u.valid.eq(1)")
    cfg = AttentionConfig(heads=1, head_dim=8, seq_max=12, T=16)
    path = AttentionPath.random(8, T=16, k=1, seq_len=12, seed=5)
    rng = random.Random(5)
    rows = [([rng.randint(-200, 200) for _ in range(12)], [j % 3 != 0 for j in range(12)])]
    want = _golden_rows(path, rows)
    assert _node_rows(cfg, path, rows) == want
    assert _node_rows(cfg, path, rows, mutant.SoftmaxNode) != want


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
