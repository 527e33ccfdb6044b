"""A whole encoder block's pieces in the fast harness, on a compiled simulator.

:func:`run_block_fast` is :func:`regression.block.run_block_pieces` on the generated Verilog:
each piece of :data:`golden_models.block_pieces.PIECES` runs (its kind's runner,
:data:`FAST_RUNNERS`) in :class:`regression.fast_rtl.FastHarness`
on Verilator (or Icarus, for a short case), its stimulus and the golden QNN's response in
the harness's memories, every output beat and every counter of every window compared inside
the simulation. Nothing crosses into Python during a run, so MiniLM's eight sentences take
minutes where the Amaranth simulator takes hours (docs/rtl_block.md, "Speed").

=============  ===========================================================================
piece          one run
=============  ===========================================================================
linear layers  every tile of the layer (:func:`regression.block_parts.tile_slices`), loaded one
               after the other, each followed by every token of every sentence
attention      the attention path (the spiking or the dense design's), each sentence's start,
               key and value writes, then its tokens
norms          the add+LayerNorm unit (:class:`regression.fast_adapters.PairedNorm`: its two row
               inputs taken as pairs, a row a window), every row of every sentence after
               one load; the unit that feeds a network's next block has its output stream
               recorded and read back
=============  ===========================================================================

Each piece takes the golden QNN's values at its input (the captured ones), not the piece
before it's output: every output is compared with those values, so with 0 mismatches they
are the same, and a piece that mismatches does not hide the pieces after it. The expected
output beats are the captured values (the golden QNN's), the expected counters the golden
layer's (:meth:`golden_models.IntegerLayer.run_events`, ``run_sums``,
:func:`golden_models.dense.run_dense`, ``run_dense_sums``; the attention path's
:func:`rtl_gen.attn_images.attention_reference`, ``dense_reference``).

A piece's ``cycles`` are the harness's clocks from start to done: every window and every
load (the weights of each tile, each sentence's keys and values), where the Amaranth
simulator's run counts each window from its first input beat to its output marker.

The tiles are generated with their configuration register's reset values set to zero (the
masks are loaded with each tile's image), so the tiles of one shape share one build, whatever
the layer.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import time
from pathlib import Path

import torch

from golden_models import encode_events
from golden_models.block_pieces import (
    ADD_NORM,
    ATTENTION,
    LINEAR,
    PIECES,
    TILE_NEURONS,
    check_handlers,
)
from regression.block_parts import (
    PieceRun,
    attention_config,
    made_by,
    tile_config,
    tile_slices,
)

__all__ = ["DEFAULT_ROOT", "FAST_RUNNERS", "RTL_SIMS", "WINDOW_COLUMNS", "attention_windows",
           "record_attention", "run_block_fast"]

#: Where the generated Verilog, the builds and the runs go by default (builds cached by content).
DEFAULT_ROOT = Path("build") / "block"
#: The simulators a block's pieces run on: the Amaranth simulator, or the generated Verilog
#: in the fast harness.
RTL_SIMS = ("amaranth", "icarus", "verilator")
#: Words of the harness's memories, the same for every run: one build serves every run of a
#: piece's shape, whatever the sentences and the design (a run holds what fits; the rest
#: goes to the next run). About 2 MiB of stimulus and of expected output a run.
DEPTHS = {"seq": 1 << 18, "out": 1 << 18, "cnt": 1 << 12}
#: The C++ optimization of the builds (:func:`regression.fast.build_fast`): MiniLM's
#: twelve-head attention path (128 key slots) compiles in 137 s at ``-O1`` against 230 s at
#: ``-O2`` and runs eight sentences' 231 tokens in 6.5 s of simulation against 5.1 s
#: (``-O0``: 69 s and 52 s).
OPT = "-O1"
#: The testbench of the fast harness.
_BENCH = "cocotb_tests.tb_fast"


def _packer(layout):
    """:func:`rtl_gen.simulation.field_packer` of a flat struct layout, or of a stream's field
    records in a manifest (``name``, ``offset``, ``width``)."""
    from amaranth.hdl import Shape

    from rtl_gen.simulation import field_packer

    if isinstance(layout, list):
        return field_packer({f["name"]: (int(f["offset"]), int(f["width"])) for f in layout})
    return field_packer({name: (f.offset, Shape.cast(f.shape).width) for name, f in layout})


def _seq(payloads, kind: int) -> list[int]:
    """The sequence-memory words (:mod:`regression.fast_rtl`) of a load (``kind`` 0) or a
    window (1): its first beat waits for the design to be quiet, and starts the window."""
    from regression.fast import seq_word

    return [seq_word(p, kind, start=j == 0 and kind == 1, barrier=j == 0)
            for j, p in enumerate(payloads)]


@dataclasses.dataclass
class _Vectors:
    """A run's memories as they are built: sequence, expected outputs, counters."""

    ports: tuple
    widths: dict
    seq: list = dataclasses.field(default_factory=list)
    out: list = dataclasses.field(default_factory=list)
    cnt: list = dataclasses.field(default_factory=list)
    beats_in: int = 0
    beats_load: int = 0
    windows: int = 0
    events: int = 0
    events_out: int = 0
    totals: dict = dataclasses.field(default_factory=dict)

    def load(self, words) -> None:
        """Load beats: their sequence words (:func:`_seq`, kind 0)."""
        self.seq += words
        self.beats_load += len(words)

    def window(self, words_in, words_out, counter_word: int, counters: list) -> None:
        """A window: ``words_in``, its input beats' sequence words (:func:`_seq`, kind 1),
        ``words_out`` its expected output beats, marker included; its counters' word and
        values (in :attr:`ports` order)."""
        self.seq += words_in
        self.out += words_out
        self.cnt.append(counter_word)
        for p, v in zip(self.ports, counters, strict=True):
            self.totals[p] = self.totals.get(p, 0) + int(v)
        self.beats_in += len(words_in)
        self.windows += 1
        self.events += len(words_in) + len(words_out) - 2
        self.events_out += len(words_out) - 1

    def fits(self, seq: int, out: int, cnt: int) -> bool:
        """``seq``, ``out`` and ``cnt`` more words still fit :data:`DEPTHS`."""
        return (len(self.seq) + seq <= DEPTHS["seq"] and len(self.out) + out <= DEPTHS["out"]
                and len(self.cnt) + cnt <= DEPTHS["cnt"])

    def fast(self):
        from regression.fast import FastVectors

        return FastVectors(self.seq, self.out, self.cnt, self.ports, self.widths, self.events,
                           self.events_out, self.windows, self.beats_in, self.beats_load,
                           {p: self.totals.get(p, 0) for p in self.ports})


@dataclasses.dataclass
class _Window:
    """One window of a unit: its input beats' sequence words, its expected output words
    (marker included), its counters (port -> value) and the values it checks."""

    seq: list
    out: list
    counters: dict
    checked: int


class _Runs:
    """A piece's runs on one build: units (a load, then its windows) go into the harness's
    memories of the fixed :data:`DEPTHS` until the next one does not fit; then the memories
    run and a new run starts, with ``prefix`` (the load words every run begins with) and the
    unit's own load; a unit longer than a run is split, its load repeated in each part."""

    def __init__(self, run: PieceRun, sim: str, rtl_dir: Path, manifest: dict, top: str, *,
                 T: int, root: Path, name: str, names: dict, prefix=(), record=None):
        entry = manifest["modules"][top]
        self.piece, self.sim, self.top = run, sim, top
        self.rtl_dir, self.manifest = rtl_dir, manifest
        self.T, self.root, self.name, self.names = T, root, name, names
        self.ports = tuple(c["port"] for c in entry["counters"])
        self.widths = {c["port"]: int(c["width"]) for c in entry["counters"]}
        self.prefix = list(prefix)
        self.vec, self.checked, self.runs = None, 0, 0
        #: with ``record``: each run's recorded columns (:func:`_run`)
        self.record, self.recorded = record, []

    def _fresh(self) -> None:
        self.vec = _Vectors(self.ports, self.widths)
        self.vec.load(self.prefix)
        self.checked = 0

    def unit(self, load: list, windows: list[_Window]) -> None:
        from regression.fast import counter_word

        i = 0
        while i < len(windows):
            if self.vec is None:
                self._fresh()
            part = []
            seq, out = len(load), 0
            for w in windows[i:]:
                if not self.vec.fits(seq + len(w.seq), out + len(w.out), len(part) + 1):
                    break
                seq, out = seq + len(w.seq), out + len(w.out)
                part.append(w)
            if not part:
                if self.vec.windows == 0:
                    raise ValueError(f"{self.piece.piece}: a window of {len(windows[i].seq)} "
                                     f"beats does not fit the harness's {DEPTHS} words")
                self.flush()
                continue
            self.vec.load(load)
            for w in part:
                values = [w.counters[p] for p in self.ports]
                self.vec.window(w.seq, w.out, counter_word(values, self.ports, self.widths),
                                values)
                self.checked += w.checked
            i += len(part)

    def flush(self) -> None:
        """Run what is in the memories (nothing when empty)."""
        if self.vec is None or self.vec.windows == 0:
            return
        report = _run(self.sim, self.rtl_dir, self.manifest, self.top, self.vec, T=self.T,
                      root=self.root, name=f"{self.name}-{self.piece.piece}-{self.runs}-{self.sim}",
                      record=self.record)
        _account(self.piece, report, self.names, self.checked)
        if "record" in report:
            self.recorded.append(report["record"])
        self.runs += 1
        self.vec = None


def _run(sim: str, rtl_dir: Path, manifest: dict, top: str, vectors: _Vectors, *, T: int,
         root: Path, name: str, record=None) -> dict:
    """Build (cached) and run the harness around ``top`` on ``vectors``; the bench's report,
    with ``passed`` and, for a run that did not pass, ``error``; with ``record`` (the
    signals to record, :func:`regression.fast.fast_verilog`), ``record``: their columns."""
    from regression import sim as sims
    from regression.fast import RECORD_FILE, build_fast, fast_config, read_record
    from toolkit_base.files import locked, write_atomic

    config = fast_config(vectors.fast(), seed=0, T=T, bench=name)
    config["depths"] = dict(DEPTHS)  # one build for every run of the piece's shape
    build = build_fast(sim, rtl_dir, manifest, top, config, root, opt=OPT, record=record)
    run_dir = root / "runs" / name
    # two runs of one name in one folder (two designs' runs of the same name on two workers,
    # two runs sharing DIR) take turns: each writes its stimulus and reads its results there
    with locked(root / "runs" / f"{name}.lock"):
        run_dir.mkdir(parents=True, exist_ok=True)
        for fname, text in config.pop("run_files").items():
            write_atomic(run_dir / fname, text)
        if record:
            (run_dir / RECORD_FILE).unlink(missing_ok=True)
        res = sims.run(build, _BENCH, config, run_dir, seed=0)
        report = dict(res.report)
        report["passed"] = bool(res.passed)
        if not res.passed:
            report["error"] = ("; ".join(report.get("mismatch_examples") or [])
                               or f"the bench failed: {res.tail(5)}")
        if record and (run_dir / RECORD_FILE).is_file():
            # what the design did, whether or not it matched the expectation (a mismatching
            # unit's output is still what the next block is fed)
            report["record"] = read_record(run_dir / RECORD_FILE, record)
            (run_dir / RECORD_FILE).unlink()
    return report


def _account(run: PieceRun, report: dict, names: dict, checked: int) -> None:
    """A run's verdict, counters (``names``: port -> the name the Amaranth run counts it
    by) and clocks into ``run``."""
    run.checked += checked
    bad = int(report.get("mismatches", 0)) or int(not report.get("passed"))
    run.mismatches += bad
    if bad and run.first_mismatch is None:
        run.first_mismatch = f"{run.piece}: {report.get('error', 'failed')}"
    for port, value in report.get("counter_totals_rtl", {}).items():
        run.counters[names.get(port, port)] += int(value)
    run.cycles += int(report.get("cycles", 0))


def _tile_params(layer, raw_sums: bool) -> dict:
    """The generated tile of ``layer``: its configuration with the configuration register's
    reset values zero (the masks come with each image)."""
    cfg = dataclasses.replace(tile_config(layer, raw_sums=raw_sums), i_max_in=0, i_max_out=0,
                              k=0)
    return cfg.as_dict()


def _tile_windows(cfg, sub, lo: int, hi: int, inputs, want, words, events, *, dense: bool,
                  raw_sums: bool, pout, marker_out, counter_names) -> list[_Window]:
    """Tile ``sub`` (neurons ``lo..hi-1`` of the layer) on every token: each window's input
    words (``words``, the same for every tile), its expected output beats and counters (the
    golden layer's)."""
    from golden_models import CodeSpace
    from golden_models.dense import run_dense, run_dense_sums
    from rtl_gen.layouts import dense_pack

    tw = cfg.time_width
    if dense:
        c_tile, c_out = CodeSpace(cfg.T, cfg.family).c, sub.out_mask.space.c
        pack = dense_pack(cfg)
    windows = []
    for i, q in enumerate(inputs):
        w = want[i, lo:hi].tolist()
        if raw_sums:
            counters = (run_dense_sums(sub, q)[1] if dense
                        else sub.run_sums(*events[i])[1])
            out = [pout({"addr": j, "sum": v}) for j, v in enumerate(w)]
        elif dense:
            counters = run_dense(sub, q).counters
            codes = [(c_tile - (c_out - v)) & ((1 << tw) - 1) for v in w]
            out = [pout({"addr": a, "codes": sum(c << (p * tw) for p, c in
                                                  enumerate(codes[a:a + pack]))})
                   for a in range(0, hi - lo, pack)]
        else:
            counters = sub.run_events(*events[i]).counters
            gi, gt = encode_events(want[i, lo:hi], sub.out_mask)
            out = [pout({"addr": a, "t": t})
                   for a, t in zip(gi.tolist(), gt.tolist(), strict=True)]
        windows.append(_Window(words[i], [*out, marker_out],
                               {counter_names[k]: v for k, v in counters.as_dict().items()},
                               len(w) if (raw_sums or dense) else len(out)))
    return windows


def _linear(run: PieceRun, layer, inputs: torch.Tensor, want: torch.Tensor, *, dense: bool,
            raw_sums: bool, tile_neurons: int, sim: str, root: Path, name: str) -> None:
    """Every tile of ``layer``, on one build per tile shape: each tile's image, then every
    token of ``inputs [N, n_in]`` (:class:`_Runs`); ``want [N, n_out]``: the golden codes
    (before the output mask) or the golden raw sums."""
    from regression.cache import generate_rtl, module_entry
    from rtl_gen import registry
    from rtl_gen.dense import dense_load_beats
    from rtl_gen.layouts import (
        dense_in_layout,
        dense_out_layout,
        in_event_layout,
        load_layout,
        out_event_layout,
        sum_out_layout,
    )
    from rtl_gen.params import RTLConfig
    from rtl_gen.tile import load_beats

    slices = tile_slices(layer, tile_neurons)
    run.tiles = len(slices)
    shapes: dict[str, list] = {}
    for lo, hi, sub in slices:
        params = _tile_params(sub, raw_sums)
        shapes.setdefault(json.dumps(params, sort_keys=True), []).append((lo, hi, sub))
    top = registry.block("dense_tile" if dense else "tile").module
    for n, (key, tiles) in enumerate(shapes.items()):
        params = json.loads(key)
        rtl_dir, manifest = generate_rtl(params, root, modules=(top,))
        entry = module_entry(manifest, top)
        cfg = RTLConfig(**params)
        pin = _packer(dense_in_layout(cfg) if dense else in_event_layout(cfg))
        lout = (sum_out_layout(cfg) if raw_sums
                else dense_out_layout(cfg) if dense else out_event_layout(cfg))
        pout, pload = _packer(lout), _packer(load_layout(cfg))
        marker_in, marker_out = pin({"last": 1}), pout({"last": 1})
        counter_names = {c["name"]: c["port"] for c in entry["counters"]}
        runs = _Runs(run, sim, rtl_dir, manifest, top, T=cfg.T, root=root,
                     name=f"{name}-s{n}" if n else name,
                     names={c["port"]: c["name"] for c in entry["counters"]})
        # a token's input beats are the same for every tile of the layer: packed once
        if dense:
            words = [_seq([pin({"code": c}) for c in q.tolist()] + [marker_in], 1)
                     for q in inputs]
            events = [None] * len(inputs)
        else:
            events = [encode_events(q, layer.in_mask) for q in inputs]
            words = [_seq([pin({"addr": a, "tau": t})
                           for a, t in zip(i.tolist(), t_.tolist(), strict=True)]
                          + [marker_in], 1)
                     for i, t_ in events]
        for lo, hi, sub in tiles:
            image = (dense_load_beats if dense else load_beats)(cfg, sub)
            load = _seq([pload({"target": t, "addr": a, "data": d}) for t, a, d in image], 0)
            runs.unit(load, _tile_windows(cfg, sub, lo, hi, inputs, want, words, events,
                                          dense=dense, raw_sums=raw_sums, pout=pout,
                                          marker_out=marker_out, counter_names=counter_names))
        runs.flush()


def _harness_rtl(make, top: str, parameters: dict, counters: dict, stem: str, root: Path,
                 extra=None) -> tuple[Path, dict, str]:
    """The Verilog of the component ``make()`` makes (``parameters`` say all it is made of)
    as module ``top`` under ``root/rtl/<stem>-<digest of the Verilog>``, and a manifest for
    the harness (its ports, streams and ``counters``, name -> width, on ports
    ``cnt_<name>``; ``extra(component)``: more fields of its record):
    ``(folder, manifest, module)``. The folder is named by the Verilog's text, so a
    change of the generator that leaves it alone rebuilds nothing; the text is made once for
    the same ``top``, ``parameters``, ``counters``, generator and harness adapters
    (``root/rtl/<stem>-<their digest>.json`` names its folder): MiniLM's twelve heads take
    about 10 s to convert, and every run of the path (the block's run, the pricing's recording,
    the path's activity) looked for it."""
    from regression import fast_adapters
    from regression.cache import params_key
    from rtl_gen.generate import LINT_WAIVERS, port_list, stream_ports
    from rtl_gen.verilog_text import to_verilog
    from toolkit_base.files import write_atomic

    made = params_key({"harness": stem, "top": top, "parameters": parameters,
                       "counters": counters, "adapters": hashlib.sha256(
                           Path(fast_adapters.__file__).read_bytes()).hexdigest()})
    index = root / "rtl" / f"{stem}-{made}.json"
    if index.is_file():
        folder = root / "rtl" / json.loads(index.read_text())["folder"]
        if (folder / "manifest.json").is_file():
            return folder, json.loads((folder / "manifest.json").read_text()), top
    comp = make()
    text = to_verilog(comp, top)
    folder = root / "rtl" / f"{stem}-{hashlib.sha256(text.encode()).hexdigest()[:16]}"
    path = folder / "manifest.json"
    if path.is_file():
        write_atomic(index, json.dumps({"folder": folder.name}) + "\n")
        return folder, json.loads(path.read_text()), top
    entry = {"file": f"{top}.v", "ports": port_list(comp), "streams": stream_ports(comp),
             "counters": [{"name": n, "port": f"cnt_{n}", "width": w}
                          for n, w in counters.items()],
             **(extra(comp) if extra is not None else {})}
    manifest = {"parameters": parameters, "modules": {top: entry},
                "lint": {"waivers": list(LINT_WAIVERS)}}
    folder.mkdir(parents=True, exist_ok=True)
    write_atomic(folder / entry["file"], text)
    write_atomic(path, json.dumps(manifest, indent=2) + "\n")  # last: the folder is complete
    write_atomic(index, json.dumps({"folder": folder.name}) + "\n")
    return folder, manifest, top


def _attention_rtl(cfg, dense: bool, root: Path) -> tuple[Path, dict, str]:
    """The attention path's Verilog (the dense design's, or the spiking one's) of ``cfg``
    and its manifest (:func:`_harness_rtl`)."""
    from rtl_gen.attention import AttentionSystem, attention_manifest, head_counters

    return _harness_rtl(lambda: AttentionSystem(cfg, instances=True, dense=dense),
                        "dense_attention" if dense else "mttfs_attention",
                        {**cfg.as_dict(), "dense": dense}, head_counters(cfg, dense=dense),
                        "attention", root, attention_manifest)


def _attention(run: PieceRun, cfg, path, sequences, *, dense: bool, sim: str,
               root: Path, name: str, record=None) -> tuple[list, list]:
    """Every sentence through the attention path of configuration ``cfg`` and golden
    constants ``path`` (:class:`_Runs`): the configuration, then per sentence (``sequences``:
    ``(query, keys, values, valid, attn_out_in)`` codes) its start, its key and value writes
    and its tokens. Returns the golden references of each sentence's windows
    (``attention_reference``'s) and, with ``record``, each harness run's recorded columns."""
    from rtl_gen.attn_images import (
        attention_reference,
        config_beats,
        dense_reference,
        kv_beats,
        sequence_beats,
    )
    from rtl_gen.attn_params import attn_load_layout
    from rtl_gen.layouts import pack

    rtl_dir, manifest, top = _attention_rtl(cfg, dense, root)
    entry = manifest["modules"][top]
    lload = attn_load_layout(cfg)
    pin, pout = (_packer(entry["streams"][s]["fields"]) for s in ("i", "o"))
    sign_mask = (1 << cfg.time_width) - 1
    # counted by port, as the Amaranth run counts the attention path's
    runs = _Runs(run, sim, rtl_dir, manifest, top, T=cfg.T, root=root, name=name, names={},
                 prefix=_seq([pack(lload, b) for b in config_beats(cfg, path)], 0),
                 record=record)
    writes, references = {}, []
    for q, k, v, valid, want in sequences:
        load = _seq([pack(lload, b) for b in sequence_beats(cfg, valid) + kv_beats(cfg, k, v)],
                    0)
        refs = (dense_reference if dense else attention_reference)(cfg, path, q, k, v, valid)
        references.append(refs)
        windows = []
        for i, ref in enumerate(refs):
            if dense:
                # the golden QNN's codes, in the design's order (every head, address order)
                out = [pout({"addr": a, "t": int(want[i, a]) & sign_mask}) for a, _ in ref["out"]]
            else:
                gi, gt = encode_events(want[i], path.ctx_mask)
                out = [pout({"addr": a, "t": t})
                       for a, t in zip(gi.tolist(), gt.tolist(), strict=True)]
            windows.append(_Window(_seq([pin(b) for b in ref["query"]], 1),
                                   [*out, pout({"last": 1})], ref["counters"], len(out)))
        runs.unit(load, windows)
        for port, value in refs[0]["counters"].items():
            if "_writes" in port:  # a sequence's writes, counted once (as the Amaranth run)
                writes[port] = writes.get(port, 0) + int(value)
    runs.flush()
    # the harness sums every window's counters; a write counter holds its sequence's writes in
    # every window of the sequence: counted once a sequence, as the Amaranth run counts them
    for port, value in writes.items():
        run.counters[port] = value
    return references, runs.recorded


#: The attention path's system signals a recording of it is cut into windows by
#: (:func:`rtl_gen.simulation.attention.window_marks`).
WINDOW_COLUMNS = ("load__valid", "load__ready", "o__valid", "o__ready", "o__payload")


def attention_windows(cfg, path, sequences, *, dense: bool, record, root: Path,
                      sim: str = "verilator", name: str = "path") -> list[tuple[list, dict]]:
    """The attention path of configuration ``cfg`` and golden constants ``path`` on
    ``sequences`` (as :func:`record_attention` takes them) in the fast harness, as
    :func:`run_block_fast` runs it (every output and counter checked), however many runs of
    the harness they take, recording ``record`` (:data:`WINDOW_COLUMNS` added): per run, where
    its windows begin and its end (:func:`rtl_gen.simulation.attention.window_marks`) and its
    recorded columns.

    Raises
    ------
    AssertionError
        The run did not match the golden references.
    RuntimeError
        The runs' output markers are not one a window.
    """
    from rtl_gen.attn_images import config_beats
    from rtl_gen.simulation.attention import window_marks

    rtl_dir, manifest, top = _attention_rtl(cfg, dense, root)
    stream = manifest["modules"][top]["streams"]["o"]
    wide = {"o__payload": int(stream["payload_width"])}
    record = list(record)
    record += [(c, c, wide.get(c, 1)) for c in WINDOW_COLUMNS
               if c not in {column for column, _, _ in record}]
    run = PieceRun("attention")
    refs, recorded = _attention(run, cfg, path, sequences, dense=dense, sim=sim, root=root,
                                name=name, record=record)
    if run.mismatches:
        raise AssertionError(f"attention: the run mismatches: {run.first_mismatch}")
    last = next(int(f["offset"]) for f in stream["fields"] if f["name"] == "last")
    beats = len(config_beats(cfg, path))
    out = [(window_marks(columns, config_beats=beats, last=last), columns)
           for columns in recorded]
    windows = sum(len(m) - 1 for m, _ in out)
    if windows != sum(len(r) for r in refs):
        raise RuntimeError(f"attention: {windows} output markers in the harness's runs, not "
                           f"one a window ({sum(len(r) for r in refs)})")
    return out


#: Module name of the add+LayerNorm unit in the harness
#: (:class:`regression.fast_adapters.PairedNorm`).
NORM_TOP = "mttfs_add_norm_paired"


def _norm_fields(cfg) -> tuple:
    """Where the unit's output ``{r, q}`` lies in a beat (:func:`rtl_gen.layouts.norm_out_layout`,
    read per beat faster than :func:`rtl_gen.layouts.unpack` would): ``(residual bits, offset
    of the codes, code bits, code signed)``, :data:`rtl_gen.layouts.NORM_CODES` codes from
    that offset on."""
    from amaranth.hdl import Shape

    from rtl_gen.layouts import norm_out_layout

    lay = norm_out_layout(cfg)
    code = Shape.cast(lay["q"].shape.elem_shape)
    return Shape.cast(lay["r"].shape).width, lay["q"].offset, code.width, code.signed


def _made_rows(recorded: list, cfg, rows: int, codes: int) -> list[torch.Tensor]:
    """What the add+LayerNorm unit sent on ``o``, from the harness's recording of its stream
    (each run's columns, in order): the codes of each of the ``codes`` positions it walks,
    then the stream, each ``[rows, hidden]``."""
    from rtl_gen.layouts import NORM_CODES

    rb, qo, cb, signed = _norm_fields(cfg)
    beats = []
    for cols in recorded:
        beats += [w for v, r, w in zip(cols["valid"], cols["ready"], cols["payload"],
                                       strict=True) if v and r]
    n = cfg.hidden
    if len(beats) != rows * n:
        raise ValueError(f"add+LayerNorm: {len(beats)} output beats recorded, not {rows} rows "
                         f"of {n}")

    def value(word: int, lo: int, width: int, sign: bool) -> int:
        v = (word >> lo) & ((1 << width) - 1)
        return v - (1 << width) if sign and v >> (width - 1) else v

    stream = [value(w, 0, rb, True) for w in beats]
    made = [torch.tensor([value(w, qo + p * cb, cb, signed) for w in beats],
                         dtype=torch.int64).reshape(rows, n)
            for p in range(min(codes, NORM_CODES))]
    return [*made, torch.tensor(stream, dtype=torch.int64).reshape(rows, n)]


def _norm(run: PieceRun, cfg, add, norm, thetas, r, sums, want_r, want_codes, *, sim: str,
          root: Path, name: str, made: bool = False) -> list | None:
    """Every row ``(r, sums)`` (``[S, hidden]`` each) through the add+LayerNorm unit of
    configuration ``cfg`` (:class:`regression.fast_adapters.PairedNorm`), programmed with the
    golden residual add ``add``, LayerNorm ``norm`` and walk tables ``thetas`` once a run
    (:class:`_Runs`), a row a window: its channels' pairs in, its new stream ``want_r`` and
    the codes it walks ``want_codes`` (one ``[S, hidden]`` per table) out, checked in the
    simulation. With ``made``, the unit's output stream is recorded and returned as
    :func:`regression.block_parts.run_norm` returns it (the codes, then the stream): what
    the unit made, not what was expected of it."""
    from regression.fast_adapters import PairedNorm
    from rtl_gen.add_norm import load_beats
    from rtl_gen.layouts import norm_load_layout

    codes = len(want_codes)
    rtl_dir, manifest, top = _harness_rtl(lambda: PairedNorm(cfg, codes=codes), NORM_TOP,
                                          {**cfg.as_dict(), "codes": codes}, {}, "add_norm",
                                          root)
    streams = manifest["modules"][top]["streams"]
    pin = _packer(streams["i"]["fields"])
    pout = _packer(streams["o"]["fields"])
    _, _, cb, _ = _norm_fields(cfg)
    width = int(streams["o"]["payload_width"])
    record = ([("valid", "o__valid", 1), ("ready", "o__ready", 1),
               ("payload", "o__payload", width)] if made else None)
    load = _seq([_packer(norm_load_layout(cfg))({"target": t, "addr": a, "data": d})
                 for t, a, d in load_beats(cfg, add, norm, thetas)], 0)
    runs = _Runs(run, sim, rtl_dir, manifest, top, T=cfg.T, root=root, name=name, names={},
                 record=record)
    n = cfg.hidden
    mask = (1 << cb) - 1
    windows = []
    for i in range(r.shape[0]):
        ri, vi, wi = r[i].tolist(), sums[i].tolist(), want_r[i].tolist()
        qi = [c[i].tolist() for c in want_codes]
        out = [pout({"r": wi[j], "q": sum((q[j] & mask) << (p * cb) for p, q in enumerate(qi)),
                     "last": int(j == n - 1)}) for j in range(n)]
        windows.append(_Window(_seq([pin({"r": ri[j], "v": vi[j]}) for j in range(n)], 1), out,
                               {}, n * (1 + len(qi))))
    runs.unit(load, windows)
    runs.flush()
    run.counters.update({"rows": r.shape[0], "channels": r.shape[0] * n})
    if not made:
        return None
    return _made_rows(runs.recorded, cfg, r.shape[0], len(want_codes))


def record_attention(cfg, path, sequences, *, dense: bool, record, root: Path,
                     sim: str = "verilator", name: str = "record") -> tuple[list, dict]:
    """The attention path of configuration ``cfg`` and golden constants ``path`` on
    ``sequences`` (``(query, keys, values, valid, attn_out_in)`` codes) in the fast harness,
    as :func:`run_block_fast` runs it (every output and counter checked inside the
    simulation), recording the signals ``record`` (``(column, reference, width)``:
    :func:`regression.fast.fast_verilog`) at every clock edge: what a gate-level replay of
    its nodes is driven by (MiniLM's two shortest sentences: 1 s of simulation, where the
    Amaranth simulator takes about 70 s).

    Returns ``(windows, columns)``: per sentence, per window an
    :class:`rtl_gen.simulation.attention.AttentionWindow` (its expected ``o`` events and
    counter ports, which the run checked), and column -> its values, from reset.

    Raises
    ------
    AssertionError
        The run did not match the golden references.
    ValueError
        The sentences do not fit one run of the harness (:data:`DEPTHS`).
    """
    from rtl_gen.simulation.attention import AttentionWindow

    run = PieceRun("attention")
    refs, recorded = _attention(run, cfg, path, sequences, dense=dense, sim=sim, root=root,
                                name=name, record=record)
    if run.mismatches:
        raise AssertionError(f"attention: the recorded run mismatches: {run.first_mismatch}")
    if len(recorded) != 1:
        raise ValueError(f"the sentences took {len(recorded)} runs of the harness, not one: "
                         "record fewer at a time")
    windows = [[AttentionWindow(list(r["out"]), dict(r["counters"]), 0) for r in seq]
               for seq in refs]
    return windows, recorded[0]


@dataclasses.dataclass
class _Fast:
    """What the fast runners of one case share: the QNN, the case, the tile size, the
    simulator, the folder of builds and runs, the run's name."""

    qnn: object
    case: object  # networks.block.BlockCase
    tile_neurons: int
    sim: str
    root: Path
    name: str
    #: whether what the block's last piece makes is handed back (a network's next block)
    hand_on: bool = False

    @property
    def dense(self) -> bool:
        return self.case.design.dense


def _fast_linear(run: PieceRun, f: _Fast, piece) -> None:
    [p_in], [out] = piece.inputs, piece.outputs
    _linear(run, f.case.layers[piece.name], f.case.cat(p_in), f.case.cat(out), dense=f.dense,
            raw_sums=piece.raw_sums, tile_neurons=f.tile_neurons, sim=f.sim, root=f.root,
            name=f.name)


def _fast_attention(run: PieceRun, f: _Fast, piece) -> None:
    sequences = [(s.codes["query"], s.codes["key"], s.codes["value"], s.valid,
                  s.codes["attn_out_in"]) for s in f.case.sequences]
    _attention(run, attention_config(f.qnn, f.case.block), f.case.path, sequences,
               dense=f.dense, sim=f.sim, root=f.root, name=f.name)


def _fast_norm(run: PieceRun, f: _Fast, piece) -> list | None:
    """An add+LayerNorm piece (:func:`_norm`), every row of every sentence after one load;
    for the piece that feeds the next block, when the run hands it on (``f.hand_on``),
    returns what it made (the codes it walks, then the stream), every sentence's tokens one
    after the other."""
    from regression.units import minilm_config

    add, norm, thetas = f.case.units[piece.name]
    # the codes it walks: none after the last block
    want = ([f.case.cat(c, next_block=piece.next_block) for c in piece.outputs[:-1]]
            if thetas else [])
    return _norm(run, minilm_config(f.qnn), add, norm, thetas,
                 *(f.case.cat(v) for v in piece.inputs), f.case.cat(piece.outputs[-1]), want,
                 sim=f.sim, root=f.root, name=f.name,
                 made=bool(piece.next_block and f.hand_on))


#: The fast runner of each kind of piece: ``(run, fast, piece)``, the piece's every input
#: the captured one; returns what the piece made (by output, every sentence's tokens one
#: after the other) when the run hands it back to Python (the add+LayerNorm unit that feeds
#: the next block, recorded from the harness), else None (every piece is checked inside the
#: simulation).
FAST_RUNNERS = {LINEAR: _fast_linear, ATTENTION: _fast_attention, ADD_NORM: _fast_norm}


def run_block_fast(qnn, case, *, tile_neurons: int = TILE_NEURONS, sim: str = "verilator",
                   root=DEFAULT_ROOT, name: str = "block", told=None,
                   outputs: dict | None = None) -> list[PieceRun]:
    """:func:`regression.block.run_block_pieces` in the fast harness on ``sim``
    (``"verilator"`` or ``"icarus"``): the captured sentences of ``case``
    (:class:`networks.block.BlockCase`, one design of a block of ``qnn``) through every piece;
    one :class:`PieceRun` per piece of :data:`golden_models.block_pieces.PIECES`. ``root``: the
    generated Verilog, the builds (cached by content, shared by every run into it) and
    ``runs/<name>-<piece>-...``. ``told``: called with a line as each piece ends (its
    mismatches and seconds, the build included). ``outputs``: filled with what the block's
    last piece made (the next block's inputs, by the piece's output names), every sentence's
    tokens one after the other: what a network's next block is fed
    (:func:`regression.network.run_network`)."""
    from regression import sim as sims

    if sim not in ("icarus", "verilator"):
        raise ValueError(f"sim must be icarus or verilator, not {sim!r}")
    check_handlers(FAST_RUNNERS, "regression.block_fast.FAST_RUNNERS", PIECES)
    sims.ensure_simulator(sim)
    fast = _Fast(qnn, case, tile_neurons, sim, Path(root).resolve(), name,
                 hand_on=outputs is not None)
    runs = {p.name: PieceRun(p.name) for p in PIECES}
    for piece in PIECES:
        t0 = time.perf_counter()
        made = FAST_RUNNERS[piece.kind](runs[piece.name], fast, piece)
        if piece.next_block and outputs is not None:
            if made is None:
                raise NotImplementedError(f"{piece.name}: its runner hands back nothing to "
                                          "feed the next block")
            outputs.update(made_by(piece, made))
        if told is not None:
            told(f"{name}: {piece.name}, {runs[piece.name].mismatches} mismatches in "
                 f"{time.perf_counter() - t0:.0f} s")
    return [runs[p.name] for p in PIECES]
