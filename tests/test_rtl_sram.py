"""Single-port SRAM: behavioural model against a dict, read counter, macro wrapper."""

from __future__ import annotations

import gc
import random
import re
import subprocess

import pytest
from amaranth.back import verilog
from amaranth.hdl import Shape
from amaranth.sim import Simulator

from rtl_gen import sram
from rtl_gen.sram import MACRO_NAME, SRAM, SRAMSignature


def run_sram(depth, width, ops):
    """Apply ``ops`` (addr, ren, wen, wdata) one per clock; return rdata after each and reads."""
    dut = SRAM(depth=depth, width=width, counter_width=8)
    out = []

    async def bench(ctx):
        for addr, ren, wen, wdata in ops:
            ctx.set(dut.bus.addr, addr)
            ctx.set(dut.bus.ren, ren)
            ctx.set(dut.bus.wen, wen)
            ctx.set(dut.bus.wdata, wdata)
            await ctx.tick()
            out.append(ctx.get(dut.bus.rdata))
        out.append(ctx.get(dut.reads))

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    return out[:-1], out[-1]


def ref_sram(depth, width, ops):
    mem = [0] * depth
    rdata, reads, out = 0, 0, []
    for addr, ren, wen, wdata in ops:
        if ren:
            rdata = mem[addr]  # old data on a same-clock write (not transparent)
            reads += 1
        if wen:
            mem[addr] = wdata
        out.append(rdata)
    return out, reads % 256


@pytest.mark.parametrize(("depth", "width"), [(1, 1), (5, 8), (16, 37)])
def test_sram_matches_model(depth, width):
    rng = random.Random(depth * width)
    ops = [(rng.randrange(depth), rng.random() < 0.5, rng.random() < 0.4,
            rng.randrange(1 << width)) for _ in range(300)]
    assert run_sram(depth, width, ops) == ref_sram(depth, width, ops)


def test_sram_read_holds_and_counts():
    ops = [(2, 0, 1, 0xAB), (2, 1, 0, 0), (0, 0, 0, 0), (0, 0, 1, 0x11), (0, 1, 0, 0)]
    rdata, reads = run_sram(4, 8, ops)
    assert rdata == [0, 0xAB, 0xAB, 0xAB, 0x11]
    assert reads == 2


def test_sram_macro_wrapper():
    text = verilog.convert(SRAM(depth=12, width=9, macro=True), name="mttfs_sram",
                           emit_src=False)
    assert f"{MACRO_NAME} #(" in text
    for param in (".ADDR_WIDTH(32'd4)", ".DEPTH(32'd12)", ".WIDTH(32'd9)"):
        assert param in text
    for port in (".ADDR(bus__addr)", ".CLK(clk)", ".RDATA(bus__rdata)", ".REN(bus__ren)",
                 ".WDATA(bus__wdata)", ".WEN(bus__wen)"):
        assert port in text
    assert "reg [8:0] mem" not in text


def test_sram_signature():
    sig = SRAMSignature(3, 10)
    assert sig == SRAMSignature(3, 10)
    assert sig != SRAMSignature(3, 11)
    assert {name: (m.flow.name, Shape.cast(m.shape).width) for name, m in sig.members.items()} == {
        "addr": ("Out", 3), "ren": ("Out", 1), "rdata": ("In", 10), "wen": ("Out", 1),
        "wdata": ("Out", 10)}
    assert SRAM(depth=5, width=10).bus.signature.flip() == SRAMSignature(3, 10)


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"depth": 0, "width": 8}, ValueError, r"^depth must be in 1\.\.65536, not 0$"),
        ({"depth": 4, "width": 8.0}, TypeError, r"^width must be an integer, not 8\.0$"),
        ({"depth": 4, "width": 8, "macro": 1}, TypeError, r"^macro must be a bool, not 1$"),
        ({"depth": 4, "width": 8, "counter_width": 65}, ValueError,
         r"^counter_width must be in 1\.\.64, not 65$"),
    ],
)
@pytest.mark.filterwarnings("ignore::amaranth.hdl.UnusedElaboratable")
def test_sram_rejects(kwargs, error, message):
    with pytest.raises(error, match=message):
        SRAM(**kwargs)
    gc.collect()


def test_signature_rejects():
    with pytest.raises(ValueError, match=r"^addr_width must be in 1\.\.32, not 0$"):
        SRAMSignature(0, 8)


@pytest.mark.parametrize("name", ["MACRO_MODEL", "MACRO_STUB"])
def test_macro_files_fit_the_wrapper(tmp_path, name):
    # Yosys reads the wrapper with the model or the black-box stub and finds every instance
    # port and parameter declared (hierarchy -check fails on a missing module or port)
    from toolkit_base.toolchain import require

    (tmp_path / "macro.v").write_text(getattr(sram, name), encoding="utf-8")
    (tmp_path / "mttfs_sram.v").write_text(
        verilog.convert(SRAM(depth=5, width=6, macro=True), name="mttfs_sram", emit_src=False),
        encoding="utf-8")
    lib = "-lib " if name == "MACRO_STUB" else ""
    script = (f"read_verilog {lib}macro.v; read_verilog mttfs_sram.v; "
              "hierarchy -check -top mttfs_sram")
    proc = subprocess.run([require("yosys"), "-q", "-p", script], cwd=tmp_path,
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _window_before_loading(tmp_path, model: str) -> str:
    """Run one window (a single marker beat) on a tile with ``sram_macro`` whose SRAMs were
    never loaded, in Icarus with the stand-in ``model``; return what the bench printed."""
    from rtl_gen.generate import generate
    from rtl_gen.params import RTLConfig
    from toolkit_base.toolchain import require

    cfg = RTLConfig(T=4, k=1, n_in=4, tile_neurons=2, mesh_rows=1, mesh_cols=1, sram_macro=True)
    manifest = generate(cfg, tmp_path, ["mttfs_sram", "mttfs_tile"])
    ports = {p["name"]: p["width"] for p in manifest["modules"]["mttfs_tile"]["ports"]}
    (tmp_path / f"{sram.MACRO_NAME}.v").write_text(model, encoding="utf-8")
    wi, wo = ports["i__payload"], ports["o__payload"]
    (tmp_path / "tb.v").write_text(f"""
module tb;
  reg clk = 0, rst = 1, i_valid = 0;
  reg [{wi - 1}:0] i_payload = {{1'b1, {wi - 1}'b0}};
  wire i_ready, o_valid, busy, load_ready;
  wire [{wo - 1}:0] o_payload;
  integer n;
  mttfs_tile dut(.clk(clk), .rst(rst), .load__payload(16'b0), .load__valid(1'b0),
    .load__ready(load_ready), .i__payload(i_payload), .i__valid(i_valid), .i__ready(i_ready),
    .o__payload(o_payload), .o__valid(o_valid), .o__ready(1'b1), .busy(busy));
  always #5 clk = !clk;
  initial begin
    @(posedge clk); @(posedge clk); rst <= 0; i_valid <= 1;
    for (n = 0; n < 500; n = n + 1) begin
      @(posedge clk);
      if (i_valid && i_ready) i_valid <= 0;
      if (o_valid === 1'b1 && o_payload[{wo - 1}] === 1'b1) begin
        $display("ENDED after %0d clocks", n); $finish;
      end
    end
    $display("NEVER ENDED: o_valid=%b busy=%b", o_valid, busy); $finish;
  end
endmodule
""", encoding="utf-8")
    files = ["tb.v", "mttfs_tile.v", "mttfs_sram.v", f"{sram.MACRO_NAME}.v"]
    files = [f for f in files if (tmp_path / f).is_file()]
    subprocess.run([require("iverilog"), "-g2005", "-o", "tb.vvp", *files], cwd=tmp_path,
                   check=True, capture_output=True, text=True)
    proc = subprocess.run([require("vvp"), "-n", "tb.vvp"], cwd=tmp_path, capture_output=True,
                          text=True, check=True)
    return proc.stdout


def test_macro_model_rows_start_at_zero(tmp_path):
    # unwritten rows read 0 (as the behavioural SRAM and docs/rtl_interfaces.md say), so a
    # window run before anything is loaded ends with its marker beat
    out = _window_before_loading(tmp_path, sram.MACRO_MODEL)
    assert "ENDED after" in out, out
    # the model without initial contents (the fault this guards) never ends: X rows
    no_init = re.sub(r"    integer i;\n    initial begin\n.*?    end\n", "", sram.MACRO_MODEL,
                     flags=re.DOTALL)
    assert no_init != sram.MACRO_MODEL
    assert "NEVER ENDED" in _window_before_loading(tmp_path / "x", no_init)
