"""Gate-level energy: RTL trace, mapped netlist, cycle-checked replay, energy from toggles."""


import random
import re
from pathlib import Path

import pytest
from amaranth.back import verilog
from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from synth_scripts import gatelevel as gl
from synth_scripts.gatelevel import energy as ge


def nangate() -> Path:
    """The default NanGate 45 nm liberty (the bootstrap installs it; missing is a failure)."""
    from synth_scripts.gatelevel.liberty import DEFAULT_INSTALL, default_liberty

    path = default_liberty()
    assert path is not None, f"default liberty missing: {DEFAULT_INSTALL}"
    return path


class Counter(wiring.Component):
    """``count`` counts clocks with ``en``; ``acc`` sums ``din``."""

    en: In(1)
    din: In(4)
    count: Out(6)
    acc: Out(8)

    def elaborate(self, platform):
        m = Module()
        with m.If(self.en):
            m.d.sync += self.count.eq(self.count + 1)
        m.d.sync += self.acc.eq(self.acc + self.din)
        return m


W, STAGES = 8, 3


class Chain(wiring.Component):
    """A register chain with inverters between stages: its activity is exactly that of
    ``din`` delayed, so OpenSTA's propagation from input rates is exact on it."""

    din: In(W)
    dout: Out(W)

    def elaborate(self, platform):
        m = Module()
        prev = self.din
        for s in range(STAGES):
            r = Signal(W, name=f"r{s}")
            m.d.sync += r.eq(~prev if s % 2 else prev)
            prev = r
        m.d.comb += self.dout.eq(prev)
        return m


def counter_trace(cycles=120, idle_from=None, seed=1):
    dut = Counter()
    rng = random.Random(seed)
    stim = []

    async def tb(ctx):
        for c in range(cycles):
            idle = idle_from is not None and c >= idle_from
            en, din = (0, 0) if idle else (int(rng.random() < 0.5), rng.randrange(16))
            stim.append((en, din))
            ctx.set(dut.en, en)
            ctx.set(dut.din, din)
            await ctx.tick()

    return gl.record(dut, tb), stim


def chain_trace(cycles=1000, seed=5):
    dut = Chain()
    rng = random.Random(seed)
    rates = [0.05 + 0.9 * i / (W - 1) for i in range(W)]

    async def tb(ctx):
        v = 0
        for _ in range(cycles):
            for i, p in enumerate(rates):
                if rng.random() < p:
                    v ^= 1 << i
            ctx.set(dut.din, v)
            await ctx.tick()

    return gl.record(dut, tb)


def mapped(component_cls, top, lib, workdir):
    text = verilog.convert(component_cls(), name=top, emit_src=False)
    return gl.map_netlist(text, top, lib, workdir)


@pytest.fixture(scope="module")
def counter(tmp_path_factory):
    wd = tmp_path_factory.mktemp("counter")
    trace, stim = counter_trace()
    return mapped(Counter, "ctr", nangate(), wd / "net"), trace, stim, wd


# -- trace ------------------------------------------------------------------------------------


def test_record_samples_what_the_flops_see():
    trace, stim = counter_trace(cycles=40)
    assert trace.cycles == 40
    assert trace.ports["count"] == {"dir": "out", "width": 6}
    assert trace.ports["en"] == {"dir": "in", "width": 1}
    count = acc = 0
    for c, (en, din) in enumerate(stim):
        # at edge c the inputs are this cycle's, the registers hold what edges 0..c-1 made
        assert (trace.values["en"][c], trace.values["din"][c]) == (en, din), c
        assert (trace.values["count"][c], trace.values["acc"][c]) == (count, acc), c
        count, acc = (count + en) % 64, (acc + din) % 256


def test_record_extra_input_clash():
    dut = Counter()

    async def tb(ctx):
        await ctx.tick()

    with pytest.raises(ValueError, match=r"^extra input 'en' is already a port of the "
                                         r"component$"):
        gl.record(dut, tb, extra_inputs={"en": dut.din})


# -- replay ------------------------------------------------------------------------------------


def test_netlist_ports_and_cells(counter):
    net, *_ = counter
    assert net.inputs == {"clk": 1, "din": 4, "en": 1, "rst": 1}
    assert net.outputs == {"acc": 8, "count": 6}
    flops = sum(1 for c in net.cells if c.type.startswith("DFF"))
    assert flops == 14
    assert not re.search(r"(^|\s)/", (net.path.parent / "map.ys").read_text())  # relative only


@pytest.mark.parametrize("sim", gl.SIMULATORS)
def test_replay_counts_the_output_bits(counter, sim):
    net, trace, stim, wd = counter
    tg = gl.replay(net, trace, wd / sim, sim=sim)
    assert tg.cycles == trace.cycles and len(tg.flop_changes) == trace.cycles
    # count[0] changes at edge c exactly when en was high there
    assert tg.nets[_net_of(net, "count[0]")] == sum(en for en, _ in stim)
    # en toggles as the stimulus does (its last value is held after the trace)
    ens = [en for en, _ in stim]
    assert tg.nets[_net_of(net, "en")] == sum(a != b for a, b in zip(ens, ens[1:], strict=False))


def test_simulators_agree(counter):
    net, trace, _, wd = counter
    a = gl.replay(net, trace, wd / "agree_v", sim="verilator")
    b = gl.replay(net, trace, wd / "agree_i", sim="icarus")
    assert a.nets == b.nets and a.flop_changes == b.flop_changes


def test_testbench_lines_stay_short_for_a_large_netlist():
    """Verilator refuses a line of more than 40 000 preprocessor tokens: the snapshot of a
    large netlist's nets is spread over lines, one 64-bit word a statement, every net kept, in
    order."""
    from types import SimpleNamespace

    from synth_scripts.gatelevel.toggles import _testbench

    net = SimpleNamespace(top="big", clock="clk", reset="rst")
    counted = [f"_{i}_" for i in range(30000)]
    tb = _testbench(net, [("a", 1)], [("y", 1)], counted, [])
    assert max(len(line) for line in tb.splitlines()) < 1000
    got = []
    for hi, lo, word in re.findall(r"snap\[(\d+):(\d+)\] = \{(.*?)\};", tb, re.S):
        nets = re.findall(r"dut\.(_\d+_)", word)[::-1]  # a concatenation: MSB first
        assert int(lo) == len(got) and len(nets) == int(hi) - int(lo) + 1 <= 64
        got += nets
    assert got == counted


def test_vector_assigns_alias_bit_by_bit():
    """An output port assigned whole from a concatenation (a counter port of a node) aliases
    each of its bits to the net that drives it; constant bits alias nothing."""
    text = """module m(a, y, z);
  input [1:0] a;
  output [2:0] y;
  output [1:0] z;
  wire [2:0] y;
  wire b;
  wire \\w.x[0] ;
  INV_X1 u (.A(a[0]), .ZN(b));
  INV_X1 v (.A(a[1]), .ZN(\\w.x[0] ));
  assign y = { b , a[1] , 1'h0 };
  assign z[1:0] = { \\w.x[0] , b };
endmodule
"""
    inputs, outputs, _, alias = gl.parse_netlist(text)
    assert inputs == {"a": 2} and outputs == {"y": 3, "z": 2}
    assert alias["y[2]"] == alias["b"] == alias["z[0]"]
    assert alias["y[1]"] == alias["a[1]"]
    assert alias["z[1]"] == alias["\\w.x[0] "]
    assert alias["y[0]"] == "y[0]"


def _net_of(net, ref):
    _, _, _, alias = gl.parse_netlist(net.path.read_text())
    return alias[ref]


def test_planted_gate_swap_is_caught(counter, tmp_path):
    net, trace, _, _ = counter
    text = net.path.read_text()
    swapped, n = re.subn(r"\bNOR2_X1\b", "NAND2_X1", text, count=1)
    assert n == 1
    bad = tmp_path / "netlist.v"
    bad.write_text(swapped)
    mutant = gl.Netlist(**{**net.__dict__, "path": bad})
    with pytest.raises(gl.ReplayMismatch,
                       match=r"^cycle \d+: output (acc|count) is 0x[0-9a-f]+ in the gate "
                             r"netlist, 0x[0-9a-f]+ in the RTL trace$"):
        gl.replay(mutant, trace, tmp_path / "run", sim="icarus")


def test_replay_rejects_unknown_simulator(counter, tmp_path):
    net, trace, _, _ = counter
    with pytest.raises(ValueError, match=r"^sim must be one of verilator, icarus, not 'vcs'$"):
        gl.replay(net, trace, tmp_path, sim="vcs")


def test_replay_rejects_a_trace_without_a_port(counter, tmp_path):
    net, trace, _, _ = counter
    partial = gl.Trace({k: v for k, v in trace.ports.items() if k != "din"},
                       {k: v for k, v in trace.values.items() if k != "din"})
    with pytest.raises(ValueError, match=r"^netlist input 'din' is not in the trace"):
        gl.replay(net, partial, tmp_path, sim="icarus")


# -- energy ------------------------------------------------------------------------------------

# NanGate DFF_X1, pin CK: capacitance and the internal_power tables at transition 0.0409838 ns
# (a table breakpoint, so no interpolation), copied from the liberty by hand
CK_CAP_FF = 0.949653
CK_RISE_FJ = (2.538300, 0.0, 0.0, 2.730149)
CK_FALL_FJ = (4.653631, 7.732922, 7.700613, 4.421492)
DFF_LEAK_NW = 79.112308


def test_units_against_a_hand_calculation(counter, tmp_path):
    net, trace, _, _ = counter
    tg = gl.replay(net, trace, tmp_path, sim="icarus")
    e = ge.energy(net, tg, clock_ns=10.0, slew_ns=0.0409838, wire_load=False)
    flops = sum(1 for c in net.cells if c.type == "DFF_X1")
    assert flops == 14
    n = trace.cycles
    # 2 toggles a cycle of 1/2 C V^2, C in fF -> pJ
    assert e.detail["clock_net"] == pytest.approx(flops * CK_CAP_FF * 1.1**2 * n * 1e-3, rel=1e-5)
    per_flop_fj = sum(CK_RISE_FJ) / 4 + sum(CK_FALL_FJ) / 4
    assert e.detail["clock_pins"] == pytest.approx(flops * per_flop_fj * n * 1e-3, rel=1e-5)
    # nW x ns = 1e-18 J
    assert e.detail["leakage_sequential"] == pytest.approx(
        flops * DFF_LEAK_NW * n * 10.0 * 1e-6, rel=1e-5)
    assert e.free["total"] == pytest.approx(sum(e.free[k] for k in ge.COMPONENTS), rel=1e-5)


def test_energy_json_is_plain(counter, tmp_path):
    net, trace, _, _ = counter
    tg = gl.replay(net, trace, tmp_path, sim="icarus")
    e = ge.energy(net, tg)
    d = e.to_json()
    assert set(d["energy_pJ"]["free"]) == {*ge.COMPONENTS, "total"}
    assert d["per_cycle_pJ"]["free"]["total"] == pytest.approx(
        e.free["total"] / trace.cycles, rel=1e-5)
    assert "/" not in repr(d) and "gated" not in d["energy_pJ"]


def test_clock_gating_saves_the_idle_clock(tmp_path):
    trace, _ = counter_trace(cycles=200, idle_from=50)
    net = mapped(Counter, "ctr", nangate(), tmp_path / "net")
    tg = gl.replay(net, trace, tmp_path / "run", sim="icarus")
    busy = [c < 50 for c in range(200)]
    e = ge.energy(net, tg, enable=busy)
    assert e.icg == "CLKGATE_X1" and e.enabled_cycles == 50
    assert e.gated["clock"] < 0.5 * e.free["clock"]
    for k in ("sequential", "combinational"):
        assert e.gated[k] == e.free[k]
    always = ge.energy(net, tg, enable=[True] * 200)
    assert always.gated["total"] > always.free["total"]  # the ICG costs when nothing is idle
    early = [c < 40 for c in range(200)]
    with pytest.raises(ValueError, match=r"^enable is low at cycle \d+ but \d+ flip-flop outputs "
                                         r"change at its edge"):
        ge.energy(net, tg, enable=early)
    with pytest.raises(ValueError, match=r"^enable has 3 values, the trace 200 cycles$"):
        ge.energy(net, tg, enable=[True] * 3)


def _strip_cells(src: Path, dst: Path, pattern: str) -> Path:
    text = src.read_text(encoding="latin-1")
    starts = [m.start() for m in re.finditer(r"^\s*cell\s*\(", text, re.M)]
    end = text.rstrip().rfind("}")
    keep = [text[: starts[0]]]
    for i, s in enumerate(starts):
        body = text[s: starts[i + 1] if i + 1 < len(starts) else end]
        if not re.match(rf"\s*cell\s*\(\s*\"?{pattern}", body):
            keep.append(body)
    dst.write_text("".join(keep) + text[end:], encoding="latin-1")
    return dst


def test_liberty_without_clock_gating_cell(counter, tmp_path):
    net, trace, _, _ = counter
    lib = _strip_cells(nangate(), tmp_path / "noicg.lib", "CLKGATE")
    net2 = mapped(Counter, "ctr", lib, tmp_path / "net")
    tg = gl.replay(net2, trace, tmp_path / "run", sim="icarus")
    with pytest.raises(ValueError, match=r"^liberty 'noicg.lib' has no integrated clock-gating "
                                         r"cell \(clock_gating_integrated_cell : "
                                         r"latch_posedge\)$"):
        ge.energy(net2, tg)


def test_liberty_without_flip_flop(tmp_path):
    # refused when the library is prepared, before any netlist is mapped or priced
    lib = _strip_cells(nangate(), tmp_path / "noff.lib", "(S?DFF|TLAT)")
    from synth_scripts.gatelevel import liberty

    with pytest.raises(ValueError, match=r"^liberty 'noff.lib' has no flip-flop cells"):
        liberty.prepare(lib, tmp_path / "lib")


# -- agreement with OpenSTA -------------------------------------------------------------------

#: (liberty, bound on |ours/OpenSTA - 1| per group): see docs/gate_energy.md for the figures.
AGREEMENT = {
    "nangate": {"sequential": 0.10, "total": 0.20},
    "sky130": {"sequential": 0.50, "total": 0.45},
}


@pytest.mark.parametrize("pdk", ["nangate", "sky130"])
def test_agreement_with_opensta(pdk, tmp_path, request):
    # sky130 through the shared fixture: skipped with the reason outside CI when it is missing
    lib = nangate() if pdk == "nangate" else request.getfixturevalue("sky130_lib")
    trace = chain_trace()
    net = mapped(Chain, "chain", lib, tmp_path / "net")
    tg = gl.replay(net, trace, tmp_path / "run", sim="icarus")
    # the chain's flip-flops see exactly din's toggles, delayed
    for stage in range(STAGES):
        for bit in (0, W - 1):
            d = [(v >> bit) & 1 for v in trace.values["din"]]
            expected = sum(a != b for a, b in zip(d, d[1:], strict=False))
            q = _net_of(net, f"\\r{stage}[{bit}] ") if stage < STAGES - 1 else \
                _net_of(net, f"dout[{bit}]")
            assert abs(tg.nets[q] - expected) <= 1, (stage, bit)
    ours = ge.sta_groups(ge.energy(net, tg, clock_ns=10.0))
    ref = ge.opensta_reference(net, trace, tmp_path / "sta", clock_ns=10.0)
    assert ours["leakage"] == pytest.approx(ref["total"]["leakage"], rel=1e-3)
    for group, bound in AGREEMENT[pdk].items():
        ratio = ours[group] / ref[group]["total"]
        assert abs(ratio - 1) <= bound, (group, ratio)


def test_per_net_activity_agrees_with_opensta(tmp_path):
    """Every net's measured activity into OpenSTA 2.0.17 (each cell on its own, its inputs
    ports carrying their nets' toggles and duty, its outputs loaded as in the netlist:
    ``energy.opensta_per_net``): on the chain, where one gate's output activity follows from
    its input's, switching and leakage agree exactly and the whole within 2 % once our output
    transitions are charged as OpenSTA 2.0.17 charges them (the rise table's energy plus the
    fall table's; ours, and later OpenSTA versions, take their mean: half of it)."""
    from synth_scripts.gatelevel.toggles import net_activity

    trace = chain_trace()
    net = mapped(Chain, "chain", nangate(), tmp_path / "net")
    tog, high = net_activity(net, trace, tmp_path / "values")
    assert tog.nets == gl.replay(net, trace, tmp_path / "run", sim="icarus").nets
    assert all(0 <= high[r] <= tog.cycles for r in tog.nets)
    r = ge.opensta_per_net(net, tog, high, tmp_path / "sta")
    assert r["ratio"]["leakage"] == pytest.approx(1.0, rel=1e-3)
    e = ge.energy(net, tog)
    ours_switching = e.detail["switching"] - e.detail["inputs_switching"]
    theirs = r["opensta"]["total"]["switching"]
    assert ours_switching == pytest.approx(theirs, rel=1e-3)
    assert abs(r["ratio_rise_plus_fall"]["total"] - 1) < 0.02
    assert abs(r["ratio_rise_plus_fall"]["sequential"] - 1) < 0.01
    # with our own convention OpenSTA 2.0.17 is above by the half we leave out
    assert r["ratio"]["total"] < 0.8


def test_clock_net_found_through_aliases(tmp_path):
    """The tile's clock reaches the cut macros' wrappers under other names."""
    import warnings

    from rtl_gen.params import RTLConfig
    from rtl_gen.tile import NeuronTile

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tile = NeuronTile(RTLConfig(T=4, k=1, n_in=4, tile_neurons=2, sram_macro=True))
        text = verilog.convert(tile, name="mttfs_tile", emit_src=False)
    net = gl.map_netlist(text, "mttfs_tile", nangate(), tmp_path,
                         cut_macros={"mttfs_sram_macro": "RDATA"})
    assert set(net.cut) == {"weights.bus__rdata", "thresholds.bus__rdata", "init.bus__rdata"}
    clock_sinks = [c for c in net.cells if net.clock_net in c.pins.values()]
    assert clock_sinks and all(c.type.startswith("DFF") for c in clock_sinks)
    tg = gl.Toggles(cycles=1, nets={}, flop_changes=[0], simulator="none", seconds=0.0)
    assert ge.energy(net, tg).free["clock"] > 0


@pytest.mark.parametrize("sim", gl.SIMULATORS)
def test_one_build_replays_traces_of_any_length(counter, sim):
    """The harness is built once per netlist: a shorter trace replays on the same build, and
    counts what that trace alone makes."""
    net, trace, stim, wd = counter
    short = gl.Trace(trace.ports, {k: v[:30] for k, v in trace.values.items()})
    tg = gl.replay(net, short, wd / f"short_{sim}", sim=sim)
    gl.replay(net, trace, wd / f"long_{sim}", sim=sim)
    assert len(list(net.path.parent.glob(f"replay_{sim}_*"))) == 1
    assert not (wd / f"short_{sim}" / "diffs.txt").exists()  # counted, then removed
    assert tg.cycles == 30 and tg.nets[_net_of(net, "count[0]")] == sum(en for en, _ in stim[:30])


def test_a_trace_cut_short_is_an_error_not_a_count(counter, monkeypatch):
    """A stimulus file with fewer lines than the cycles asked for stops the replay with an
    error (the harness reads the trace a line at a time)."""
    from synth_scripts.gatelevel import toggles as gate_replay

    net, trace, _, wd = counter
    real = gate_replay._hexfile

    def short(path, ports, tr, total):
        real(path, ports, gl.Trace(tr.ports, {k: v[:-3] for k, v in tr.values.items()}), total)

    monkeypatch.setattr(gate_replay, "_hexfile", short)
    with pytest.raises(gate_replay.flow.ToolError, match="did not finish"):
        gl.replay(net, trace, wd / "cut", sim="icarus")


def test_a_folder_maps_its_netlist_once(tmp_path, monkeypatch):
    """Mapping into a folder that holds the netlist of the same Verilog and liberty runs no
    Yosys and gives the same netlist; other Verilog in that folder is mapped again."""
    from synth_scripts import flow

    runs = []
    real = flow.run_tool

    def counted(cmd, cwd, log, what):
        runs.append(what)
        return real(cmd, cwd, log, what)

    monkeypatch.setattr(flow, "run_tool", counted)
    first = mapped(Counter, "ctr", nangate(), tmp_path)
    n = len(runs)
    again = mapped(Counter, "ctr", nangate(), tmp_path)
    assert len(runs) == n and again.to_json() == first.to_json()
    assert [c.type for c in again.cells] == [c.type for c in first.cells]
    other = mapped(Chain, "ctr", nangate(), tmp_path)
    assert len(runs) > n and other.to_json()["inputs"] != first.to_json()["inputs"]


@pytest.mark.parametrize("sim", gl.SIMULATORS)
def test_segments_split_the_counted_cycles(counter, sim):
    """``replay(marks=...)``: each segment's toggles are the replay of those cycles alone; the
    segments add up to the whole count; their energies to the whole energy."""
    net, trace, stim, wd = counter
    marks = [10, 37, 80, 81]
    tg = gl.replay(net, trace, wd / f"seg_{sim}", sim=sim, start=10, marks=marks)
    assert tg.segment_starts == [0, 27, 70, 71]
    segs = [tg.segment(i) for i in range(len(marks))]
    assert [s.cycles for s in segs] == [27, 43, 1, trace.cycles - 81]
    for ref in tg.nets:
        assert sum(s.nets[ref] for s in segs) == tg.nets[ref]
    # count[0] changes at edge c exactly when en was high at c
    bit = _net_of(net, "count[0]")
    bounds = [*marks, trace.cycles]
    for s, lo, hi in zip(segs, bounds, bounds[1:], strict=False):
        assert s.nets[bit] == sum(en for en, _ in stim[lo:hi])
    whole = ge.energy(net, tg)
    parts = [ge.energy(net, s) for s in segs]
    assert sum(p.free["total"] for p in parts) == pytest.approx(whole.free["total"], rel=1e-4)
    for bad in ([11, 20], [10, 10], [10, trace.cycles]):
        with pytest.raises(ValueError, match="marks must increase from start"):
            gl.replay(net, trace, wd / "seg_bad", sim=sim, start=10, marks=bad)
    with pytest.raises(ValueError, match="not cut into segments"):
        gl.replay(net, trace, wd / "seg_none", sim=sim).segment(0)


def test_a_components_verilog_is_converted_once_and_kept(tmp_path):
    """``kept_verilog``: the first call converts and keeps the text; a later call (another
    task, another run) reads it back without converting; a component of another configuration
    converts on its own; without a folder every call converts."""
    from synth_scripts.gatelevel.netlist import kept_verilog

    calls = []

    def convert(top):
        def run():
            calls.append(top)
            return verilog.convert(Counter(), name=top, emit_src=False)
        return run

    first = kept_verilog(tmp_path, ("ctr", "Counter()"), convert("ctr"))
    assert first == verilog.convert(Counter(), name="ctr", emit_src=False)

    def refuse():
        raise AssertionError("converted again")

    assert kept_verilog(tmp_path, ("ctr", "Counter()"), refuse) == first
    other = kept_verilog(tmp_path, ("ctr", "Counter(wider)"), convert("ctr2"))
    assert calls == ["ctr", "ctr2"] and "module ctr2" in other
    assert len(list((tmp_path / "verilog").glob("ctr_*.v"))) == 2
    kept_verilog(None, ("ctr", "Counter()"), convert("none"))
    kept_verilog(None, ("ctr", "Counter()"), convert("none"))
    assert calls == ["ctr", "ctr2", "none", "none"]


def test_a_netlist_is_parsed_once_and_kept(tmp_path, monkeypatch):
    """A mapped netlist is parsed once and kept beside it (``parsed.pickle``): a later read
    (another task, another run) takes it without parsing and gives the same netlist; a
    ``netlist.v`` that changed under it (another mapping wrote it) is parsed again, not read
    from the stale file."""
    from synth_scripts.gatelevel import netlist as gn

    parses = []
    real = gn.parse_netlist

    def counted(text):
        parses.append(len(text))
        return real(text)

    monkeypatch.setattr(gn, "parse_netlist", counted)
    first = mapped(Counter, "ctr", nangate(), tmp_path)
    assert len(parses) == 1 and (tmp_path / "parsed.pickle").is_file()
    again = mapped(Counter, "ctr", nangate(), tmp_path)
    assert len(parses) == 1
    assert again.to_json() == first.to_json() and again.cells == first.cells
    assert again.nets == first.nets and again.digest == first.digest
    # the netlist rewritten under the same stamp: its text differs, so it is parsed again
    path = tmp_path / "netlist.v"
    path.write_text(path.read_text() + "\n// rewritten\n")
    third = mapped(Counter, "ctr", nangate(), tmp_path)
    assert len(parses) == 2 and third.digest != first.digest
    assert third.to_json() == first.to_json()


def test_a_netlists_pin_energies_are_kept_and_price_the_same(tmp_path):
    """The liberty's tables read for a netlist (``_PinEnergies``) are kept beside it and read
    back by another reader of the netlist (a fresh ``Netlist`` of the same folder, as another
    task has): the same energy to the digit, free-running and gated; another wire-load
    setting is kept apart."""
    trace, _ = counter_trace()
    net = mapped(Counter, "ctr", nangate(), tmp_path / "net")
    tg = gl.replay(net, trace, tmp_path / "replay", sim="icarus")
    fresh = ge.energy(net, tg, enable=[True] * tg.cycles)
    kept = sorted(net.path.parent.glob("pins-*.pickle"))
    assert len(kept) == 1
    other = mapped(Counter, "ctr", nangate(), tmp_path / "net")  # a new reader: none priced
    assert other is not net and not other.priced
    again = ge.energy(other, tg, enable=[True] * tg.cycles)
    assert again.to_json() == fresh.to_json()
    ge.energy(other, tg, wire_load=False)
    assert len(list(net.path.parent.glob("pins-*.pickle"))) == 2
    # what was kept is what the tables give: a netlist without a digest is priced afresh
    bare = gl.Netlist(**{**other.__dict__, "digest": "", "priced": {}})
    assert ge.energy(bare, tg, enable=[True] * tg.cycles).to_json() == fresh.to_json()


def test_a_kept_value_is_made_once_per_key(tmp_path):
    """``kept_value``: made and written the first time, read back for the same key, made
    again (and replaced) for another key or an unreadable file."""
    from toolkit_base.files import kept_value

    made = []

    def make(v):
        def run():
            made.append(v)
            return {"v": v}
        return run

    path = tmp_path / "x.pickle"
    assert kept_value(path, "a", make(1)) == {"v": 1}
    assert kept_value(path, "a", make(2)) == {"v": 1}
    assert kept_value(path, "b", make(3)) == {"v": 3}
    path.write_bytes(b"not a pickle")
    assert kept_value(path, "b", make(4)) == {"v": 4}
    assert made == [1, 3, 4]


def test_two_replays_into_one_folder_take_turns(counter, tmp_path):
    """Two replays into one folder at once (two tasks of a design pricing its router on two
    workers) each count their own trace: the same toggles as alone."""
    from concurrent.futures import ThreadPoolExecutor

    net, _, _, _ = counter
    traces = [counter_trace(cycles=400, seed=s)[0] for s in (11, 12, 13, 14)]
    alone = [gl.replay(net, t, tmp_path / f"alone{i}", sim="icarus").nets
             for i, t in enumerate(traces)]
    with ThreadPoolExecutor(4) as pool:
        shared = list(pool.map(lambda t: gl.replay(net, t, tmp_path / "shared",
                                                    sim="icarus").nets, traces))
    assert shared == alone
