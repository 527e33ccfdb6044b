"""Inputs of the energy model: presets, rates, unit-cost files, statistics files, options."""

import json
import re

import pytest

import energy_model as em

PAPER = em.paper_unit_costs()


def paper_file_data():
    return {"unit_costs_pJ": {k: c.to_json() for k, c in PAPER.items()}}


def write(tmp_path, name, data):
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


def check_error(exc_type, message, fn, *args, **kwargs):
    with pytest.raises(exc_type, match="^" + re.escape(message) + "$"):
        fn(*args, **kwargs)


# --- presets and dimensions ---------------------------------------------------------------------


def test_unknown_preset():
    check_error(
        ValueError,
        "unknown preset 'bert-large'; valid presets: bert-base, llama2-7b, llama2-13b, "
        "llama2-70b, minilm-l6",
        em.preset,
        "bert-large",
    )


@pytest.mark.parametrize(
    "name, hidden, ffn, heads, layers, kv_heads",
    [
        ("llama2-7b", 4096, 11008, 32, 32, 32),
        ("llama2-13b", 5120, 13824, 40, 40, 40),
        ("llama2-70b", 8192, 28672, 64, 80, 8),
    ],
)
def test_llama_presets_carry_published_dims(name, hidden, ffn, heads, layers, kv_heads):
    d = em.preset(name)
    assert (d.hidden, d.ffn, d.heads, d.layers, d.kv_heads, d.d_k) == (
        hidden,
        ffn,
        heads,
        layers,
        kv_heads,
        128,
    )
    counts = em.block_totals(d)
    B, S, C, F = d.batch, d.seq, hidden, ffn
    ckv = kv_heads * 128
    # Q and O at C x C, K and V at C x C_kv, SwiGLU gate + up + down
    assert counts["LIN"] == B * S * C * (2 * C + 2 * ckv) + 3 * B * S * C * F
    assert counts["ATT"] == 2 * B * heads * S * S * 128
    assert counts["KV"] == 2 * B * S * ckv


def test_llama_report_runs_with_its_own_rate():
    rates = em.Rates.uniform(3.57, T=16, k=1, source="paper, Table 'Spiking LLaMA', 7B k=1")
    report = em.compute("llama2-7b", rates)
    assert report.row("Matterhorn M-TTFS (k=1)").effective_rate == pytest.approx(0.0357)
    assert report.row("Matterhorn QNN (dense)").rel == 1.0


def test_bad_dimensions():
    check_error(
        ValueError,
        "hidden (100) must be a multiple of heads (12)",
        em.ModelDims,
        "x",
        100,
        400,
        12,
        1,
    )
    check_error(ValueError, "seq must be >= 1, not 0", em.ModelDims, "x", 96, 400, 12, 1, seq=0)
    check_error(
        TypeError, "batch must be an integer, not 1.5", em.ModelDims, "x", 96, 400, 12, 1, batch=1.5
    )


def test_custom_dims_scale_as_the_formulas_say():
    base = em.block_totals(em.ModelDims("a", 64, 256, 4, 1, batch=2, seq=8))
    double_batch = em.block_totals(em.ModelDims("a", 64, 256, 4, 1, batch=4, seq=8))
    assert {k: 2 * v for k, v in base.items()} == double_batch


# --- rates --------------------------------------------------------------------------------------


def test_negative_rate():
    check_error(
        ValueError,
        "spike rate for M-TTFS k=1 must be in 0..100 %, not -1 %",
        em.Rate.percent,
        -1,
        "cli",
        "M-TTFS k=1",
    )


def test_rate_above_100_percent():
    check_error(
        ValueError,
        "spike rate for M-TTFS k=1 must be in 0..100 %, not 100.5 %",
        em.Rates.uniform,
        100.5,
    )


def test_per_position_rate_errors():
    rates = dict.fromkeys(em.POSITIONS, 2.0)
    rates["FFN-contract input"] = 120
    check_error(
        ValueError,
        "spike rate for M-TTFS k=1 at FFN-contract input must be in 0..100 %, not 120 %",
        em.Rates.uniform,
        rates,
    )
    check_error(
        ValueError,
        "unknown spike-encoded position 'pooler'; valid: " + ", ".join(em.POSITIONS),
        em.Rates.uniform,
        {"pooler": 1.0},
    )
    partial = {"Q-proj. input": 1.0}
    with pytest.raises(ValueError, match=r"^per-position rates for M-TTFS k=1 lack 'K-proj\. "):
        em.Rates.uniform(partial)


def test_per_position_rates_weight_by_deliveries():
    rates = dict.fromkeys(em.POSITIONS, 0.0)
    rates["FFN-contract input"] = 4.0
    report = em.compute("bert-base", em.Rates.uniform(rates, k=1))
    row = report.row("Matterhorn M-TTFS (k=1)")
    counts = {c.position: c.deliveries for c in em.position_counts(em.preset("bert-base"))}
    share = counts["FFN-contract input"] / sum(counts.values())
    assert row.effective_rate == pytest.approx(0.04 * share)
    assert row.positions["Q-proj. input"].move.value == 0.0
    assert row.positions["FFN-contract input"].move.value == pytest.approx(
        counts["FFN-contract input"] * 16 * 0.04 * 3e-12
    )


def test_unknown_task():
    with pytest.raises(ValueError, match=r"^unknown task 'CoLA'; valid tasks: QQP, MNLI-m, "):
        em.Rates.paper("CoLA")


# --- unit costs ---------------------------------------------------------------------------------


def test_paper_unit_costs_carry_provenance():
    assert set(em.REQUIRED) <= set(PAPER)
    assert PAPER["E_MAC4"].quantity == em.Quantity(0.06634e-12, "J/op")
    assert PAPER["E_move_event"].quantity.unit == "J/event/hop"
    assert "Loihi" in PAPER["E_move_event"].provenance
    assert all(c.provenance.startswith("paper: ") for c in PAPER.values())


def paper_values_outside_their_home(root) -> list[str]:
    """Files of the library packages that hold one of the paper's distinctive unit costs (a
    number literal in Python, a number in JSON data) besides ``paper_unit_costs.json``."""
    import ast
    from pathlib import Path

    table = em.paper_table()["unit_costs_pJ"]
    # 0.25 and 3.0 are too common to tell a copy of the table from any other number
    values = {c["value"] for c in table.values() if len(repr(c["value"]).strip("0.")) >= 3}
    home = Path("energy_model/data/paper_unit_costs.json")
    found = []
    for package in ("toolkit_base", "golden_models", "networks", "energy_model", "rtl_gen",
                    "synth_scripts", "regression", "formal", "cocotb_tests", "matterhorn"):
        for path in sorted((root / package).rglob("*")):
            rel = path.relative_to(root)
            if path.suffix == ".py":
                nodes = ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                numbers = {n.value for n in nodes if isinstance(n, ast.Constant)
                           and isinstance(n.value, float)}
            elif path.suffix == ".json" and rel != home:
                floats: list[str] = []
                json.loads(path.read_text(encoding="utf-8"), parse_float=floats.append)
                numbers = {float(x) for x in floats}
            else:
                continue
            if numbers & values:
                found.append(str(rel))
    return found


def test_paper_unit_costs_have_one_home(tmp_path):
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    assert paper_values_outside_their_home(root) == []
    # the synthesis report carries the paper's figures from that home
    from synth_scripts import report

    table = em.paper_table()["unit_costs_pJ"]
    carried = report.unit_costs({}, None, 1.0, scaled=False, native="x")
    assert {k: v["value"] for k, v in carried.items()} == {
        k: table[k]["value"] for k in report.NOT_SYNTHESIZED}
    assert {k: c.quantity.pJ for k, c in PAPER.items()} == {
        k: c["value"] for k, c in table.items()}
    # a second copy of the table is caught
    copy = tmp_path / "synth_scripts"
    copy.mkdir()
    (copy / "paper.py").write_text('UNIT_COSTS = {"E_MAC4": (0.06634, "pJ/op", "INT4 MAC")}\n')
    assert paper_values_outside_their_home(tmp_path) == ["synth_scripts/paper.py"]


def test_unit_cost_file_round_trip_and_prefixes(tmp_path):
    data = paper_file_data()
    data["unit_costs_pJ"]["E_MAC4"] = {"value": 66.34, "unit": "fJ/op", "provenance": "mine"}
    costs = em.load_unit_costs(write(tmp_path, "costs.json", data))
    assert costs.joules("E_MAC4") == pytest.approx(0.06634e-12, rel=1e-15)
    assert costs["E_MAC4"].provenance == "costs.json: mine"
    report = em.compute("bert-base", em.Rates.paper(), costs)
    assert report.row("Matterhorn QNN (dense)").energy.total.mJ == pytest.approx(
        em.compute().row("Matterhorn QNN (dense)").energy.total.mJ, rel=1e-12
    )


def test_unit_cost_file_missing_key(tmp_path):
    data = paper_file_data()
    del data["unit_costs_pJ"]["E_enc"]
    path = write(tmp_path, "costs.json", data)
    check_error(
        ValueError, "unit-cost file costs.json is missing 'E_enc'", em.load_unit_costs, path
    )


@pytest.mark.parametrize(
    ("key", "unit", "message"),
    [
        (
            "E_weight",
            "pJ/op",
            (
                "unit cost 'E_weight' in costs.json has unit 'pJ/op', expected an energy per "
                "bit such as 'pJ/bit'"
            ),
        ),
        (
            "E_MAC4",
            "mW",
            (
                "unit of 'E_MAC4' in costs.json must be an energy per item such as 'pJ/op' "
                "(prefixes J, mJ, uJ, nJ, pJ, fJ, aJ), not 'mW'"
            ),
        ),
    ],
)
def test_unit_cost_file_wrong_unit(tmp_path, key, unit, message):
    data = paper_file_data()
    data["unit_costs_pJ"][key]["unit"] = unit
    path = write(tmp_path, "costs.json", data)
    check_error(ValueError, message, em.load_unit_costs, path)


def test_unit_cost_file_bad_value_and_unknown_key(tmp_path):
    data = paper_file_data()
    data["unit_costs_pJ"]["E_CMP"]["value"] = -0.1
    check_error(
        ValueError,
        "unit cost 'E_CMP' in costs.json must be a number >= 0, not -0.1",
        em.load_unit_costs,
        write(tmp_path, "costs.json", data),
    )
    data = paper_file_data()
    data["unit_costs_pJ"]["E_MUL"] = {"value": 1, "unit": "pJ/op"}
    with pytest.raises(
        ValueError, match=r"^unknown unit cost 'E_MUL' in costs\.json; valid keys: "
    ):
        em.load_unit_costs(write(tmp_path, "costs.json", data))
    check_error(
        ValueError,
        "unit-cost file x.json has no 'unit_costs_pJ' section",
        em.load_unit_costs,
        write(tmp_path, "x.json", {"costs": {}}),
    )
    check_error(
        FileNotFoundError,
        "unit-cost file 'nope.json' does not exist",
        em.load_unit_costs,
        "nope.json",
    )


def test_synth_report_overlays_only_its_keys(tmp_path):
    synth = {
        "schema": em.SYNTH_SCHEMA,
        "unit_costs_pJ": {
            "E_MAC4": {"value": 0.05, "unit": "pJ/op", "provenance": "yosys + OpenSTA, sky130"},
            "E_CMP": {"value": 12.0, "unit": "fJ/op"},
        },
    }
    path = write(tmp_path, "synth_report.json", synth)
    costs = em.resolve_unit_costs("paper", synth=path, event_cost_pJ=1.5)
    assert costs.joules("E_MAC4") == 0.05e-12
    assert costs["E_MAC4"].provenance == "synth_report.json: yosys + OpenSTA, sky130"
    assert costs.joules("E_CMP") == pytest.approx(12e-15)
    assert costs["E_CMP"].provenance == "synth_report.json"
    assert costs["E_weight"].provenance.startswith("paper: ")
    assert costs.joules("E_move_event") == 1.5e-12
    assert costs["E_move_event"].provenance == "command line --event-cost"


def test_missing_accumulator_for_other_T():
    rates = em.Rates(T=16, baselines=(em.Baseline("Rate T=8", "rate", 8, em.Rate(0.1, "t")),))
    with pytest.raises(
        ValueError,
        match=r"^unit cost 'E_ACC3' is needed but missing from the "
        r"unit costs 'paper' \(present: ",
    ):
        em.compute("bert-base", rates)


# --- statistics files ---------------------------------------------------------------------------


def hist_positions():
    return {
        p: {"family": em.rates.family_of(p), "histogram": {"0": 6, "1": 2, "2": 2}}
        for p in em.POSITIONS
    }


def test_stats_file_with_histograms(tmp_path):
    path = write(tmp_path, "stats.json", {"T": 16, "positions": hist_positions()})
    rates = em.load_stats(path, ks=(0, 1))
    assert rates.source == "statistics file stats.json"
    assert rates.mttfs[0].at("Q-proj. input") == 0.4 / 16
    assert rates.mttfs[1].at("Q-proj. input") == 0.2 / 16
    assert rates.ttfs.at("Q-proj. input") == 1.0 / 16  # lowest level never occurs
    # bit-events: 1 = 1 bit, 2 = 1 bit -> 0.4 per value at k=0, 0.2 at k=1
    assert rates.bit_serial[0].at("Attn. probability") == pytest.approx(0.4)
    assert set(rates.histograms) == set(em.POSITIONS)


def test_stats_file_with_short_position_names_and_count_lists(tmp_path):
    positions = {
        short: {"family": em.rates.family_of(long), "histogram": {"q_min": 0, "counts": [3, 1]}}
        for short, long in zip(
            ("q_in", "k_in", "v_in", "query", "attn_prob", "attn_out", "ffn_in", "ffn_mid"),
            em.POSITIONS,
            strict=True,
        )
    }
    rates = em.load_stats(write(tmp_path, "s.json", {"T": 16, "positions": positions}), ks=(0,))
    assert rates.mttfs[0].at("FFN-contract input") == 0.25 / 16


def test_stats_file_with_measured_rates(tmp_path):
    data = {
        "T": 16,
        "spike_rate_percent": {"TTFS": 3.0, "M-TTFS k=1": 1.5},
        "bit_events_per_delivery": {"k=1": 0.6},
    }
    rates = em.load_stats(write(tmp_path, "regress_summary.json", data))
    assert rates.ttfs.at("Q-proj. input") == 0.03
    assert list(rates.mttfs) == [1]
    assert rates.bit_serial[1].at("Q-proj. input") == 0.6


def test_stats_file_errors(tmp_path):
    check_error(
        ValueError,
        "statistics file s.json has neither 'positions' (code histograms) nor 'spike_rate_percent'",
        em.load_stats,
        write(tmp_path, "s.json", {"T": 16}),
    )
    bad = hist_positions()
    bad["Q-proj. input"]["histogram"] = {"9": 1}
    check_error(
        ValueError,
        "s.json: position 'Q-proj. input': histogram code 9 is outside the levels -8..7 "
        "of T=16 sym",
        em.load_stats,
        write(tmp_path, "s.json", {"T": 16, "positions": bad}),
    )
    check_error(
        ValueError,
        "statistics file s.json: spike rate for M-TTFS k=1 must be in 0..100 %, not -2 %",
        em.load_stats,
        write(tmp_path, "s.json", {"T": 16, "spike_rate_percent": {"M-TTFS k=1": -2}}),
    )
    check_error(
        ValueError,
        "unknown key 'QNN' in 'spike_rate_percent' of s.json; valid: 'TTFS', 'M-TTFS k=<k>'",
        em.load_stats,
        write(tmp_path, "s.json", {"T": 16, "spike_rate_percent": {"QNN": 2}}),
    )


def test_golden_model_statistics_file(tmp_path):
    import torch

    from golden_models.codespace import CodeSpace
    from golden_models.statistics import PositionStats, write_stats

    records = []
    for p in em.POSITIONS:
        space = CodeSpace(16, em.rates.family_of(p))
        counts = torch.zeros(16, dtype=torch.int64)
        counts[space.c] = 6  # code 0
        counts[space.c - 1] = 2  # code 1
        counts[space.c - 3] = 2  # code 3
        records.append(PositionStats.from_counts(p, counts, space))
    path = tmp_path / "stats.json"
    write_stats(path, records)
    rates = em.load_stats(path, ks=(0, 1))
    assert rates.source == "statistics file stats.json"
    assert rates.mttfs[0].at("FFN-expand input") == 0.4 / 16
    assert rates.mttfs[1].at("FFN-expand input") == 0.2 / 16
    # the golden model's own figures agree
    assert rates.mttfs[1].at("Q-proj. input") == records[0].mttfs(1).rate
    assert rates.ttfs.at("Q-proj. input") == records[0].ttfs().rate
    # bit-events: 1 -> 1 bit, 3 -> 2 bits
    assert rates.bit_serial[0].at("Q-proj. input") == pytest.approx((2 * 1 + 2 * 2) / 10)
    assert rates.histograms["Q-proj. input"].probability(3) == 0.2


def test_statistics_of_the_golden_encoder_block_agree_with_its_own_rates(tmp_path):
    from golden_models.encoder import QNNEncoderBlock
    from golden_models.statistics import write_stats

    block = QNNEncoderBlock(T=16, k=1, seed=0)
    x = block.random_input(batch=2, seq=8, seed=0)
    block.calibrate(x)
    positions = block.stats(x)
    write_stats(tmp_path / "golden_stats.json", positions)
    rates = em.load_stats(tmp_path / "golden_stats.json")
    for p in positions:
        assert rates.ttfs.at(p.name) == pytest.approx(p.ttfs().rate, abs=1e-15)
        for k in (0, 1, 2):
            assert rates.mttfs[k].at(p.name) == pytest.approx(p.mttfs(k).rate, abs=1e-15)
    report = em.compute("bert-base", rates)
    assert report.row("Matterhorn M-TTFS (k=1)").energy.total.value > 0


def test_golden_model_statistics_file_errors(tmp_path):
    doc = {"schema": "matterhorn.golden_stats/1", "version": 1, "positions": [{"name": "x"}]}
    check_error(
        ValueError,
        "s.json: positions[0]: position record lacks the field 'T'",
        em.load_stats,
        write(tmp_path, "s.json", doc),
    )


def minilm_doc(blocks):
    def entry(p, hist, i_max, per_k):
        return {
            "histogram_tau": hist,
            "i_max": i_max,
            "histogram_tau_k": {f"k={k}": h for k, h in per_k.items()},
        }

    out = []
    for b in range(blocks):
        positions = {}
        for p in em.POSITIONS:
            c = 7 if em.rates.family_of(p) == "sym" else 15
            hist = [0] * 16
            hist[c] = 8  # code 0
            hist[c - 1 - b] = 2  # code 1 in block 0, code 2 in block 1
            k1 = [0] * 16
            k1[c] = 9
            k1[c - 3] = 1  # under k=1 the network shifted one value to code 3
            positions[p] = entry(p, hist, c, {0: hist, 1: k1})
        out.append({"block": b, "positions": positions})
    return {"schema": "matterhorn.minilm_stats/1", "T": 16, "blocks": out}


def test_minilm_statistics_file(tmp_path):
    rates = em.load_stats(write(tmp_path, "m.json", minilm_doc(2)), ks=(0, 1))
    assert rates.mttfs[0].at("Q-proj. input") == pytest.approx(0.2 / 16)
    # k=1 rates come from the k=1 network's own histograms
    assert rates.mttfs[1].at("Q-proj. input") == pytest.approx(0.1 / 16)
    # bit-events at k=0: block 0 has code 1 (1 bit), block 1 code 2 (1 bit): 0.2 per value
    assert rates.bit_serial[0].at("Query activation") == pytest.approx(0.2)
    assert rates.bit_serial[1].at("Query activation") == pytest.approx(0.2)  # code 3: 2 bits
    assert rates.histograms["Q-proj. input"].total == 20


def test_minilm_statistics_file_checks_its_measured_rates(tmp_path):
    doc = minilm_doc(1)
    doc["positions"] = [{"position": "q_proj_in", "rates": {"TTFS": 0.0625, "k=1": 0.02}}]
    check_error(
        ValueError,
        "m.json: field positions[0].rates['k=1'] (0.02) disagrees with the rate "
        "of its histograms (0.006250)",
        em.load_stats,
        write(tmp_path, "m.json", doc),
    )
    doc["positions"][0]["rates"]["k=1"] = 0.00625
    assert em.load_stats(write(tmp_path, "m.json", doc)).mttfs[1].at("Q-proj. input") == 0.1 / 16


def test_minilm_statistics_file_errors(tmp_path):
    doc = minilm_doc(1)
    doc["blocks"][0]["positions"]["Q-proj. input"]["histogram_tau"] = [1, 2]
    check_error(
        ValueError,
        "m.json: blocks[0].positions['Q-proj. input'].histogram_tau must be a "
        "list of 16 counts, not [1, 2]",
        em.load_stats,
        write(tmp_path, "m.json", doc),
    )
    check_error(
        ValueError,
        "m.json: no histogram_tau_k for any of k = 5",
        em.load_stats,
        write(tmp_path, "m.json", minilm_doc(1)),
        ks=(5,),
    )


# --- options ------------------------------------------------------------------------------------

COUNTS = em.block_totals(em.preset("bert-base"))
EW, EMD = 0.09845e-12, 0.25e-12


def totals(options, rates=None):
    report = em.compute("bert-base", rates or em.Rates.paper(), None, options)
    return {r.name: r.energy for r in report.rows}


def test_option_qnn_kv_operand_move():
    on, off = totals(em.Options()), totals(em.Options(qnn_kv_operand_move=False))
    d = "Matterhorn QNN (dense)"
    assert on[d].move.value - off[d].move.value == pytest.approx(COUNTS["ATT"] * 4 * EMD)
    assert on["Matterhorn TTFS"] == off["Matterhorn TTFS"]


def test_option_bitserial_kv_write_and_read_bits():
    name = "Bit-serial QNN (k=1 pattern)"
    base = totals(em.Options())[name]
    write_on = totals(em.Options(bitserial_kv_write=True))[name]
    assert write_on.kvwrite.value - base.kvwrite.value == pytest.approx(COUNTS["KV"] * 4 * EW)
    assert write_on.wread == base.wread
    read4 = totals(em.Options(bitserial_attention_read_bits=4))[name]
    assert read4.wread.value - base.wread.value == pytest.approx(0.64 * COUNTS["ATT"] * 3 * EW)


def test_option_pooler_is_below_printed_precision():
    base, pooled = totals(em.Options()), totals(em.Options(pooler_amortization=True))
    extra = 64 * 768 * 768 * 4 * EMD / 12
    for name in base:
        assert pooled[name].move.value - base[name].move.value == pytest.approx(extra)
    assert extra / 1e-3 < 0.005  # mJ: below the dense row's printed 0.01 mJ


def test_option_attention_outputs_exact():
    d = em.preset("bert-base")
    exact = em.block_totals(d, attention_outputs="exact")
    assert COUNTS["N_out"] - exact["N_out"] == d.batch * d.heads * d.seq * (d.seq - d.d_k)
    assert (
        totals(em.Options(attention_outputs="exact"))["Matterhorn TTFS"].total.value
        < totals(em.Options())["Matterhorn TTFS"].total.value
    )


def test_activation_bits_follow_the_rates_T():
    report = em.compute("bert-base", em.Rates.uniform(1.0, T=8, k=1))
    assert report.options.activation_bits == 3
    paper = em.compute().row("Matterhorn QNN (dense)").energy.move.value
    assert report.row("Matterhorn QNN (dense)").energy.move.value == pytest.approx(paper * 3 / 4)
    assert json.loads(report.to_json())["options"]["activation_bits"] == 3
    fixed = em.compute("bert-base", em.Rates.uniform(1.0, T=8), None, em.Options(activation_bits=4))
    assert fixed.row("Matterhorn QNN (dense)").energy.move.value == pytest.approx(paper)


def test_option_errors():
    check_error(
        ValueError,
        "attention_outputs must be 'paper' or 'exact', not 'half'",
        em.Options,
        attention_outputs="half",
    )
    check_error(
        TypeError, "pooler_amortization must be a bool, not 1", em.Options, pooler_amortization=1
    )
    check_error(
        ValueError,
        "threshold_bits must be an integer in 1..16, not 0",
        em.Options,
        threshold_bits=0,
    )


def test_report_json_is_deterministic_and_has_provenance():
    a, b = em.compute().to_json(), em.compute().to_json()
    assert a == b
    data = json.loads(a)
    assert data["unit_costs"]["E_move_event"]["provenance"].startswith("paper: Loihi")
    assert data["rates"]["mttfs"]["k=1"]["source"] == "paper, Table 'Per-step spike rate', SST-2"
    row = data["rows"][4]
    assert row["name"] == "Matterhorn QNN (dense)" and row["rel_to_dense_qnn"] == 1.0
    assert set(row["positions"]) == set(em.POSITIONS)
    csv_lines = em.compute().to_csv().splitlines()
    assert csv_lines[0].startswith("row,encoding,T,k,rate_percent")
    assert len(csv_lines) == 1 + 11
