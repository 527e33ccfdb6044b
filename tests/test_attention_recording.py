# amaranth: UnusedElaboratable=no
"""The attention path's run recorded from the generated Verilog in the fast harness
(matterhorn.block_gates.record_fast: AttentionRecorder.verilog_probes, regression.block_fast.
record_attention) instead of the Amaranth simulator: every column the Amaranth recorder records,
the same transfers on every node's streams, every node's gate-level replay driven by them (a
replay checks every output of its netlist at every clock against the recording), the same
pricing within the few clocks the harness's pauses between windows add; a wrong column fails
the replay. The tiny random block of tests/test_block_gates.py, in Icarus."""

from __future__ import annotations

import pytest

from golden_models.block_pieces import PIECES
from regression.fast import read_record

#: Tiny but whole: 2 heads of 4 (tests/test_block_gates.py's block); two sentences.
DIMS = {"hidden": 8, "heads": 2, "ffn": 16, "seq": 8}
SENTENCES = ["Two words.", "A sentence of more words."]


@pytest.fixture(scope="module")
def case():
    from networks.block import block_case, random_block_model

    qnn, tok = random_block_model(**DIMS)
    return qnn, block_case(qnn, tok, SENTENCES, "mttfs-k1")


def _config(case):
    from regression.block_parts import attention_config

    qnn, c = case
    return attention_config(qnn, c.block)


def _sequences(c):
    from synth_scripts.block_attention import AttentionSequence

    return [AttentionSequence(s.codes["query"], s.codes["key"], s.codes["value"], s.valid,
                              s.codes["attn_out_in"]) for s in c.sequences]


def _taken(rec, h: int, part: str, stream: str) -> list[int]:
    """The payloads node ``(h, part)`` took (``stream`` ``i``/``load``) or sent (``o``)."""
    v, p = rec.trace.values, f"h{h}.{part}.{stream}__"
    return [w for valid, ready, w in zip(v[p + "valid"], v[p + "ready"], v[p + "payload"],
                                         strict=True) if valid and ready]


@pytest.fixture(scope="module")
def recorded(case, tmp_path_factory):
    """The path recorded both ways: the fast harness's and the Amaranth simulator's
    recorders."""
    from matterhorn.block_gates import record_fast
    from rtl_gen.simulation.attention import simulate_attention
    from synth_scripts.gatelevel.attention import AttentionRecorder

    _, c = case
    acfg, seqs = _config(case), _sequences(c)
    fast, windows = record_fast(acfg, c.path, seqs, False, range(acfg.heads),
                                root=tmp_path_factory.mktemp("record"), sim="icarus")
    slow = AttentionRecorder()
    simulated = simulate_attention(acfg, c.path, [(s.query, s.keys, s.values, s.valid)
                                                  for s in seqs], runner=slow)
    return fast, windows, slow, simulated


def test_the_fast_harness_records_every_column_and_the_same_transfers(case, recorded):
    fast, windows, slow, simulated = recorded
    assert set(fast.trace.ports) == set(slow.trace.ports)
    assert fast.trace.ports == {p: slow.trace.ports[p] for p in fast.trace.ports}
    # the same beats in and out of every node and injector, whatever the clocks between them
    for h, part in slow.nodes:
        streams = ("o",) if part.startswith("inject_x") else ("load", "i", "o")
        for stream in streams:
            assert _taken(fast, h, part, stream) == _taken(slow, h, part, stream), (h, part)
    # the counters the run checked are the Amaranth run's, window by window
    assert [[w.counters for w in s] for s in windows] == [[w.counters for w in s]
                                                           for s in simulated]
    # the Amaranth run's clocks and the harness's differ by its pauses, no more
    assert 0 <= fast.trace.cycles - slow.trace.cycles < 0.05 * slow.trace.cycles


def test_the_pricing_from_the_fast_harness(case, recorded, nangate_lib, tmp_path, monkeypatch):
    """Both recordings priced: the counted components equal, the rest within 2 % (measured:
    the total +0.6 %, the idle clock +0.8 %, on the random block's 2 sentences); a recording
    with one column wrong (a node's memory read as zeros) fails its node's replay."""
    from matterhorn.block_gates import JOBS
    from synth_scripts.block_pricing import Pricing
    from synth_scripts.gatelevel.attention import AttentionRecorder
    from synth_scripts.gatelevel.toggles import ReplayMismatch

    qnn, c = case
    piece = next(p for p in PIECES if p.name == "attention")

    def priced(mode: str, cache: dict):
        pr = Pricing.prepare(nangate_lib, tmp_path / mode, sim="icarus", cache=cache,
                             netlist_dir=tmp_path / "netlists")
        [(fn, args)], assemble = JOBS[piece.kind](qnn, c, piece, pr, 8)
        return assemble([fn(*args[:-1], None if mode == "amaranth" else args[-1])])

    cache: dict = {}
    fast, slow = priced("fast", cache), priced("amaranth", cache)
    for k in ("sram_read", "sram_write", "movement"):
        assert fast.energy_pJ[k] == pytest.approx(slow.energy_pJ[k], rel=1e-9), k
    for k, v in slow.energy_pJ.items():
        assert fast.energy_pJ[k] == pytest.approx(v, rel=0.02), k

    probes = AttentionRecorder.verilog_probes

    def wrong(self, folder, heads=None):  # what a recording takes, not what was kept
        return [(col, f"{w}'d0" if col == "h0.qk.weights.rdata" else ref, w)
                for col, ref, w in probes(self, heads)]

    monkeypatch.setattr(AttentionRecorder, "kept_probes", wrong)
    with pytest.raises(ReplayMismatch):
        priced("wrong", cache)


def test_the_path_measured_over_a_run_is_what_its_replays_count(case, nangate_lib, tmp_path,
                                                                monkeypatch):
    """What the calibration prices every sentence's attention path over
    (matterhorn.block_gates.measure_path: the path in the fast harness, its nodes' clock
    enables recorded) is, window by window and node by node, what the gate-level replays of
    the same sentences count: the path's clocks and each node's busy clocks, exactly. A
    second measurement reads what it records of the path from the first's folder
    (``AttentionRecorder.enable_plan``), without elaborating the path, and is the same."""
    from matterhorn.block_gates import JOBS, activity, measure_path
    from synth_scripts.block_pricing import Pricing
    from synth_scripts.gatelevel.attention import AttentionRecorder

    qnn, c = case
    piece = next(p for p in PIECES if p.name == "attention")
    pr = Pricing.prepare(nangate_lib, tmp_path / "priced", sim="icarus", windows=True,
                         netlist_dir=tmp_path / "netlists")
    [(fn, args)], assemble = JOBS[piece.kind](qnn, c, piece, pr, 8)
    priced = assemble([fn(*args)])
    path = measure_path(qnn, c, root=tmp_path / "netlists" / "fast", sim="icarus")
    act = activity(qnn, c, tile_neurons=8, path=path)["attention"]
    assert [(s["unit"], s["instance"], s["x"]) for s in priced.samples] == [
        (w["unit"], w["instance"], w["x"]) for w in act.windows]
    assert [s["busy"] for s in priced.samples] == act.busy
    n = len(act.clocks)
    assert [s["cycles"] for s in priced.samples] == act.clocks * (len(act.windows) // n)
    assert sum(act.clocks) == priced.cycles

    def refuse(*args, **kwargs):
        raise AssertionError("the path was elaborated again")

    monkeypatch.setattr(AttentionRecorder, "of_system", refuse)
    assert measure_path(qnn, c, root=tmp_path / "netlists" / "fast", sim="icarus") == path


def test_a_record_read_column_by_column(tmp_path):
    """Each column in whole hex digits, the first last; an unknown digit reads as zero; a line
    cut short is refused."""
    record = [("a", "x", 3), ("b", "y", 6)]
    (tmp_path / "r.hex").write_text("3f7\n0x3\nX1x\n")
    assert read_record(tmp_path / "r.hex", record) == {"a": [7, 3, 0], "b": [63, 0, 1]}
    (tmp_path / "r.hex").write_text("3f7\n3f\n")
    with pytest.raises(ValueError, match="line 2 is not 3 hex digits"):
        read_record(tmp_path / "r.hex", record)


def test_the_probes_of_a_recording_are_kept(case, tmp_path, monkeypatch):
    """``AttentionRecorder.kept_probes``: the columns a recording of the path takes, named once
    and kept in the folder: read back without naming the head's signals again, the same; another
    choice of heads, or the dense path, named on its own."""
    from synth_scripts.gatelevel.attention import AttentionRecorder

    acfg = _config(case)
    rec = AttentionRecorder.of_system(acfg, False)
    first = rec.kept_probes(tmp_path, [1])
    assert first == rec.verilog_probes([1])
    named = AttentionRecorder.verilog_probes
    calls = []

    def counted(self, heads=None):
        calls.append(heads)
        return named(self, heads)

    monkeypatch.setattr(AttentionRecorder, "verilog_probes", counted)
    assert rec.kept_probes(tmp_path, [1]) == first and calls == []
    assert rec.kept_probes(tmp_path, None) != first and calls == [None]
    dense = AttentionRecorder.of_system(acfg, True).kept_probes(tmp_path, [1])
    assert dense != first and len(calls) == 2
