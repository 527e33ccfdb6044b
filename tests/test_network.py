# amaranth: UnusedElaboratable=no
"""A whole network through the generated hardware (regression.network, networks.network,
matterhorn network): a small random network of two blocks on Verilator and on Icarus, every
value of every block against the integer QNN, block 0's hardware output feeding block 1, the
embedding from the hardware's last stream equal to the QNN's bit for bit.

The fast-harness builds are shared with tests/test_block_fast.py (the same tile and attention
shapes, ``build/block-tests``)."""

from __future__ import annotations

import dataclasses
import json

import pytest
import torch

from networks.block import random_block_model, random_float_model
from networks.network import (
    check_blocks,
    design_quality,
    network_case,
    stream_embedding,
    trained_k,
)
from regression.network import NetworkRun, run_network
from tests.test_block_fast import ROOT

#: One sentence of 8 tokens with [CLS] and [SEP].
SENTENCE = ["A short sentence of six words."]
#: The tiny network of the checks that need no build (two blocks of hidden 8).
TINY = {"hidden": 8, "heads": 2, "ffn": 16, "seq": 8, "layers": 2}


@pytest.fixture(scope="module")
def small():
    """Two blocks of the shapes tests/test_block_fast.py builds (hidden 32, 12 positions)."""
    return random_block_model(seq=12, layers=2)


@pytest.fixture(scope="module")
def tiny():
    return random_block_model(**TINY)


@pytest.mark.parametrize(("design", "sim"), [("mttfs-k1", "verilator"), ("dense", "icarus")])
def test_a_small_network_runs_bit_exact_on_both_simulators(small, design, sim):
    qnn, tok = small
    case = network_case(qnn, tok, SENTENCE, design)
    run = run_network(qnn, case, sim=sim, root=ROOT)
    assert len(run.blocks) == 2
    for b in run.blocks:
        for p in b.pieces:
            assert p.mismatches == 0, (p.piece, p.first_mismatch)
        assert b.tokens == 8 and sum(p.checked for p in b.pieces) > 0
    assert run.handoff == [0, 0]
    assert run.equal == [True] and run.mismatches == 0
    # the embedding is the QNN's, and a unit vector of the hidden width
    e = torch.tensor(run.embeddings[0], dtype=torch.float64)
    assert torch.equal(e, case.embeddings[0]) and e.shape == (32,)
    assert abs(float(e.norm()) - 1) < 1e-12
    assert NetworkRun.load(json.loads(json.dumps(run.dump()))).dump() == run.dump()


def _planted(case, block: int, name: str):
    """The network case with one value of block ``block``'s first sentence's tensor ``name``
    (what the QNN gives or expects there) moved by 5."""
    b = case.blocks[block]
    s0 = b.sequences[0]
    bad = s0.tensors[name].clone()
    bad[1, 2] += 5
    s0 = dataclasses.replace(s0, tensors={**s0.tensors, name: bad})
    blocks = list(case.blocks)
    blocks[block] = dataclasses.replace(b, sequences=(s0, *b.sequences[1:]))
    return dataclasses.replace(case, blocks=tuple(blocks))


@pytest.mark.parametrize("sim", ["amaranth", "verilator"])
def test_the_next_block_takes_the_hardwares_output(tiny, sim):
    """Block 1's stream input planted wrong in what the QNN gives it: the hardware's output of
    block 0 differs from it in that one value (``handoff``), and block 1, fed with the
    hardware's output, still matches the QNN everywhere (fed the planted value, its first
    add+LayerNorm would not). In the fast harness what block 0's last unit made is read back
    from a recording of its output stream."""
    qnn, tok = tiny
    planted = _planted(network_case(qnn, tok, ["Two words."], "mttfs-k1"), 1, "r_in")
    run = run_network(qnn, planted, sim=sim, root=ROOT)
    assert run.handoff == [0, 1]
    assert [b.mismatches for b in run.blocks] == [0, 0]
    assert run.equal == [True]


def test_a_block_fed_values_counts_those_that_differ(tiny):
    qnn, tok = tiny
    case = network_case(qnn, tok, ["Two words.", "Three words here."], "dense")
    b0, b1 = case.blocks
    made = {"q_proj_in": b0.cat("q_proj_in", next_block=True),
            "k_proj_in": b0.cat("k_proj_in", next_block=True),
            "v_proj_in": b0.cat("v_proj_in", next_block=True),
            "r_out": b0.cat("r_out")}
    fed, differ = b1.fed(made)
    assert differ == 0  # the QNN's block 0 makes what its block 1 takes
    assert torch.equal(fed.cat("k_proj_in"), b1.cat("k_proj_in"))
    made["k_proj_in"] = made["k_proj_in"].clone()
    made["k_proj_in"][0, :3] += 1
    fed, differ = b1.fed(made)
    assert differ == 3 and torch.equal(fed.cat("k_proj_in"), made["k_proj_in"])
    with pytest.raises(ValueError, match=r"values of \[10\] tokens, this block's sentences hold 9"):
        b1.fed({k: torch.cat([v, v[:1]]) for k, v in made.items()})
    with pytest.raises(ValueError, match=r"q_proj_in: \(4, 8\) values made, the block takes"):
        b1.fed({k: v[:-1] for k, v in made.items()})


def test_the_embedding_of_the_last_stream_is_the_qnns(tiny):
    """:func:`stream_embedding` of the QNN's own last stream equals its ``embed``, bit for bit,
    with the design's masks (the same pooling, one home)."""
    qnn, tok = tiny
    for design in ("dense", "mttfs-k1"):
        case = network_case(qnn, tok, ["Two words.", "Three words here."], design)
        last = case.blocks[-1]
        for i, s in enumerate(last.sequences):
            e = stream_embedding(qnn, s.tensors["r_out"], s.valid)
            assert torch.equal(e, case.embeddings[i])


def test_lossless_designs_have_one_quality_and_k1_its_own(tiny):
    qnn, tok = tiny
    fm, _ = random_float_model(**TINY)
    texts = ["Two words.", "Three words here.", "Four words are here.", "One."]
    emb_float = torch.cat([fm.to(torch.float64).embed(*tok([t])) for t in texts])
    q = {d: design_quality(qnn, tok, texts, d, emb_float)
         for d in ("dense", "ttfs", "mttfs-k0", "mttfs-k1")}
    assert torch.equal(q["dense"][1], q["ttfs"][1]) and torch.equal(q["dense"][1],
                                                                     q["mttfs-k0"][1])
    assert not torch.equal(q["dense"][1], q["mttfs-k1"][1])
    assert 0 < q["dense"][0]["cos_float"]["mean"] <= 1
    assert q["dense"][0]["sentences"] == 4
    assert [trained_k(d) for d in ("dense", "ttfs", "mttfs-k0", "mttfs-k1", "mttfs-k2")] == [
        0, 0, 0, 1, 2]


def test_a_block_of_another_size_is_refused(tiny):
    import copy

    qnn, _ = tiny
    bad = copy.deepcopy(qnn)
    bad.layers[1].ffn_expand.w_int = bad.layers[1].ffn_expand.w_int[:8]
    with pytest.raises(ValueError, match=r"block 1's ffn_expand layer is \(8, 8\)"):
        check_blocks(bad)
    check_blocks(qnn)


def test_the_command_on_the_random_network(tmp_path, capsys):
    """``matterhorn network`` on the small random network in the Amaranth simulator: the
    answer first, network.json valid against its schema (and a malformed one refused in one
    line naming the field), network.md and network.png; a second run into the same folder
    takes the designs kept by the first."""
    from matterhorn.cli import main
    from toolkit_base.schemas import validate

    out = tmp_path / "n"
    argv = ["network", "--rtl", "amaranth", "--design", "dense", "--design", "mttfs", "--k",
            "1", "--sentences", "1", "--eval-sentences", "8", "--out", str(out)]
    assert main(argv) == 0
    said = capsys.readouterr().out
    assert said.startswith("At quality cosine ")
    assert "an M-TTFS k = 1 network costs" in said and "0 mismatches" in said
    doc = json.loads((out / "network.json").read_text())
    validate(doc, "network", "network.json")
    assert doc["dims"]["blocks"] == 2 and doc["evaluation"]["sentences"] == 8
    assert [d["design"] for d in doc["designs"]] == ["dense", "mttfs-k1"]
    for d in doc["designs"]:
        assert d["mismatches"] == 0 and d["embeddings_equal"] == 1
        assert [b["block"] for b in d["blocks"]] == [0, 1]
        assert len(d["embeddings"][0]) == 8 and d["energy"]["gates"] is None
    s = doc["sentences"][0]
    assert s["length"] == len(s["tokens"]) == doc["tokens"]
    assert (out / "network.md").read_text().startswith(
        "# The whole network through the generated hardware\n\n**At quality cosine ")
    assert (out / "network.png").stat().st_size > 0
    assert sorted(p.name for p in (out / "designs").iterdir()) == ["dense.json", "mttfs-k1.json"]
    doc["designs"][0]["blocks"][1]["mismatches"] = "none"
    with pytest.raises(ValueError, match=r"^network.json: field 'designs\[0\].blocks\[1\]"
                                         r".mismatches': 'none' is not of type 'integer'$"):
        validate(doc, "network", "network.json")
    assert main(argv) == 0
    assert "dense: taken from" in capsys.readouterr().err


@pytest.mark.slow
def test_minilms_whole_network_on_verilator(tmp_path):
    """MiniLM's six blocks, converted post-training (no checkpoint needed), dense and M-TTFS
    k = 1 on two evaluation sentences, on Verilator: every value of every block, the values
    handed on and the embeddings equal to the QNN's (the fine-tuned networks' run:
    docs/network.md; about 15 minutes on two cores with the builds)."""
    from matterhorn.cli import main

    out = tmp_path / "n"
    code = main(["network", "--model", "minilm", "--converted", "--design", "dense", "--design",
                 "mttfs", "--k", "1", "--sentences", "2", "--eval-sentences", "16",
                 "--out", str(out)])
    assert code == 0
    doc = json.loads((out / "network.json").read_text())
    assert doc["dims"]["blocks"] == 6
    for d in doc["designs"]:
        assert d["mismatches"] == 0 and d["handoff_mismatches"] == 0
        assert d["embeddings_equal"] == 2 and len(d["embeddings"][0]) == 384


@pytest.mark.slow
def test_the_random_network_priced_in_gates_with_a_held_out_block(tmp_path):
    """``matterhorn network --gates`` on the small random network, sampled as a MiniLM run is
    (one tile of each linear piece, one head, two windows), block 1 held out and replayed in
    full: every design priced in every block by component, the sampling said in
    ``gates.method``, and block 1's fitted figures within 10 % of its replay (measured: -0.2 %
    dense, -2.6 % k = 1; 14 minutes on two idle cores, most of it mapping netlists)."""
    from matterhorn.cli import main

    out = tmp_path / "n"
    assert main(["network", "--model", "random", "--design", "dense", "--design", "mttfs",
                 "--k", "1", "--sentences", "3", "--eval-sentences", "8", "--gates",
                 "--gate-sentences", "2", "--validate-block", "1", "--gate-tiles", "1",
                 "--gate-heads", "1", "--gate-windows", "2", "--out", str(out)]) == 0
    doc = json.loads((out / "network.json").read_text())
    m = doc["gates"]["method"]
    assert (m["sample_tiles"], m["sample_heads"], m["sample_windows"]) == (1, 1, 2)
    assert "1 tile of each linear piece" in m["how"]
    for d in doc["designs"]:
        g = d["energy"]["gates"]
        assert g is not None and g["per_token_pJ"]["total"] > 0
        assert len(g["per_block_per_token_pJ"]) == 2
        v = d["validation"]
        assert v["held_out_block"] == 1 and v["fitted_from"] == 0
        assert abs(v["totals"]["total"]["error"]) < 0.10, (d["design"], v["totals"]["total"])


def test_what_is_handed_on_is_what_the_unit_made(tiny):
    """Block 0's expected output stream planted wrong: the fast harness counts the mismatch in
    block 0, and what it hands on is what block 0's last unit made (read back from its
    recorded output), not the planted expectation: block 1 is fed the right value and
    matches everywhere."""
    qnn, tok = tiny
    planted = _planted(network_case(qnn, tok, ["Two words."], "mttfs-k1"), 0, "r_out")
    run = run_network(qnn, planted, sim="verilator", root=ROOT)
    assert run.blocks[0].mismatches >= 1
    assert run.handoff == [0, 0]
    assert run.blocks[1].mismatches == 0
