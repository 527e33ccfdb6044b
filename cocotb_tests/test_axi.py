"""The AXI wrappers under cocotbext-axi: whole layers loaded over AXI4-Lite and run over
AXI4-Stream, bit-exact against the golden model, with random pauses on every channel; counters
read while a layer runs are one run's; SLVERR on an unmapped address. The system on Icarus and
the tile on Verilator here; the system on Verilator is ``slow`` (its build is the long part).
A planted fault (the images of another layer) must fail the same bench."""

from __future__ import annotations

from pathlib import Path

import pytest

from regression.axi import run_axi, system_config, tile_config

ROOT = Path(__file__).resolve().parents[1] / "build" / "cocotb"


def _chain(seed: int = 3):
    from golden_models.qnn import random_qnn
    from rtl_gen.mapper import config_for_chain

    qnn = random_qnn((8, 8, 4, 4), T=8, k=1, seed=seed)
    layers = qnn.integer_layers()
    return config_for_chain(layers, tile_neurons=4, mesh_rows=2, mesh_cols=2), layers, qnn


def _layer(seed: int = 4):
    from golden_models.qnn import random_qnn
    from rtl_gen.mapper import config_for_chain

    qnn = random_qnn((32, 6), T=8, k=1, weight_bits=2, seed=seed)
    layers = qnn.integer_layers()
    return config_for_chain(layers, tile_neurons=6, mesh_rows=1, mesh_cols=1), layers[0], qnn


def _system(sim_name, tmp_path, *, loaded=None):
    cfg, layers, qnn = _chain()
    bench = system_config(cfg, layers, qnn.random_input(4, seed=7), seed=11, bad_tlast=1)
    if loaded is not None:
        bench["writes"] = system_config(cfg, loaded, qnn.random_input(1, seed=7))["writes"]
    return run_axi("system", cfg, bench, sim_name, ROOT, tmp_path / "run")


def test_axi_system_on_icarus(tmp_path):
    run = _system("icarus", tmp_path)
    assert run.passed, run.error
    r = run.report
    assert r["runs"] == 4 and r["reads_while_running_checked"] >= 4


def test_axi_system_catches_the_wrong_images(tmp_path):
    from golden_models.qnn import random_qnn

    other = random_qnn((8, 8, 4, 4), T=8, k=1, seed=9).integer_layers()
    run = _system("icarus", tmp_path, loaded=other)
    assert not run.passed and run.report["mismatches"] > 0


def test_axi_tile_on_verilator(tmp_path):
    cfg, layer, qnn = _layer()
    bench = tile_config(cfg, layer, qnn.random_input(4, seed=8), seed=12)
    run = run_axi("tile", cfg, bench, "verilator", ROOT, tmp_path / "run")
    assert run.passed, run.error
    assert run.report["reads_while_running_checked"] >= 4


@pytest.mark.slow
def test_axi_system_on_verilator(tmp_path):
    run = _system("verilator", tmp_path)
    assert run.passed, run.error


@pytest.mark.slow
def test_axi_tile_on_icarus(tmp_path):
    cfg, layer, qnn = _layer()
    bench = tile_config(cfg, layer, qnn.random_input(4, seed=8), seed=12)
    run = run_axi("tile", cfg, bench, "icarus", ROOT, tmp_path / "run")
    assert run.passed, run.error
