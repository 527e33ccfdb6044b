"""Amaranth-simulator tests of the non-linear units' parts (rtl_gen/unit_parts.py) and of the
softmax unit's exponential, against the golden primitives (golden_models.fixed_point,
golden_models.int_softmax): exhaustive where the domain allows (every EXP2 entry at every
shift, every square-root input of 12 bits; 16 bits under ``slow``), random and extreme values
elsewhere. Each check is shown to fail on a planted bug."""

from __future__ import annotations

import math
import random

import pytest
import torch
from amaranth.hdl import Module, signed, unsigned
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from formal.harness import mutant_module
from golden_models.fixed_point import bit_length as golden_bit_length
from golden_models.fixed_point import isqrt as golden_isqrt
from golden_models.fixed_point import rshift_round as golden_rshift_round
from golden_models.int_softmax import EXP_BITS, exp2_table
from rtl_gen import unit_parts
from rtl_gen.params import RTLConfig
from rtl_gen.simulation import run_simulator
from rtl_gen.softmax import Exponential

PARTS = "rtl_gen.unit_parts"


def _run_comb(dut, bench) -> None:
    """Simulate a combinational ``dut`` (no clock) until ``bench`` returns."""
    from amaranth.sim import Simulator

    sim = Simulator(dut)
    sim.add_testbench(bench)
    sim.run()


def _run_sequential(dut, inputs, port):
    """Start ``dut`` (an IntSqrt or Reciprocal) on each input; the results and clocks taken."""
    out = []

    async def bench(ctx):
        for x in inputs:
            ctx.set(getattr(dut, port), x)
            ctx.set(dut.start, 1)
            await ctx.tick()
            ctx.set(dut.start, 0)
            clocks = 1
            while True:
                _, _, done, busy = await ctx.tick().sample(dut.done, dut.busy)
                clocks += 1
                if done:
                    break
                assert busy
            value = ctx.get(dut.root if hasattr(dut, "root") else dut.q)
            out.append((value, clocks))

    run_simulator(dut, bench)
    return out


def _isqrt_ok(parts, bits, values) -> bool:
    got = _run_sequential(parts.IntSqrt(bits), values, "u")
    # the start clock, one bit a clock, then done
    return ({c for _, c in got} == {bits // 2 + 2}
            and [g for g, _ in got] == [math.isqrt(v) for v in values])


def test_isqrt_every_12_bit_input():
    assert _isqrt_ok(unit_parts, 12, list(range(2**12)))


@pytest.mark.slow
def test_isqrt_every_16_bit_input():
    assert _isqrt_ok(unit_parts, 16, list(range(2**16)))


def test_isqrt_62_bits_random_and_extremes():
    rng = random.Random(1)
    values = [0, 1, 2, 3, 2**60, 2**61 - 1, 2**62 - 1, (2**31 - 1) ** 2, (2**31 - 1) ** 2 - 1]
    values += [rng.randrange(2**62) for _ in range(200)]
    values += [rng.randrange(2**k) for k in range(1, 62)]
    got = _run_sequential(unit_parts.IntSqrt(62), values, "u")
    assert [g for g, _ in got] == golden_isqrt(torch.tensor(values)).tolist()


def test_isqrt_mutant_is_caught():
    # the first result bit starts one place too low
    bad = mutant_module(PARTS, "one.eq(1 << (b - 2))", "one.eq(1 << (b - 4))")
    assert not _isqrt_ok(bad, 12, list(range(2**12)))


@pytest.mark.parametrize(("num", "den", "low"), [(55, 31, 30), (42, 25, 15), (40, 21, 15)])
def test_reciprocal(num, den, low):
    rng = random.Random(num)
    top = (1 << den) - 1
    values = [1 << low, (1 << low) + 1, top, top - 1] + [rng.randrange(1 << low, top + 1)
                                                         for _ in range(150)]
    got = _run_sequential(unit_parts.Reciprocal(num, den, low), values, "d")
    assert [g for g, _ in got] == [2**num // d for d in values]
    assert {c for _, c in got} == {num - low + 3}


def test_reciprocal_mutant_is_caught():
    bad = mutant_module(PARTS, "rem.eq(1 << self._low)", "rem.eq(1 << (self._low - 1))")
    values = [2**30 + 12345, 2**31 - 1]
    got = _run_sequential(bad.Reciprocal(55, 31, 30), values, "d")
    assert [g for g, _ in got] != [2**55 // d for d in values]


class _Comb(wiring.Component):
    """rshift_round, saturate and bit_length of one input, side by side."""

    def __init__(self, parts):
        self.parts = parts
        super().__init__({"x": In(signed(40)), "n": In(unsigned(6)), "u": In(unsigned(40)),
                          "shifted": Out(signed(40)), "fixed": Out(signed(40)),
                          "sat": Out(signed(12)), "bits": Out(unsigned(6))})

    def elaborate(self, platform):
        m = Module()
        m.d.comb += [self.shifted.eq(self.parts.rshift_round(self.x, self.n)),
                     self.fixed.eq(self.parts.rshift_round(self.x, 7)),
                     self.sat.eq(self.parts.saturate(self.x, 12))]
        n = self.parts.bit_length(m, self.u)
        m.d.comb += self.bits.eq(n)
        return m


def _comb_values(parts, cases):
    dut = _Comb(parts)
    out = []

    async def bench(ctx):
        for x, n, u in cases:
            ctx.set(dut.x, x)
            ctx.set(dut.n, n)
            ctx.set(dut.u, u)
            out.append((ctx.get(dut.shifted), ctx.get(dut.fixed), ctx.get(dut.sat),
                        ctx.get(dut.bits)))

    _run_comb(dut, bench)
    return out


def _comb_expected(cases):
    x = torch.tensor([c[0] for c in cases])
    n = torch.tensor([c[1] for c in cases])
    u = torch.tensor([c[2] for c in cases])
    return list(zip(golden_rshift_round(x, n).tolist(), golden_rshift_round(x, 7).tolist(),
                    x.clamp(-2048, 2047).tolist(), golden_bit_length(u).tolist(), strict=True))


def _comb_cases():
    rng = random.Random(3)
    lo, hi = -(2**39), 2**39 - 1
    cases = [(x, n, u) for x in (lo, hi, -1, 0, 1, 2047, 2048, -2048, -2049)
             for n, u in ((0, 0), (1, 1), (38, 2**39), (39, 2**40 - 1))]
    cases += [(rng.randint(lo, hi) >> rng.randrange(40), rng.randrange(40),
               rng.randrange(2**40) >> rng.randrange(41)) for _ in range(400)]
    return cases


def test_rshift_round_saturate_bit_length():
    cases = _comb_cases()
    assert _comb_values(unit_parts, cases) == _comb_expected(cases)


def test_rshift_round_mutant_is_caught():
    bad = mutant_module(PARTS, "((x >> (n - 1)[:len(n)]) + 1) >> 1", "((x >> n) + 1) >> 1")
    cases = _comb_cases()
    assert _comb_values(bad, cases) != _comb_expected(cases)


# -- the softmax's exponential: every EXP2 entry at every shift ---------------------------------


def _exponentials(cls, cfg: RTLConfig, zs):
    """``e`` of ``z = top - score`` with ``M = 1``, ``S = 0`` (so ``t = z``)."""
    dut = cls(cfg)
    hi = (1 << (cfg.score_bits - 1)) - 1
    out = []

    async def bench(ctx):
        ctx.set(dut.mult, 1)
        ctx.set(dut.shift, 0)
        ctx.set(dut.top, hi)
        for z, valid in zs:
            ctx.set(dut.score, hi - z)
            ctx.set(dut.valid, valid)
            out.append(ctx.get(dut.e))

    _run_comb(dut, bench)
    return out


def _exp_domain(ft: int):
    """Every ``t = i * 2**Ft + f`` up to ``i = E + 1`` (zero there) and beyond, valid, and
    a few invalid keys."""
    top = (EXP_BITS + 2) << ft
    return [(t, True) for t in range(top)] + [(0, False), (5, False)]


def _exp_expected(ft: int):
    table = exp2_table(ft).tolist()
    return [(table[t % 2**ft] >> (t >> ft) if t >> ft <= EXP_BITS else 0) if v else 0
            for t, v in _exp_domain(ft)]


@pytest.mark.parametrize("ft", [1, 6, pytest.param(12, marks=pytest.mark.slow)])
def test_exponential_every_table_entry(ft):
    # z must reach (E + 2) * 2**Ft: scores of at least ft + 6 bits
    cfg = RTLConfig(T=4, exp_frac_bits=ft, score_bits=max(ft + 7, 11))
    assert _exponentials(Exponential, cfg, _exp_domain(ft)) == _exp_expected(ft)


def test_exponential_mutant_is_caught():
    bad = mutant_module("rtl_gen.softmax", "small.eq(whole <= w[\"exp\"])",
                        "small.eq(whole <= w[\"exp\"] - 1)")
    cfg = RTLConfig(T=4, exp_frac_bits=6)
    assert _exponentials(bad.Exponential, cfg, _exp_domain(6)) != _exp_expected(6)
