"""Driving the AXI wrappers in the Amaranth simulator, and how a load beat becomes register writes.

:func:`load_writes` is the one home of the translation of a block's load beat into AXI4-Lite
writes (``LOAD_DATA`` words, then ``LOAD_CMD``); the cocotb bench (``cocotb_tests/tb_axi.py``)
uses it too. :func:`axil_write` and :func:`axil_read` are one AXI4-Lite transaction each;
:func:`simulate_axi_system` loads a mapped chain into :class:`rtl_gen.axi.AxiSystem` over
AXI4-Lite and runs inferences over AXI4-Stream (docs/rtl_axi.md).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from rtl_gen.axi_lite import OKAY
from rtl_gen.regmap import RegisterMap
from rtl_gen.simulation import check_probability, run_simulator

__all__ = [
    "AxiInference",
    "axil_read",
    "axil_write",
    "load_writes",
    "reference_counters",
    "simulate_axi_system",
]

#: Counters read per look while a run goes on (:func:`simulate_axi_system`).
READ_SAMPLE = 6


def load_writes(regmap: RegisterMap, beat) -> list[tuple[int, int]]:
    """The ``(byte address, value)`` writes that send one load beat.

    ``beat`` is ``(node, target, addr, data)`` for the system
    (:meth:`rtl_gen.mapper.SystemMap.load_beats`) or ``(target, addr, data)`` for the tile
    (:func:`rtl_gen.tile.load_beats`). The data goes into ``LOAD_DATA[0..]`` (32 bits each,
    least significant word first), then ``LOAD_CMD`` is written with the beat's fields, which
    sends it.

    Raises
    ------
    ValueError
        A field does not fit its register field (the message names it, the value and the
        width).
    """
    cmd = regmap["LOAD_CMD"]
    names = ("node", "target", "addr", "data") if len(beat) == 4 else ("target", "addr", "data")
    values = dict(zip(names, (int(v) for v in beat), strict=True))
    words = [r for r in regmap.registers if r.name.startswith("LOAD_DATA[")]
    data = values.pop("data")
    if data < 0 or data >> (32 * len(words)):
        raise ValueError(f"load data {data:#x} does not fit {len(words)} LOAD_DATA words")
    writes = [(r.address, (data >> (32 * i)) & 0xFFFF_FFFF) for i, r in enumerate(words)]
    word = 0
    for name, value in values.items():
        f = cmd.field(name)
        if not 0 <= value < (1 << f.width):
            raise ValueError(f"LOAD_CMD.{name} = {value} does not fit {f.width} bits")
        word |= value << f.lsb
    writes.append((cmd.address, word))
    return writes


def reference_counters(system_map, reference) -> dict[str, int]:
    """Counter register name -> the value the golden reference of one inference gives
    (:func:`rtl_gen.mapper.system_reference`); nodes without a tile read 0."""
    from rtl_gen.axi import counter_registers

    cfg = system_map.config
    regs = counter_registers("system", cfg)
    out = dict.fromkeys(regs.values(), 0)
    for node, c in reference.tile_counters.items():
        for name, value in c.as_dict().items():
            out[regs[f"cnt_{name}_n{node}"]] = int(value)
    out[regs["cnt_enc_events_out"]] = int(reference.encoder_events)
    out[regs["cnt_enc_events_suppressed"]] = cfg.n_in - int(reference.encoder_events)
    out[regs["cnt_flits"]] = len(reference.flits)
    out[regs["cnt_hops"]] = int(reference.total_hops)
    return out


async def axil_write(ctx, bus, addr: int, data: int, strb: int = 0xF, *, idle: int = 0) -> int:
    """Testbench coroutine: one AXI4-Lite write (AW and W offered together after ``idle``
    clocks); returns the B response."""
    for _ in range(idle):
        await ctx.tick()
    ctx.set(bus.awaddr, addr)
    ctx.set(bus.wdata, data)
    ctx.set(bus.wstrb, strb)
    ctx.set(bus.awvalid, 1)
    ctx.set(bus.wvalid, 1)
    while True:
        _, _, ready = await ctx.tick().sample(bus.awready)
        if ready:
            break
    ctx.set(bus.awvalid, 0)
    ctx.set(bus.wvalid, 0)
    ctx.set(bus.bready, 1)
    while True:
        _, _, valid, resp = await ctx.tick().sample(bus.bvalid, bus.bresp)
        if valid:
            break
    ctx.set(bus.bready, 0)
    return int(resp)


async def axil_read(ctx, bus, addr: int, *, idle: int = 0) -> tuple[int, int]:
    """Testbench coroutine: one AXI4-Lite read; returns ``(data, response)``."""
    for _ in range(idle):
        await ctx.tick()
    ctx.set(bus.araddr, addr)
    ctx.set(bus.arvalid, 1)
    while True:
        _, _, ready = await ctx.tick().sample(bus.arready)
        if ready:
            break
    ctx.set(bus.arvalid, 0)
    ctx.set(bus.rready, 1)
    while True:
        _, _, valid, data, resp = await ctx.tick().sample(bus.rvalid, bus.rdata, bus.rresp)
        if valid:
            break
    ctx.set(bus.rready, 0)
    return int(data), int(resp)


@dataclass
class AxiInference:
    """One inference through the wrapper: output events ``(addr, t)``, the clocks from the first
    code offered to the output marker taken, the counters and ``DONE`` read over AXI4-Lite
    after it, and the snapshots read while it ran: ``(DONE before, counters, DONE after)``."""

    events: list[tuple[int, int]]
    cycles: int
    counters: dict[str, int]
    done: int
    reads_while_running: list[tuple[int, dict[str, int], int]] = field(default_factory=list)


def simulate_axi_system(system_map, inputs, *, o_ready: float = 1.0, seed: int = 0,
                        read_while_running: bool = False, dut=None,
                        max_cycles: int = 200_000) -> list[AxiInference]:
    """Load ``system_map`` into an :class:`rtl_gen.axi.AxiSystem` over AXI4-Lite and run
    ``inputs`` over AXI4-Stream in the Amaranth simulator.

    Parameters
    ----------
    system_map : rtl_gen.mapper.SystemMap
    inputs : sequence of code vectors
        Padded to ``n_in`` with silent codes (``system_map.pad_input``).
    o_ready : float
        Probability that ``m_axis.tready`` is high on a clock.
    read_while_running : bool
        Read ``DONE``, a random sample of :data:`READ_SAMPLE` counters and ``DONE`` again, over
        and over, while each inference runs (the reads land in
        :attr:`AxiInference.reads_while_running`).
    dut : AxiSystem, optional
        The wrapper to simulate (``AxiSystem(system_map.config, embed=True)`` by default); a
        test passes a planted fault here.
    """
    from amaranth.hdl import ClockDomain, Module

    from rtl_gen.axi import AxiSystem

    check_probability("o_ready", o_ready)
    cfg = system_map.config
    dut = dut if dut is not None else AxiSystem(cfg, embed=True)
    regmap = dut.regmap
    top = Module()
    top.domains.sync = ClockDomain("sync")
    top.submodules.axi = dut
    rng = random.Random(seed)
    vectors = [system_map.pad_input(q).tolist() for q in inputs]
    beats = system_map.load_beats()
    results: list[AxiInference] = []
    state = {"running": False, "reads": []}
    counters = [r for r in regmap.registers if [f.name for f in r.fields] == ["value"]]
    done_addr = regmap["DONE"].address
    bus = dut.s_axil

    async def main(ctx):
        for beat in beats:
            for addr, value in load_writes(regmap, beat):
                if await axil_write(ctx, bus, addr, value) != OKAY:
                    raise RuntimeError(f"write of {value:#x} to {addr:#x} was refused")
        s, o = dut.s_axis, dut.m_axis
        for codes in vectors:
            state["reads"] = []
            state["running"] = True
            events, cycles = [], 0
            pending = list(codes)
            width = cfg.time_width
            while True:
                if cycles >= max_cycles:
                    raise RuntimeError(f"the inference did not end in {max_cycles} clocks")
                if pending:
                    ctx.set(s.tvalid, 1)
                    ctx.set(s.tdata, pending[0] & ((1 << width) - 1))
                    ctx.set(s.tlast, len(pending) == 1)
                else:
                    ctx.set(s.tvalid, 0)
                ready = o_ready >= 1.0 or rng.random() < o_ready
                ctx.set(o.tready, ready)
                _, _, s_ready, valid, data, last = await ctx.tick().sample(
                    s.tready, o.tvalid, o.tdata, o.tlast)
                cycles += 1
                if pending and s_ready:
                    pending.pop(0)
                if valid and ready:
                    if last:
                        break
                    aw = regmap["INFO2"].field("addr_w").reset
                    events.append((data & ((1 << aw) - 1), (data >> aw) & ((1 << width) - 1)))
            ctx.set(o.tready, 0)
            state["running"] = False
            # a read that started while running finishes before the counters are read
            while state.get("busy_reading"):
                await ctx.tick()
            await ctx.tick()
            values = {}
            for r in counters:
                values[r.name] = (await axil_read(ctx, bus, r.address))[0]
            done = (await axil_read(ctx, bus, done_addr))[0]
            results.append(AxiInference(events, cycles, values, done, state["reads"]))

    async def reader(ctx):
        while True:
            if not (read_while_running and state["running"]):
                await ctx.tick()
                continue
            state["busy_reading"] = True
            before = (await axil_read(ctx, bus, done_addr, idle=rng.randrange(3)))[0]
            # a few counters per look, so that many looks fall inside one run
            seen = {r.name: (await axil_read(ctx, bus, r.address, idle=rng.randrange(2)))[0]
                    for r in rng.sample(counters, min(READ_SAMPLE, len(counters)))}
            after = (await axil_read(ctx, bus, done_addr))[0]
            state["reads"].append((before, seen, after))
            state["busy_reading"] = False

    run_simulator(top, main, background=(reader,))
    return results
