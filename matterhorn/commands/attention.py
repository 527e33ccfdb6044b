"""``matterhorn attention``: real sentences through the attention path of MiniLM's block 0 on
the mesh (docs/rtl_attention.md), every event and counter against the golden model."""

from __future__ import annotations

import argparse

HELP = ("run real sentences through the attention path of MiniLM's block 0 on the mesh "
        "(run-time key and value tiles, softmax nodes), every event and counter against the "
        "golden model")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sentences", type=int, default=8,
                        help="calibration sentences, lengths spread over the split")
    parser.add_argument("--longest", type=int, default=64,
                        help="longest sentence to pick, in tokens")
    parser.add_argument("--k", type=int, default=1, help="dead-zone radius")
    parser.add_argument("--heads", type=int, default=None,
                        help="heads of the generated design (the model's: 12)")
    parser.add_argument("--head-dim", type=int, default=None,
                        help="head dimension of the generated design (the model's: 32)")
    parser.add_argument("--seq-max", type=int, default=64,
                        help="longest sequence of the generated design (key slots)")
    parser.add_argument("--sim", action="append", choices=("icarus", "verilator"),
                        help="simulator, repeatable (default: icarus and verilator)")
    parser.add_argument("--out", default="build/attention",
                        help="folder of the generated Verilog, builds and runs")


def run(args: argparse.Namespace) -> int:
    from golden_models.codespace import check_k
    from networks.bert import BertConfig, model_dir
    from regression import sim
    from regression.attention import minilm_case, minilm_sentences
    from regression.attention_run import run_attention
    from regression.execute import OWN_DIRS
    from rtl_gen.attn_params import MAX_SEQ, AttentionConfig
    from toolkit_base.checks import check_int, check_out_writable, unique

    # everything that can be checked before MiniLM is converted and any Verilog generated
    model = BertConfig.from_json(model_dir() / "config.json")
    heads = model.num_attention_heads if args.heads is None else args.heads
    head_dim = model.head_dim if args.head_dim is None else args.head_dim
    check_int("--heads", heads, 1, 16)
    check_int("--head-dim", head_dim, 1, 256)
    if heads != model.num_attention_heads:
        raise ValueError(f"--heads {heads} does not match MiniLM's "
                         f"{model.num_attention_heads} heads")
    if head_dim != model.head_dim:
        raise ValueError(f"--head-dim {head_dim} does not match MiniLM's head dimension "
                         f"{model.head_dim}")
    check_int("--seq-max", args.seq_max, 1, MAX_SEQ)
    check_int("--longest", args.longest, 1, model.max_position_embeddings)
    if args.longest > args.seq_max:
        raise ValueError(f"--longest {args.longest} exceeds --seq-max {args.seq_max}: a "
                         f"sequence longer than the design's seq_max={args.seq_max} cannot run "
                         "(generate it with a larger --seq-max)")
    check_int("--sentences", args.sentences, 1, 4096)
    check_k(args.k, 16)
    check_out_writable(args.out, subdirs=OWN_DIRS)
    cfg = AttentionConfig(heads=heads, head_dim=head_dim, seq_max=args.seq_max, T=16)
    sims = unique(args.sim or ("icarus", "verilator"))
    for name in sims:
        sim.ensure_simulator(name)
    from matterhorn import attention_report as report
    from toolkit_base import console

    minilm_sentences(args.sentences, longest=args.longest)  # enough sentences, before work
    report.retract(args.out)  # an interrupted run leaves no earlier run's report
    import torch

    torch.set_num_threads(1)
    runs = {}
    with console.steps("attention", 1 + len(sims)) as steps:
        steps.start(f"converting MiniLM and picking {args.sentences} sentences (k={args.k})")
        case = minilm_case(args.sentences, k=args.k, longest=args.longest)
        lengths = [int(q.shape[0]) for q, *_ in case.sequences]
        steps.advance(f"{len(lengths)} sentences of {min(lengths)} to {max(lengths)} tokens")
        for name in sims:
            steps.start(f"{name}: generating, building and running the attention path")
            runs[name] = r = run_attention(cfg, case, name, out_dir=args.out)
            line = report.result_line(name, r.result, r.figures)
            steps.advance(line if r.passed else console.Alert(line))
    doc = report.document({"heads": heads, "head_dim": head_dim, "seq_max": args.seq_max,
                           "T": cfg.T}, args.k, lengths, runs)
    path = report.write(doc, args.out)
    console.out(f"MiniLM block 0 attention: {heads} heads x {head_dim}, {len(lengths)} "
                f"sentences of {min(lengths)} to {max(lengths)} tokens, k={args.k}, design "
                f"seq_max={args.seq_max}")
    for name, r in runs.items():
        console.out(report.result_line(name, r.result, r.figures))
    console.detail(report.markdown(doc))
    console.out(f"report: {path}")
    return 0 if doc["passed"] else 1


