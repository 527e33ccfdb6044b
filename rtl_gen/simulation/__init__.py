"""The components in the Amaranth simulator: one home for the testbenches and what they share.

=============  ==========================================================================
module         what it simulates
=============  ==========================================================================
``tiles``      windows through a neuron tile or a dense tile (through the one tile driver,
               :class:`rtl_gen.simulation.driver.TileDriver`), codes through the encoder
``attention``  the attention path programmed with a golden path, sequence by sequence
``units``      rows through the softmax unit and the residual add + LayerNorm unit
``mesh``       flits through a mesh of routers at zero load; inferences through a system
=============  ==========================================================================

What they share lives here, once: a beat is put on a stream with :func:`stream_put` and taken
with :func:`stream_get` (the shape of Glasgow's helpers), in every testbench and in
``tests/``; the probabilities are checked, an output stream drained with random
backpressure, ``busy`` waited on, a run's output checked to end with exactly one marker beat,
the ``cnt_*`` ports read and the simulator run (optionally into a waveform file) the same way.
:func:`elaborated` elaborates a component once so that signals of its submodules can be
probed in the simulation. :func:`packer` packs a stream's payloads once each, for drivers that
offer a beat on many clocks.
"""

from __future__ import annotations

__all__ = [
    "check_probability",
    "drain",
    "elaborated",
    "marked_output",
    "packer",
    "read_counters",
    "field_packer",
    "run_simulator",
    "stream_get",
    "stream_put",
    "wait_idle",
]


def field_packer(fields):
    """A function that packs a mapping of field values into one word: ``fields`` maps each
    field's name to its ``(offset, width)``. A value too wide for its field is cut (a negative
    one to its two's complement), as ``layout.const`` cuts it; unlike
    :func:`rtl_gen.layouts.pack`, the checked packing, it costs microseconds a beat, for
    beats the generator's own images and encoders made."""
    masks = {name: (offset, (1 << width) - 1) for name, (offset, width) in fields.items()}

    def word(values) -> int:
        out = 0
        for name, value in values.items():
            offset, mask = masks[name]
            out |= (int(value) & mask) << offset
        return out

    return word


def packer(stream):
    """A function that turns a payload of ``stream`` (a mapping of its fields' integers) into
    what ``ctx.set`` takes to drive it, ``(signal, bits)``, the bits being those
    ``layout.const(payload)`` holds (:func:`field_packer`). ``ctx.set`` with a mapping builds
    that constant on every call, about a millisecond for a tile's load beat; a driver that
    packs each beat once and offers it on many clocks saves it. A layout with a field that is
    itself a layout is left to Amaranth: its payloads are passed as they are,
    ``(stream.payload, payload)``."""
    from amaranth.hdl import Shape, ShapeCastable

    layout = stream.payload.shape()
    fields = {}
    for name, field in layout:
        if isinstance(field.shape, ShapeCastable):
            return lambda payload: (stream.payload, payload)
        fields[name] = (field.offset, Shape.cast(field.shape).width)
    signal = stream.payload.as_value()
    word = field_packer(fields)
    return lambda payload: (signal, word(payload))


async def stream_put(ctx, stream, payload) -> int:
    """Testbench coroutine: offer ``payload`` on ``stream`` until it is taken.

    ``valid`` is high from now until the clock edge where ``ready`` is sampled high, and low
    after it. Returns the clock edges taken (1 when the beat goes through at once).
    """
    ctx.set(stream.valid, 1)
    ctx.set(stream.payload, payload)
    clocks = 0
    while True:
        _, _, ready = await ctx.tick().sample(stream.ready)
        clocks += 1
        if ready:
            break
    ctx.set(stream.valid, 0)
    return clocks


async def stream_get(ctx, stream):
    """Testbench coroutine: take one beat of ``stream``; returns its payload.

    ``ready`` is high from now until the clock edge where ``valid`` is sampled high, and low
    after it.
    """
    ctx.set(stream.ready, 1)
    while True:
        _, _, valid, payload = await ctx.tick().sample(stream.valid, stream.payload)
        if valid:
            break
    ctx.set(stream.ready, 0)
    return payload


def check_probability(name: str, p: object) -> float:
    """Return ``p`` if it is in ``(0, 1]``, else raise ``ValueError`` naming ``name``."""
    if not 0.0 < p <= 1.0:
        raise ValueError(f"{name} must be in (0, 1], not {p!r}")
    return p


def drain(stream, field: str, seen: list, *, o_ready: float, rng):
    """Testbench coroutine that takes every beat of ``stream`` (an output of the design).

    ``stream.ready`` is high on a clock with probability ``o_ready`` (drawn from ``rng`` only
    when ``o_ready < 1``); each beat taken is appended to ``seen`` as
    ``(addr, payload.<field>, last, clock)``, clocks counted from 1.
    """

    async def collect(ctx):
        cycle = 0
        while True:
            ready = o_ready >= 1.0 or rng.random() < o_ready
            ctx.set(stream.ready, ready)
            _, _, valid, payload = await ctx.tick().sample(stream.valid, stream.payload)
            cycle += 1
            if valid and ready:
                seen.append((int(payload.addr), int(getattr(payload, field)), int(payload.last),
                             cycle))

    return collect


async def wait_idle(ctx, busy, limit: int | None = None) -> int:
    """Testbench coroutine: clock until ``busy`` is sampled low; returns the clocks taken.

    With ``limit``, a design still busy after ``limit`` clocks raises ``RuntimeError`` (a hung
    design fails instead of running forever).
    """
    clocks = 0
    while True:
        _, _, value = await ctx.tick().sample(busy)
        clocks += 1
        if not value:
            return clocks
        if limit is not None and clocks >= limit:
            raise RuntimeError(f"still busy after {limit} clocks")


def marked_output(beats: list, what: str) -> list:
    """``beats`` (as from :func:`drain`) if exactly the last one is a marker, else raise.

    Raises
    ------
    RuntimeError
        "output of <what> is not ended by one marker".
    """
    if not beats or not beats[-1][2] or any(b[2] for b in beats[:-1]):
        raise RuntimeError(f"output of {what} is not ended by one marker")
    return beats


def read_counters(ctx, dut, names, port: str = "cnt_{}") -> dict[str, int]:
    """Counter name -> value of the port ``port.format(name)`` of ``dut``."""
    return {name: ctx.get(getattr(dut, port.format(name))) for name in names}


def run_simulator(top, *testbenches, background=(), vcd: str | None = None) -> None:
    """Simulate ``top`` with a 100 MHz ``sync`` clock until the ``testbenches`` return.

    ``background`` testbenches run alongside and are stopped then; ``vcd`` names a waveform
    file to write.
    """
    from amaranth.sim import Simulator

    sim = Simulator(top)
    sim.add_clock(1e-8)
    for bench in background:
        sim.add_testbench(bench, background=True)
    for bench in testbenches:
        sim.add_testbench(bench)
    if vcd is None:
        sim.run()
    else:
        with sim.write_vcd(vcd):
            sim.run()


def elaborated(component, platform=None):
    """``component`` elaborated once, and the ``Module`` its ``elaborate`` returned.

    Returns ``(fragment, module)``: simulate ``fragment`` (it is that one elaboration, and the
    component counts as used, so Amaranth warns of nothing), and probe the signals of
    ``module``'s submodules, e.g. ``module.submodules["weights"].bus.rdata``, in it.

    Raises
    ------
    TypeError
        ``component.elaborate`` does not return a ``Module``.
    """
    from amaranth.hdl import Fragment, Module

    fragment = Fragment.get(component, platform)
    modules = [o for o in fragment.origins or () if isinstance(o, Module)]
    if not modules:
        raise TypeError(f"{component!r} does not elaborate to a Module")
    return fragment, modules[0]
