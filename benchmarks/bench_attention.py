"""Speed of the attention path (docs/rtl_attention.md, "Speed"): MiniLM block 0's twelve heads
(d_k = 32, 64 key slots) on one 64-token calibration sentence, through the fast harness on
Verilator (and Icarus with ``--icarus``): cycles per token and tokens per second, the sequence's
key and value writes, the build time. Prints figures, asserts nothing.

    python benchmarks/bench_attention.py [--repeat 4] [--icarus] [--out build/bench_attention]
"""

from __future__ import annotations

import argparse
import time

from regression.attention import AttentionCase, minilm_case
from regression.attention_run import run_attention
from rtl_gen.attn_params import AttentionConfig


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=4, help="passes over the sequence [4]")
    ap.add_argument("--icarus", action="store_true", help="also time Icarus (one pass)")
    ap.add_argument("--out", default="build/bench_attention")
    args = ap.parse_args()
    t0 = time.perf_counter()
    case = minilm_case(8, k=1)
    longest = max(case.sequences, key=lambda s: s[0].shape[0])
    one = AttentionCase(case.path, (longest,), f"{case.source}, its {longest[0].shape[0]}-token "
                        "sentence")
    print(f"capture: {time.perf_counter() - t0:.1f} s; {one.source}")
    cfg = AttentionConfig(heads=12, head_dim=32, seq_max=64, T=16)
    for sim_name, repeat in (("verilator", args.repeat), *((("icarus", 1),) if args.icarus
                                                            else ())):
        r = run_attention(cfg, one, sim_name, out_dir=args.out, repeat=repeat,
                          name=f"bench-{repeat}")
        f, res = r.figures, r.result
        print(f"{sim_name}: {'PASS' if r.passed else 'FAIL: ' + res.error}; {f['tokens']} tokens "
              f"({repeat} passes), {f['cycles']} cycles, {f['cycles_per_token']} cycles/token, "
              f"{f['tokens_per_second']} tokens/s, {f['cycles'] / max(res.run_seconds, 1e-9):.0f} "
              f"cycles/s of run; build {res.build_seconds:.1f} s, run {res.run_seconds:.1f} s")
        s = f["sequences"][0]
        print(f"  per sequence of {s['tokens']} tokens: {s['key_writes']} key and "
              f"{s['value_writes']} value codes written (12 heads)")


if __name__ == "__main__":
    main()
