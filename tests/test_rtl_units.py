# amaranth: UnusedElaboratable=no
"""The softmax unit (rtl_gen/softmax.py) and the residual-add + LayerNorm unit
(rtl_gen/add_norm.py) in the Amaranth simulator, bit-exact against the golden units
(golden_models.int_softmax, residual, int_layernorm, through regression.units): random rows
at several sizes with random backpressure, the corner rows, rows recorded from MiniLM at its
own sizes, the cycles per row, a row longer than the unit's, the parameter checks, and a
planted off-by-one in each unit."""

from __future__ import annotations

import copy

import pytest

from formal.harness import mutant_module
from regression.units import (
    minilm_config,
    random_norm_case,
    random_softmax_case,
    record_minilm,
)
from rtl_gen import add_norm, softmax
from rtl_gen.params import RTLConfig, unit_fields
from rtl_gen.simulation.units import simulate_add_norm, simulate_softmax

SOFTMAX_CONFIGS = [
    RTLConfig(T=16, seq_len=16, head_dim=8),
    RTLConfig(T=4, seq_len=5, head_dim=3, exp_frac_bits=2),
    RTLConfig(T=8, seq_len=12, head_dim=64, exp_frac_bits=8),
]
NORM_CONFIGS = [
    RTLConfig(T=16, hidden=16, ffn_dim=64, weight_bits=4),
    RTLConfig(T=4, hidden=7, ffn_dim=20, residual_bits=8, guard_bits=0, weight_bits=1),
    RTLConfig(T=8, hidden=24, ffn_dim=96, residual_bits=12, guard_bits=3, weight_bits=2),
]


def _softmax_codes(cfg, case, component=None, **kw):
    rows = simulate_softmax(cfg, case.rows, softmax.load_beats(cfg, case.unit, case.theta),
                            component=component, **kw)
    return rows, [r.codes for r in rows]


def _norm_out(cfg, case, component=None, **kw):
    rows = simulate_add_norm(
        cfg, case.rows, add_norm.load_beats(cfg, case.add, case.norm, case.thetas),
        component=component, **kw)
    return rows, [(r.r, r.codes) for r in rows]


@pytest.mark.parametrize("cfg", SOFTMAX_CONFIGS, ids=["T16L16", "T4L5", "T8L12d64"])
def test_softmax_random_rows(cfg):
    for seed in range(2):
        case = random_softmax_case(cfg, seed, rows=10)
        rows, codes = _softmax_codes(cfg, case, o_ready=0.6, i_valid=0.7, seed=seed)
        assert codes == case.expected()
        assert not any(r.overflow for r in rows)


def test_softmax_cycles_per_row():
    cfg = SOFTMAX_CONFIGS[0]
    case = random_softmax_case(cfg, 5, rows=8)
    rows, codes = _softmax_codes(cfg, case)
    assert codes == case.expected()
    assert [r.clocks for r in rows] == [softmax.row_clocks(cfg, len(s)) for s, _ in case.rows]


def test_softmax_row_longer_than_the_unit():
    cfg = RTLConfig(T=4, seq_len=4, head_dim=2)
    case = random_softmax_case(cfg, 1, rows=1)
    case.rows = [([1, -3, 4, 0, 2, 9], [True, True, False, True, True, True])]
    rows = simulate_softmax(cfg, case.rows, softmax.load_beats(cfg, case.unit, case.theta))
    # the first seq_len scores are kept, and the row is flagged
    case.rows = [(s[:4], v[:4]) for s, v in case.rows]
    assert rows[0].overflow and rows[0].codes == case.expected()[0]


@pytest.mark.parametrize("cfg", NORM_CONFIGS, ids=["T16N16", "T4N7W8", "T8N24W12"])
def test_add_norm_random_rows(cfg):
    for seed in range(2):
        case = random_norm_case(cfg, seed, rows=5)
        rows, out = _norm_out(cfg, case, o_ready=0.6, i_valid=0.7, seed=seed)
        assert out == case.expected()


def test_add_norm_cycles_per_row():
    cfg = NORM_CONFIGS[0]
    case = random_norm_case(cfg, 3, rows=3)
    rows, out = _norm_out(cfg, case)
    assert out == case.expected()
    assert {r.clocks for r in rows} == {add_norm.row_clocks(cfg)}


@pytest.fixture(scope="module")
def minilm_cases(minilm, pydoc_corpus, minilm_qnn, one_thread):
    from networks.integer import integer_mode_

    _, tok = minilm
    qint = integer_mode_(copy.deepcopy(minilm_qnn))
    soft, norms = record_minilm(qint, tok, pydoc_corpus.evaluation[:3], softmax_rows=4,
                                norm_rows=1)
    return minilm_config(qint), soft, norms


def test_minilm_rows(minilm_cases):
    """Every block's softmax and both LayerNorms, on rows MiniLM computes, at its sizes
    (rows of up to 512 keys, 384 channels) and with its constants."""
    cfg, soft, norms = minilm_cases
    assert (cfg.seq_len, cfg.hidden, cfg.head_dim, cfg.ffn_dim, cfg.score_width) == (
        512, 384, 32, 1536, 13)
    assert len(soft) == 6 and len(norms) == 12
    for case in soft:
        assert _softmax_codes(cfg, case)[1] == case.expected()
    for case in norms:
        assert _norm_out(cfg, case, o_ready=0.8)[1] == case.expected()


# -- planted off-by-ones --------------------------------------------------------------------------

SOFTMAX_MUTANTS = [
    ("the row's maximum misses a score one above it", "beat.valid & (beat.score > top)",
     "beat.valid & (beat.score > top + 1)"),
    ("a full row loses its last score", "self.i.valid & (length == n)",
     "self.i.valid & (length == n - 1)"),
    ("the probability is rounded one bit short",
     "rshift_round(exp.e * rcp, w[\"recip\"] - w[\"prob\"])",
     "rshift_round(exp.e * rcp, w[\"recip\"] - w[\"prob\"] - 1)"),
]
NORM_MUTANTS = [
    ("the root's normalising shift is one step too far", "(w[\"radicand\"] - bl) >> 1",
     "(w[\"radicand\"] - bl + 1) >> 1"),
    ("the add pass ends one channel early", "with m.If(idx == n - 1):",
     "with m.If(idx == n - 2):"),
    ("the LayerNorm's bias is lifted one bit short", "(frac - BIAS_FRAC_BITS)",
     "(frac - BIAS_FRAC_BITS - 1)"),
]


@pytest.mark.parametrize(("what", "old", "new"), SOFTMAX_MUTANTS, ids=lambda x: x[:20])
def test_softmax_mutant_is_caught(what, old, new):
    cfg = SOFTMAX_CONFIGS[0]
    bad = mutant_module("rtl_gen.softmax", old, new)
    case = random_softmax_case(cfg, 0, rows=10)
    assert _softmax_codes(cfg, case, component=bad.Softmax(cfg))[1] != case.expected()


@pytest.mark.parametrize(("what", "old", "new"), NORM_MUTANTS, ids=lambda x: x[:20])
def test_add_norm_mutant_is_caught(what, old, new):
    cfg = NORM_CONFIGS[0]
    bad = mutant_module("rtl_gen.add_norm", old, new)
    case = random_norm_case(cfg, 0, rows=4)
    try:
        out = _norm_out(cfg, case, component=bad.AddNorm(cfg))[1]
    except RuntimeError:  # a unit that hangs is caught too
        return
    assert out != case.expected()


# -- parameters and constants ---------------------------------------------------------------------


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"head_dim": 32, "score_bits": 10},
     "score_bits=10 cannot hold the scores of head_dim 32 at T=16; at least 13"),
    ({"seq_len": 5000}, "seq_len must be in 2..4096, not 5000"),
    ({"hidden": 1}, "hidden must be in 2..4096, not 1"),
    ({"residual_bits": 30}, "residual_bits must be in 4..24, not 30"),
    ({"guard_bits": -1}, "guard_bits must be in 0..12, not -1"),
    ({"exp_frac_bits": 13}, "exp_frac_bits must be in 1..12, not 13"),
])
def test_config_refuses(kwargs, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        RTLConfig(**kwargs)


def test_config_types():
    with pytest.raises(TypeError, match="raw_sums must be a bool, not 1"):
        RTLConfig(raw_sums=1)
    with pytest.raises(TypeError, match="seq_len must be an int"):
        RTLConfig(seq_len=16.0)


def test_unit_fields_from_model_dimensions():
    assert unit_fields(hidden=384, heads=12, ffn=1536, seq_len=512) == {
        "hidden": 384, "head_dim": 32, "ffn_dim": 1536, "seq_len": 512}
    bert = RTLConfig(T=16, weight_bits=4, **unit_fields(hidden=768, heads=12, ffn=3072,
                                                       seq_len=512))
    assert (bert.score_width, bert.residual_sum_width, bert.sum_bits) == (14, 21, 21)
    with pytest.raises(ValueError, match=r"hidden=384 must be a multiple of heads=7 "
                       r"\(divisors up to 64: \[1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64\]\)"):
        unit_fields(hidden=384, heads=7, ffn=1536, seq_len=128)


def test_add_norm_refuses_widths_that_cannot_hold_the_variance():
    cfg = RTLConfig(hidden=384, residual_bits=20, guard_bits=5)
    with pytest.raises(ValueError, match=r"residual_bits \+ guard_bits = 25 with hidden=384 "
                       r"cannot hold the variance N\*S2 - S1\*\*2 in 62 bits; at most 23"):
        add_norm.AddNorm(cfg)


def test_load_beats_refuse_a_unit_of_other_sizes():
    cfg = SOFTMAX_CONFIGS[0]
    case = random_softmax_case(SOFTMAX_CONFIGS[2], 0, rows=1)
    with pytest.raises(ValueError, match="unit has row_max=12, the softmax unit was generated "
                       "for 16"):
        softmax.load_beats(cfg, case.unit, case.theta)
    with pytest.raises(ValueError, match=r"theta has 2 thresholds, T - 1 = 15 needed"):
        softmax.load_beats(cfg, random_softmax_case(cfg, 0).unit, [1, 2])
    norm = random_norm_case(NORM_CONFIGS[1], 0, rows=1)
    with pytest.raises(ValueError, match="the add's channels is 7, the unit was generated for "
                       "16"):
        add_norm.load_beats(NORM_CONFIGS[0], norm.add, norm.norm, norm.thetas)
    with pytest.raises(TypeError, match="add must be a golden_models.residual.ResidualAdd"):
        add_norm.load_beats(NORM_CONFIGS[1], norm.norm, norm.norm, norm.thetas)
