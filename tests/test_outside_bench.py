"""An outside bench of the AXI tile (``tests/outside/tb_outside_axi.py``, written from the docs
with cocotbext-axi) through cocotb's own runner with its default flags: Icarus as the runner
calls it (``-g2012``, no flag of ours) and Verilator with the cores' ``.vlt`` waivers as the
only addition (docs/rtl_axi.md, "An outside bench")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rtl_gen.generate import generate

HERE = Path(__file__).resolve().parent


def _bench_data(config, qnn, layer, path: Path, amba: bool = False, windows: int = 4) -> None:
    from golden_models import encode_events
    from rtl_gen.tile import load_beats

    out = []
    for q in qnn.random_input(windows, seed=5):
        idx, tm = encode_events(q, layer.in_mask)
        res = layer.run_events(idx, tm)
        out.append({"in": list(zip(idx.tolist(), tm.tolist(), strict=True)),
                    "out": list(zip(res.out_index.tolist(), res.out_time.tolist(), strict=True)),
                    "counters": {k: int(v) for k, v in res.counters.as_dict().items()}})
    path.write_text(json.dumps({
        "seed": 1, "T": config.T, "k": config.k, "amba": amba,
        "load_words": -(-config.load_data_width // 32),
        "beats": [list(map(int, b)) for b in load_beats(config, layer)],
        "in_addr_width": config.in_addr_width, "out_addr_width": config.out_addr_width,
        "axis_width": config.axis_width, "windows": out}))


@pytest.mark.parametrize(("sim", "amba"), [("icarus", False), ("verilator", False),
                                         ("icarus", True)],
                         ids=["icarus", "verilator", "icarus-amba"])
def test_outside_bench_with_the_runners_defaults(sim, amba, tmp_path, monkeypatch):
    """The bench on the wrapper, and (``amba``) on its AMBA shell ``mttfs_axi_tile_amba``:
    ``aclk``, active-low ``aresetn``, cocotbext-axi's default ``s_axil_awaddr`` names."""
    from cocotb_tools.runner import get_runner

    from golden_models.qnn import random_qnn
    from rtl_gen.mapper import config_for_chain
    from toolkit_base.toolchain import require, setup_verilator_env

    if sim == "verilator":
        setup_verilator_env()
    require("iverilog" if sim == "icarus" else "verilator")
    qnn = random_qnn((32, 6), T=8, k=1, weight_bits=2, seed=11)
    layers = qnn.integer_layers()
    config = config_for_chain(layers, tile_neurons=6, mesh_rows=1, mesh_cols=1)
    rtl = tmp_path / "rtl"
    generate(config, rtl, ["mttfs_axi_tile"])
    _bench_data(config, qnn, layers[0], tmp_path / "bench.json", amba)
    top = "mttfs_axi_tile_amba" if amba else "mttfs_axi_tile"
    sources = [rtl / "mttfs_tile.v", rtl / "mttfs_axi_tile.v", *([rtl / f"{top}.v"] * amba)]
    if sim == "verilator":  # the waivers that travel with the cores (docs/fusesoc.md)
        sources = [rtl / "mttfs_tile.vlt", rtl / "mttfs_axi_tile.vlt", *sources]
    runner = get_runner(sim)
    runner.build(sources=sources, hdl_toplevel=top, build_dir=tmp_path / "b",
                 timescale=("1ns", "1ps"))
    monkeypatch.syspath_prepend(str(HERE / "outside"))
    results = runner.test(hdl_toplevel=top, test_module="tb_outside_axi",
                          test_dir=tmp_path / "b", extra_env={"OUTSIDE_BENCH":
                                                              str(tmp_path / "bench.json"),
                                                              "PYTHONPATH": str(HERE / "outside")})
    text = Path(results).read_text()
    assert 'name="outside_axi_tile"' in text and "<failure" not in text, text[-2000:]
