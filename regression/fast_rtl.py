"""Hardware of the fast harness: stream player, output comparator and counter checker around a
generated module, with stimulus and expected response in memories loaded before the run.

:class:`FastHarness` instantiates a module of the generated Verilog (the tile or the mesh system,
by its manifest record, so the design under test is the very Verilog the per-beat benches test)
beside three read-only memories that ``$readmemh`` fills from files in the run directory
(:data:`ROM_FILES`). Nothing crosses the Python/simulator boundary during the run: the cocotb
bench (:mod:`cocotb_tests.tb_fast`) sets the run's inputs, pulses ``start``, waits for ``done``
and reads the totals. The player, the output comparator and the counter checker are
components of their own (:class:`SequencePlayer`, :class:`OutputChecker`,
:class:`CounterChecker`, tested in ``tests/test_fast_parts.py``), each reading its memory at
its ``addr`` port; :class:`FastHarness` wires them to the memories and the design.

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

from amaranth.hdl import Cat, ClockDomain, ClockSignal, Instance, Module, Mux, ResetSignal, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from regression.soak_rtl import run_end, seeded_state, stream_rule_error, xorshift_rtl

__all__ = ["COUNT", "FLAGS", "INPUTS", "ROM_FILES", "ROM_VERILOG", "STALL", "TOTALS",
           "CounterChecker", "FastHarness", "OutputChecker", "SequencePlayer", "bench_access",
           "outputs", "rom_depth"]

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


class SequencePlayer(wiring.Component):
    """The player: the sequence memory's words offered on the design's ``load`` and ``i``
    streams (module docstring, "Sequence memory").

    Parameters
    ----------
    load_width, i_width : int
        Payload widths of the design's ``load`` and ``i`` streams.
    depth : int
        Words of the sequence memory.

    Members
    -------
    start : In(1)
        The run starts: the generator is seeded from ``seed``.
    seed : In(32)
    p_valid : In(9)
        A beat is offered after a clock whose draw ``r[0:8]`` is below it (256: always).
    n_seq, passes : In(COUNT)
        Words of the sequence; passes over it.
    running : In(1)
    settled : In(1)
        Every window started so far returned its marker, ``busy`` is low and the counters are
        checked: a barrier word may go.
    addr : Out(range(depth))
    word : In(3 + max(load_width, i_width))
        The sequence memory (asynchronous read): ``word`` is the word at ``addr``.
    load : Out(stream.Signature(load_width))
    i : Out(stream.Signature(i_width))
    take : Out(1)
        A beat is taken this clock.
    finished : Out(1)
        Every pass has been played.
    windows, beats_load, beats_in : Out(COUNT)
        Start words passed, beats taken on each stream.
    """

    def __init__(self, load_width: int, i_width: int, depth: int):
        super().__init__({
            "start": In(1), "seed": In(32), "p_valid": In(9), "n_seq": In(COUNT),
            "passes": In(COUNT), "running": In(1), "settled": In(1),
            "addr": Out(range(depth)), "word": In(3 + max(load_width, i_width)),
            "load": Out(stream.Signature(load_width)), "i": Out(stream.Signature(i_width)),
            "take": Out(1), "finished": Out(1),
            "windows": Out(COUNT), "beats_load": Out(COUNT), "beats_in": Out(COUNT),
        })

    def elaborate(self, platform):
        m = Module()
        barrier, start_bit, kind, payload = self.word[0], self.word[1], self.word[2], self.word[3:]
        playing = self.running & ~self.finished
        cleared = Signal()  # the current word's barrier has been passed
        with m.If(playing & barrier & ~cleared & self.settled):
            m.d.sync += cleared.eq(1)
            with m.If(start_bit):
                m.d.sync += self.windows.eq(self.windows + 1)
        # a beat, once offered, is held until taken; a new one waits for the generator's draw
        state, gate, holding = Signal(32), Signal(), Signal()
        valid = Signal()
        m.d.comb += valid.eq(playing & (~barrier | cleared) & (gate | holding))
        ready = Mux(kind, self.i.ready, self.load.ready)
        m.d.comb += [
            self.load.valid.eq(valid & ~kind),
            self.i.valid.eq(valid & kind),
            self.load.payload.eq(payload[:len(self.load.payload)]),
            self.i.payload.eq(payload[:len(self.i.payload)]),
            self.take.eq(valid & ready),
        ]
        r = xorshift_rtl(state)
        with m.If(self.start):
            m.d.sync += state.eq(seeded_state(self.seed, KEYS[0]))
        with m.Elif(self.running):
            m.d.sync += [state.eq(r), gate.eq(r[0:8] < self.p_valid),
                         holding.eq(valid & ~ready)]
        seq_pass = Signal(COUNT)
        with m.If(self.take):
            m.d.sync += cleared.eq(0)
            with m.If(kind):
                m.d.sync += self.beats_in.eq(self.beats_in + 1)
            with m.Else():
                m.d.sync += self.beats_load.eq(self.beats_load + 1)
            with m.If(self.addr + 1 == self.n_seq):
                m.d.sync += self.addr.eq(0)
                with m.If(seq_pass + 1 == self.passes):
                    m.d.sync += self.finished.eq(1)
                with m.Else():
                    m.d.sync += seq_pass.eq(seq_pass + 1)
            with m.Else():
                m.d.sync += self.addr.eq(self.addr + 1)
        return m


class OutputChecker(wiring.Component):
    """The output comparator: every beat the design sends against the output memory (module
    docstring, "Output memory").

    Parameters
    ----------
    width : int
        Payload width of the design's ``o`` stream.
    last_bit : int
        Offset of its ``last`` field.
    depth : int
        Words of the output memory.

    Members
    -------
    start, seed, running : In(1), In(32), In(1)
        As for :class:`SequencePlayer` (the second generator).
    p_ready : In(9)
        ``o.ready`` is high while running when the draw ``r[0:8]`` is below it.
    n_out, passes : In(COUNT)
    o : In(stream.Signature(width))
        The design's output.
    addr : Out(range(depth))
    word : In(width)
        The output memory (asynchronous read).
    take : Out(1)
        A beat is taken this clock.
    beats_out, markers, stalled_out, err_out, err_extra, err_stream, bad_out_at : Out(COUNT)
    bad_out_got : Out(width)
    """

    def __init__(self, width: int, last_bit: int, depth: int):
        self._last_bit = last_bit
        super().__init__({
            "start": In(1), "seed": In(32), "running": In(1), "p_ready": In(9),
            "n_out": In(COUNT), "passes": In(COUNT),
            "o": In(stream.Signature(width)),
            "addr": Out(range(depth)), "word": In(width), "take": Out(1),
            **{name: Out(COUNT) for name in ("beats_out", "markers", "stalled_out", "err_out",
                                              "err_extra", "err_stream", "bad_out_at")},
            "bad_out_got": Out(width),
        })

    def elaborate(self, platform):
        m = Module()
        o = self.o
        state = Signal(32)
        with m.If(self.start):
            m.d.sync += state.eq(seeded_state(self.seed, KEYS[1]))
        with m.Elif(self.running):
            m.d.sync += state.eq(xorshift_rtl(state))
        m.d.comb += [o.ready.eq(self.running & (state[0:8] < self.p_ready)),
                     self.take.eq(o.valid & o.ready)]
        with m.If(self.running & o.valid & ~o.ready):
            m.d.sync += self.stalled_out.eq(self.stalled_out + 1)
        out_pass, out_done = Signal(COUNT), Signal()  # every pass's beats arrived
        with m.If(self.take):
            m.d.sync += self.beats_out.eq(self.beats_out + 1)
            with m.If(o.payload[self._last_bit]):
                m.d.sync += self.markers.eq(self.markers + 1)
            with m.If(out_done):
                m.d.sync += self.err_extra.eq(self.err_extra + 1)
            with m.Else():
                with m.If(o.payload != self.word):
                    m.d.sync += self.err_out.eq(self.err_out + 1)
                    with m.If(self.err_out == 0):
                        m.d.sync += [self.bad_out_at.eq(self.beats_out + 1),
                                     self.bad_out_got.eq(o.payload)]
                with m.If(self.addr + 1 == self.n_out):
                    m.d.sync += [self.addr.eq(0), out_pass.eq(out_pass + 1)]
                    with m.If(out_pass + 1 == self.passes):
                        m.d.sync += out_done.eq(1)
                with m.Else():
                    m.d.sync += self.addr.eq(self.addr + 1)
        with m.If(self.running & stream_rule_error(m, o)):
            m.d.sync += self.err_stream.eq(self.err_stream + 1)
        return m


class CounterChecker(wiring.Component):
    """The counter checker: the design's counters after each window against the counter memory
    (module docstring, "Counter memory").

    Parameters
    ----------
    widths : mapping of str to int
        The counter ports and their widths, in the order of the memory's fields (LSB first).
    depth : int
        Words of the counter memory.

    Members
    -------
    quiet : In(1)
        Every window started so far returned its marker and ``busy`` is low.
    windows : In(COUNT)
        Windows started.
    n_cnt : In(COUNT)
    counters : In(max(1, sum(widths)))
        The design's counter ports, concatenated.
    addr : Out(range(depth))
    word : In(max(1, sum(widths)))
        The counter memory (asynchronous read).
    check : Out(1)
        The last window's counters are checked this clock (quiet, and not checked yet).
    checks, err_cnt, bad_cnt_at : Out(COUNT)
    bad_cnt_got : Out(max(1, sum(widths)))
    tot_<port> : Out(COUNT)
        The sum of the port's values over the windows checked.
    """

    def __init__(self, widths, depth: int):
        self._widths = dict(widths)
        width = max(1, sum(self._widths.values()))
        super().__init__({
            "quiet": In(1), "windows": In(COUNT), "n_cnt": In(COUNT), "counters": In(width),
            "addr": Out(range(depth)), "word": In(width), "check": Out(1),
            "checks": Out(COUNT), "err_cnt": Out(COUNT), "bad_cnt_at": Out(COUNT),
            "bad_cnt_got": Out(width),
            **{f"tot_{p}": Out(COUNT) for p in self._widths},
        })

    def elaborate(self, platform):
        m = Module()
        m.d.comb += self.check.eq(self.quiet & (self.checks != self.windows))
        with m.If(self.check):
            offset = 0
            for p, w in self._widths.items():
                tot = getattr(self, f"tot_{p}")
                m.d.sync += tot.eq(tot + self.counters[offset:offset + w])
                offset += w
            m.d.sync += [self.checks.eq(self.checks + 1),
                         self.addr.eq(Mux(self.addr + 1 == self.n_cnt, 0, self.addr + 1))]
            with m.If(self.counters != self.word):
                m.d.sync += self.err_cnt.eq(self.err_cnt + 1)
                with m.If(self.err_cnt == 0):
                    m.d.sync += [self.bad_cnt_at.eq(self.checks + 1),
                                 self.bad_cnt_got.eq(self.counters)]
        return m


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

    def _rom(self, m, name, part):
        """Memory ``name`` read at ``part.addr`` into ``part.word``."""
        m.submodules[f"rom_{name}"] = Instance(
            ROM_MODULE, p_WIDTH=len(part.word), p_DEPTH=self.depths[name],
            p_ABITS=len(part.addr), p_FILE=ROM_FILES[name], i_addr=part.addr, o_data=part.word)

    def _dut(self, m):
        """The design under test, port by port from its manifest record; returns its ``load``,
        ``i`` and ``o`` streams and its other ports by name."""
        w = self._widths
        streams = {"load": stream.Signature(w["load__payload"]).flip().create(path=("dut_load",)),
                   "i": stream.Signature(w["i__payload"]).flip().create(path=("dut_i",)),
                   "o": stream.Signature(w["o__payload"]).create(path=("dut_o",))}
        ports = {}
        conns = {"i_clk": ClockSignal(), "i_rst": ResetSignal()}
        for p in self._entry["ports"]:
            name = p["name"]
            if name in ("clk", "rst"):
                continue
            group, _, member = name.partition("__")
            if group in streams:
                sig = getattr(streams[group], member)
            else:
                ports[name] = sig = Signal(int(p["width"]), name=f"dut_{name}")
            conns[("i_" if p["dir"] == "in" else "o_") + name] = sig
        m.submodules.dut = Instance(self._top, **conns)
        return streams, ports

    def elaborate(self, platform):
        m = Module()
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
        streams, ports = self._dut(m)
        w = self._widths
        m.submodules.player = player = SequencePlayer(w["load__payload"], w["i__payload"],
                                                      self.depths["seq"])
        m.submodules.outputs = out = OutputChecker(self.out_width, self.last_bit,
                                                   self.depths["out"])
        m.submodules.counters = cnt = CounterChecker({p: w[p] for p in self.counter_ports},
                                                     self.depths["cnt"])
        for name, part in (("seq", player), ("out", out), ("cnt", cnt)):
            self._rom(m, name, part)
        wiring.connect(m, player.load, streams["load"])
        wiring.connect(m, player.i, streams["i"])
        wiring.connect(m, streams["o"], out.o)

        running = Signal()
        busy = ports["busy"]
        # quiet point: every started window returned its marker, busy low
        quiet = Signal()
        m.d.comb += quiet.eq(running & (out.markers == player.windows) & ~busy)
        m.d.comb += [
            *(part.start.eq(q["start"]) for part in (player, out)),
            *(part.seed.eq(q["seed"]) for part in (player, out)),
            *(part.running.eq(running) for part in (player, out)),
            *(part.passes.eq(q["passes"]) for part in (player, out)),
            player.p_valid.eq(q["p_valid"]), player.n_seq.eq(q["n_seq"]),
            player.settled.eq(quiet & ~cnt.check),
            out.p_ready.eq(q["p_ready"]), out.n_out.eq(q["n_out"]),
            cnt.quiet.eq(quiet), cnt.windows.eq(player.windows), cnt.n_cnt.eq(q["n_cnt"]),
            cnt.counters.eq(Cat(*(ports[p] for p in self.counter_ports))),
            self.busy.eq(busy),
        ]
        for part, names in ((player, ("windows", "beats_load", "beats_in")),
                            (out, ("beats_out", "markers", "stalled_out", "err_out", "err_extra",
                                   "err_stream", "bad_out_at", "bad_out_got")),
                            (cnt, ("checks", "err_cnt", "bad_cnt_at", "bad_cnt_got",
                                   *(f"tot_{p}" for p in self.counter_ports)))):
            m.d.comb += [getattr(self, name).eq(getattr(part, name)) for name in names]

        end = run_end(m, self, start=q["start"], running=running, limit=q["limit"],
                      moved=player.take | out.take | cnt.check,
                      complete=player.finished & quiet & (cnt.checks == player.windows),
                      stall=STALL)
        with m.If(q["start"]):
            m.d.sync += running.eq(1)
        with m.If(end):
            m.d.sync += [running.eq(0), self.done.eq(1)]
        return m
