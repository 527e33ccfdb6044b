"""Speed and memory of dead-zone fine-tuning (``matterhorn finetune``), projected to a default run.

Prints the conversion time, seconds per training step (batch 16, the default training text,
length-pooled batches), seconds per evaluated sentence, the peak resident memory, and the
projected wall time of the default run at k = 0 (``FinetuneConfig.steps`` steps from the
conversion, 632 evaluation sentences before and after) and at one radius k >= 1 (k = 0 first,
then ``K_STEPS`` steps at k from it, four evaluations).

    python benchmarks/bench_finetune.py [--steps 40] [--k 1] [--threads 2] [--sentences 32]
                                        [--integer]

``--integer`` runs the QNN in integer mode (:func:`networks.integer.integer_mode_`, the default
widths): the evaluations run the integer network and the training its twin, as
``matterhorn finetune --integer``. An evaluation at k = 0 also runs the unmasked network
(Proposition 2's check), so the k = 0 and the k >= 1 evaluations are timed apart.
"""

from __future__ import annotations

import argparse
import resource
import time

import torch

from networks.bert import load_minilm
from networks.corpus import load_corpus
from networks.finetune import FinetuneConfig, train
from networks.finetune_report import (
    EXTRA_CORPORA,
    K_STEPS,
    evaluate,
    float_embeddings,
)
from networks.integer import IntegerSpec, integer_mode_
from networks.ptq import convert

EVAL_SENTENCES = 632


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--k", type=int, default=1)
    parser.add_argument("--threads", type=int, default=FinetuneConfig.threads)
    parser.add_argument("--sentences", type=int, default=32)
    parser.add_argument("--integer", action="store_true", help="the integer mode (--integer)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    model, tok = load_minilm()
    main_corpus = load_corpus("pydoc-topics")
    texts = list(main_corpus.calibration)
    for name in EXTRA_CORPORA:
        texts += load_corpus(name).calibration
    texts = list(dict.fromkeys(texts))  # as finetune_minilm: duplicates once
    start = time.perf_counter()
    qnn = convert(model, tok, main_corpus.calibration)
    if args.integer:
        integer_mode_(qnn, IntegerSpec())
    conv = time.perf_counter() - start
    ev = main_corpus.evaluation[: args.sentences]
    emb = float_embeddings(model, tok, ev)
    per_sentence = {}
    for k in dict.fromkeys((0, args.k)):
        start = time.perf_counter()
        evaluate(qnn, tok, ev, k, emb)
        per_sentence[k] = (time.perf_counter() - start) / len(ev)
    cfg = FinetuneConfig(k=args.k, steps=args.steps, threads=args.threads)
    _, log = train(model, qnn, tok, texts, cfg)
    per_step = log.seconds / args.steps
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    projected = conv + FinetuneConfig.steps * per_step + 2 * EVAL_SENTENCES * per_sentence[0]
    # the default at k >= 1: k = 0 first, then K_STEPS at k from it
    chained = projected + K_STEPS * per_step + 2 * EVAL_SENTENCES * per_sentence[args.k]
    mode = "integer" if args.integer else "float"
    print(f"threads {args.threads}, k={args.k}, {mode} mode; conversion {conv:.1f} s")
    print(f"training: {per_step:.2f} s/step (batch {cfg.batch}, {len(texts)} sentences)")
    for k, sec in per_sentence.items():
        print(f"evaluation at k = {k}: {sec * 1000:.0f} ms/sentence")
    print(f"peak resident memory: {peak:.2f} GiB")
    print(f"projected default run at k = 0: {projected / 60:.1f} min")
    print(f"projected default run at one k >= 1 (k = 0 trained first): {chained / 60:.1f} min")


if __name__ == "__main__":
    main()
