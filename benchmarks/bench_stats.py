"""Throughput of the MiniLM statistics pipeline (sentences/s).

Prints, for the built-in corpus: the conversion time (weights, scales, bias correction, I_max on
the calibration sentences), and sentences/s of the float encoder, the QNN, and the full
statistics pass (float + QNN + M-TTFS k = 0..k_max with event encoding at every position).

    python benchmarks/bench_stats.py [--sentences 64] [--calibration 64] [--k-max 4] [--threads 1]
"""

from __future__ import annotations

import argparse
import time

import torch

from networks.bert import load_minilm
from networks.corpus import load_corpus
from networks.ptq import convert, set_masks_
from networks.stats import collect


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sentences", type=int, default=64)
    parser.add_argument("--calibration", type=int, default=64)
    parser.add_argument("--k-max", type=int, default=4)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    model, tok = load_minilm()
    corpus = load_corpus("pydoc-topics")
    cal = corpus.calibration[: args.calibration]
    ev = corpus.evaluation[: args.sentences]
    start = time.perf_counter()
    qnn = convert(model, tok, cal)
    conv = time.perf_counter() - start
    print(f"threads {args.threads}; conversion on {len(cal)} sentences: {conv:.1f} s")

    def rate(fn) -> float:
        start = time.perf_counter()
        with torch.no_grad():
            for s in ev:
                fn(*tok([s]))
        return len(ev) / (time.perf_counter() - start)

    print(f"float encoder:      {rate(model.embed):8.1f} sentences/s")
    run = collect(model, qnn, tok, ev, args.k_max)
    set_masks_(qnn, None)  # the plain QNN: no event encoding
    print(f"W4A4 QNN:           {rate(qnn.embed):8.1f} sentences/s")
    print(
        f"statistics pass:    {len(ev) / run.seconds:8.1f} sentences/s "
        f"(float + QNN + M-TTFS k=0..{args.k_max}; {run.tokens / run.seconds:.0f} tokens/s)"
    )


if __name__ == "__main__":
    main()
