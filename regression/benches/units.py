"""The benches of the non-linear units (:mod:`cocotb_tests.tb_softmax`,
:mod:`cocotb_tests.tb_add_norm`): golden cases (:mod:`regression.units`) loaded through the
unit's ``load`` port, rows in, every output beat compared."""

from __future__ import annotations

import functools
from collections.abc import Mapping

from regression.cache import module_entry
from regression.stimulus import UNIT_SOURCES
from rtl_gen.registry import block

__all__ = ["add_norm_config", "minilm_params", "minilm_qnn", "plan", "softmax_config"]


def _unit_config(manifest: Mapping):
    from rtl_gen.params import RTLConfig

    return RTLConfig(**manifest["parameters"])


#: Calibration sentences of the MiniLM conversion the benches record from.
MINILM_CALIBRATION = 6


@functools.lru_cache(maxsize=1)
def minilm_qnn():
    """The integer MiniLM QNN (converted on the shipped corpus's first calibration sentences),
    its tokenizer and the corpus; made once per process."""
    from networks.bert import load_minilm
    from networks.corpus import load_corpus
    from networks.integer import integer_mode_
    from networks.ptq import convert

    model, tok = load_minilm()
    corpus = load_corpus("pydoc-topics")
    return integer_mode_(convert(model, tok, corpus.calibration[:MINILM_CALIBRATION])), tok, corpus


def _minilm_cases(stim, seed: int, *, softmax_rows: int, norm_rows: int):
    """The MiniLM units' config and the rows its units see on the first ``stim.sentences``
    evaluation sentences."""
    import torch

    from regression.units import minilm_config, record_minilm

    saved = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        qnn, tok, corpus = minilm_qnn()
        cases = record_minilm(qnn, tok, corpus.evaluation[:int(stim.sentences)],
                              softmax_rows=softmax_rows, norm_rows=norm_rows, seed=seed)
        return minilm_config(qnn), cases
    finally:
        torch.set_num_threads(saved)


def minilm_params() -> dict:
    """The RTLConfig arguments of MiniLM's units (:func:`regression.units.minilm_config` of the
    integer QNN: hidden 384, 12 heads of 32, FFN 1536, rows of 512)."""
    from networks.bert import BertConfig, model_dir
    from networks.integer import IntegerSpec
    from networks.ptq import PTQConfig
    from rtl_gen.params import unit_fields

    cfg, spec, ptq = BertConfig.from_json(model_dir() / "config.json"), IntegerSpec(), PTQConfig()
    return {"T": 2**ptq.act_bits, "weight_bits": ptq.weight_bits,
            **unit_fields(hidden=cfg.hidden_size, heads=cfg.num_attention_heads,
                          ffn=cfg.intermediate_size, seq_len=cfg.max_position_embeddings),
            "residual_bits": spec.residual_bits, "guard_bits": spec.guard_bits,
            "exp_frac_bits": spec.exp_frac_bits}


def _check_source(stim) -> None:
    if stim.source not in UNIT_SOURCES:
        raise ValueError(f"source must be one of {UNIT_SOURCES}, not {stim.source!r}")


def softmax_config(job, manifest: Mapping) -> dict:
    """Cases of ``job.stim`` (:class:`regression.stimulus.SoftmaxStimulus`): per case the load
    beats and the rows with their expected codes."""
    from regression.units import random_softmax_case
    from rtl_gen.softmax import load_beats

    stim = job.stim
    _check_source(stim)
    cfg = _unit_config(manifest)
    if stim.source == "minilm":
        made, (cases, _) = _minilm_cases(stim, job.seed, softmax_rows=int(stim.rows),
                                         norm_rows=0)
        if made != cfg:
            raise ValueError("source='minilm' needs the RTL generated for MiniLM's units "
                             "(regression.benches.units.minilm_params)")
    else:
        cases = [random_softmax_case(cfg, job.seed * 100 + c, rows=int(stim.rows))
                 for c in range(int(stim.cases))]
    out = []
    for case in cases:
        rows = [{"scores": list(s), "valid": [int(x) for x in v], "codes": codes}
                for (s, v), codes in zip(case.rows, case.expected(), strict=True)]
        out.append({"load": [list(b) for b in load_beats(cfg, case.unit, case.theta)],
                    "rows": rows})
    return {"seed": job.seed, "T": cfg.T, "source": stim.source,
            "module": module_entry(manifest, block("softmax").module),
            "p_idle": float(stim.p_idle), "p_stall": float(stim.p_stall),
            "corrupt": stim.corrupt, "cases": out}


def add_norm_config(job, manifest: Mapping) -> dict:
    """Cases of ``job.stim`` (:class:`regression.stimulus.AddNormStimulus`): per case the load
    beats and the rows ``(r, V)`` with their expected stream and packed codes."""
    from regression.units import random_norm_case
    from rtl_gen.add_norm import load_beats

    stim = job.stim
    _check_source(stim)
    cfg = _unit_config(manifest)
    if stim.source == "minilm":
        made, (_, cases) = _minilm_cases(stim, job.seed, softmax_rows=0,
                                         norm_rows=int(stim.rows))
        if made != cfg:
            raise ValueError("source='minilm' needs the RTL generated for MiniLM's units "
                             "(regression.benches.units.minilm_params)")
    else:
        cases = [random_norm_case(cfg, job.seed * 100 + c, rows=int(stim.rows))
                 for c in range(int(stim.cases))]
    tw = cfg.time_width
    out = []
    for case in cases:
        rows = []
        for (r, v), (new, codes) in zip(case.rows, case.expected(), strict=True):
            packed = [sum((codes[p][j] & ((1 << tw) - 1)) << (p * tw) for p in range(3))
                      for j in range(len(r))]
            rows.append({"r": list(r), "v": list(v), "out": [[a, b] for a, b in
                                                               zip(new, packed, strict=True)]})
        out.append({"load": [list(b) for b in load_beats(cfg, case.add, case.norm,
                                                         case.thetas)], "rows": rows})
    return {"seed": job.seed, "T": cfg.T, "source": stim.source, "hidden": cfg.hidden,
            "module": module_entry(manifest, block("add_norm").module),
            "p_idle": float(stim.p_idle), "p_stall": float(stim.p_stall),
            "corrupt": stim.corrupt, "cases": out}


def plan(point) -> tuple | None:
    """The first parameter set of the sweep's first ``T`` only: the units do not depend on the
    tile's parameters, and their MiniLM-sized run is its own job
    (``cocotb_tests/test_units.py``)."""
    return None if point.variant or point.index else (point.params, point.seed, {})
