# amaranth: UnusedElaboratable=no
"""The block's calibrated pricing (synth_scripts.block_calibration): the fit of each unit's
windows to their counters, and (slow) the tiny block's sentence outside the sample priced both
ways, calibrated and replayed."""

from __future__ import annotations

import random

import pytest

from synth_scripts.block_calibration import TARGETS, fit


def _windows(truth: dict, n: int, seed: int = 0) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        x = {"events": rng.randrange(0, 300), "rows": rng.randrange(0, 40), "spare": 0}
        out.append({"unit": "tile", "instance": i % 3, "x": x,
                    **{t: c0 + sum(c * x[k] for k, c in cs.items())
                       for t, (c0, cs) in truth.items()}})
    return out


TRUTH = {"logic": (50.0, {"events": 2.5, "rows": 7.0}), "idle": (9.0, {"rows": 0.5}),
         "gated": (40.0, {"events": 2.4, "rows": 7.5}), "cycles": (30.0, {"events": 1.0}),
         "busy": (20.0, {"events": 0.5})}


def test_a_linear_unit_is_fitted_exactly():
    fits = fit(_windows(TRUTH, 40))
    f = fits["tile"]
    assert f.samples == 40 and f.names == ["events", "rows", "spare"]
    assert all(f.rel_error[t] < 1e-9 for t in TARGETS)
    # an unseen window: the model's own figures
    got = f.predict({"events": 1000, "rows": 3})
    for t, (c0, cs) in TRUTH.items():
        want = c0 + sum(c * {"events": 1000, "rows": 3}[k] for k, c in cs.items())
        assert got[t] == pytest.approx(want, rel=1e-9)
    assert f.predict({}) == pytest.approx({t: c0 for t, (c0, _) in TRUTH.items()})


def test_the_fit_keeps_its_coefficients_non_negative():
    """A unit whose energy falls with a counter is not extrapolated below its intercept: a
    counter is never worth negative energy (a window with more of it costs no less)."""
    falling = {"logic": (500.0, {"events": -1.0}), "idle": (1.0, {}), "gated": (1.0, {}),
               "cycles": (1.0, {}), "busy": (0.0, {})}
    f = fit(_windows(falling, 30))["tile"]
    assert all(c >= 0 for cs in f.coef.values() for c in cs)
    assert f.rel_error["logic"] > 0.01  # it cannot follow the fall
    assert f.predict({"events": 10_000})["logic"] >= 0


def test_units_are_fitted_apart():
    a = _windows(TRUTH, 20)
    b = [{**w, "unit": "norm", "logic": 2 * w["logic"]} for w in _windows(TRUTH, 20, seed=1)]
    fits = fit(a + b)
    assert set(fits) == {"tile", "norm"}
    x = {"events": 10, "rows": 2}
    assert fits["norm"].predict(x)["logic"] == pytest.approx(
        2 * fits["tile"].predict(x)["logic"])


def test_the_attention_nodes_have_no_intercept():
    """An attention node's window costs what its counters say, nothing fixed: a window with
    no counter costs nothing (its costs grow with the keys, which one sentence does not vary)."""
    from synth_scripts.block_calibration import NO_INTERCEPT

    assert set(NO_INTERCEPT) == {"qk", "sm", "pv"}
    proportional = {t: (0.0, cs) for t, (_, cs) in TRUTH.items()}
    windows = [{**w, "unit": "sm"} for w in _windows(proportional, 30)]
    f = fit(windows)["sm"]
    assert not f.intercept and all(cs[0] == 0 for cs in f.coef.values())
    assert f.rel_error["logic"] < 1e-9
    assert f.predict({}) == {t: 0.0 for t in TARGETS}


def test_an_idle_clock_is_the_clocks_less_the_busy_ones():
    """A node's idle clock falls as its busy clocks grow, which no non-negative fit follows:
    the fit keeps the clock energy a clock exactly (``idle_per_clock``), and the calibration
    prices a node's idle clock as the window's clocks less the node's busy ones at it."""
    rng = random.Random(3)
    rows = []
    for i in range(40):
        x = {"keys": rng.randrange(4, 80), "events": rng.randrange(0, 200)}
        cycles, busy = 10.0 * x["keys"], 2.0 * x["keys"] + 1.5 * x["events"]
        rows.append({"unit": "sm", "instance": i % 2, "x": x, "logic": 3.0 * x["events"],
                     "idle": 0.7 * (cycles - busy), "gated": 3.5 * x["events"],
                     "cycles": cycles, "busy": busy})
    f = fit(rows)["sm"]
    assert f.idle_per_clock == pytest.approx(0.7, rel=1e-12)
    assert f.rel_error["idle"] > 0.01  # the direct fit cannot follow it
    assert f.rel_error["cycles"] < 1e-9 and f.rel_error["busy"] < 1e-9
    x = {"keys": 50, "events": 120}
    got = f.predict(x)
    assert f.idle_per_clock * (got["cycles"] - got["busy"]) == pytest.approx(
        0.7 * (500.0 - 100.0 - 180.0), rel=1e-9)


def test_the_attention_path_calibrated_with_its_nodes_idle_clocks():
    """The calibrated attention path: each window lasts the path's measured clocks, each node
    idles the rest of it after its measured busy clocks, at its clock energy a clock (neither
    a fit: the path's clocks follow every head's traffic, a node's busy clocks its stalls);
    without both for every window it is refused."""
    from golden_models.block_pieces import ATTENTION, PIECES
    from synth_scripts.block_calibration import CALIBRATORS, PieceActivity
    from synth_scripts.block_gates import PieceGates, SramCosts

    piece = next(p for p in PIECES if p.kind == ATTENTION)
    heads, per_clock = 2, {"qk": 0.5, "sm": 0.25, "pv": 0.75}
    rng = random.Random(7)
    samples, windows = [], []
    for h in range(heads):
        for unit in ("qk", "sm", "pv"):
            for _ in range(12):
                x = {"keys": rng.randrange(4, 60), "work": rng.randrange(1, 90)}
                cycles, busy = 8.0 * x["keys"], 1.0 * x["work"]
                samples.append({"unit": unit, "instance": h, "x": x, "logic": 2.0 * x["work"],
                                "idle": per_clock[unit] * (cycles - busy),
                                "gated": 2.5 * x["work"], "cycles": cycles, "busy": busy})
                windows.append({"unit": unit, "instance": h, "x": x})
    costs = {"per_hop": 1.0, "wire_per_hop": 0.0, "inner_per_hop": 1.0,
             "inner_wire_per_hop": 0.0, "idle_per_clock": 0.0}
    sampled = PieceGates("attention", {}, 0, 0.0, 0.0, {}, samples=samples, unit_costs=costs)
    n = 12
    clocks = [rng.randrange(500, 900) for _ in range(n)]  # the path's, measured
    busy = [rng.randrange(1, 90) for _ in windows]  # each node's, measured
    act = PieceActivity("attention", windows, 0, {"read": 0, "write": 0}, {}, clocks=clocks,
                        busy=busy)
    got, fits = CALIBRATORS[ATTENTION](piece, sampled, act, 0.0, SramCosts(None, 0.0, 10.0),
                                       heads, "mttfs-k1")
    want = sum(per_clock[w["unit"]] * (clocks[i % n] - busy[i]) for i, w in enumerate(windows))
    assert got.energy_pJ["idle"] == pytest.approx(want, rel=1e-6)
    assert got.cycles == sum(clocks)
    assert fits["sm"]["replayed"] == [0, 1]
    for wrong in ({"clocks": [], "busy": busy}, {"clocks": clocks[:-1], "busy": busy},
                  {"clocks": clocks, "busy": busy[:-1]}):
        act = PieceActivity("attention", windows, 0, {"read": 0, "write": 0}, {}, **wrong)
        with pytest.raises(ValueError, match="clocks were measured on"):
            CALIBRATORS[ATTENTION](piece, sampled, act, 0.0, SramCosts(None, 0.0, 10.0), heads,
                                   "mttfs-k1")


def test_an_attention_node_is_fitted_to_its_own_counters():
    """A node's logic is fitted to its own counters and its busy clocks, not to another node's
    counters of the same head that its window holds too: here another node's counter tells the
    sample's logic better than the node's own (a correlation of the sample), and is zero in the
    run; fitted to it, the run's logic would be nil."""
    from golden_models.block_pieces import ATTENTION, PIECES
    from synth_scripts.block_calibration import CALIBRATORS, PieceActivity
    from synth_scripts.block_gates import PieceGates, SramCosts

    piece = next(p for p in PIECES if p.kind == ATTENTION)
    rng = random.Random(3)
    other = {"qk": "pv", "sm": "qk", "pv": "sm"}
    samples, windows, want = [], [], 0.0
    for unit in ("qk", "sm", "pv"):
        for _ in range(16):
            work, wobble = rng.randrange(10, 90), rng.uniform(-3, 3)
            x = {f"{unit}_work": work, f"{other[unit]}_echo": work + wobble}
            samples.append({"unit": unit, "instance": 0, "x": x, "logic": 2.0 * (work + wobble),
                            "idle": 0.0, "gated": 0.0, "cycles": 100.0, "busy": 0.0})
            run_work = rng.randrange(10, 90)
            windows.append({"unit": unit, "instance": 0,
                            "x": {f"{unit}_work": run_work, f"{other[unit]}_echo": 0}})
            want += 2.0 * run_work
    costs = {"per_hop": 0.0, "wire_per_hop": 0.0, "inner_per_hop": 0.0,
             "inner_wire_per_hop": 0.0, "idle_per_clock": 0.0}
    sampled = PieceGates("attention", {}, 0, 0.0, 0.0, {}, samples=samples, unit_costs=costs)
    act = PieceActivity("attention", windows, 0, {"read": 0, "write": 0}, {},
                        clocks=[100] * 16, busy=[0] * len(windows))
    got, fits = CALIBRATORS[ATTENTION](piece, sampled, act, 0.0, SramCosts(None, 0.0, 10.0), 1,
                                       "mttfs-k1")
    logic = got.energy_pJ["compute"] + got.energy_pJ["nonlinear"]
    assert logic == pytest.approx(want, rel=0.05)
    assert all(fits[u]["counters"] == ["busy_clocks", f"{u}_work"] for u in other)


@pytest.mark.parametrize("dense", [False, True])
def test_the_softmax_nodes_data_features(dense):
    """Each head's windows get the bits its softmax node's exponential and code buses flip in
    slot order and the rises of its running maximum (recounted here from the golden path's
    rows, bit by bit), head by head."""
    import torch

    from golden_models.attention import AttentionPath
    from synth_scripts.block_attention import SOFTMAX_FEATURES, softmax_features, window_features

    path = AttentionPath.random(4, T=16, k=1, seq_len=7, seed=5)
    g = torch.Generator().manual_seed(5)
    sp, kv = path.query_mask.space, path.kv_space
    q, k, v = (torch.randint(s.q_min, s.q_max + 1, (7, 8), generator=g) for s in (sp, kv, kv))
    k[1] = k[0]  # two keys alike: every row's scores tie there, and a tie is no rise
    valid = torch.tensor([True, True, True, False, True, True, True])
    got = softmax_features(path, q, k, v, valid, dense)
    rows = path.run_dense(q, k, v, valid) if dense else path.run(q, k, v, valid).windows

    def flips(values):
        return sum(bin(a ^ b).count("1") for a, b in zip(values, [0, *values[:-1]], strict=True))

    rises_seen = set()
    for row, feats in zip(rows, got, strict=True):
        for w, f in zip(row, feats, strict=True):
            e = path.softmax.exponentials(w.scores, valid).tolist()
            ok = [a for a, keep in zip(w.scores.tolist(), valid.tolist(), strict=True) if keep]
            rises = sum(a > max(ok[:i], default=a - 1) for i, a in enumerate(ok))
            assert f == {"sm_exp_toggles": flips(e),
                         "sm_code_toggles": flips(w.prob_codes.tolist()),
                         "sm_max_updates": rises}
            rises_seen.add(rises)
    assert len(rises_seen) > 1  # the rows differ in what they count
    counters = [[{"cnt_sm_scores_in_h1": 7, "cnt_qk_scores_out_h1": 7} for _ in got]]
    x = window_features(counters, 1, [got])
    assert [{n: w[n] for n in SOFTMAX_FEATURES} for w in x] == [f[1] for f in got]


# -- the tiny block, a sentence outside the sample ----------------------------------------------

DIMS = {"hidden": 8, "heads": 2, "ffn": 16, "seq": 8}
#: Two lengths in the sample (the attention path's cost per key told from its cost per
#: window), a longer sentence held out
SAMPLE, HELD_OUT = ["Two words.", "Three words here."], "One more sentence of words."


@pytest.mark.slow
@pytest.mark.parametrize("design", ["dense", "mttfs-k1"])
def test_a_held_out_sentence_calibrated_against_its_replay(design, nangate_lib, tmp_path):
    """The tiny block's two sample sentences replayed window by window; a longer sentence
    priced by the fits and replayed in full: the SRAM bits agree exactly, the movement within
    2 % (exactly on the sample), the block's total within 10 %; on the sample itself the fit
    reproduces the block within 3 %."""
    from golden_models.block_pieces import count_deliveries
    from matterhorn.block_gates import activity, measure_block_gates, measure_path
    from networks.block import block_case, random_block_model
    from synth_scripts.block_calibration import calibrate, compare

    def delivered(g):  # the events each position delivered, from the pieces' counters
        return count_deliveries({p.piece: p.counters for p in g.pieces},
                                {p.piece: p.tiles for p in g.pieces}, design == "dense")

    qnn, tok = random_block_model(**DIMS)
    sample, held = block_case(qnn, tok, SAMPLE, design), block_case(qnn, tok, [HELD_OUT], design)
    lengths = [s.length for s in sample.sequences]
    assert len(set(lengths)) == 2 and held.sequences[0].length > max(lengths)
    cache: dict = {}
    kw = {"lib_path": nangate_lib, "sim": "icarus", "cache": cache, "tile_neurons": 8,
          "netlist_dir": tmp_path / "netlists"}
    priced = measure_block_gates(qnn, sample, work=tmp_path / "s", windows=True, **kw)
    assert all(p.samples for p in priced.pieces if p.piece not in ("norm_attn", "norm_ffn"))
    full = measure_block_gates(qnn, held, work=tmp_path / "h", **kw)
    for case, measured in ((sample, priced), (held, full)):
        path = measure_path(qnn, case, root=tmp_path / "fast", sim="icarus")
        cal = calibrate(priced, activity(qnn, case, tile_neurons=8, path=path),
                        tokens=measured.tokens, sentences=len(case.sequences))
        assert cal.method["calibrated"] and cal.method["sample_tokens"] == priced.tokens
        c = compare(cal, measured)
        # the router's energy a hop is measured on each run's own first flits: the held-out
        # sentence's hops priced at the sample's figure move a little
        for k, rel in (("sram_read", 1e-6), ("sram_write", 1e-6),
                       ("movement", 1e-6 if measured is priced else 0.02)):
            assert c["block"][k]["calibrated"] == pytest.approx(c["block"][k]["measured"],
                                                                rel=rel), k
        tol = 0.03 if measured is priced else 0.10
        assert abs(c["block"]["total"]["error"]) < tol, c["block"]["total"]
        assert delivered(cal) == delivered(measured)
        assert {p.piece: p.counters for p in cal.pieces if p.piece != "norm_attn"} == {
            p.piece: p.counters for p in measured.pieces if p.piece != "norm_attn"}
