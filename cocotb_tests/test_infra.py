"""The bench infrastructure itself: simulators start, the scoreboard can fail, streams work."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

from cocotb_tests.bench import corrupt_expectation
from cocotb_tests.layout import PayloadLayout
from cocotb_tests.passthrough import passthrough_verilog
from regression import sim
from regression.scoreboard import InOrderScoreboard

ROOT = Path(__file__).resolve().parents[1] / "build" / "cocotb"


@pytest.mark.parametrize("name", sim.SIMULATORS)
def test_simulator_starts(name):
    text = sim.ensure_simulator(name)
    assert text


def test_bad_simulator_name():
    msg = r"sim must be one of \('icarus', 'verilator'\), not 'vcs'"
    with pytest.raises(ValueError, match=msg):
        sim.check_sim("vcs")


def _board(expected, observed):
    board = InOrderScoreboard("o")
    board.expect_all(expected)
    for item in observed:
        board.observe(item)
    return board.finish()


def test_scoreboard_passes_equal_streams():
    events = [(3, 0), (1, 2), (7, 2)]
    assert _board(events, events) == []


@pytest.mark.parametrize("mode", ["alter", "drop"])
def test_scoreboard_fails_on_one_corrupted_expectation(mode):
    rng = random.Random(1)
    events = [(a, t) for t in range(4) for a in range(3)]
    bad = corrupt_expectation(events, mode, rng)
    mismatches = _board(bad, events)
    assert mismatches, mode
    kinds = {m.kind for m in mismatches}
    assert kinds <= {"value", "unexpected", "missing"}


def test_scoreboard_reports_missing_and_unexpected():
    assert [m.kind for m in _board([(1, 1), (2, 2)], [(1, 1)])] == ["missing"]
    assert [m.kind for m in _board([(1, 1)], [(1, 1), (2, 2)])] == ["unexpected"]


def test_layout_pack_roundtrip():
    lay = PayloadLayout.of(
        [
            {"name": "addr", "offset": 0, "width": 5},
            {"name": "d", "offset": 5, "width": 4, "signed": True},
        ]
    )
    for v in ({"addr": 31, "d": -8}, {"addr": 0, "d": 7}):
        assert lay.unpack(lay.pack(v)) == v
    with pytest.raises(ValueError, match="does not fit"):
        lay.pack({"addr": 32})


@pytest.fixture(scope="module")
def passthrough(tmp_path_factory):
    out = tmp_path_factory.mktemp("passthrough")
    path, entry = passthrough_verilog(out / "rtl")
    return out, path, entry


@pytest.mark.parametrize("name", sim.SIMULATORS)
@pytest.mark.parametrize("corrupt", [None, "alter", "drop"])
def test_passthrough_bench(passthrough, name, corrupt):
    """The full chain (driver, backpressure, monitor, scoreboard) passes on a correct design
    and fails when one expected event is altered or dropped."""
    out, path, entry = passthrough
    # builds live next to the regression's, so Verilator's runtime objects are shared
    b = sim.build(name, [path], "mttfs_passthrough", ROOT / "sim" / name / "passthrough")
    cfg = dict(entry, seed=5, n=120, p_idle=0.3, p_stall=0.4, corrupt=corrupt)
    res = sim.run(b, "cocotb_tests.tb_passthrough", cfg, out / f"run_{name}_{corrupt}")
    assert res.tests == 1, res.tail()
    if corrupt is None:
        assert res.passed, res.tail()
        assert res.report["beats"] == 120
        assert res.report["stalled_beats"] > 0
    else:
        assert res.failures == 1, f"the scoreboard missed a {corrupt}ed expectation"


def test_benches_come_from_this_checkout(passthrough, tmp_path, monkeypatch):
    """A checkout's regression runs its own benches: with another ``cocotb_tests`` first on
    the path (as an editable install of another checkout, or ``''`` in the simulator's run
    folder, gives), the simulator still imports this checkout's bench. The decoy fails every
    run it is imported in."""
    out, path, entry = passthrough
    decoy = tmp_path / "decoy" / "cocotb_tests"
    decoy.mkdir(parents=True)
    (decoy / "__init__.py").write_text("")
    (decoy / "tb_passthrough.py").write_text(
        "import cocotb\n\n\n@cocotb.test()\nasync def test_passthrough(dut):\n"
        "    raise AssertionError('the decoy bench ran')\n")
    checkout = str(sim.CHECKOUT)
    monkeypatch.setattr("sys.path", [str(decoy.parent)]
                        + [p for p in sys.path if p not in ("", checkout)])
    b = sim.build("icarus", [path], "mttfs_passthrough", ROOT / "sim" / "icarus" / "passthrough")
    cfg = dict(entry, seed=5, n=20, p_idle=0.3, p_stall=0.4, corrupt=None)
    res = sim.run(b, "cocotb_tests.tb_passthrough", cfg, tmp_path / "run")
    assert res.passed and res.report["beats"] == 20, res.tail()
    assert "decoy" not in (tmp_path / "run" / "sim.log").read_text()
