"""Replay of a mapped netlist on a recorded trace: cycle-checked, per-net toggle counts.

Part of :mod:`synth_scripts.gatelevel` (which re-exports :func:`replay`, :class:`Toggles` and
:class:`ReplayMismatch`): a generated testbench resets the netlist, applies the trace's inputs
cycle by cycle, compares every output with the RTL trace and counts every net's toggles
between once-per-clock samples, inside the simulation (no waveform file).
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from synth_scripts import flow
from toolkit_base import toolchain
from toolkit_base.files import locked

__all__ = ["RESET_CYCLES", "SIMULATORS", "ReplayMismatch", "Toggles", "net_activity", "replay"]

#: Simulators :func:`replay` can use.
SIMULATORS = ("verilator", "icarus")
#: Clock edges with ``rst`` high before the trace starts (flip-flops come up unknown).
RESET_CYCLES = 2


class ReplayMismatch(AssertionError):
    """The gate netlist's output differs from the RTL trace (cycle, port, both values)."""


# -- replay ------------------------------------------------------------------------------------


@dataclass
class Toggles:
    """Toggle counts of one replay: per net, over ``cycles`` clock edges."""

    cycles: int
    nets: dict[str, int]  # net reference -> transitions between consecutive clock samples
    flop_changes: list[int]  # per edge: flip-flop outputs that changed at it
    simulator: str
    seconds: float  # wall time of the simulation run (not the build)
    #: With ``marks``: per segment of the counted cycles, each net's transitions (in the order
    #: of ``nets``), the segments' first cycles (counted from the first counted one)
    segments: list[list[int]] | None = None
    segment_starts: list[int] | None = None

    def segment(self, i: int) -> Toggles:
        """Segment ``i`` of a replay with ``marks`` as a replay of its own."""
        if self.segments is None:
            raise ValueError("the replay was not cut into segments (replay(marks=...))")
        lo = self.segment_starts[i]
        hi = (self.segment_starts[i + 1] if i + 1 < len(self.segment_starts) else self.cycles)
        return Toggles(hi - lo, dict(zip(self.nets, self.segments[i], strict=True)),
                       self.flop_changes[lo:hi], self.simulator, 0.0)

    @property
    def cycles_per_s(self) -> float:
        return self.cycles / self.seconds if self.seconds > 0 else float("inf")

    def to_json(self) -> dict:
        d = asdict(self)
        d.pop("segments")
        d["cycles_per_s"] = round(self.cycles_per_s, 1)
        d["seconds"] = round(self.seconds, 3)
        return d


def _flop_outputs(net) -> list[str]:
    outs = []
    for c in net.cells:
        if c.type in net.lib.sequential:
            outs += [r for p, r in c.pins.items() if p in net.lib.outputs[c.type] and r]
    return sorted(set(outs))


def _testbench(net, ins: list[tuple[str, int]], outs: list[tuple[str, int]],
               counted: list[str], flops: list[str]) -> str:
    """Verilog testbench: reset, then per cycle apply, settle, check, sample, clock.

    It depends on the netlist alone: the trace is read a cycle at a time from ``stim.hex``
    and ``expect.hex`` in the folder it runs in, its length from ``+cycles=N``, so one build
    replays every trace of the netlist."""
    iw = sum(w for _, w in ins) or 1
    ow = sum(w for _, w in outs) or 1
    nb = len(counted)
    nwords = (nb + 63) // 64
    lines = [
        "`timescale 1ns/1ps",
        "module tb;",
        "  reg clk = 1'b0;",
    ]
    if net.reset:
        lines.append("  reg rst = 1'b1;")
    for name, w in ins:
        lines.append(f"  reg [{w - 1}:0] {_tbname('i', name)};")
    for name, w in outs:
        lines.append(f"  wire [{w - 1}:0] {_tbname('o', name)};")
    lines += [
        f"  reg [{iw - 1}:0] stim;",
        f"  reg [{ow - 1}:0] expect_o;",
        f"  reg [{nwords * 64 - 1}:0] snap, prev, diff;",
        "  integer c, cycles, fd, fs, fe, got, bad;",
        f"  {net.top} dut (",
    ]
    conns = [f"    .{net.clock}(clk)"]
    if net.reset:
        conns.append(f"    .{net.reset}(rst)")
    conns += [f"    .{_port(n)}({_tbname('i', n)})" for n, _ in ins]
    conns += [f"    .{_port(n)}({_tbname('o', n)})" for n, _ in outs]
    lines.append(",\n".join(conns))
    lines.append("  );")
    bits = [f"dut.{r}" for r in counted]
    # read once per sample, in procedural code: a continuous assignment of thousands of nets
    # would be re-evaluated on every net event; one 64-bit word per statement (one
    # concatenation of every net cost Icarus about seven times the whole simulation of a
    # 28,000-cell netlist), 32 nets a line (Verilator refuses a line of more than 40 000
    # preprocessor tokens); the padding bits above the last net stay 0
    take = []
    for w in range(0, len(bits), 64):
        word = bits[w:w + 64][::-1]
        rows = [", ".join(word[i:i + 32]) for i in range(0, len(word), 32)]
        take.append(f"      snap[{w + len(word) - 1}:{w}] = {{" + ",\n        ".join(rows) + "};")
    apply = []
    off = 0
    for name, w in reversed(ins):
        apply.append(f"      {_tbname('i', name)} = stim[{off + w - 1}:{off}];")
        off += w
    checks = []
    off = 0
    names = {n for n, _ in outs}
    for name, w in reversed(outs):
        # a stream's payload means something only while its valid is high (stream rule): a
        # storage register without a reset (a FIFO's) may hold X in the netlist until written
        valid = name[: -len("payload")] + "valid" if name.endswith("__payload") else None
        guard = f"{_tbname('o', valid)} === 1'b1 && " if valid in names else ""
        checks.append(
            f"      if ({guard}{_tbname('o', name)} !== expect_o[{off + w - 1}:{off}]) begin\n"
            f"        $display(\"@@MISMATCH %0d {name} %h %h\", c, {_tbname('o', name)}, "
            f"expect_o[{off + w - 1}:{off}]);\n        bad = 1;\n      end"
        )
        off += w
    lines += [
        # one word of changed bits per cycle, counted outside the simulator (a per-bit loop
        # in the testbench made Icarus spend most of its time counting)
        "  task take;",
        "    begin",
        *take,
        "    end",
        "  endtask",
        "  task sample;",
        "    begin",
        "      take;",
        "      diff = snap ^ prev;",
        "      prev = snap;",
        "      $fwrite(fd, \"%h\\n\", diff);",
        "    end",
        "  endtask",
        "  task next;",
        "    begin",
        '      got = $fscanf(fs, "%h\\n", stim);',
        '      got = got + $fscanf(fe, "%h\\n", expect_o);',
        '      if (got != 2) begin $display("@@SHORT %0d", c); $finish; end',
        "    end",
        "  endtask",
        "  initial begin",
        '    if (!$value$plusargs("cycles=%d", cycles)) begin',
        '      $display("@@SHORT no +cycles"); $finish;',
        "    end",
        '    fs = $fopen("stim.hex", "r");',
        '    fe = $fopen("expect.hex", "r");',
        "    bad = 0;",
        "    snap = 0;",
        '    fd = $fopen("diffs.txt", "w");',
        "    c = 0;",
        "    next;",
        *apply,
        f"    repeat ({RESET_CYCLES}) begin #5 clk = 1'b1; #5 clk = 1'b0; end",
    ]
    if net.reset:
        lines.append("    rst = 1'b0;")
    lines += [
        "    for (c = 0; c < cycles; c = c + 1) begin",
        "      if (c > 0) next;",
        *apply,
        "      #1;",
        "      if (c > 0) sample;",
        "      else begin take; prev = snap; end",
        *checks,
        "      if (bad) begin $display(\"@@STOP\"); $finish; end",
        "      #4 clk = 1'b1;",
        "      #5 clk = 1'b0;",
        "    end",
        "    #1 sample;",
        "    $fclose(fd);",
        '    $display("@@DONE");',
        "    $finish;",
        "  end",
        "endmodule",
        "",
    ]
    return "\n".join(lines)


def _count(path: Path, counted: list[str], flops: list[str], cycles: int, start: int = 0,
           marks: list[int] | None = None):
    """Per-net toggle counts and per-cycle flip-flop changes from the changed-bit words, of the
    cycles from ``start`` on, and with ``marks`` (the first cycle of each segment, counted from
    ``start``, the first 0) each segment's per-net counts.

    Line ``c`` is the XOR of the samples ``c`` and ``c+1`` (``cycles`` lines), bit ``i`` (from
    the LSB) the net ``counted[i]``. Returns ``(None, None, None)`` for a truncated file.
    """
    import numpy as np

    # an unknown bit (x/z, e.g. an undriven net) is not a toggle
    text = path.read_text(encoding="ascii").translate(str.maketrans("xzXZ", "0000"))
    lines = text.split()
    if len(lines) != cycles:
        return None, None, None
    lines = lines[start:]
    nb = len(counted)
    nbytes = (len(lines[0]) + 1) // 2 if lines else 0
    raw = np.frombuffer(b"".join(bytes.fromhex(x.zfill(2 * nbytes)) for x in lines),
                        dtype=np.uint8).reshape(len(lines), nbytes)
    # a line is big-endian: bit b of byte j is net 8 * (nbytes - 1 - j) + b. Summed one bit
    # plane of the bytes at a time (a bit a net and cycle unpacked whole was 8x the memory,
    # and most of a replay's time on MiniLM's attention nodes)
    at = 8 * (nbytes - 1 - np.arange(nbytes))
    counts = np.zeros(8 * nbytes, dtype=np.int64)
    segments = None if marks is None else np.zeros((len(marks), 8 * nbytes), dtype=np.int64)
    for b in range(8):
        plane = (raw >> b) & 1
        counts[at + b] = plane.sum(axis=0, dtype=np.int64)
        if segments is not None:
            segments[:, at + b] = np.add.reduceat(plane, marks, axis=0, dtype=np.int64)
    pos = {r: i for i, r in enumerate(counted)}
    fmask = np.zeros(nbytes, dtype=np.uint8)
    for r in flops:
        i = pos[r]
        fmask[nbytes - 1 - i // 8] |= 1 << (i % 8)
    popcount = np.array([bin(v).count("1") for v in range(256)], dtype=np.int64)
    changes = (popcount[raw & fmask].sum(axis=1, dtype=np.int64).tolist() if flops
               else [0] * len(lines))
    return (counts[:nb].tolist(), changes,
            None if segments is None else segments[:, :nb].tolist())


def _port(name: str) -> str:
    return name if re.fullmatch(r"[A-Za-z_][\w$]*", name) else f"\\{name} "


def _tbname(prefix: str, name: str) -> str:
    return f"{prefix}_" + re.sub(r"[^\w]", "_", name)


def _hexfile(path: Path, ports: list[tuple[str, int]], trace, total: int) -> None:
    cols = [(trace.values[n], w) for n, w in ports]
    digits = max(1, (total + 3) // 4)
    with path.open("w", encoding="ascii") as f:
        for c in range(trace.cycles):
            word, off = 0, 0
            for vals, w in reversed(cols):
                word |= (vals[c] & ((1 << w) - 1)) << off
                off += w
            f.write(f"{word:0{digits}x}\n")


def _check_ports(net, trace) -> tuple[list, list]:
    ins = [(n, w) for n, w in net.inputs.items() if n not in (net.clock, net.reset)]
    outs = list(net.outputs.items())
    for names, kind in ((ins, "input"), (outs, "output")):
        for n, w in names:
            if n not in trace.ports:
                raise ValueError(
                    f"netlist {kind} {n!r} is not in the trace (it has {sorted(trace.ports)})"
                )
            if trace.ports[n]["width"] != w:
                raise ValueError(f"netlist {kind} {n!r} is {w} bits, the trace's "
                                 f"{trace.ports[n]['width']}")
    return ins, outs


#: The C++ optimisation of a Verilator replay build. A flat gate netlist is one huge function:
#: a 21,776-cell tile builds in 93 s at -O0 and replays 1,300 cycles/s; at -O1 234 s and 5,100
#: cycles/s; at Verilator's default (-Os) its build had not ended after 19 minutes.
VERILATOR_OPT = "-O0"
#: Verilator's ``--output-split-cfuncs``: a function of more statements is split (0: never).
VERILATOR_SPLIT = 0


def verilator_flags() -> list[str]:
    """The flags of a Verilator replay build that its speed depends on (its folder's digest
    includes them)."""
    split = ["--output-split-cfuncs", str(VERILATOR_SPLIT)] if VERILATOR_SPLIT else []
    return ["-CFLAGS", VERILATOR_OPT, *split]


def _build(net, tb: str, sim: str) -> list[str]:
    """The replay harness of ``net`` on ``sim``, built once beside the netlist (the folder
    ``replay_<sim>_<digest of the testbench and the netlist>``; a lock keeps concurrent
    callers to one build); the command that runs it, in the folder of a trace."""
    import fcntl
    import hashlib

    flags = verilator_flags() if sim == "verilator" else []
    # the default build's folder is named as before the flags were part of it
    extra = "" if flags == ["-CFLAGS", "-O0"] else " ".join(flags)
    digest = hashlib.sha256(tb.encode() + Path(net.path).read_bytes()
                            + extra.encode()).hexdigest()[:12]
    where = Path(net.path).parent / f"replay_{sim}_{digest}"
    where.mkdir(parents=True, exist_ok=True)
    exe = where / ("obj/Vtb" if sim == "verilator" else "tb.vvp")
    with (where / "build.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (where / "built").exists():
            (where / "tb.v").write_text(tb, encoding="utf-8")
            sources = ["tb.v", os.path.relpath(net.path, where),
                       os.path.relpath(net.cells_v, where)]
            if sim == "verilator":
                flow.run_tool(
                    [toolchain.require("verilator"), "--binary", "--timing", "--output-split",
                     "0", "-CFLAGS", "-fcoroutines", *flags, "-Wno-fatal",
                     "-Wno-lint", "-Wno-style", "--build-jobs", "1", "--top-module", "tb",
                     "-Mdir", "obj", *sources],
                    where, where / "build.log", f"verilator build of {net.top}",
                )
            else:
                flow.run_tool(
                    [toolchain.require("iverilog"), "-g2012", "-s", "tb", "-o", "tb.vvp",
                     *sources],
                    where, where / "build.log", f"iverilog build of {net.top}",
                )
            (where / "built").write_text("", encoding="utf-8")
    exe = exe.resolve()
    return [str(exe)] if sim == "verilator" else [toolchain.require("vvp"), "-n", str(exe)]


def replay(net, trace, workdir, *, sim: str = "verilator", start: int = 0,
           marks: list[int] | None = None) -> Toggles:
    """Simulate ``net`` on ``trace``: check outputs each cycle, count every net's toggles.

    Toggles are counted between consecutive samples taken once per clock, after the inputs of
    a cycle have settled and before its edge: cycle ``c``'s count is what changed between
    sample ``c`` and ``c+1`` (the edge ``c`` and the inputs of cycle ``c+1``), so ``N`` cycles
    give ``N`` periods of activity. The clock net is not counted (it toggles twice a cycle).
    With ``start``, the whole trace is replayed (and checked) but only the cycles from
    ``start`` on are counted (``Toggles.cycles`` is ``N - start``): what follows a load phase,
    in one replay.

    Raises
    ------
    ValueError
        ``sim`` is not a known simulator, or the trace lacks a port of the netlist.
    ReplayMismatch
        An output of the netlist differs from the trace: "cycle C: output P is G in the gate
        netlist, R in the RTL trace".
    """
    if sim not in SIMULATORS:
        raise ValueError(f"sim must be one of {', '.join(SIMULATORS)}, not {sim!r}")
    if trace.cycles < 1:
        raise ValueError("trace has no cycles")
    if not 0 <= start < trace.cycles:
        raise ValueError(f"start must be in 0..{trace.cycles - 1}, not {start!r}")
    if marks is not None:
        marks = [int(m) for m in marks]
        pairs = zip(marks, marks[1:], strict=False)
        if (not marks or marks[0] != start or any(b <= a for a, b in pairs)
                or marks[-1] >= trace.cycles):
            raise ValueError(f"marks must increase from start ({start}) and stay below the "
                             f"trace's {trace.cycles} cycles")
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    ins, outs = _check_ports(net, trace)
    counted = [r for r in net.nets if r != net.clock_net]
    flops = _flop_outputs(net)
    run_cmd = _build(net, _testbench(net, ins, outs, counted, flops), sim)
    # two replays into one folder (two tasks of a design pricing the same router on two
    # workers) take turns: each writes its stimulus and reads its counts alone
    with locked(workdir.parent / f".{workdir.name}.lock"):
        _hexfile(workdir / "stim.hex", ins, trace, sum(w for _, w in ins))
        _hexfile(workdir / "expect.hex", outs, trace, sum(w for _, w in outs))
        run_cmd = [*run_cmd, f"+cycles={trace.cycles}"]
        t0 = time.perf_counter()
        proc = subprocess.run(run_cmd, cwd=workdir, capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, check=False)
        seconds = time.perf_counter() - t0
        log = proc.stdout + proc.stderr
        (workdir / "run.log").write_text(log, encoding="utf-8")
        widths = dict(outs)
        for line in log.splitlines():
            if line.startswith("@@MISMATCH"):
                _, c, port, got, want = line.split()
                digits = (widths[port] + 3) // 4

                def hexa(v: str, digits: int = digits) -> str:
                    # an unknown (x/z) value is shown as the simulator wrote it
                    try:
                        return f"0x{int(v, 16):0{digits}x}"
                    except ValueError:
                        return f"0x{v}"

                raise ReplayMismatch(
                    f"cycle {c}: output {port} is {hexa(got)} in the gate netlist, "
                    f"{hexa(want)} in the RTL trace"
                )
        if "@@DONE" not in log or "@@SHORT" in log:
            tail = "\n".join(log.strip().splitlines()[-10:])
            last = tail.splitlines()[-1] if tail else "no output"
            raise flow.ToolError(f"{sim} replay of {net.top} did not finish: {last}", tail)
        rel = None if marks is None else [m - start for m in marks]
        counts, changes, segments = _count(workdir / "diffs.txt", counted, flops, trace.cycles,
                                           start, rel)
        if counts is None:
            raise flow.ToolError(f"{sim} replay of {net.top} wrote truncated counts")
        # counted: the changed-bit words go (a bit per net and cycle: MiniLM's block wrote 2.9 GB
        # of them per design, one sentence)
        (workdir / "diffs.txt").unlink()
    return Toggles(
        cycles=trace.cycles - start,
        nets=dict(zip(counted, counts, strict=True)),
        flop_changes=changes,
        simulator=sim,
        seconds=seconds,
        segments=segments,
        segment_starts=rel,
    )


def net_activity(net, trace, workdir) -> tuple[Toggles, dict[str, int]]:
    """Every net's toggles and the clocks it was high, over the whole ``trace``, from one
    Icarus run of the replay's testbench changed to write each sample's values (not their
    changes), the first sample too: what a per-net activity needs (the toggles
    :func:`replay` counts, and each net's duty). Built in ``workdir`` (not beside the netlist:
    this harness is not the replay's). For short traces: the values are a line a cycle."""
    import numpy as np

    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    ins, outs = _check_ports(net, trace)
    counted = [r for r in net.nets if r != net.clock_net]
    flops = _flop_outputs(net)
    tb = _testbench(net, ins, outs, counted, flops)
    for old, new in (('      $fwrite(fd, "%h\\n", diff);', '      $fwrite(fd, "%h\\n", snap);'),
                     ("      else begin take; prev = snap; end",
                      '      else begin take; prev = snap; $fwrite(fd, "%h\\n", snap); end')):
        if old not in tb:
            raise RuntimeError(f"the replay testbench changed: {old.strip()!r} not found")
        tb = tb.replace(old, new)
    (workdir / "tb.v").write_text(tb, encoding="utf-8")
    flow.run_tool([toolchain.require("iverilog"), "-g2012", "-s", "tb", "-o", "tb.vvp", "tb.v",
                   os.path.relpath(net.path, workdir), os.path.relpath(net.cells_v, workdir)],
                  workdir, workdir / "build.log", f"iverilog build of {net.top}")
    _hexfile(workdir / "stim.hex", ins, trace, sum(w for _, w in ins))
    _hexfile(workdir / "expect.hex", outs, trace, sum(w for _, w in outs))
    proc = subprocess.run([toolchain.require("vvp"), "-n", "tb.vvp", f"+cycles={trace.cycles}"],
                          cwd=workdir, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                          check=False)
    if "@@DONE" not in proc.stdout:
        raise flow.ToolError(f"icarus values of {net.top} did not finish",
                             (proc.stdout + proc.stderr)[-2000:])
    text = (workdir / "diffs.txt").read_text(encoding="ascii").translate(
        str.maketrans("xzXZ", "0000"))
    lines = text.split()
    nbytes = max(len(x) for x in lines) // 2 + 1
    raw = np.frombuffer(b"".join(bytes.fromhex(x.zfill(2 * nbytes)) for x in lines),
                        dtype=np.uint8).reshape(len(lines), nbytes)
    bits = np.unpackbits(raw, axis=1, bitorder="big")[:, ::-1][:, :len(counted)]
    (workdir / "diffs.txt").unlink()
    changes = bits[1:] ^ bits[:-1]  # sample c+1 against sample c: cycle c's toggles
    counts = changes.sum(axis=0, dtype=np.int64).tolist()
    high = bits[:-1].sum(axis=0, dtype=np.int64).tolist()  # the value during cycle c
    fcols = [counted.index(r) for r in flops]
    flop_changes = (changes[:, fcols].sum(axis=1, dtype=np.int64).tolist() if fcols
                    else [0] * changes.shape[0])
    tog = Toggles(cycles=changes.shape[0], nets=dict(zip(counted, counts, strict=True)),
                  flop_changes=flop_changes, simulator="icarus", seconds=0.0)
    return tog, dict(zip(counted, high, strict=True))
