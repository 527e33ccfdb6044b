"""The attention path's regression run: one case (:mod:`regression.attention`) on one
simulator, as one job of the regression (its bench kind :mod:`regression.benches.attention`,
run by :func:`regression.execute.execute_config`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from regression.attention import AttentionCase, attention_vectors, design_params, run_figures
from regression.benches.attention import job_fast_config
from regression.cache import generate_rtl, module_entry
from regression.execute import execute_config
from regression.jobs import job

__all__ = ["AttentionRun", "run_attention"]


@dataclass(frozen=True)
class AttentionRun:
    """One case on one simulator: the job's result and the figures of the run."""

    result: object
    figures: dict

    @property
    def passed(self) -> bool:
        return self.result.passed


def run_attention(cfg, case: AttentionCase, sim_name: str, *, out_dir="build/attention",
                  seed: int = 0, p_idle: float = 0.0, p_stall: float = 0.0, repeat: int = 1,
                  name: str = "attention", waves: bool = False) -> AttentionRun:
    """Run ``case`` through the generated attention path ``cfg`` on ``sim_name`` in the fast
    harness; every ``o`` event and every counter of every window checked.

    Returns the job result and :func:`run_figures` (cycles per token, tokens per second, the
    events per token of each position and head, the write counts).
    """
    from rtl_gen.attn_images import check_sequence
    from rtl_gen.registry import block

    for q, k, v, valid in case.sequences:  # every input, before anything is generated
        check_sequence(cfg, case.path, q, k, v, valid)
    params = design_params(cfg)
    j = job("attention", sim_name, {**params, "source": "case"}, seed, repeat=repeat,
            p_idle=float(p_idle), p_stall=float(p_stall))
    root = Path(out_dir).resolve()
    generated = generate_rtl(params, root, modules=(block("attention").module,))

    def make_config(manifest):
        entry = module_entry(manifest, block("attention").module)
        return job_fast_config(j, attention_vectors(cfg, case, entry), cfg.T, "attention")

    res = execute_config(j, params, make_config, root, waves=waves,
                         run_name=f"{name}-{sim_name}", generated=generated)
    return AttentionRun(res, run_figures(cfg, case, res.report, repeat))
