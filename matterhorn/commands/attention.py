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
    from regression.attention import minilm_case
    from regression.attention_run import run_attention
    from regression.execute import OWN_DIRS
    from rtl_gen.attn_params import MAX_SEQ, AttentionConfig
    from toolkit_base.checks import check_int, check_out_writable, unique

    # everything that can be checked before MiniLM is converted and any Verilog generated
    model = BertConfig.from_json(model_dir() / "config.json")
    heads = model.num_attention_heads if args.heads is None else args.heads
    head_dim = model.head_dim if args.head_dim is None else args.head_dim
    check_int("heads", heads, 1, 16)
    check_int("head_dim", head_dim, 1, 256)
    if heads != model.num_attention_heads:
        raise ValueError(f"--heads {heads} does not match MiniLM's "
                         f"{model.num_attention_heads} heads")
    if head_dim != model.head_dim:
        raise ValueError(f"--head-dim {head_dim} does not match MiniLM's head dimension "
                         f"{model.head_dim}")
    check_int("seq_max", args.seq_max, 1, MAX_SEQ)
    check_int("longest", args.longest, 1, model.max_position_embeddings)
    if args.longest > args.seq_max:
        raise ValueError(f"--longest {args.longest} exceeds --seq-max {args.seq_max}: a "
                         f"sequence longer than the design's seq_max={args.seq_max} cannot run "
                         "(generate it with a larger --seq-max)")
    check_int("sentences", args.sentences, 1, 4096)
    check_k(args.k, 16)
    check_out_writable(args.out, subdirs=OWN_DIRS)
    cfg = AttentionConfig(heads=heads, head_dim=head_dim, seq_max=args.seq_max, T=16)
    sims = unique(args.sim or ("icarus", "verilator"))
    for name in sims:
        sim.ensure_simulator(name)
    import torch

    torch.set_num_threads(1)
    case = minilm_case(args.sentences, k=args.k, longest=args.longest)
    lengths = [int(q.shape[0]) for q, *_ in case.sequences]
    print(f"MiniLM block 0 attention: {heads} heads x {head_dim}, {len(lengths)} sentences of "
          f"{min(lengths)} to {max(lengths)} tokens, k={args.k}, design seq_max={args.seq_max}")
    ok = True
    for name in sims:
        r = run_attention(cfg, case, name, out_dir=args.out)
        res, f = r.result, r.figures
        if res.failed_in:
            print(f"{name}: FAIL in {res.failed_in}, before the bench's verdict: {res.error}")
            ok = False
            continue
        status = "PASS" if res.passed else f"FAIL: {res.error}"
        print(f"{name}: {status}; {f['tokens']} tokens, {f['cycles']} cycles, "
              f"{f['cycles_per_token']} cycles/token, {f['tokens_per_second']} tokens/s, "
              f"{res.mismatches} mismatches, build {res.build_seconds:.1f} s, run "
              f"{res.run_seconds:.1f} s")
        ok = ok and res.passed
        if res.passed:
            _table(f)
    return 0 if ok else 1


def _table(f: dict) -> None:
    """Events per token, per position and head: the design's counters and the golden model's;
    then the key and value writes of each sequence."""
    from toolkit_base.tables import markdown_table

    heads = len(f["events_per_token"]["query"])
    rows = []
    for pos in ("query", "attn_prob", "attn_out_in"):
        rows.append([f"{pos} (design)", *map(str, f["events_per_token"][pos])])
        rows.append([f"{pos} (golden)", *map(str, f["golden_events_per_token"][pos])])
    print("\n".join(markdown_table(["events per token", *(f"h{h}" for h in range(heads))], rows)))
    print("\n".join(markdown_table(
        ["sequence", "tokens", "key writes", "value writes"],
        [[str(i), str(s["tokens"]), str(s["key_writes"]), str(s["value_writes"])]
         for i, s in enumerate(f["sequences"])])))
