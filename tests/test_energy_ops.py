"""Operation counts per unit cost, pinned against counts derived by hand from the paper's formulas.

Nothing here calls the model's counting code (``position_counts``); the numbers below are worked
out from the paper's Eqs. opt-fc and opto-score (Section "Energy calculation"):

- a linear layer has ``N_o^fc = B*S*C_o`` outputs, each fed by ``C_i`` inputs: ``D = N_o * C_i``
  operand deliveries;
- an attention matmul has ``N_o^qkv = B*h*S^2`` outputs, each fed by ``d_k`` inputs:
  ``D = N_o * d_k`` (the paper counts ``P V``'s outputs as ``B*h*S^2`` too);
- K and V projections write their ``B*S*C`` outputs once (``E^Write_kv``);

with the per-row terms of Appendix C (the unit costs' notes) and ``reference/energy-model.md``:
the dense QNN moves ``a = 4`` bits per delivery (twice on attention: the K/V operand moves too),
reads ``w`` weight bits per linear delivery and ``a`` bits per attention delivery, writes K/V at
``a`` bits, MACs once per delivery and clamps twice per output; a TTFS-family row sends
``s = T*r`` events per delivery, reads ``w`` bits per linear event, ``log2 T = 4`` per attention
event and 4 threshold bits per output and step, and compares once per output and step.
"""

import pytest

import energy_model as em

POSITIONS = em.POSITIONS


def hand_counts(B, S, C, F, h, kv_heads, ffn_mats):
    """(D, N, KV) per position by the rules above, written as the paper's products."""
    d_k = C // h
    C_kv = kv_heads * d_k
    fc = lambda c_o, c_i: (B * S * c_o * c_i, B * S * c_o)  # noqa: E731 - (D, N_o) of one FC
    qkv = (B * h * S * S * d_k, B * h * S * S)
    return {
        "Q-proj. input": (*fc(C, C), 0),
        "K-proj. input": (*fc(C_kv, C), B * S * C_kv),
        "V-proj. input": (*fc(C_kv, C), B * S * C_kv),
        "Query activation": (*qkv, 0),
        "Attn. probability": (*qkv, 0),
        "Attn.-out. input": (*fc(C, C), 0),
        # gate and up (SwiGLU) or expand (GELU): (ffn_mats - 1) matrices read this input
        "FFN-expand input": (*fc((ffn_mats - 1) * F, C), 0),
        "FFN-contract input": (*fc(C, F), 0),
    }


# BERT-base, B=64, S=128: B*S = 8192.
BERT = hand_counts(64, 128, 768, 3072, 12, 12, 2)
# LLaMA-2 7B, B=64, S=128, SwiGLU, 32 K/V heads (no GQA).
LLAMA7 = hand_counts(64, 128, 4096, 11008, 32, 32, 3)


def test_hand_counts_are_the_papers_totals():
    # the printed BERT-base literals: Q-proj D = 8192*768*768, FFN D = 8192*3072*768
    assert BERT["Q-proj. input"] == (4_831_838_208, 6_291_456, 0)
    assert BERT["K-proj. input"] == (4_831_838_208, 6_291_456, 6_291_456)
    assert BERT["Query activation"] == (805_306_368, 12_582_912, 0)
    assert BERT["FFN-expand input"] == (19_327_352_832, 25_165_824, 0)
    assert BERT["FFN-contract input"] == (19_327_352_832, 6_291_456, 0)
    # N_8 = 4BSC^2 + 2BhS^2 d_k + 2BSCF = 5.96e10 (Appendix C); N_out = 13BSC
    # LIN = 4*4_831_838_208 + 2*19_327_352_832 = 57_982_058_496, ATT = 2*805_306_368
    assert sum(d for d, _, _ in BERT.values()) == 57_982_058_496 + 1_610_612_736
    assert sum(n for _, n, _ in BERT.values()) == 13 * 64 * 128 * 768
    # LLaMA-2 7B: Q-proj D = 8192*4096*4096; gate+up D = 8192*22016*4096; down 8192*4096*11008
    assert LLAMA7["Q-proj. input"] == (137_438_953_472, 33_554_432, 0)
    assert LLAMA7["Query activation"] == (4_294_967_296, 33_554_432, 0)
    assert LLAMA7["FFN-expand input"] == (738_734_374_912, 180_355_072, 0)
    assert LLAMA7["FFN-contract input"] == (369_367_187_456, 33_554_432, 0)


def dense_ops(D, N, KV, attention, w, a=4):
    """The dense QNN's op counts at one position (Appendix C; ``E_MAC4x4`` for 4-bit weights)."""
    mac = "E_MAC4x4" if attention or w == 4 else "E_MAC4"
    return {
        "move": {"E_move_dense": D * a * (2 if attention else 1)},
        "wread": {"E_weight": D * (a if attention else w)},
        "kvwrite": {"E_weight": KV * a},
        "compute": {mac: D, "E_clamp4": 2 * N},
    }


def ttfs_ops(D, N, KV, attention, w, s, T=16):
    """A TTFS-family row's op counts (``s`` events per delivery; events on 4-bit weights pay the
    4x4 MAC of the dense linear path, the default ``event_accumulate``)."""
    mac = "E_MAC4" if attention or w == 1 else "E_MAC4x4"
    return {
        "move": {"E_move_event": s * D},
        "wread": {"E_weight": s * D * (4 if attention else w) + T * N * 4},
        "kvwrite": {"E_weight": KV * 4},
        "compute": {mac: s * D, "E_enc": s * D, "E_CMP": T * N},
    }


def check_row(report, row, expected):
    got = report.row(row).ops
    assert list(got) == list(POSITIONS)
    for position in POSITIONS:
        for comp in ("move", "wread", "kvwrite", "compute"):
            assert set(got[position][comp]) == set(expected[position][comp]), (position, comp)
            for key, n in expected[position][comp].items():
                assert got[position][comp][key] == pytest.approx(n, rel=1e-12), (position, key)


ATTENTION = {"Query activation", "Attn. probability"}


@pytest.mark.parametrize(
    "preset, counts, w, rate_k1",
    [("bert-base", BERT, 1, 0.0157), ("llama2-7b", LLAMA7, 4, 0.0357)],
)
def test_op_counts_per_unit_cost(preset, counts, w, rate_k1):
    rates = em.Rates.paper("SST-2") if preset == "bert-base" else em.Rates.paper_llama("7B")
    report = em.compute(preset, rates)
    check_row(
        report,
        "Matterhorn QNN (dense)",
        {p: dense_ops(*counts[p], p in ATTENTION, w) for p in POSITIONS},
    )
    s = 16 * rate_k1  # the paper's printed k=1 rate: SST-2 1.57 %, LLaMA-2 7B 3.57 %
    check_row(
        report,
        "Matterhorn M-TTFS (k=1)",
        {p: ttfs_ops(*counts[p], p in ATTENTION, w, s) for p in POSITIONS},
    )


def test_bert_baselines_and_bit_serial_op_counts():
    report = em.compute("bert-base", em.Rates.paper("SST-2"))
    # SpikingBERT: rate-coded, T=16 (b = 4), 25 % per step: s = 4 events per delivery
    s = 16 * 0.25
    check_row(
        report,
        "SpikingBERT",
        {
            p: {
                "move": {"E_move_event": s * D},
                "wread": {"E_weight": s * D * (4 if p in ATTENTION else 1)},
                "kvwrite": {"E_weight": KV * 4},
                "compute": {
                    "E_ACC4" if p in ATTENTION else "E_ACC1": s * D,
                    "E_CMP": 16 * N,
                    "E_SUB": s * N,
                },
            }
            for p, (D, N, KV) in BERT.items()
        },
    )
    # bit-serial k=1 pattern: e = 0.64 bit-events per delivery, 1-bit reads, no K/V write
    e = 0.64
    check_row(
        report,
        "Bit-serial QNN (k=1 pattern)",
        {
            p: {
                "move": {"E_move_event": e * D},
                "wread": {"E_weight": e * D},
                "kvwrite": {"E_weight": 0},
                "compute": {"E_ACC1": e * D, "E_clamp4": 2 * N},
            }
            for p, (D, N, _) in BERT.items()
        },
    )


def test_op_counts_times_unit_costs_are_the_energies():
    report = em.compute("llama2-7b", em.Rates.paper_llama("7B"))
    costs = report.unit_costs
    for row in report.rows:
        for position, per_comp in row.ops.items():
            for comp in ("move", "wread", "kvwrite", "compute"):
                joules = sum(n * costs.joules(k) for k, n in per_comp[comp].items())
                assert joules == pytest.approx(
                    getattr(row.positions[position], comp).value, rel=1e-12
                )


def test_ops_csv():
    report = em.compute("bert-base", em.Rates.paper("SST-2"))
    lines = report.ops_csv().splitlines()
    assert lines[0] == "row,position,component,unit_cost,count,per,energy_mJ"
    dense_q = [x for x in lines if x.startswith("Matterhorn QNN (dense),Q-proj. input,compute,")]
    assert dense_q[0].startswith(
        "Matterhorn QNN (dense),Q-proj. input,compute,E_MAC4,4831838208.0,op,"
    )
