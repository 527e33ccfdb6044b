"""The parts the non-linear units are built from (docs/rtl_units.md).

The primitives of the integer contract (docs/integer_contract.md, "Primitives") in hardware,
each equal to its golden function in ``golden_models.fixed_point`` for every input of its
declared width:

- :func:`rshift_round`: ``floor((x + 2**(n-1)) / 2**n)``, for a constant or a run-time shift;
- :func:`saturate`: the clamp of a saturating register;
- :func:`bit_length`: the position of the leading one (a priority encoder);
- :class:`IntSqrt`: ``floor(sqrt(u))`` by the digit-by-digit method, one result bit a clock;
- :class:`Reciprocal`: ``floor(2**P / d)`` by restoring division, one quotient bit a clock;
- :class:`CodeWalk`: the threshold walk of one value over one table,
  ``min({t : v >= theta[t]} or {T-1})`` (``golden_models.integer_layer.fire``).

The softmax unit (:mod:`rtl_gen.softmax`) and the residual-add + LayerNorm unit
(:mod:`rtl_gen.add_norm`) use them; each has its own tests (``tests/test_rtl_unit_parts.py``).
"""

from __future__ import annotations

from amaranth.hdl import Const, Module, Mux, Signal, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from rtl_gen.params import check_int

__all__ = [
    "CodeWalk",
    "IntSqrt",
    "Reciprocal",
    "bit_length",
    "rshift_round",
    "saturate",
]


def rshift_round(x, n):
    """``floor((x + 2**(n-1)) / 2**n)`` (``x`` for ``n = 0``), as an Amaranth expression.

    ``n`` is a Python int or an unsigned value. For ``n >= 1`` this is
    ``((x >> (n-1)) + 1) >> 1`` (arithmetic shifts for a signed ``x``): adding the half after
    the first ``n - 1`` bits are dropped gives the same floor, and needs no ``2**(n-1)``
    constant as wide as the largest shift.
    """
    if isinstance(n, int):
        check_int("n", n, 0, 62)
        return x if n == 0 else ((x >> (n - 1)) + 1) >> 1
    return Mux(n == 0, x, ((x >> (n - 1)[:len(n)]) + 1) >> 1)


def saturate(x, bits: int):
    """``x`` clamped into a ``bits``-wide two's complement register (a signed value of that
    width)."""
    check_int("bits", bits, 2, 64)
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return Mux(x > hi, Const(hi, signed(bits)),
               Mux(x < lo, Const(lo, signed(bits)), x[:bits].as_signed()))


def bit_length(m: Module, x, name: str = "bit_length") -> Signal:
    """A signal of ``m`` holding the bits of the unsigned value ``x`` (0 for 0): the position
    of its leading one, plus one."""
    width = len(x)
    n = Signal(range(width + 1), name=name)
    for i in range(width):
        with m.If(x[i]):
            m.d.comb += n.eq(i + 1)
    return n


class IntSqrt(wiring.Component):
    """``floor(sqrt(u))`` of a ``bits``-wide radicand, one result bit per clock.

    The digit-by-digit (restoring) method of ``golden_models.fixed_point.isqrt``: ``one``
    starts at the largest power of four below ``2**bits`` and steps down by four; each clock
    compares the remainder with ``res + one``, subtracts, and shifts ``res``. ``bits // 2``
    clocks after ``start``, ``done`` is high and ``root`` holds the result until the next
    ``start``.

    Parameters
    ----------
    bits : int
        Radicand width, even, 2..62 (the LayerNorm's is 62).

    Members
    -------
    start : In(1)
        Take ``u`` and start (ignored while busy).
    u : In(bits)
    busy : Out(1)
    done : Out(1)
        High for one clock, when ``root`` is final.
    root : Out(bits // 2)
    """

    def __init__(self, bits: int = 62):
        check_int("bits", bits, 2, 62)
        if bits % 2:
            raise ValueError(f"bits must be even, not {bits}")
        self._bits = bits
        super().__init__({"start": In(1), "u": In(bits), "busy": Out(1), "done": Out(1),
                          "root": Out(bits // 2)})

    @property
    def bits(self) -> int:
        return self._bits

    def elaborate(self, platform):
        m = Module()
        b = self._bits
        rem = Signal(b, name="rem")
        res = Signal(b, name="res")
        one = Signal(b, name="one")
        cand = Signal(b + 1, name="cand")
        ge = Signal(name="ge")
        m.d.comb += [cand.eq(res + one), ge.eq(rem >= cand), self.root.eq(res),
                     self.busy.eq(one != 0)]
        m.d.sync += self.done.eq(0)
        with m.If(one != 0):
            with m.If(ge):
                m.d.sync += [rem.eq(rem - cand), res.eq((res >> 1) + one)]
            with m.Else():
                m.d.sync += res.eq(res >> 1)
            m.d.sync += one.eq(one >> 2)
            with m.If(one == 1):
                m.d.sync += self.done.eq(1)
        with m.Elif(self.start):
            m.d.sync += [rem.eq(self.u), res.eq(0), one.eq(1 << (b - 2))]
        return m


class Reciprocal(wiring.Component):
    """``floor(2**num_bits / d)`` for ``d >= 2**low_bits``, one quotient bit per clock.

    Restoring division of the one-bit dividend: before quotient bit ``i`` is decided the
    remainder is ``2**(num_bits - i)`` reduced by the divisor multiples already taken; no
    subtraction can happen above bit ``num_bits - low_bits``, so the division starts there with
    the remainder ``2**low_bits`` and takes ``num_bits - low_bits + 1`` clocks. A divisor below
    ``2**low_bits`` gives an unspecified quotient (the units never use it: an empty softmax
    row has every exponential zero, a constant LayerNorm row every ``D`` zero).

    Parameters
    ----------
    num_bits : int
        ``P`` of ``2**P``, 1..62.
    den_bits : int
        Width of the divisor, ``low_bits + 1 .. 62``.
    low_bits : int
        ``d >= 2**low_bits``, ``0 .. num_bits``.

    Members
    -------
    start : In(1)
        Take ``d`` and start (ignored while busy).
    d : In(den_bits)
    busy : Out(1)
    done : Out(1)
        High for one clock, when ``q`` is final.
    q : Out(num_bits - low_bits + 1)
    """

    def __init__(self, num_bits: int, den_bits: int, low_bits: int):
        check_int("num_bits", num_bits, 1, 62)
        check_int("low_bits", low_bits, 0, num_bits)
        check_int("den_bits", den_bits, low_bits + 1, 62)
        self._num, self._den, self._low = num_bits, den_bits, low_bits
        super().__init__({"start": In(1), "d": In(den_bits), "busy": Out(1), "done": Out(1),
                          "q": Out(num_bits - low_bits + 1)})

    @property
    def iterations(self) -> int:
        return self._num - self._low + 1

    def elaborate(self, platform):
        m = Module()
        n = self.iterations
        d = Signal(self._den, name="divisor")
        rem = Signal(self._den + 1, name="rem")
        left = Signal(range(n + 1), name="left")
        ge = Signal(name="ge")
        m.d.comb += [ge.eq(rem >= d), self.busy.eq(left != 0)]
        m.d.sync += self.done.eq(0)
        with m.If(left != 0):
            m.d.sync += [rem.eq(Mux(ge, rem - d, rem) << 1), self.q.eq((self.q << 1) | ge),
                         left.eq(left - 1)]
            with m.If(left == 1):
                m.d.sync += self.done.eq(1)
        with m.Elif(self.start):
            m.d.sync += [d.eq(self.d), rem.eq(1 << self._low), self.q.eq(0), left.eq(n)]
        return m


class CodeWalk(wiring.Component):
    """The threshold walk of one value: ``tau = min({t in 0..T-2 : v >= theta[t]} or {T-1})``.

    Combinational (a compare per step and a priority encoder), so it needs no ordering of the
    table; ``golden_models.integer_layer.fire`` is its definition.

    Parameters
    ----------
    T : int
        Steps, 2..64.
    shape : amaranth shape
        Of the value and of each threshold.

    Members
    -------
    v : In(shape)
    theta : In(shape).array(T - 1)
    tau : Out(range(T))
    """

    def __init__(self, T: int, shape):
        check_int("T", T, 2, 64)
        self._T = T
        super().__init__({"v": In(shape), "theta": In(shape).array(T - 1),
                          "tau": Out(range(T))})

    def elaborate(self, platform):
        m = Module()
        m.d.comb += self.tau.eq(self._T - 1)
        for t in reversed(range(self._T - 1)):
            with m.If(self.v >= self.theta[t]):
                m.d.comb += self.tau.eq(t)
        return m

