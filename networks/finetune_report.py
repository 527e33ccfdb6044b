"""``matterhorn finetune``: from corpus to fine-tuned checkpoint and ``finetune.json``.

One call fine-tunes the W4A4 MiniLM QNN at one radius ``k`` (:mod:`networks.finetune`)
and measures it before and after on the evaluation split (:func:`evaluate`): cosine of the
sentence embeddings to the float model (mean and minimum), top-1 retrieval agreement and the
spike rates per position. The result goes to ``<out>/k<k>/`` (a checkpoint folder,
:mod:`networks.checkpoint`); then ``<out>/finetune.json`` is rebuilt from every
complete checkpoint folder in ``<out>``, so runs at several radii (one call each, or one call
with several) collect into one report and one plot.

Data: the conversion's calibration and the training use only calibration-split sentences (hash
rule of :mod:`networks.corpus`): those of the main corpus and of the extra training
corpora (default ``python-docstrings``). The evaluation split of the main corpus is never seen.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

import torch

from networks import checkpoint
from networks.bert import POSITIONS, BertEncoder, Tokenizer, check_spec_for_model
from networks.corpus import check_corpus, load_corpus
from networks.finetune import FinetuneConfig, train
from networks.integer import IntegerSpec, integer_mode_
from networks.ptq import PTQConfig, convert, set_masks_
from networks.stats import Tally, retrieval_agreement
from toolkit_base import console
from toolkit_base.checks import check_int, check_out_writable
from toolkit_base.files import write_atomic
from toolkit_base.schemas import validate
from toolkit_base.tables import markdown_table

SCHEMA = "matterhorn.finetune/1"
MODELS = {"minilm": "all-MiniLM-L6-v2"}
#: Extra training text (calibration split only) used by default.
EXTRA_CORPORA = ("python-docstrings",)
#: Training steps of a ``k >= 1`` run started from the fine-tuned ``k = 0`` QNN (``start="k0"``).
K_STEPS = 750
#: Where a ``k >= 1`` run starts: the fine-tuned ``k = 0`` QNN (default) or the conversion.
STARTS = ("k0", "conversion")
#: The plot :func:`write_summary` asks the ``plot`` callback for.
PLOT_FILE = "quality_vs_rate.png"


def _r(x: float) -> float:
    return round(float(x), 6)


def float_embeddings(model: BertEncoder, tok: Tokenizer, sentences: Sequence[str]) -> torch.Tensor:
    with torch.no_grad():
        return torch.cat([model.embed(*tok([s])).to(torch.float64) for s in sentences])


#: Most sentences :func:`evaluate` runs at once.
EVAL_BATCH = 64


def length_groups(lengths: Sequence[int], most: int = EVAL_BATCH) -> list[list[int]]:
    """Indices of sentences of one token count each (at most ``most`` a group), shortest first.

    A group runs as one batch without padding: every sentence gets exactly the values (and
    the codes, which the statistics count) it gets alone, in far fewer, larger operations.
    """
    by_length: dict[int, list[int]] = {}
    for i, n in enumerate(lengths):
        by_length.setdefault(n, []).append(i)
    return [
        group[j : j + most]
        for _, group in sorted(by_length.items())
        for j in range(0, len(group), most)
    ]


def evaluate(
    qnn: BertEncoder, tok: Tokenizer, sentences: Sequence[str], k: int, emb_float: torch.Tensor
) -> dict:
    """Quality and spike rates of the M-TTFS network at radius ``k``.

    The sentences run in batches of one length each (:func:`length_groups`): no padding, so
    every figure is the one of a run a sentence at a time. At ``k = 0`` the run is also compared
    with the unmasked QNN and must be bit-exact (Proposition 2; ``RuntimeError`` otherwise).
    """
    points = qnn.spike_points()
    i_max = {id(p): p.mask.i_max for p in points}
    tally = Tally()
    tokens = [tok([s]) for s in sentences]
    embs: list[torch.Tensor | None] = [None] * len(sentences)
    plain: list[torch.Tensor | None] = [None] * len(sentences)
    try:
        with torch.no_grad():
            for group in length_groups([int(ids.shape[1]) for ids, _ in tokens]):
                ids = torch.cat([tokens[i][0] for i in group])
                mask = torch.cat([tokens[i][1] for i in group])
                if k == 0:
                    set_masks_(qnn, None)
                    for i, e in zip(group, qnn.embed(ids, mask), strict=True):
                        plain[i] = e[None]
                    _restore(points, i_max, 0)
                set_masks_(qnn, k)
                for p in points:
                    p.recorder = tally.record
                for i, e in zip(group, qnn.embed(ids, mask), strict=True):
                    embs[i] = e[None]
                for p in points:
                    p.recorder = None
    finally:
        for p in points:
            p.recorder = None
        _restore(points, i_max, 0)
    emb = torch.cat(embs)
    bit_exact = None
    if k == 0:
        bit_exact = bool(torch.equal(emb, torch.cat(plain)))
        if not bit_exact:
            raise RuntimeError("M-TTFS k=0 differs from the QNN: Proposition 2 is violated")
    cos = (emb * emb_float).sum(1) / (emb.norm(dim=1) * emb_float.norm(dim=1))
    T = points[0].space.T

    def rate(keys) -> float:
        n = sum(int(tally.hist[key].sum()) for key in keys)
        return _r(sum(tally.events[key] for key in keys) / (n * T))

    blocks = range(len(qnn.layers))
    return {
        "cos_float": {"mean": _r(cos.mean()), "min": _r(cos.min())},
        "retrieval_agreement": _r(retrieval_agreement(emb, emb_float)),
        "bit_exact_qnn": bit_exact,
        "rates": {
            "network": rate([(b, n) for b in blocks for n in POSITIONS]),
            "positions": {n: rate([(b, n) for b in blocks]) for n in POSITIONS},
        },
    }


def _restore(points, i_max: dict, k: int) -> None:
    from golden_models.mask import Mask

    for p in points:
        p.mask = Mask(p.space, i_max[id(p)], k)


def finetune_minilm(
    ks: Sequence[int],
    out: Path | str,
    *,
    corpus: str = "pydoc-topics",
    extra: Sequence[str] = EXTRA_CORPORA,
    steps: int = FinetuneConfig.steps,
    k_steps: int | None = K_STEPS,
    lr: float = FinetuneConfig.lr,
    scale_lr: float = FinetuneConfig.scale_lr,
    batch: int = 16,
    seed: int = 0,
    threads: int = FinetuneConfig.threads,
    sentences: int | None = None,
    calibration: int | None = None,
    training: int | None = None,
    model: str = "minilm",
    start: str = "k0",
    integer: IntegerSpec | None = None,
    plot: Callable[[dict, Path], object] | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict:
    """Fine-tune at every radius in ``ks``; write ``<out>/k<k>/`` and ``<out>/finetune.json``.

    ``steps`` is the length of a run from the conversion (``k = 0``, or every radius with
    ``start="conversion"``); ``k_steps`` that of a ``k >= 1`` run from the fine-tuned ``k = 0``
    QNN (``None``: ``steps``). ``sentences``, ``calibration`` and ``training`` limit the
    evaluation, conversion and training sentences (default: all), for short runs. With
    ``start="k0"`` (the default, the paper's order) every ``k >= 1`` starts from the fine-tuned
    ``k = 0`` QNN: the one trained in this call, else a complete ``<out>/k0`` checkpoint of the
    same settings, else ``k = 0`` is trained (and saved) first. With ``start="conversion"``
    every radius starts from the conversion. With ``integer`` (an
    :class:`networks.integer.IntegerSpec`) the QNN runs in integer mode from the conversion on:
    the evaluations, the twin and the checkpoints are the integer network's, and
    ``finetune.json`` records the spec as ``integer``. Returns the rebuilt report.
    """
    from networks.hf_folder import load_model, resolve_model

    source = resolve_model(model)
    if integer is not None:
        check_spec_for_model(integer, source.config)
    if start not in STARTS:
        raise ValueError(f"start must be one of {STARTS}, not {start!r}")
    chained = start == "k0"
    if not ks:
        raise ValueError("give at least one radius k")
    if k_steps is not None:
        check_int("k_steps", k_steps, 1, 1_000_000)
    k0 = FinetuneConfig(
        k=0, steps=steps, batch=batch, lr=lr, scale_lr=scale_lr, seed=seed, threads=threads
    )
    cfgs = [
        replace(k0, k=k, steps=k_steps if k and chained and k_steps is not None else steps)
        for k in ks
    ]
    for name, v in (("sentences", sentences), ("calibration", calibration), ("training", training)):
        if v is not None:
            check_int(name, v, 2 if name == "sentences" else 1, 10**9)
    # every input before a corpus is built, the model loaded or anything written
    for name in (corpus, *extra):
        check_corpus(name)
    check_out_writable(out, subdirs=[f"k{cfg.k}" for cfg in cfgs])
    say = progress or (lambda _msg: None)
    main = load_corpus(corpus)
    extras = [load_corpus(name) for name in extra]
    cal = main.calibration[:calibration]
    ev = main.evaluation[:sentences]
    if len(ev) < 2:
        raise ValueError(f"corpus {corpus!r} has {len(ev)} evaluation sentences; needs 2")
    texts = list(dict.fromkeys([*main.calibration, *(s for c in extras for s in c.calibration)]))
    texts = texts[:training]
    if len(texts) < batch:
        raise ValueError(
            f"corpus {corpus!r} gives {len(texts)} training sentences, fewer than batch={batch}"
        )
    saved = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        float_model, tok = load_model(source)
        ptq = PTQConfig()
        say(f"converting on {len(cal)} calibration sentences")
        qnn = convert(float_model, tok, cal, ptq)
        if integer is not None:
            integer_mode_(qnn, integer)
        emb_float = float_embeddings(float_model, tok, ev)
        head = _document(source, main, len(cal), len(ev), ptq, [], integer)
        corpora = [
            {"name": c.name, "source": c.source, "split": "calibration"} for c in (main, *extras)
        ]

        def run_at(cfg: FinetuneConfig, start_qnn: BertEncoder, init: str) -> BertEncoder:
            start = time.perf_counter()
            say(f"k={cfg.k}: evaluating the conversion on {len(ev)} sentences")
            before = evaluate(qnn, tok, ev, cfg.k, emb_float)
            cos = before["cos_float"]["mean"]
            say(f"k={cfg.k}: before cos {cos:.4f}; training {cfg.steps} steps from the {init}")

            with console.steps(f"finetune k={cfg.k}", cfg.steps, every=25) as bar:

                def step_log(step: int, loss: float) -> None:
                    bar.advance(f"step {step} loss {loss:.4f}")

                tuned, log = train(float_model, start_qnn, tok, texts, cfg, progress=step_log)
            after = evaluate(tuned, tok, ev, cfg.k, emb_float)
            say(f"k={cfg.k}: after cos {after['cos_float']['mean']:.4f}")
            run = {
                "k": cfg.k,
                "config": {
                    **{n: v for n, v in cfg.as_dict().items() if n != "k"},
                    "init": init,
                },
                "training": {
                    "corpora": corpora,
                    "sentences": len(texts),
                    "loss_first": _r(log.losses[0]),
                    "loss_last": _r(log.losses[-1]),
                    "train_seconds": round(log.seconds, 1),
                    "wall_seconds": round(time.perf_counter() - start, 1),
                },
                "before": before,
                "after": after,
            }
            checkpoint.save(tuned, {**head, "runs": [run]}, Path(out) / f"k{cfg.k}")
            _refresh_summary(Path(out))
            return tuned

        base = None  # the fine-tuned k = 0 QNN, the start of every k >= 1 (start="k0")
        for cfg in sorted(cfgs, key=lambda c: c.k):
            if cfg.k == 0 or not chained:
                tuned = run_at(cfg, qnn, "conversion")
                base = tuned if cfg.k == 0 else base
                continue
            if base is None:
                base = _reuse_k0(Path(out), float_model, head, k0)
            if base is None:
                say(f"k={cfg.k}: no k0 checkpoint of these settings in {out}; training k=0 first")
                base = run_at(k0, qnn, "conversion")
            run_at(cfg, base, "k0")
    finally:
        torch.set_num_threads(saved)
    return write_summary(out, plot=plot)


def _reuse_k0(
    out: Path, float_model: BertEncoder, head: dict, cfg: FinetuneConfig
) -> BertEncoder | None:
    """The fine-tuned ``k = 0`` QNN of ``<out>/k0`` if it is complete and was made with the
    same corpus, model and training settings (else ``None``: it is trained again)."""
    folder = out / "k0"
    try:
        doc = checkpoint.read_document(folder)
    except (OSError, ValueError):
        return None
    want = {**{n: v for n, v in cfg.as_dict().items() if n != "k"}, "init": "conversion"}
    if {n: v for n, v in doc.items() if n != "runs"} != {
        n: v for n, v in head.items() if n != "runs"
    } or doc["runs"][0]["config"] != want:
        return None
    qnn, _ = checkpoint.load(folder, float_model, k=0)
    return qnn


def _document(
    source,
    main,
    n_cal: int,
    n_ev: int,
    ptq: PTQConfig,
    runs: list,
    integer: IntegerSpec | None = None,
) -> dict:
    if isinstance(source, str):  # a model's name or folder (networks.hf_folder)
        from networks.hf_folder import resolve_model

        source = resolve_model(source)
    doc = {
        "schema": SCHEMA,
        "model": source.name,
        "model_key": source.key,
        "T": 2**ptq.act_bits,
        "weight_bits": ptq.weight_bits,
        "act_bits": ptq.act_bits,
        "rounding": ptq.rounding,
        "corpus": {
            "name": main.name,
            "source": main.source,
            "calibration_sentences": n_cal,
            "evaluation_sentences": n_ev,
        },
        "recipe": {
            "student": "float32 fake-quant twin of the converted QNN; I_max, k fixed; alpha "
            "fixed, or learned (LSQ, log domain) when config.scale_lr > 0",
            "ste": "clipped STE at k=0 and at key/value; masked STE (Eq. masked_ste) at k>=1",
            "trained": "linear weights (latent, per-channel grid fixed) and biases, LayerNorms; "
            f"the {10 * source.config.num_hidden_layers} activation scales when "
            "config.scale_lr > 0",
            "loss": f"mean over {source.config.num_hidden_layers} blocks of token MSE to the "
            "float model + (1 - cos) of embeddings",
            "optimizer": "AdamW, linear warm-up then cosine decay; learned scales at "
            "config.scale_lr on the same schedule; batches length-pooled (config.pool batches "
            "a pool, 1: plain random batches)",
            "start": "k=0 from the conversion (config.init = conversion); k>=1 from the "
            "fine-tuned k=0 QNN (init = k0), or from the conversion when asked",
        },
        "runs": runs,
    }
    if integer is not None:
        # absent for float non-linearities: the documents of float runs are unchanged
        doc["integer"] = integer.as_dict()
        doc["recipe"]["integer"] = (
            "integer mode (docs/integer_contract.md): integer softmax, LayerNorm and residual "
            "adds forward, the float functions' gradients straight through; monotone GELU"
        )
    return doc


def _refresh_summary(out: Path) -> None:
    """After a checkpoint is written, the folder's summary describes the checkpoints in it
    (a run stopped after it replaced ``k0`` left a summary of the old one). Where they come
    from different settings (an earlier run's beside this one's), the stale summary files are
    removed; the end of the run refuses the mix with its reason."""
    (out / PLOT_FILE).unlink(missing_ok=True)  # drawn again at the end
    try:
        write_summary(out)
    except ValueError:
        for name in ("finetune.json", "summary.md"):
            (out / name).unlink(missing_ok=True)


def write_summary(out: Path | str, *, plot: Callable[[dict, Path], object] | None = None) -> dict:
    """Rebuild ``<out>/finetune.json``, ``summary.md`` (and the plot) from the checkpoints.

    Runs are ordered by ``k``. Checkpoints from different corpora or settings are refused.
    """
    out = Path(out)
    folders = [p for p in out.glob("k*") if p.is_dir() and p.name[1:].isdigit()]
    docs = [checkpoint.read_document(p) for p in sorted(folders)]
    if not docs:
        raise ValueError(f"{str(out)!r} holds no checkpoint folder k<k>")
    head = {n: v for n, v in docs[0].items() if n != "runs"}
    for d in docs[1:]:
        if {n: v for n, v in d.items() if n != "runs"} != head:
            raise ValueError(f"the checkpoints in {str(out)!r} come from different settings")
    runs = sorted((d["runs"][0] for d in docs), key=lambda r: r["k"])
    doc = validate({**head, "runs": runs}, "finetune", "finetune.json")
    write_atomic(out / "finetune.json", json.dumps(doc, indent=1) + "\n")
    write_atomic(out / "summary.md", summary_markdown(doc))
    if plot is not None:
        plot(doc, out / PLOT_FILE)
    return doc


def summary_markdown(doc: dict) -> str:
    """Before/after quality per radius and the spike rates per position (percent per step)."""

    def q(x: dict) -> list[str]:
        c = x["cos_float"]
        return [f"{c['mean']:.3f} / {c['min']:.3f}", f"{x['retrieval_agreement']:.3f}"]

    c = doc["corpus"]
    mode = doc.get("integer")
    lines = [
        f"# {doc['model']} W{doc['weight_bits']}A{doc['act_bits']}: dead-zone fine-tuning",
        "",
        (
            "Non-linearities: float (softmax, LayerNorm, GELU, residual adds in float64)."
            if mode is None
            else f"Non-linearities: integer mode (residual stream {mode['residual_bits']} bits, "
            f"sums {mode['residual_bits'] + mode['guard_bits']} bits, softmax table "
            f"2**{mode['exp_frac_bits']} entries; docs/integer_contract.md)."
        ),
        "",
        (
            f"Evaluation: {c['evaluation_sentences']} sentences of `{c['name']}` "
            f"({c['source']}), never trained on."
        ),
        "",
        *markdown_table(
            [
                "k",
                "cos to float before (mean / min)",
                "retrieval before",
                "cos to float after (mean / min)",
                "retrieval after",
                "rate before (%)",
                "rate after (%)",
                "steps",
                "wall (s)",
            ],
            (
                [
                    r["k"],
                    *q(r["before"]),
                    *q(r["after"]),
                    f"{100 * r['before']['rates']['network']:.2f}",
                    f"{100 * r['after']['rates']['network']:.2f}",
                    r["config"]["steps"],
                    f"{r['training']['wall_seconds']:.0f}",
                ]
                for r in doc["runs"]
            ),
        ),
        "",
        "## Spike rate per step after fine-tuning (%)",
        "",
        *markdown_table(
            ["position", *(f"k={r['k']}" for r in doc["runs"])],
            (
                [
                    name,
                    *(f"{100 * r['after']['rates']['positions'][name]:.2f}" for r in doc["runs"]),
                ]
                for name in POSITIONS
            ),
        ),
        "",
    ]
    return "\n".join(lines)
