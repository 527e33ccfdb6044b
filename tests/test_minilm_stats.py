"""Spike statistics of the converted MiniLM: histograms, rates, k=0 bit-exactness, report."""

import json

import pytest
import torch

from energy_model.plots import plot_minilm
from networks.bert import POSITIONS
from networks.report import rates_document, summary_markdown, write_report
from networks.stats import SCHEMA, collect, dumps, summarise

pytestmark = pytest.mark.usefixtures("one_thread")


K_MAX = 2


@pytest.fixture(scope="module")
def run(minilm, pydoc_corpus, minilm_qnn):
    model, tok = minilm
    qnn = minilm_qnn
    sentences = pydoc_corpus.evaluation[:3]
    r = collect(model, qnn, tok, sentences, K_MAX)
    doc = summarise(qnn, r, {"model": "all-MiniLM-L6-v2", "dims": {}, "corpus": {}})
    return model, tok, qnn, sentences, r, doc


def test_k0_bit_exact_and_lossy_above(run):
    *_, r, doc = run
    assert torch.equal(r.emb_k[0], r.emb_qnn)
    assert doc["quality"]["k=0"]["bit_exact_qnn"] is True
    assert doc["quality"]["k=0"]["cos_qnn"]["min"] == 1.0
    assert doc["quality"]["k=1"]["bit_exact_qnn"] is False


def test_histograms_and_event_counts_agree(run):
    _, _, qnn, _, r, doc = run
    for (b, name), h in r.tallies[0].hist.items():
        point = qnn.layers[b].points[name]
        n = int(h.sum())
        # every element has exactly one pre-mask event time; k=0 silences exactly I_max
        assert r.tallies[0].events[(b, name)] == n - int(h[point.mask.i_max])
        for k in range(1, K_MAX + 1):
            hk = r.tallies[k].hist[(b, name)]
            assert int(hk.sum()) == n
            silent = [t for t in range(16) if abs(t - point.mask.i_max) <= k]
            assert r.tallies[k].events[(b, name)] == n - int(hk[silent].sum())


def test_rates_definition(run):
    *_, r, doc = run
    n = sum(int(h.sum()) for h in r.tallies[0].hist.values())
    ev = sum(r.tallies[1].events.values())
    assert doc["rates"]["k=1"] == round(ev / (n * 16), 6)
    ttfs = sum(int(h.sum()) - int(h[15]) for h in r.tallies[0].hist.values())
    assert doc["rates"]["TTFS"] == round(ttfs / (n * 16), 6)
    assert [p["position"] for p in doc["positions"]] == list(POSITIONS)
    for p in doc["positions"]:
        assert p["mode_q"] == (7 if p["family"] == "sym" else 15) - p["mode_tau"]
        assert 0 <= p["p_q0"] <= p["p_mode"] <= 1


def test_deterministic(run):
    model, tok, qnn, sentences, _, doc = run
    again = summarise(
        qnn,
        collect(model, qnn, tok, sentences, K_MAX),
        {"model": "all-MiniLM-L6-v2", "dims": {}, "corpus": {}},
    )
    assert dumps(again) == dumps(doc)


def test_report_files(run, tmp_path):
    *_, doc = run
    doc = dict(
        doc,
        corpus={"name": "c", "source": "s", "calibration_sentences": 6, "evaluation_sentences": 3},
        quantization={"weight_bits": 4, "act_bits": 4, "rounding": "round"},
    )
    out = tmp_path / "out"
    write_report(doc, out, plot=plot_minilm)
    names = sorted(p.name for p in out.iterdir())
    assert names == [
        ".matterhorn-owned.json",
        "block_modes.png",
        "positions.png",
        "rates.json",
        "rates.png",
        "stats.json",
        "summary.md",
    ]
    assert json.loads((out / "stats.json").read_text())["schema"] == SCHEMA
    rates = json.loads((out / "rates.json").read_text())
    assert rates == json.loads(json.dumps(rates_document(doc)))
    assert "| Attn. probability | asym |" in summary_markdown(doc)
    assert str(tmp_path) not in (out / "stats.json").read_text()
    first = (out / "positions.png").read_bytes()
    write_report(doc, out, plot=plot_minilm)
    assert (out / "positions.png").read_bytes() == first
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".stats-")]


def test_collect_checks(run):
    model, tok, qnn, *_ = run
    with pytest.raises(ValueError, match="at least one evaluation sentence"):
        collect(model, qnn, tok, [], 1)
    with pytest.raises(ValueError, match="k_max must be in 0..15, not 16"):
        collect(model, qnn, tok, ["A sentence here."], 16)
    with pytest.raises(ValueError, match="not calibrated"):
        collect(model, model, tok, ["A sentence here."], 1)
