"""``matterhorn energy``: the paper's analytical energy model per encoder block."""

from __future__ import annotations

import argparse
from pathlib import Path

HELP = "analytical energy per encoder block: table, CSV/JSON and plots"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("model")
    g.add_argument(
        "--preset",
        default="bert-base",
        help="bert-base (W1), llama2-7b, llama2-13b, llama2-70b or minilm-l6 (W4)",
    )
    for name, what in (
        ("hidden", "width C"),
        ("ffn", "FFN width F"),
        ("heads", "attention heads"),
        ("layers", "blocks L"),
        ("kv-heads", "K/V heads (grouped-query attention)"),
        ("ffn-linears", "FFN matrices: 2 (GELU) or 3 (SwiGLU)"),
        ("weight-bits", "weight width 1..8 (paper: BERT 1, LLaMA-2 4)"),
    ):
        g.add_argument(f"--{name}", type=int, help=f"override the preset's {what} (custom model)")
    g.add_argument("--batch", type=int, help="batch B (default: 64)")
    g.add_argument("--seq", type=int, help="sequence length S (default: 128)")

    g = parser.add_argument_group("activity")
    g.add_argument(
        "--T",
        type=int,
        help="time steps of the TTFS/M-TTFS rows (needs --rate or --rates-file unless 16)",
    )
    g.add_argument(
        "--k", type=int, help="dead-zone radius of the --rate row, only with --rate (default: 1)"
    )
    src = g.add_mutually_exclusive_group()
    src.add_argument(
        "--rate",
        type=float,
        metavar="PCT",
        help="per-step spike rate in percent of one M-TTFS row at radius --k",
    )
    src.add_argument(
        "--rates-file",
        metavar="F",
        help="statistics JSON (code histograms or measured rates, docs/energy.md)",
    )
    g.add_argument(
        "--task",
        default="SST-2",
        help="the paper's task whose printed rates to use, or 'avg'",
    )
    g.add_argument(
        "--bit-convention",
        default="signed",
        choices=("signed", "magnitude"),
        help="bit-serial bit-events from histograms: one-bits of the two's-complement "
        "code (signed, what the paper's rows fit) or of the magnitude",
    )

    g = parser.add_argument_group("unit costs")
    g.add_argument(
        "--unit-costs",
        default="paper",
        metavar="paper|FILE",
        help="complete unit-cost table: the paper's or a JSON file",
    )
    g.add_argument(
        "--synth",
        metavar="synth_report.json",
        help="overlay the unit costs a synthesis report provides",
    )
    g.add_argument(
        "--event-cost",
        metavar="PJ|router",
        help="sparse-event movement cost E_move_event in pJ (paper: 3.0), or 'router' for the "
        "synthesized router's E_move_event_router from --synth",
    )

    g = parser.add_argument_group("conventions (defaults reproduce the paper)")
    g.add_argument(
        "--no-qnn-kv-move",
        action="store_true",
        help="do not charge the dense QNN movement for K/V operands",
    )
    g.add_argument(
        "--bitserial-kv-write", action="store_true", help="charge the bit-serial QNN the K/V write"
    )
    g.add_argument(
        "--bitserial-attention-bits",
        type=int,
        default=1,
        metavar="N",
        help="bits the bit-serial QNN reads per attention delivery",
    )
    g.add_argument(
        "--pooler", action="store_true", help="add the QNN pooler transfer amortized over L blocks"
    )
    g.add_argument(
        "--attention-outputs",
        default="paper",
        choices=("paper", "exact"),
        help="P V outputs counted as B*h*S^2 (paper) or B*h*S*d_k (exact)",
    )

    g.add_argument(
        "--event-accumulate",
        default="weight-width",
        choices=("weight-width", "one-bit"),
        help="operator an event pays on wider-than-1-bit weights: the weight's width "
        "(E_MAC4x4 / E_ACC4 at 4 bits) or the paper's 1-bit E_MAC4 / E_ACC1",
    )
    g.add_argument(
        "--activation-bits",
        type=int,
        metavar="N",
        help="dense activation and K/V width a (default: log2 T, 4 at T=16)",
    )

    g = parser.add_argument_group("output")
    g.add_argument(
        "--out", default="build/energy", metavar="DIR", help="report folder"
    )
    g.add_argument("--no-plots", action="store_true", help="skip the PNG plots")


def _dims(args):
    import energy_model as em

    dims = em.preset(args.preset)
    overrides = {
        "hidden": args.hidden,
        "ffn": args.ffn,
        "heads": args.heads,
        "layers": args.layers,
        "kv_heads": args.kv_heads,
        "ffn_linears": args.ffn_linears,
        "weight_bits": args.weight_bits,
        "batch": args.batch,
        "seq": args.seq,
    }
    overrides = {k: v for k, v in overrides.items() if v is not None}
    if not overrides:
        return dims
    structural = set(overrides) - {"batch", "seq"}
    fields = {**dims.to_json(), **overrides}
    name = f"custom ({dims.name} with {', '.join(sorted(structural))})" if structural else dims.name
    if "heads" in overrides and "kv_heads" not in overrides and dims.kv_heads == dims.heads:
        fields["kv_heads"] = overrides["heads"]
    return em.ModelDims(
        name,
        fields["hidden"],
        fields["ffn"],
        fields["heads"],
        fields["layers"],
        kv_heads=fields["kv_heads"],
        ffn_linears=fields["ffn_linears"],
        weight_bits=fields["weight_bits"],
        batch=fields["batch"],
        seq=fields["seq"],
        source=dims.source + ("; overridden on the command line" if overrides else ""),
    )


def _rates(args, dims):
    import energy_model as em

    T = 16 if args.T is None else args.T
    if args.k is not None and args.rate is None:
        raise ValueError(
            f"--k {args.k} applies to the row of --rate; the paper's rates and a --rates-file "
            "carry their own radii"
        )
    if args.rates_file is not None:
        rates = em.load_stats(args.rates_file, convention=args.bit_convention)
        if args.T is not None and rates.T != args.T:
            raise ValueError(f"--T {args.T} differs from T={rates.T} in {args.rates_file}")
        return rates
    if args.rate is not None:
        return em.Rates.uniform(
            args.rate,
            T=T,
            k=1 if args.k is None else args.k,
            source="command line --rate",
            baselines=dims.name == "bert-base",
        )
    if T != 16:
        raise ValueError(f"--T {T} needs --rate or --rates-file: the paper's rates are for T=16")
    if args.preset == "minilm-l6":
        raise ValueError(
            "--preset minilm-l6 needs --rate or --rates-file (the stats.json of matterhorn stats): "
            "the paper has no MiniLM rates"
        )
    if args.preset.startswith("llama2-"):
        return em.Rates.paper_llama(args.preset.split("-")[1].upper())
    return em.Rates.paper(args.task)


def _event_cost(text: str | None) -> float | str | None:
    if text is None or text == "router":
        return text
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"--event-cost must be a number of pJ or 'router', not {text!r}") from None


def run(args: argparse.Namespace) -> int:
    import energy_model as em
    from energy_model.output import write_report
    from toolkit_base import console
    from toolkit_base.checks import check_out_writable

    check_out_writable(args.out)  # staged in .energy-* inside it
    dims = _dims(args)
    rates = _rates(args, dims)
    costs = em.resolve_unit_costs(
        args.unit_costs, synth=args.synth, event_cost_pJ=_event_cost(args.event_cost)
    )
    options = em.Options(
        qnn_kv_operand_move=not args.no_qnn_kv_move,
        bitserial_kv_write=args.bitserial_kv_write,
        bitserial_attention_read_bits=args.bitserial_attention_bits,
        pooler_amortization=args.pooler,
        attention_outputs=args.attention_outputs,
        activation_bits=args.activation_bits,
        bit_convention=args.bit_convention,
        event_accumulate=args.event_accumulate,
    )
    report = em.compute(dims, rates, costs, options)
    sweep = em.sensitivity(dims, rates, costs, options)
    written = write_report(report, args.out, sweep=sweep, plots=not args.no_plots)

    console.out(report.table().rstrip("\n"))
    console.out(f"rates: {rates.source}")
    sources = sorted({c.provenance.split(":")[0] for c in costs.values()})
    console.out(f"unit costs: {', '.join(sources)}")
    groups: dict[str, list[str]] = {}
    for key, cost in costs.items():
        groups.setdefault(cost.provenance, []).append(key)
    for provenance, keys in groups.items():
        if not provenance.startswith("paper"):
            console.out(f"  {', '.join(keys)}: {provenance}")
    for row, x in sweep.crossovers_in_range().items():
        console.out(f"crossover with dense QNN: {row} at {x:.4f} pJ/event")
    for row in sweep.coefficients:
        if row.startswith("Matterhorn M-TTFS"):
            lo, hi = min(sweep.event_costs_pJ), max(sweep.event_costs_pJ)
            console.out(
                f"energy relative to the dense QNN: {row}: {sweep.rel(row, lo):.3f}x at "
                f"{lo:g} pJ/event, {sweep.rel(row, hi):.3f}x at {hi:g} pJ/event"
            )
    out = Path(args.out)
    console.out(f"wrote {', '.join(str(out / p.name) for p in written.values())}")
    return 0
