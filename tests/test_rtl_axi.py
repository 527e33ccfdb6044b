"""The AXI wrappers (rtl_gen.axi, rtl_gen.axi_lite, rtl_gen.regmap) in the Amaranth simulator.

A random 3-layer QNN loaded over AXI4-Lite and run over AXI4-Stream is bit-exact with the golden
reference (events and every counter), takes exactly the clocks of the bare system, and the
counters read while it runs are always one whole run's; a wrapper that exposes the live
counters is caught. Unmapped addresses answer SLVERR; the RTL register file, the C header and
the Markdown table agree with each other and with the compiled SystemRDL; bad parameters are
refused in one line.
"""

from __future__ import annotations

import gc
import re
import shutil
import subprocess

import pytest

from rtl_gen.axi import AxiShell, AxiSystem, AxiTile, counter_registers
from rtl_gen.axi_lite import OKAY, SLVERR
from rtl_gen.axi_sim import (
    axil_read,
    axil_write,
    load_writes,
    reference_counters,
    simulate_axi_system,
)
from rtl_gen.params import RTLConfig
from rtl_gen.regmap import c_header, markdown, register_map
from rtl_gen.simulation import run_simulator

SMALL = RTLConfig(T=4, k=1, n_in=4, tile_neurons=2, mesh_rows=1, mesh_cols=2)


@pytest.fixture(scope="module")
def chain():
    from golden_models.qnn import random_qnn
    from rtl_gen.mapper import config_for_chain, map_chain

    qnn = random_qnn((8, 8, 4, 4), T=8, k=1, seed=3)
    layers = qnn.integer_layers()
    cfg = config_for_chain(layers, tile_neurons=4, mesh_rows=2, mesh_cols=2)
    smap = map_chain(cfg, layers)
    return smap, qnn.random_input(3, seed=5)


def _expected(smap, batch):
    from rtl_gen.mapper import system_reference

    refs = [system_reference(smap, q) for q in batch]
    return ([list(zip(r.out_index.tolist(), r.out_time.tolist(), strict=True)) for r in refs],
            [reference_counters(smap, r) for r in refs])


def test_layer_over_axi_is_bit_exact(chain):
    smap, batch = chain
    events, counters = _expected(smap, batch)
    got = simulate_axi_system(smap, batch, o_ready=0.6, seed=1)
    assert [g.events for g in got] == events
    assert [g.counters for g in got] == counters
    assert [g.done for g in got] == [1, 2, 3]
    assert any(events) and any(c["FLITS"] for c in counters)  # the check sees real traffic


def test_wrapper_adds_no_clock_to_an_inference(chain):
    from rtl_gen.simulation.mesh import simulate_system

    smap, batch = chain
    bare = [r.cycles for r in simulate_system(smap, batch)]
    wrapped = [r.cycles for r in simulate_axi_system(smap, batch)]
    assert wrapped == bare


def _consistent(results, counters):
    """The reads made while each inference ran: (reads checked, reads that mix two runs)."""
    zero = dict.fromkeys(counters[0], 0)
    checked, bad = 0, []
    for res in results:
        for before, seen, after in res.reads_while_running:
            if before != after:
                continue  # a run ended between the two DONE reads: nothing to hold it to
            checked += 1
            want = counters[before - 1] if before else zero
            if seen != {name: want[name] for name in seen}:
                bad.append((before, seen))
    return checked, bad


def test_counters_read_while_running_are_one_runs(chain):
    smap, batch = chain
    _, counters = _expected(smap, batch)
    got = simulate_axi_system(smap, batch, o_ready=0.5, seed=2, read_while_running=True)
    checked, bad = _consistent(got, counters)
    assert checked >= len(batch) and not bad


def test_live_counters_would_be_caught(chain):
    """A planted fault: software reads the live counters instead of the snapshot."""
    from formal.harness import mutant_module

    mutant = mutant_module("rtl_gen.axi", 'port(reg, "value").eq(held)',
                           'port(reg, "value").eq(live)')
    smap, batch = chain
    _, counters = _expected(smap, batch)
    got = simulate_axi_system(smap, batch, o_ready=0.5, seed=2, read_while_running=True,
                              dut=mutant.AxiSystem(smap.config, embed=True))
    assert _consistent(got, counters)[1]


# -- the AXI4-Lite slave ---------------------------------------------------------------------


def _bus_run(dut, bench):
    from amaranth.hdl import ClockDomain, Module

    top = Module()
    top.domains.sync = ClockDomain("sync")
    top.submodules.dut = dut
    run_simulator(top, bench)


def test_unmapped_and_read_only_addresses_answer_slverr():
    dut = AxiTile(SMALL, embed=True)
    rm = dut.regmap
    seen = {}

    async def bench(ctx):
        bus = dut.s_axil
        seen["id"] = await axil_read(ctx, bus, rm["ID"].address)
        seen["unmapped_read"] = await axil_read(ctx, bus, 0x300)
        seen["beyond_read"] = await axil_read(ctx, bus, rm.size + 0x100)
        seen["unmapped_write"] = await axil_write(ctx, bus, 0x300, 1)
        seen["ro_write"] = await axil_write(ctx, bus, rm["ID"].address, 0)
        seen["id_after"] = await axil_read(ctx, bus, rm["ID"].address)
        addr = rm["LOAD_DATA[0]"].address
        seen["rw_write"] = await axil_write(ctx, bus, addr, 0x12345678)
        seen["strb_write"] = await axil_write(ctx, bus, addr, 0xAABBCCDD, strb=0b0100)
        seen["rw_read"] = await axil_read(ctx, bus, addr)

    _bus_run(dut, bench)
    ident = rm["ID"].reset
    assert seen["id"] == seen["id_after"] == (ident, OKAY) and ident >> 16 == 0x4D54
    assert seen["unmapped_read"] == seen["beyond_read"] == (0, SLVERR)
    assert seen["unmapped_write"] == seen["ro_write"] == SLVERR
    assert seen["rw_write"] == seen["strb_write"] == OKAY
    assert seen["rw_read"] == (0x12BB5678, OKAY)


def test_tlast_off_the_last_code_is_reported_and_cleared(chain):
    smap, _ = chain
    dut = AxiSystem(smap.config, embed=True)
    rm = dut.regmap
    status = rm["STATUS"]
    bit = 1 << status.field("tlast_error").lsb
    seen = []

    async def bench(ctx):
        for beat in smap.load_beats():
            for addr, value in load_writes(rm, beat):
                assert await axil_write(ctx, dut.s_axil, addr, value) == OKAY
        s = dut.s_axis
        ctx.set(dut.m_axis.tready, 1)
        n = smap.config.n_in
        for i, last in enumerate([i == 1 for i in range(n)] + [i == n - 1 for i in range(n)]):
            ctx.set(s.tvalid, 1)
            ctx.set(s.tdata, 0)
            ctx.set(s.tlast, last)
            while not (await ctx.tick().sample(s.tready))[2]:
                pass
            if i in (0, n - 1):
                ctx.set(s.tvalid, 0)
                seen.append((await axil_read(ctx, dut.s_axil, status.address))[0] & bit)
        ctx.set(s.tvalid, 0)
        seen.append(await axil_write(ctx, dut.s_axil, status.address, bit))
        seen.append((await axil_read(ctx, dut.s_axil, status.address))[0] & bit)

    _bus_run(dut, bench)
    # clean before the stray TLAST, set after it, cleared by writing 1; a good vector sets nothing
    assert seen == [0, bit, OKAY, 0]


# -- one register description ----------------------------------------------------------------


@pytest.mark.parametrize("kind", ["tile", "system"])
def test_rtl_header_and_markdown_agree(kind, tmp_path):
    """The register file answers OKAY exactly at the compiled map's addresses, with the
    constants' values; the C header's struct puts each register at the same offset (compiled
    with gcc) and the Markdown table lists the same offsets."""
    cfg = SMALL
    dut = (AxiTile if kind == "tile" else AxiSystem)(cfg, embed=True)
    rm = register_map(kind, cfg)
    mapped = {r.address: r for r in rm.registers}
    answers = {}

    async def bench(ctx):
        for addr in range(0, rm.size + 8, 4):
            if 0x40 <= addr < 0x400 and addr not in mapped:
                continue  # the long reserved gaps: one probe each side is enough
            answers[addr] = await axil_read(ctx, dut.s_axil, addr)

    _bus_run(dut, bench)
    okay = {a for a, (_, resp) in answers.items() if resp == OKAY}
    assert okay == set(mapped)
    for r in rm.registers:
        if all(f.kind == "const" for f in r.fields):
            assert answers[r.address][0] == r.reset, r.name

    # C header: compiled, every register at its offset, the struct as large as the map
    header = c_header(kind, cfg)
    (tmp_path / f"{rm.name}.h").write_text(header)
    members = [(r.name, r.address) for r in rm.registers]
    lines = [f'  printf("%s %zu\\n", "{n}", offsetof({rm.name}_t, {n}));' for n, _ in members]
    (tmp_path / "t.c").write_text(
        f'#include <stddef.h>\n#include <stdio.h>\n#include "{rm.name}.h"\n'
        "int main(void) {\n" + "\n".join(lines)
        + f'\n  printf("size %zu\\n", sizeof({rm.name}_t));\n  return 0;\n}}\n')
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.fail("no C compiler (apt-get install gcc)")
    subprocess.run([cc, "-std=c11", "-Wall", "-Werror", "-o", str(tmp_path / "t"),
                    str(tmp_path / "t.c")], check=True, cwd=tmp_path)
    out = subprocess.run([str(tmp_path / "t")], capture_output=True, text=True, check=True)
    got = dict(line.rsplit(" ", 1) for line in out.stdout.splitlines())
    assert {n: int(got[n]) for n, _ in members} == dict(members)
    assert int(got["size"]) == rm.size
    for r in rm.registers:
        for f in r.fields:
            macro = f"{rm.name.upper()}__{_c_name(r)}__{f.name.upper()}"
            assert f"#define {macro}_bp {f.lsb}\n" in header
            assert f"#define {macro}_bw {f.width}\n" in header

    # Markdown: the address table and one field table per register
    md = markdown(kind, cfg)
    first = md[md.index("|Offset|"):].split("\n\n", 1)[0]  # the address map's own table
    rows = re.findall(r"^\|\s*0x([0-9A-F]+)\s*\|\s*([A-Za-z_0-9\[\]]+)\s*\|", first, re.M)
    listed = {int(a, 16): n for a, n in rows}
    top = {r.address: r.name for r in rm.registers if "." not in r.name}
    assert {a: listed[a] for a in top} == top
    for r in rm.registers:
        for f in r.fields:
            bits = f"{f.lsb + f.width - 1}:{f.lsb}" if f.width > 1 else f"{f.lsb}"
            assert re.search(rf"^\|\s*{bits}\s*\|\s*{f.name}\s*\|", md, re.M), (r.name, f.name)


def _c_name(reg) -> str:
    # PeakRDL-cheader's macro path: arrays as X, regfile members joined by "__"
    return re.sub(r"\[\d+\]", "X", reg.name).replace(".", "__").upper()


def test_counter_registers_are_the_counter_names():
    from golden_models.counters import COUNTER_NAMES

    rm = register_map("tile", SMALL)
    names = [r.name.split(".")[1] for r in rm.registers if r.name.startswith("COUNTERS.")]
    assert tuple(names) == COUNTER_NAMES
    regs = counter_registers("system", SMALL)
    assert set(regs.values()) <= {r.name for r in register_map("system", SMALL).registers}


def test_load_writes_pack_a_beat():
    cfg = RTLConfig(T=16, n_in=64, tile_neurons=4, mesh_rows=1, mesh_cols=2)
    rm = register_map("system", cfg)
    data = (1 << 40) | 5
    writes = load_writes(rm, (1, 3, 2, data))
    cmd = rm["LOAD_CMD"]
    assert writes[-1] == (cmd.address, (1 << 16) | (3 << 24) | 2)
    assert writes[:2] == [(rm["LOAD_DATA[0]"].address, 5), (rm["LOAD_DATA[1]"].address, 1 << 8)]
    with pytest.raises(ValueError, match=r"^LOAD_CMD.node = 2 does not fit 1 bits$"):
        load_writes(rm, (2, 0, 0, 0))
    with pytest.raises(ValueError, match=r"^load data 0x1(0)+ does not fit \d LOAD_DATA words$"):
        load_writes(rm, (0, 0, 0, 1 << (32 * len(writes[:-1]))))


# -- bad parameters ----------------------------------------------------------------------------


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"axil_addr_width": 11}, (r"^axil_addr_width must be in 13\.\.32 for the mttfs_axi_system "
                               r"register map \(0x1040 bytes\), not 11$")),
    ({"axis_width": 8, "T": 16, "mesh_rows": 4, "mesh_cols": 4},
     (r"^axis_width 8 cannot carry the mttfs_system output event \{addr, t\} \(9 bits\); use "
      r"axis_width 16 or 32 or 64$")),
])
@pytest.mark.filterwarnings("ignore::amaranth.hdl.UnusedElaboratable")
def test_wrapper_refuses_what_it_cannot_carry(kwargs, message):
    cfg = RTLConfig(**{**SMALL.as_dict(), **kwargs})
    with pytest.raises(ValueError, match=message):
        AxiSystem(cfg)
    gc.collect()  # the half-built components warn here, where the warning is filtered


@pytest.mark.parametrize(("kwargs", "error", "message"), [
    ({"axis_width": 24}, ValueError, r"^axis_width must be one of \(8, 16, 32, 64\), not 24$"),
    ({"axil_addr_width": 40}, ValueError, r"^axil_addr_width must be in 8\.\.32, not 40$"),
])
def test_config_checks_the_bus_widths(kwargs, error, message):
    with pytest.raises(error, match=message):
        RTLConfig(**kwargs)


@pytest.mark.filterwarnings("ignore::amaranth.hdl.UnusedElaboratable")
def test_shell_checks_its_kind():
    with pytest.raises(ValueError, match=r"^kind must be one of \('tile', 'system'\), not 'x'$"):
        AxiShell(SMALL, "x")
    gc.collect()


@pytest.mark.filterwarnings("ignore::amaranth.hdl.UnusedElaboratable")
@pytest.mark.parametrize(("args", "message"), [
    (["--axil-addr-width", "12"], ("axil_addr_width must be in 13..32 for the mttfs_axi_system "
                                   "register map (0x1080 bytes), not 12")),
    (["--axis-width", "8", "--T", "64", "--n-in", "8"],
     ("axis_width 8 cannot carry the mttfs_tile input event {addr, t} (9 bits); use axis_width "
      "16 or 32 or 64")),
    (["--axis-width", "12"], "axis_width must be one of (8, 16, 32, 64), not 12"),
])
def test_cli_generate_refuses_a_bus_too_narrow(args, message, tmp_path, capsys):
    from matterhorn.cli import main

    out = tmp_path / "rtl"
    assert main(["generate", *args, "--out", str(out)]) == 2
    assert capsys.readouterr().err == f"matterhorn generate: error: {message}\n"
    assert not out.exists()
    gc.collect()  # the blocks elaborated before the refusal warn here, where it is filtered
