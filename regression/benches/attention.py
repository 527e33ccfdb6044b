"""The attention benches (``attention``, ``attn_softmax``): golden sequences played by the fast
harness (:mod:`regression.attention`, docs/rtl_attention.md "Regression").

``attention`` runs the whole path (``mttfs_attention``): at every ``T`` of a sweep, random
sequences on a small design (2 heads, ``d_k`` 8, 8 key slots); at ``T = 16``, besides, eight
real MiniLM sentences through block 0's twelve heads (``d_k`` 32, 64 key slots).
``attn_softmax`` runs the softmax node alone on the rows of random sequences.
"""

from __future__ import annotations

from collections.abc import Mapping

from regression.cache import module_entry
from rtl_gen.registry import block

__all__ = ["MINILM_PARAMS", "RANDOM_PARAMS", "attention_config", "attention_plan",
           "job_fast_config", "params", "softmax_config", "softmax_plan"]

#: The small design of the random sequences: heads (mesh rows), d_k (n_in), key slots.
RANDOM_PARAMS = {"mesh_rows": 2, "mesh_cols": 1, "n_in": 8, "tile_neurons": 8}
#: MiniLM block 0: 12 heads of d_k = 32, sequences up to 64 tokens.
MINILM_PARAMS = {"mesh_rows": 12, "mesh_cols": 1, "n_in": 32, "tile_neurons": 64}


def _params(T: int, geometry: Mapping, source: str) -> dict:
    return {"T": T, "k": 0, "family": "sym", "weight_bits": 1, **geometry, "source": source}


def attention_plan(point) -> list | tuple | None:
    """Random sequences at parameter set 0 of every ``T``; MiniLM's sentences at set 1 of
    ``T = 16``."""
    k = point.ks[(point.index + point.variant) % len(point.ks)]
    if point.variant == 0:
        return (_params(point.T, RANDOM_PARAMS, "random"), point.seed,
                {"sequences": 2} if point.quick else {"k": k})
    if point.T == 16 and not point.quick:
        return (_params(16, MINILM_PARAMS, "minilm"), point.seed, {"k": 1})
    return None


def params(job) -> dict:
    """The :class:`rtl_gen.params.RTLConfig` arguments of a job (its parameters without
    ``source``)."""
    p = dict(job.params)
    p.pop("source", None)
    return p


def _case(job, cfg):
    from regression.attention import minilm_case, random_case

    stim = job.stim
    if dict(job.params).get("source") == "minilm":
        return minilm_case(stim.sentences, k=stim.k)
    return random_case(cfg, k=stim.k, seed=job.seed, sequences=stim.sequences)


def job_fast_config(job, vectors, T: int, bench: str) -> dict:
    """The fast-harness configuration of ``job`` (its stimulus: repeat, idle and stall) on
    ``vectors``."""
    from regression.fast import fast_config

    s = job.stim
    return fast_config(vectors, seed=job.seed, T=T, repeat=int(s.repeat),
                       p_valid=1.0 - float(s.p_idle), p_ready=1.0 - float(s.p_stall),
                       bench=bench)


def attention_config(job, manifest: Mapping) -> dict:
    """The fast-harness configuration of an ``attention`` job."""
    from regression.attention import attention_vectors
    from rtl_gen.attn_params import AttentionConfig
    from rtl_gen.params import RTLConfig

    cfg = AttentionConfig.from_rtl(RTLConfig(**manifest["parameters"]))
    entry = module_entry(manifest, block("attention").module)
    vectors = attention_vectors(cfg, _case(job, cfg), entry, job.stim.corrupt)
    return job_fast_config(job, vectors, cfg.T, "attention")


def softmax_plan(point) -> tuple | None:
    """Random rows at parameter set 0 of every ``T``."""
    if point.variant:
        return None
    return (_params(point.T, RANDOM_PARAMS, "random"), point.seed,
            {"sequences": 2} if point.quick else {})


def softmax_config(job, manifest: Mapping) -> dict:
    """The fast-harness configuration of an ``attn_softmax`` job."""
    from regression.attention import softmax_vectors
    from rtl_gen.attn_params import AttentionConfig
    from rtl_gen.params import RTLConfig

    cfg = AttentionConfig.from_rtl(RTLConfig(**manifest["parameters"]))
    entry = module_entry(manifest, block("attn_softmax").module)
    vectors = softmax_vectors(cfg, _case(job, cfg), entry, job.stim.corrupt)
    return job_fast_config(job, vectors, cfg.T, "attn_softmax")

