"""Hardware of the fast harness: stream player, output comparator and counter checker around a
generated module, with stimulus and expected response in memories loaded before the run.

:class:`FastHarness` instantiates a module of the generated Verilog (the tile or the mesh system,
by its manifest record, so the design under test is the very Verilog the per-beat benches test)
beside three read-only memories that ``$readmemh`` fills from files in the run directory
(:data:`ROM_FILES`). Nothing crosses the Python/simulator boundary during the run: the cocotb
bench (:mod:`cocotb_tests.tb_fast`) sets the run's inputs, pulses ``start``, waits for ``done``
and reads the totals.

- **Sequence memory** (``seq``): one word per input beat, ``{payload, kind, start, barrier}``
  (LSB first; ``kind`` 0 = the ``load`` stream, 1 = the ``i`` stream). The player offers the
  words in order, ``n_seq`` of them, ``passes`` times over. A word with ``barrier`` waits until
  the design is quiet: every window started so far has returned its output marker, ``busy`` is
  low and that window's counters have been checked; ``start`` marks the first beat of a window
  (tile) or inference (system). A beat, once offered, is held unchanged until taken; between
  beats the player idles when its xorshift generator (:func:`regression.soak_rtl.xorshift_rtl`,
  stepped every clock) draws ``r[0:8] >= p_valid``.
- **Output memory** (``out``): the expected output beats, ``n_out`` per pass, markers included.
  The design's ``o.ready`` is high when a second generator draws ``r[0:8] < p_ready``. Every
  beat taken is compared with the next expected word (``err_out``; the first mismatch's index
  and word are kept in ``bad_out_at`` (index + 1) and ``bad_out_got``); a beat after the last
  expected one counts in ``err_extra``; the stream rule is checked on ``o`` (``err_stream``).
- **Counter memory** (``cnt``): per window, the expected values of the design's counter ports
  (:attr:`FastHarness.counter_ports`, concatenated LSB first). When the design is quiet after a
  window, its counters are compared with the next word (``err_cnt``, ``bad_cnt_at``,
  ``bad_cnt_got``) and added to the totals ``tot_<port>``.
- **Clock.** The harness makes its own clock (:data:`CLOCK_MODULE`, a ``#5`` toggle that stops
  once ``done`` is high), so no clock edge needs the bench; ``reset`` is its synchronous
  reset. Every input (:data:`INPUTS`) is registered before use, so it acts one clock after the
  bench writes it.
- **End.** ``done`` rises when every pass has been played, every window checked and the design
  is quiet; or, with ``stalled``, when nothing moved for :data:`STALL` clocks; or, with
  ``timed_out``, after ``limit`` clocks. ``cycles`` counts the clocks from ``start`` to ``done``.
"""

from __future__ import annotations

from amaranth.hdl import (
    Cat,
    ClockDomain,
    ClockSignal,
    Const,
    Instance,
    Module,
    Mux,
    ResetSignal,
    Signal,
)
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from regression.soak_rtl import run_end, seeded_state, stream_rule_error, xorshift_rtl

__all__ = ["COUNT", "FLAGS", "INPUTS", "ROM_FILES", "ROM_VERILOG", "STALL", "TOTALS",
           "FastHarness", "bench_access", "outputs", "rom_depth"]

#: Width of the totals (beats, clocks, errors).
COUNT = 32
#: The harness's inputs and their widths (each registered before use: it acts one clock after
#: the bench writes it).
INPUTS = {"reset": 1, "start": 1, "seed": 32, "passes": COUNT, "limit": COUNT, "n_seq": COUNT,
          "n_out": COUNT, "n_cnt": COUNT, "p_valid": 9, "p_ready": 9}
#: Its one-bit outputs; every other output is :data:`COUNT` bits wide, except ``bad_out_got``
#: and ``bad_cnt_got`` (an output word, a counter word).
FLAGS = ("done", "stalled", "timed_out", "busy")
#: Its totals, read by the bench at the end of a run (besides ``tot_<counter port>``).
TOTALS = ("cycles", "beats_load", "beats_in", "beats_out", "windows", "markers", "checks",
          "stalled_out", "err_out", "err_extra", "err_cnt", "err_stream", "bad_out_at",
          "bad_out_got", "bad_cnt_at", "bad_cnt_got")
#: Clocks without a beat moving on any stream that end a run as ``stalled``.
STALL = 1 << 14
#: Seed keys of the player's and the comparator's generators.
KEYS = (0x9E3779B9, 0x3C6EF372)
#: ``$readmemh`` file of each memory, relative to the simulation's working directory.
ROM_FILES = {"seq": "fast_seq.hex", "out": "fast_out.hex", "cnt": "fast_cnt.hex"}
#: Name of the memory module the harness instantiates.
ROM_MODULE = "mttfs_fast_rom"
#: Name of the clock generator module (10 time units per clock, rising at 5, 15, ...).
CLOCK_MODULE = "mttfs_fast_clock"
#: Verilog of the memory (an asynchronous-read memory filled by ``$readmemh`` at time 0) and of
#: the clock generator: the clock toggles inside the simulator, so no clock edge needs a call
#: into the bench (Verilator builds it with ``--timing``), and it stops low while ``stop`` is
#: high.
ROM_VERILOG = f"""
module {CLOCK_MODULE} (input stop, output reg clk);
  initial clk = 1'b0;
  always begin
    #5 clk = ~clk;
    if (stop && !clk) wait (!stop);
  end
endmodule

module {ROM_MODULE} #(parameter WIDTH = 1, parameter DEPTH = 2, parameter ABITS = 1,
                      parameter FILE = "rom.hex") (
  input  [ABITS-1:0] addr,
  output [WIDTH-1:0] data
);
  reg [WIDTH-1:0] mem [0:DEPTH-1];
  initial $readmemh(FILE, mem);
  assign data = mem[addr];
endmodule
"""


def outputs(counter_ports) -> tuple[str, ...]:
    """Names of the harness's outputs with these counter ports."""
    return (*FLAGS, *TOTALS, *(f"tot_{p}" for p in counter_ports))


def bench_access(counter_ports) -> dict[str, str]:
    """What the bench may do with each port: write the inputs (``"rw"``), read the outputs
    (``"rd"``); no other signal is visible to it (:func:`regression.sim.build`'s ``public``)."""
    return {**{name: "rw" for name in INPUTS},
            **{name: "rd" for name in outputs(counter_ports)}}


def rom_depth(words: int, minimum: int = 1024) -> int:
    """Depth of a memory for ``words`` words: a power of two, at least ``minimum`` (so runs of
    similar size share one build)."""
    depth = minimum
    while depth < words:
        depth *= 2
    return depth


class FastHarness(wiring.Component):
    """Player, comparator and counter checker around module ``top`` (module docstring).

    Parameters
    ----------
    entry : mapping
        The module's manifest record (``ports``, ``streams``): its ``load`` and ``i`` input
        streams, ``o`` output stream (with a ``last`` field) and ``busy`` output.
    top : str
        Module name of the design under test.
    counter_ports : sequence of str
        Counter ports checked per window, in the order of the counter memory's fields.
    depths : mapping
        Words of the ``seq``, ``out`` and ``cnt`` memories.
    """

    def __init__(self, entry, top: str, counter_ports, depths):
        self._entry, self._top = entry, top
        widths = {p["name"]: int(p["width"]) for p in entry["ports"]}
        self._widths = widths
        self.counter_ports = tuple(counter_ports)
        streams = entry["streams"]
        self.in_width = max(int(streams[s]["payload_width"]) for s in ("load", "i"))
        self.out_width = int(streams["o"]["payload_width"])
        self.last_bit = next(int(f["offset"]) for f in streams["o"]["fields"]
                             if f["name"] == "last")
        self.cnt_width = max(1, sum(widths[p] for p in self.counter_ports))
        self.seq_width = 3 + self.in_width
        self.depths = {k: int(depths[k]) for k in ROM_FILES}
        words = {"bad_out_got": self.out_width, "bad_cnt_got": self.cnt_width}
        super().__init__({
            **{name: In(width) for name, width in INPUTS.items()},
            **{name: Out(1 if name in FLAGS else words.get(name, COUNT))
               for name in outputs(self.counter_ports)},
        })

    def _rom(self, m, name, width, addr):
        data = Signal(width, name=f"{name}_word")
        depth = self.depths[name]
        m.submodules[f"rom_{name}"] = Instance(
            ROM_MODULE, p_WIDTH=width, p_DEPTH=depth, p_ABITS=addr.shape().width,
            p_FILE=ROM_FILES[name], i_addr=addr, o_data=data)
        return data

    def elaborate(self, platform):
        m = Module()
        w = self._widths
        m.domains.sync = cd = ClockDomain("sync")
        # the clock stops once the run is done (until ``reset``): a bench that polls ``done``
        # with long timers then costs nothing per clock and simulates no idle clocks
        m.submodules.clock = Instance(CLOCK_MODULE, i_stop=self.done & ~self.reset, o_clk=cd.clk)
        # every input is registered before use: no logic runs combinationally from a port, so
        # the simulator does not re-evaluate the design whenever the bench may have written one
        # (Verilator's input-combinational pass took ~30 % of a system run's time)
        q = {}
        for name in INPUTS:
            port = getattr(self, name)
            q[name] = Signal(port.shape(), reset_less=True, name=f"{name}_q")
            m.d.sync += q[name].eq(port)
        m.d.comb += cd.rst.eq(q["reset"])
        # the design under test, port by port from its manifest record
        ports = {}
        conns = {"i_clk": ClockSignal(), "i_rst": ResetSignal()}
        for p in self._entry["ports"]:
            name = p["name"]
            if name in ("clk", "rst"):
                continue
            ports[name] = sig = Signal(int(p["width"]), name=f"dut_{name}")
            conns[("i_" if p["dir"] == "in" else "o_") + name] = sig
        m.submodules.dut = Instance(self._top, **conns)

        running = Signal()
        finished = Signal()  # every pass of the sequence played
        sp = Signal(range(self.depths["seq"]))
        op = Signal(range(self.depths["out"]))
        cp = Signal(range(self.depths["cnt"]))
        seq_pass = Signal(COUNT)
        out_pass = Signal(COUNT)
        out_done = Signal()
        seq = self._rom(m, "seq", self.seq_width, sp)
        exp = self._rom(m, "out", self.out_width, op)
        cnt = self._rom(m, "cnt", self.cnt_width, cp)
        barrier, start_bit, kind = seq[0], seq[1], seq[2]
        payload = seq[3:]

        # -- quiet point: every started window returned its marker, busy low -----------------
        busy = ports["busy"]
        m.d.comb += self.busy.eq(busy)
        quiet = Signal()
        m.d.comb += quiet.eq(running & (self.markers == self.windows) & ~busy)
        check = Signal()
        m.d.comb += check.eq(quiet & (self.checks != self.windows))
        got = Cat(*(ports[p] for p in self.counter_ports)) if self.counter_ports else Const(0, 1)
        with m.If(check):
            for p in self.counter_ports:
                tot = getattr(self, f"tot_{p}")
                m.d.sync += tot.eq(tot + ports[p])
            m.d.sync += [self.checks.eq(self.checks + 1),
                         cp.eq(Mux(cp + 1 == q["n_cnt"], 0, cp + 1))]
            with m.If(got != cnt):
                m.d.sync += self.err_cnt.eq(self.err_cnt + 1)
                with m.If(self.err_cnt == 0):
                    m.d.sync += [self.bad_cnt_at.eq(self.checks + 1), self.bad_cnt_got.eq(got)]

        # -- player -------------------------------------------------------------------------------
        cleared = Signal()  # the current word's barrier has been passed
        state_p = Signal(32)
        gate = Signal()
        holding = Signal()
        armed = Signal()
        m.d.comb += armed.eq(running & ~finished & (~barrier | cleared))
        with m.If(running & ~finished & barrier & ~cleared & quiet & ~check):
            m.d.sync += cleared.eq(1)
            with m.If(start_bit):
                m.d.sync += self.windows.eq(self.windows + 1)
        valid = Signal()
        m.d.comb += valid.eq(armed & (gate | holding))
        load, inp, out = "load", "i", "o"
        m.d.comb += [
            ports[f"{load}__valid"].eq(valid & ~kind),
            ports[f"{inp}__valid"].eq(valid & kind),
            ports[f"{load}__payload"].eq(payload[: w[f"{load}__payload"]]),
            ports[f"{inp}__payload"].eq(payload[: w[f"{inp}__payload"]]),
        ]
        ready = Mux(kind, ports[f"{inp}__ready"], ports[f"{load}__ready"])
        take = Signal()
        m.d.comb += take.eq(valid & ready)
        r_p = xorshift_rtl(state_p)
        with m.If(q["start"]):
            m.d.sync += [state_p.eq(seeded_state(q["seed"], KEYS[0])), running.eq(1)]
        with m.Elif(running):
            m.d.sync += [state_p.eq(r_p), gate.eq(r_p[0:8] < q["p_valid"]),
                         holding.eq(valid & ~ready)]
        with m.If(take):
            m.d.sync += cleared.eq(0)
            with m.If(kind):
                m.d.sync += self.beats_in.eq(self.beats_in + 1)
            with m.Else():
                m.d.sync += self.beats_load.eq(self.beats_load + 1)
            with m.If(sp + 1 == q["n_seq"]):
                m.d.sync += sp.eq(0)
                with m.If(seq_pass + 1 == q["passes"]):
                    m.d.sync += finished.eq(1)
                with m.Else():
                    m.d.sync += seq_pass.eq(seq_pass + 1)
            with m.Else():
                m.d.sync += sp.eq(sp + 1)

        # -- comparator ---------------------------------------------------------------------------
        o_valid, o_ready = ports[f"{out}__valid"], ports[f"{out}__ready"]
        o_payload = ports[f"{out}__payload"]
        state_c = Signal(32)
        r_c = xorshift_rtl(state_c)
        with m.If(q["start"]):
            m.d.sync += state_c.eq(seeded_state(q["seed"], KEYS[1]))
        with m.Elif(running):
            m.d.sync += state_c.eq(r_c)
        m.d.comb += o_ready.eq(running & (state_c[0:8] < q["p_ready"]))
        o_take = Signal()
        m.d.comb += o_take.eq(o_valid & o_ready)
        with m.If(running & o_valid & ~o_ready):
            m.d.sync += self.stalled_out.eq(self.stalled_out + 1)
        with m.If(o_take):
            m.d.sync += self.beats_out.eq(self.beats_out + 1)
            with m.If(o_payload[self.last_bit]):
                m.d.sync += self.markers.eq(self.markers + 1)
            with m.If(out_done):
                m.d.sync += self.err_extra.eq(self.err_extra + 1)
            with m.Else():
                with m.If(o_payload != exp):
                    m.d.sync += self.err_out.eq(self.err_out + 1)
                    with m.If(self.err_out == 0):
                        m.d.sync += [self.bad_out_at.eq(self.beats_out + 1),
                                     self.bad_out_got.eq(o_payload)]
                with m.If(op + 1 == q["n_out"]):
                    m.d.sync += [op.eq(0), out_pass.eq(out_pass + 1)]
                    with m.If(out_pass + 1 == q["passes"]):
                        m.d.sync += out_done.eq(1)
                with m.Else():
                    m.d.sync += op.eq(op + 1)
        with m.If(running & stream_rule_error(m, _Stream(o_valid, o_ready, o_payload))):
            m.d.sync += self.err_stream.eq(self.err_stream + 1)

        # -- end ----------------------------------------------------------------------------------
        end = run_end(m, self, start=q["start"], running=running, limit=q["limit"],
                      moved=take | o_take | check,
                      complete=finished & quiet & (self.checks == self.windows), stall=STALL)
        with m.If(end):
            m.d.sync += [running.eq(0), self.done.eq(1)]
        return m


class _Stream:
    """The ``valid``/``ready``/``payload`` of a stream given as plain signals."""

    def __init__(self, valid, ready, payload):
        self.valid, self.ready, self.payload = valid, ready, payload
