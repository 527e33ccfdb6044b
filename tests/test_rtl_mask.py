"""Tests of the hardware mask expression (rtl_gen/mask.py) against golden_models.Mask."""

from __future__ import annotations

import torch
from amaranth.hdl import Module, Signal
from amaranth.sim import Simulator

from golden_models import CodeSpace, Mask
from rtl_gen.mask import transmitted


def test_transmitted_equals_golden_mask_exhaustively():
    T, tw = 8, 3
    t, i_max, k = Signal(tw), Signal(tw), Signal(tw)
    out = Signal()
    m = Module()
    m.d.comb += out.eq(transmitted(t, i_max, k))
    got, want = {}, {}

    async def bench(ctx):
        for im in range(T):
            for kk in range(T):
                ctx.set(i_max, im)
                ctx.set(k, kk)
                for tt in range(T):
                    ctx.set(t, tt)
                    got[im, kk, tt] = ctx.get(out)

    sim = Simulator(m)
    sim.add_testbench(bench)
    sim.run()
    for im in range(T):
        for kk in range(T):
            mask = Mask(CodeSpace(T, "sym"), im, kk)
            for tt, tx in enumerate(mask.transmitted(torch.arange(T)).tolist()):
                want[im, kk, tt] = int(tx)
    assert got == want
