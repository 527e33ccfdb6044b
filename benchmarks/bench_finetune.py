"""Speed and memory of dead-zone fine-tuning (``matterhorn finetune``), projected to a default run.

Prints the conversion time, seconds per training step (batch 16, the default training text,
length-pooled batches), seconds per evaluated sentence, the peak resident memory, and the
projected wall time of the default run at k = 0 (``FinetuneConfig.steps`` steps from the
conversion, 632 evaluation sentences before and after) and at one radius k >= 1 (k = 0 first,
then ``K_STEPS`` steps at k from it, four evaluations).

    python benchmarks/bench_finetune.py [--steps 40] [--k 1] [--threads 2] [--sentences 32]
                                        [--integer]

The times are wall times; with ``--threads 1`` the projection is also made from CPU time (what
one idle core would take: on a shared machine the steadier figure). ``--integer`` runs the QNN
in integer mode (:func:`networks.integer.integer_mode_`, the default
widths): the evaluations run the integer network and the training its twin, as
``matterhorn finetune --integer``. An evaluation at k = 0 also runs the unmasked network
(Proposition 2's check), so the k = 0 and the k >= 1 evaluations are timed apart.
"""

from __future__ import annotations

import argparse
import os
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
    start, cpu = time.perf_counter(), time.process_time()
    qnn = convert(model, tok, main_corpus.calibration)
    if args.integer:
        integer_mode_(qnn, IntegerSpec())
    conv, conv_cpu = time.perf_counter() - start, time.process_time() - cpu
    ev = main_corpus.evaluation[: args.sentences]
    emb = float_embeddings(model, tok, ev)
    per_sentence, cpu_sentence = {}, {}
    for k in dict.fromkeys((0, args.k)):
        start, cpu = time.perf_counter(), time.process_time()
        evaluate(qnn, tok, ev, k, emb)
        per_sentence[k] = (time.perf_counter() - start) / len(ev)
        cpu_sentence[k] = (time.process_time() - cpu) / len(ev)
    cfg = FinetuneConfig(k=args.k, steps=args.steps, threads=args.threads)
    marks: list[float] = []
    _, log = train(
        model, qnn, tok, texts, cfg, progress=lambda *_: marks.append(time.process_time())
    )
    per_step = log.seconds / args.steps
    # CPU seconds a step (process time between the first and the last step's end): on a shared
    # machine the one-thread figure is the steadier one
    cpu_step = (marks[-1] - marks[0]) / max(1, len(marks) - 1)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20

    def project(conv: float, step: float, sentence: dict) -> tuple[float, float]:
        at0 = conv + FinetuneConfig.steps * step + 2 * EVAL_SENTENCES * sentence[0]
        # the default at k >= 1: k = 0 first, then K_STEPS at k from it
        return at0, at0 + K_STEPS * step + 2 * EVAL_SENTENCES * sentence[args.k]

    projected, chained = project(conv, per_step, per_sentence)
    mode = "integer" if args.integer else "float"
    print(f"threads {args.threads}, k={args.k}, {mode} mode; conversion {conv:.1f} s")
    print(
        f"training: {per_step:.2f} s/step, {cpu_step:.2f} CPU s/step (batch {cfg.batch}, "
        f"{len(texts)} sentences)"
    )
    for k, sec in per_sentence.items():
        print(
            f"evaluation at k = {k}: {sec * 1000:.0f} ms/sentence, "
            f"{cpu_sentence[k] * 1000:.0f} CPU ms/sentence"
        )
    print(f"peak resident memory: {peak:.2f} GiB")
    print(f"projected default run at k = 0: {projected / 60:.1f} min")
    print(f"projected default run at one k >= 1 (k = 0 trained first): {chained / 60:.1f} min")
    if args.threads == 1:
        # CPU time is what an idle core would take; wall time on a busy machine is longer
        cpu0, cpu1 = project(conv_cpu, cpu_step, cpu_sentence)
        print(f"the same from CPU time (one idle core): {cpu0 / 60:.1f} min, {cpu1 / 60:.1f} min")
    print(f"load average (1 min) at the end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
