"""A real MiniLM layer in RTL: the Q-projection slice on the generated tile, both simulators.

The slice (:mod:`golden_models.models.rtl_slice`) is 384 inputs x 16 neurons of block 0's Q
projection with the QNN's real 4-bit weights, threshold tables of its real scales and bias, the
calibrated masks at radius k = 1, and input vectors that are real corpus tokens. The tile is
generated at that size (``rtl_gen``), loaded through its load port and run by the cocotb tile
bench (``cocotb_tests.tb_tile``), which compares every output event and every counter with
:meth:`golden_models.integer_layer.IntegerLayer.run_events`.
"""

import pytest
import torch

from cocotb_tests import regress, sim
from cocotb_tests.reference import TileGeometry, load_beats, tile_window
from golden_models.models.bert import load_minilm
from golden_models.models.corpus import load_corpus
from golden_models.models.ptq import convert
from golden_models.models.rtl_slice import capture_slice

K = 1
VECTORS = 8


@pytest.fixture(scope="module")
def minilm_slice():
    saved = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        model, tok = load_minilm()
        corpus = load_corpus("pydoc-topics")
        qnn = convert(model, tok, corpus.calibration[:8])
        return capture_slice(
            qnn, tok, corpus.evaluation[:4], block=0, n_out=16, k=K, max_vectors=VECTORS
        )
    finally:
        torch.set_num_threads(saved)


def tile_config(manifest: dict, sl) -> dict:
    """The tile bench's configuration for one load of the slice and one window per vector."""
    geo = TileGeometry.from_manifest(manifest)
    layer = sl.layer
    entry = regress.module_entry(manifest, "mttfs_tile")
    block = {
        "k": layer.out_mask.k,
        "i_max_in": layer.in_mask.i_max,
        "i_max_out": layer.out_mask.i_max,
        "dist": "minilm",
        "load": load_beats(geo, layer),
        "windows": [tile_window(layer, q) for q in sl.q_in],
    }
    return {
        "seed": 0,
        "T": geo.T,
        "module": entry,
        "counters": entry["counters"],
        "geometry": {"T": geo.T, "n_in": geo.n_in, "neurons": geo.neurons, "groups": geo.groups},
        "p_idle": 0.25,
        "p_stall": 0.35,
        "blocks": [block],
        "resets": [],
        "corrupt": None,
    }


@pytest.mark.parametrize("sim_name", sim.SIMULATORS)
def test_minilm_slice_on_tile(minilm_slice, sim_name):
    layer = minilm_slice.layer
    # the golden layer is the QNN's own computation for these tokens
    for q_in, q_out in zip(minilm_slice.q_in, minilm_slice.q_out, strict=True):
        assert torch.equal(layer.out_mask.space.c - layer.run_codes(q_in).tau, q_out)
    params = {
        "T": layer.out_mask.T,
        "k": K,
        "family": layer.in_mask.space.family,
        "weight_bits": layer.weight_bits,
        "n_in": layer.n_in,
        "tile_neurons": layer.n_out,
    }
    root = regress.DEFAULT_ROOT.resolve()
    rtl_dir, manifest = regress.generate_rtl(params, root)
    build = regress.build_module(sim_name, rtl_dir, manifest, "mttfs_tile", root, False)
    config = tile_config(manifest, minilm_slice)
    res = sim.run(build, "cocotb_tests.tb_tile", config, root / "runs" / f"minilm-q-{sim_name}")
    assert res.passed, res.tail(20)
    golden = res.report["counter_totals_golden"]
    assert res.report["counter_totals_rtl"] == golden
    assert golden["events_in"] == sum(len(w["in"]) for w in config["blocks"][0]["windows"])
    assert golden["events_out"] + golden["events_suppressed"] == VECTORS * layer.n_out
