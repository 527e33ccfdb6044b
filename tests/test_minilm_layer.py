"""A whole real layer in RTL: MiniLM's block-0 Q projection partitioned over the mesh.

The layer is the full 384 x 384 Q projection with the QNN's real 4-bit weights and calibrated
masks at radius k = 1 (:func:`regression.layer.minilm_q_projection`); the inputs are real
token windows. :func:`regression.layer.run_layer` maps it on ``mttfs_system`` (tiles of 48
neurons on a 3x3 mesh) and the system bench compares every output event and every counter
with the golden QNN. The 3x3 system runs on Icarus here; Verilator's build of it takes
about 3.3 CPU minutes, so Verilator runs the same whole layer on a 2x2 mesh of 96-neuron tiles
(about 1.3 CPU minutes) in the suite, and the 3x3 system on 64 windows in
``benchmarks/bench_layer.py`` (docs/rtl_system.md, "The whole Q-projection layer").

A layer that does not fit the mesh is refused in one line before anything is generated, and
a weight flipped in the loaded image must come back as mismatches.
"""

import pytest
import torch

import regression
from conftest import missing
from golden_models import IntegerLayer, encode_events
from regression.layer import layer_config, minilm_q_projection, run_layer

K = 1
WINDOWS = 3


def _need_minilm():
    """Skip (outside CI) with the reason when MiniLM is not installed; in CI it must be."""
    from networks.bert import model_dir

    try:
        model_dir()
    except FileNotFoundError as exc:
        missing(str(exc))


@pytest.fixture(scope="module")
def q_proj(request, one_thread):
    _need_minilm()
    qnn = request.getfixturevalue("minilm_qnn")
    _, tok = request.getfixturevalue("minilm")
    return minilm_q_projection(WINDOWS, k=K, qnn=(qnn, tok))


def _check(run, layer, windows):
    assert run.passed, run.error
    res = run.result
    assert res.counters_rtl == res.counters_golden
    golden = res.counters_golden
    enc = sum(len(encode_events(q, layer.in_mask)[0]) for q in windows)
    assert golden["cnt_enc_events_out"] == enc
    out = sum(layer.run_codes(q).counters.events_out for q in windows)
    assert run.figures["events_out"] == out
    assert run.figures["windows"] == len(windows)
    # every tile took every encoder event; a single layer sends no flit
    tiles = run.tiles
    assert run.figures["tile_events_in"] == tiles * enc
    assert golden["cnt_flits"] == golden["cnt_hops"] == 0


def test_q_projection_is_the_qnn(q_proj):
    layer = q_proj.layer
    assert (layer.n_in, layer.n_out, layer.weight_bits) == (384, 384, 4)
    assert layer.in_mask.k == layer.out_mask.k == K
    assert q_proj.q_in.shape == (WINDOWS, 384)
    for q_in, q_out in zip(q_proj.q_in, q_proj.q_out, strict=True):
        assert torch.equal(layer.out_mask.space.c - layer.run_codes(q_in).tau, q_out)


def test_whole_layer_on_mesh_icarus(q_proj):
    windows = list(q_proj.q_in)
    run = run_layer(q_proj.layer, windows, "icarus", out_dir=regression.DEFAULT_ROOT,
                    p_idle=0.05, p_stall=0.2, name="minilm-q-layer")
    assert run.tiles == 8
    _check(run, q_proj.layer, windows)


@pytest.mark.slow
def test_whole_layer_on_2x2_verilator(q_proj):
    """The whole layer on Verilator in four 96-neuron tiles: the 3x3 system's Verilator build
    takes about 3.3 CPU minutes, the 2x2's about 1.3."""
    windows = list(q_proj.q_in)
    run = run_layer(q_proj.layer, windows, "verilator", tile_neurons=96, mesh=(2, 2),
                    out_dir=regression.DEFAULT_ROOT, p_stall=0.2, name="minilm-q-2x2")
    assert run.tiles == 4
    _check(run, q_proj.layer, windows)


def _flipped_weight(layer: IntegerLayer, q: torch.Tensor) -> IntegerLayer:
    """``layer`` with one weight negated, chosen so that the window's output events change."""
    want = layer.run_codes(q)
    idx, _ = encode_events(q, layer.in_mask)
    for i in idx.tolist():
        for j in range(layer.n_out):
            w = int(layer.weights[i, j])
            if w == 0 or w == -(1 << (layer.weight_bits - 1)):
                continue
            weights = layer.weights.clone()
            weights[i, j] = -w
            bad = IntegerLayer(weights, layer.weight_bits, layer.init, layer.theta,
                               layer.in_mask, layer.out_mask)
            got = bad.run_codes(q)
            if not (torch.equal(got.out_index, want.out_index)
                    and torch.equal(got.out_time, want.out_time)):
                return bad
    raise AssertionError("no single weight changes this window's events")


def test_flipped_weight_is_caught(q_proj, monkeypatch):
    import regression.cache
    import regression.execute
    import regression.layer

    calls = []
    real = regression.cache.generate_rtl

    def counted(params, root, modules=None):
        calls.append(params)
        return real(params, root, modules)

    for module in (regression.cache, regression.execute, regression.layer):
        monkeypatch.setattr(module, "generate_rtl", counted)
    q = q_proj.q_in[0]
    bad = _flipped_weight(q_proj.layer, q)
    run = run_layer(q_proj.layer, [q], "icarus", out_dir=regression.DEFAULT_ROOT,
                    loaded=bad, name="minilm-q-mutant")
    assert not run.passed
    assert run.result.report.get("mismatches", 0) >= 1, run.error  # the bench ran and saw it
    assert len(calls) == 1  # the system is generated (or found in the cache) once a run


def test_layer_command(q_proj, capsys):
    """``matterhorn layer`` end to end on one window (the same Verilog and build as above)."""
    from matterhorn.cli import main

    argv = ["layer", "--sim", "icarus", "--windows", "1", "--out", str(regression.DEFAULT_ROOT)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "384x384, k=1, 1 token windows, tiles of 48 on 3x3" in out
    assert "icarus: PASS; 8 tiles, 1 windows" in out
    assert " 0 mismatches" in out


def _random_layer(n_out: int) -> IntegerLayer:
    from golden_models.qnn import random_qnn

    return random_qnn((16, n_out), T=16, k=1, weight_bits=4, seed=3).integer_layers()[0]


def test_layer_that_does_not_fit_the_mesh(tmp_path):
    layer = _random_layer(384)
    out = tmp_path / "never"
    with pytest.raises(ValueError) as info:
        run_layer(layer, [torch.zeros(16, dtype=torch.int64)], "icarus", tile_neurons=48,
                  mesh=(2, 3), out_dir=out)
    msg = str(info.value)
    assert msg == ("the layer's 384 outputs need 8 tiles of 48 neurons, the 2x3 mesh has "
                   "6 nodes")
    assert "\n" not in msg
    assert not out.exists()  # nothing generated or written
    # the same layer fits 3x3, and a 2x3 mesh with larger tiles
    assert layer_config(layer, tile_neurons=48, mesh=(3, 3))[1].tiles[-1].node == 7
    assert len(layer_config(layer, tile_neurons=64, mesh=(2, 3))[1].tiles) == 6


def test_window_limit_has_one_home(tmp_path):
    """``run_layer``, ``minilm_q_projection`` and ``matterhorn layer`` refuse more than
    ``MAX_WINDOWS`` windows alike, naming the value and the limit, before anything is made."""
    from regression.layer import MAX_WINDOWS

    assert MAX_WINDOWS == 4096
    message = f"windows must be in 1..{MAX_WINDOWS}, not {MAX_WINDOWS + 1}"
    layer = _random_layer(24)
    out = tmp_path / "never"
    with pytest.raises(ValueError) as info:
        run_layer(layer, [torch.zeros(16, dtype=torch.int64)] * (MAX_WINDOWS + 1), "icarus",
                  mesh=(1, 1), out_dir=out)
    assert str(info.value) == message
    assert not out.exists()
    with pytest.raises(ValueError) as info:  # before MiniLM is loaded
        minilm_q_projection(MAX_WINDOWS + 1)
    assert str(info.value) == message


def test_k_checked_before_minilm_is_loaded():
    """The conversion's code space has T = 16: ``k`` is checked by codespace.check_k first."""
    from regression.layer import minilm_T

    assert minilm_T() == 16
    with pytest.raises(ValueError, match=r"^k must be in 0\.\.15 for T=16, not 16$"):
        minilm_q_projection(1, k=16)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"mesh": (65, 1)}, "mesh_rows must be"),
        ({"mesh": (3,)}, "mesh must be (rows, cols)"),
        ({"tile_neurons": 0}, "tile_neurons must be"),
        ({"tile_neurons": 257, "mesh": (2, 2)}, "tile_neurons must be"),
    ],
)
def test_bad_mesh_refused_before_generation(tmp_path, kwargs, message):
    layer = _random_layer(24)
    out = tmp_path / "never"
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        run_layer(layer, [torch.zeros(16, dtype=torch.int64)], "icarus", out_dir=out, **kwargs)
    assert not out.exists()
