"""``matterhorn stats``: spike statistics of a real model converted post-training."""

from __future__ import annotations

import argparse
from pathlib import Path

#: The energy reports' folders inside ``--out`` (``energy_<unit costs>``).
ENERGY_DIRS = ("energy_paper", "energy_synth")

HELP = ("spike statistics of a BERT-family model (MiniLM, or a model folder) converted "
        "post-training to W4A4 M-TTFS")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", default="minilm", metavar="minilm|FOLDER",
                        help="the shipped all-MiniLM-L6-v2, or a local Hugging Face folder of a "
                        "BERT-family encoder (config.json, weights, WordPiece vocabulary)")
    parser.add_argument(
        "--corpus",
        default="pydoc-topics",
        help="corpus name (pydoc-topics) or a .txt file with one sentence a line",
    )
    parser.add_argument(
        "--sentences", type=int, default=None, help="evaluation sentences (default: all)"
    )
    parser.add_argument(
        "--calibration", type=int, default=None, help="calibration sentences (default: all)"
    )
    parser.add_argument("--k-max", type=int, default=4, help="largest dead-zone radius")
    parser.add_argument("--no-plots", action="store_true", help="write JSON and Markdown only")
    parser.add_argument(
        "--threads", type=int, default=None, help="torch threads (default: torch's choice)"
    )
    parser.add_argument(
        "--no-energy",
        action="store_true",
        help="skip the energy estimate (energy_model at the model's dimensions, B=64, S=128 "
        "or the model's positions)",
    )
    parser.add_argument(
        "--synth",
        type=Path,
        default=None,
        help="synth_report.json with unit costs (from matterhorn synth --liberty): a second "
        "energy estimate with our synthesized costs",
    )
    parser.add_argument(
        "--checkpoint",
        type=Path,
        default=None,
        help="a checkpoint folder of matterhorn finetune (OUT/k<k>): measure that QNN",
    )
    parser.add_argument(
        "--integer",
        action="store_true",
        help="measure the integer-only QNN (docs/integer_contract.md); a --checkpoint must "
        "have been fine-tuned with --integer",
    )
    parser.add_argument(
        "--residual-bits",
        type=int,
        default=None,
        help="width of the integer residual stream (with --integer, without --checkpoint; "
        "default 16)",
    )
    parser.add_argument("--out", default="build/stats", metavar="DIR", help="output folder")


def run(args: argparse.Namespace) -> int:
    from networks.hf_folder import resolve_model
    from networks.integer import integer_spec
    from networks.report import minilm_stats
    from toolkit_base import console
    from toolkit_base.checks import check_out_writable

    source = resolve_model(args.model)  # the family and the files, before anything else
    integer = integer_spec(args.integer, args.residual_bits)
    if args.residual_bits is not None and args.checkpoint is not None:
        raise ValueError("--residual-bits applies to a conversion; a --checkpoint has its own")
    # every input before the statistics run (minutes) and before anything in --out changes;
    # minilm_stats checks its own (counts, corpus, checkpoint) before it loads the model
    args.out = Path(check_out_writable(args.out, beside=True, subdirs=ENERGY_DIRS))
    synth_costs = None
    if args.synth is not None:
        import energy_model as em

        synth_costs = em.resolve_unit_costs("paper", synth=args.synth)
    doc = minilm_stats(
        args.corpus,
        sentences=args.sentences,
        calibration=args.calibration,
        k_max=args.k_max,
        out=args.out,
        plot=None if args.no_plots else _plot_minilm(),
        threads=args.threads,
        checkpoint=args.checkpoint,
        integer=integer,
        model=args.model,
    )
    r = doc["rates"]
    rates = ", ".join(f"{k} {100 * v:.2f}%" for k, v in r.items())
    q = doc["quality"]
    console.out(source.describe())
    console.out(f"spike rate per step: {rates}")
    console.out(
        "cosine to float: QNN "
        f"{q['qnn']['cos_float']['mean']:.4f}, "
        + ", ".join(f"{k} {v['cos_float']['mean']:.4f}" for k, v in q.items() if k.startswith("k="))
    )
    console.detail(f"{doc['sentences']} sentences, {doc['sentences_per_second']:.2f} sentences/s")
    _tile(doc["rtl_tile"])
    if not args.no_energy:
        _energy(args.out, doc, synth_costs)
    console.out(f"wrote {args.out}/summary.md (stats.json, rates.json, the slice, the plots)")
    return 0


def _plot_minilm():
    # matplotlib is slow to load: imported only when figures are drawn
    from energy_model.plots import plot_minilm

    return plot_minilm


def _tile(tile: dict) -> None:
    """The generated tile of the model's slice: checked as ``matterhorn generate`` would."""
    from rtl_gen.params import RTLConfig
    from toolkit_base import console

    try:
        config = RTLConfig(T=tile["T"], k=tile["k"], family=tile["family"],
                           i_max_in=tile["i_max_in"], i_max_out=tile["i_max_out"],
                           weight_bits=tile["weight_bits"], n_in=tile["n_in"],
                           tile_neurons=tile["tile_neurons"])
        acc = config.derived()["acc_width"]
    except ValueError as exc:  # a width the generator does not support
        console.out(f"RTL tile of the {tile['layer']}: not generated ({exc})")
        return
    console.out(f"RTL tile of the {tile['layer']}: {tile['n_in']} inputs x "
                f"{tile['tile_neurons']} neurons, {acc}-bit membranes: {tile['generate']}")


def _energy(out: Path, doc: dict, synth_costs) -> None:
    """Energy per block at the model's dimensions from the measured histograms
    (energy_model), one report per unit-cost table."""
    import energy_model as em
    from toolkit_base import console

    d = doc["dims"]
    seq = d.get("seq", 128)
    dims = em.ModelDims(
        doc["model"],
        d["hidden"],
        d["ffn"],
        d["heads"],
        d["layers"],
        weight_bits=doc["quantization"]["weight_bits"],
        seq=seq,
        source=f"{doc['model']} config.json; B=64 as in the paper, S={seq}",
    )
    ks = tuple(range(min(doc["k_max"], 2) + 1))
    rates = em.load_stats(out / "stats.json", ks=ks)
    tables = {"paper": em.paper_unit_costs()}
    if synth_costs is not None:
        tables["synth"] = synth_costs
    for name, costs in tables.items():
        report = em.compute(model=dims, rates=rates, unit_costs=costs)
        em.write_report(report, out / f"energy_{name}", plots=False)
        rows = {r.name: r for r in report.rows}
        k1 = next((r for n, r in rows.items() if n.startswith("Matterhorn M-TTFS (k=1")), None)
        if k1 is not None:
            console.out(f"energy per block, unit costs {name}: M-TTFS k=1 {k1.rel:.2f}x the "
                        f"dense QNN ({out.name}/energy_{name}/energy_table.txt)")
        console.detail(report.table())
