"""The firmware of the AXI wrappers: the register headers and the tile's C driver compile as
C99, C11 and C++ with ``-Werror``, two configurations' headers live in one program, and the
driver (load a layer, stream windows, read the counters) runs on the Verilator model of the
generated ``mttfs_axi_tile``, bit-exact against the golden layer (docs/firmware.md)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from rtl_gen.generate import generate
from rtl_gen.params import RTLConfig

SMALL = RTLConfig(T=4, k=1, n_in=4, tile_neurons=2, mesh_rows=1, mesh_cols=2)
#: -pedantic: what a firmware project's strict build sees
WARN = ["-Wall", "-Wextra", "-pedantic", "-Werror"]
LANGS = {"c99": ["gcc", "-std=c99"], "c11": ["gcc", "-std=c11"],
         "c++": ["g++", "-std=c++11", "-x", "c++"]}


def _compiler(name: str) -> str:
    exe = shutil.which(name)
    if exe is None:
        pytest.fail(f"no {name} (apt-get install {'g++' if name == 'g++' else 'gcc'})")
    return exe


@pytest.fixture(scope="module")
def two_sets(tmp_path_factory):
    """A T = 4 and a T = 8 set, each with its own prefix, in one folder."""
    out = tmp_path_factory.mktemp("fw")
    generate(SMALL, out, ["mttfs_axi_tile", "mttfs_axi_system"], prefix="a_")
    generate(RTLConfig(**{**SMALL.as_dict(), "T": 8}), out,
             ["mttfs_axi_tile", "mttfs_axi_system"], prefix="b_")
    return out


@pytest.mark.parametrize("lang", list(LANGS))
def test_headers_and_driver_compile(two_sets, lang, tmp_path):
    """Both configurations' headers and drivers in one translation unit, and each driver's
    source on its own, in C99, C11 and C++ with -Wall -Wextra -pedantic -Werror."""
    exe, *flags = LANGS[lang]
    cc = _compiler(exe)
    names = ["a_mttfs_axi_tile", "b_mttfs_axi_tile", "a_mttfs_axi_system", "b_mttfs_axi_system"]
    main = tmp_path / "main.c"
    main.write_text("".join(f'#include "{n}{"_driver" * ("tile" in n)}.h"\n' for n in names)
                    + "int main(void) {\n"
                    + "  return (int)(sizeof(a_mttfs_axi_tile_t) + sizeof(b_mttfs_axi_tile_t)"
                    + " + sizeof(a_mttfs_axi_system_t) + B_MTTFS_AXI_TILE_T) == 0;\n}\n")
    drivers = [two_sets / f"{p}_mttfs_axi_tile_driver.c" for p in "ab"]
    for src in [main, *drivers]:
        proc = subprocess.run([cc, *flags, *WARN, "-I", str(two_sets), "-c", str(src), "-o",
                               str(tmp_path / (src.stem + ".o"))],
                              capture_output=True, text=True, check=False)
        assert proc.returncode == 0, proc.stderr


def test_header_size_check_fails_on_a_wrong_size(two_sets, tmp_path):
    """The size check that replaces static_assert stops the compile when the struct and the map
    disagree."""
    text = (two_sets / "a_mttfs_axi_tile.h").read_text()
    assert "a_mttfs_axi_tile_size_check[(sizeof(a_mttfs_axi_tile_t) == 0x81cu)" in text
    (tmp_path / "a_mttfs_axi_tile.h").write_text(text.replace("0x81cu)", "0x820u)"))
    (tmp_path / "m.c").write_text('#include "a_mttfs_axi_tile.h"\nint main(void) { return 0; }\n')
    proc = subprocess.run([_compiler("gcc"), "-std=c99", *WARN, "-c", "m.c"], cwd=tmp_path,
                          capture_output=True, text=True, check=False)
    assert proc.returncode != 0 and "size_check" in proc.stderr


# -- the driver on the Verilator model of the AXI tile ------------------------------------------

#: A one-layer network of the regression's AXI tile job: 32 inputs, 6 neurons, 2-bit weights.
WIDTHS, NEURONS, WEIGHT_BITS, WINDOWS = (32, 6), 6, 2, 4

_HARNESS_CPP = r"""
#include <cstdio>
#include "Vharness.h"
#include "verilated.h"
#include "mttfs_axi_tile_driver.h"
#include "data.h"

static Vharness *top;
static unsigned long long cycles;
static const unsigned long long PATIENCE = 100000;

static void tick() {
    top->clk = 0; top->eval();
    top->clk = 1; top->eval();
    cycles++;
}

static void write32(void *, uint32_t offset, uint32_t value) {
    top->s_axil_awaddr = offset; top->s_axil_awvalid = 1;
    top->s_axil_wdata = value; top->s_axil_wstrb = 0xf; top->s_axil_wvalid = 1;
    top->s_axil_bready = 1;
    unsigned long long n = 0;
    while (top->s_axil_awvalid || top->s_axil_wvalid) {
        top->eval();
        bool aw = top->s_axil_awvalid && top->s_axil_awready;
        bool w = top->s_axil_wvalid && top->s_axil_wready;
        tick();
        if (aw) top->s_axil_awvalid = 0;
        if (w) top->s_axil_wvalid = 0;
        if (++n > PATIENCE) { std::printf("hang: write\n"); std::exit(3); }
    }
    while (true) {
        top->eval();
        bool b = top->s_axil_bvalid;
        tick();
        if (b) break;
        if (++n > PATIENCE) { std::printf("hang: bresp\n"); std::exit(3); }
    }
    top->s_axil_bready = 0;
}

static uint32_t read32(void *, uint32_t offset) {
    top->s_axil_araddr = offset; top->s_axil_arvalid = 1; top->s_axil_rready = 1;
    unsigned long long n = 0;
    while (top->s_axil_arvalid) {
        top->eval();
        bool ar = top->s_axil_arready;
        tick();
        if (ar) top->s_axil_arvalid = 0;
        if (++n > PATIENCE) { std::printf("hang: read\n"); std::exit(3); }
    }
    uint32_t data;
    while (true) {
        top->eval();
        bool r = top->s_axil_rvalid;
        data = top->s_axil_rdata;
        tick();
        if (r) break;
        if (++n > PATIENCE) { std::printf("hang: rdata\n"); std::exit(3); }
    }
    top->s_axil_rready = 0;
    return data;
}

static int send(void *, uint64_t tdata, int tlast) {
    top->s_axis_tdata = tdata; top->s_axis_tlast = tlast; top->s_axis_tvalid = 1;
    for (unsigned long long n = 0; n < PATIENCE; n++) {
        top->eval();
        bool ready = top->s_axis_tready;
        tick();
        if (ready) { top->s_axis_tvalid = 0; return 1; }
    }
    top->s_axis_tvalid = 0;
    return 0;
}

static int receive(void *, uint64_t *tdata, int *tlast) {
    top->m_axis_tready = 1;
    for (unsigned long long n = 0; n < PATIENCE; n++) {
        top->eval();
        if (top->m_axis_tvalid) {
            *tdata = top->m_axis_tdata; *tlast = top->m_axis_tlast;
            tick();
            top->m_axis_tready = 0;
            return 1;
        }
        tick();
    }
    top->m_axis_tready = 0;
    return 0;
}

int main(int argc, char **argv) {
    Verilated::commandArgs(argc, argv);
    top = new Vharness;
    top->rst = 1;
    for (int i = 0; i < 3; i++) tick();
    top->rst = 0;
    tick();
    mttfs_axi_tile_io_t io = {read32, write32, send, receive, 0};
    std::printf("check %d\n", mttfs_axi_tile_check(&io));
    mttfs_axi_tile_layer_t layer = {WEIGHTS, THETA, INIT, ROWS, I_MAX_IN, I_MAX_OUT, K};
    unsigned long long start = cycles;
    std::printf("load %d\n", mttfs_axi_tile_load_layer(&io, &layer));
    std::printf("load_cycles %llu\n", cycles - start);
    for (int w = 0; w < WINDOWS; w++) {
        mttfs_axi_tile_event_t out[64];
        size_t n_out = 0;
        start = cycles;
        int r = mttfs_axi_tile_window(&io, EVENTS[w], N_EVENTS[w], out, 64, &n_out);
        std::printf("window %d result %d cycles %llu out", w, r, cycles - start);
        for (size_t i = 0; i < n_out; i++) std::printf(" %u:%u", out[i].addr, out[i].time);
        mttfs_axi_tile_counters_t c;
        uint32_t done = 0;
        r = mttfs_axi_tile_read_counters(&io, &c, &done);
        std::printf("\ncounters %d done %u %u %u %u %u %u %u %u\n", r, done, c.events_in,
                    c.weight_row_reads, c.accumulate_ops, c.compare_ops, c.threshold_reads,
                    c.events_out, c.events_suppressed);
    }
    delete top;
    return 0;
}
"""


def _c_array(values) -> str:
    return "{" + ", ".join(str(int(v)) for v in values) + "}"


def _network(T: int, seed: int):
    from golden_models.qnn import random_qnn
    from rtl_gen.mapper import config_for_chain

    qnn = random_qnn(WIDTHS, T=T, k=1, weight_bits=WEIGHT_BITS, seed=seed)
    layers = qnn.integer_layers()
    return qnn, layers[0], config_for_chain(layers, tile_neurons=NEURONS, mesh_rows=1,
                                            mesh_cols=1)


def _data_h(qnn, layer, seed: int) -> tuple[str, list[str]]:
    """``data.h`` of the harness (the layer and the windows' input events) and the lines the
    harness must print for them (the golden layer's outputs and counters)."""
    from golden_models import encode_events

    limit = 2**31 - 1  # a threshold beyond the accumulator's range means the same clamped
    theta = [max(-limit, min(limit, int(v))) for v in layer.theta.flatten().tolist()]
    lines = [
        f"static const int8_t WEIGHTS[] = {_c_array(layer.weights.flatten().tolist())};",
        f"static const int32_t THETA[] = {_c_array(theta)};",
        f"static const int32_t INIT[] = {_c_array(layer.init.tolist())};",
        f"#define ROWS {layer.n_in}u",
        f"#define I_MAX_IN {layer.in_mask.i_max}u",
        f"#define I_MAX_OUT {layer.out_mask.i_max}u",
        f"#define K {layer.out_mask.k}u",
        f"#define WINDOWS {WINDOWS}",
    ]
    events, expected = [], []
    done = 0
    for q in qnn.random_input(WINDOWS, seed=seed + 1):
        idx, tm = encode_events(q, layer.in_mask)
        res = layer.run_events(idx, tm)
        events.append(list(zip(idx.tolist(), tm.tolist(), strict=True)))
        done += 1
        out = " ".join(f"{a}:{t}" for a, t in zip(res.out_index.tolist(),
                                                   res.out_time.tolist(), strict=True))
        c = res.counters.as_dict()
        expected.append(f"out {out}".rstrip())
        expected.append(f"counters 0 done {done} " + " ".join(str(int(v)) for v in c.values()))
    width = max(len(e) for e in events) or 1
    rows = [_c_array(v for a, t in e for v in (a, t)) for e in events]
    lines.append(f"static const mttfs_axi_tile_event_t EVENTS[{WINDOWS}][{width}] = "
                 "{" + ", ".join(r if r != "{}" else "{{0, 0}}" for r in rows) + "};")
    lines.append(f"static const size_t N_EVENTS[] = {_c_array(len(e) for e in events)};")
    return "\n".join(lines) + "\n", expected


def _harness_v(manifest: dict) -> str:
    """A Verilog top around ``mttfs_axi_tile`` whose ports have single-underscore names (the
    C++ model's member names)."""
    ports = manifest["modules"]["mttfs_axi_tile"]["ports"]
    decl = []
    for p in ports:
        rng = f"[{p['width'] - 1}:0] " if p["width"] > 1 else ""
        decl.append(f"  {'input' if p['dir'] == 'in' else 'output'} wire {rng}"
                    f"{p['name'].replace('__', '_')}")
    conns = ",\n".join(f"    .{p['name']}({p['name'].replace('__', '_')})" for p in ports)
    return ("module harness (\n" + ",\n".join(decl) + "\n);\n"
            f"  mttfs_axi_tile dut (\n{conns}\n  );\nendmodule\n")


def _build_and_run(rtl: Path, manifest: dict, data_h: str, work: Path) -> str:
    from toolkit_base.toolchain import require, setup_verilator_env

    setup_verilator_env()
    verilator = require("verilator")
    work.mkdir(parents=True, exist_ok=True)
    (work / "data.h").write_text(data_h)
    (work / "harness.cpp").write_text(_HARNESS_CPP)
    (work / "harness.v").write_text(_harness_v(manifest))
    # the driver compiled as a firmware build would: C99, every warning an error
    subprocess.run([_compiler("gcc"), "-std=c99", *WARN, "-O1", "-I", str(rtl), "-c",
                    str(rtl / "mttfs_axi_tile_driver.c"), "-o", str(work / "driver.o")],
                   check=True)
    cmd = [verilator, "--cc", "--exe", "--build", "-j", "1", "-Wno-fatal", "--top-module",
           "harness", "-CFLAGS", f"-O1 -I{rtl} -I{work}", "-o", "Vharness",
           str(rtl / "mttfs_axi_tile.vlt"), str(rtl / "mttfs_tile.vlt"),
           str(work / "harness.v"), str(rtl / "mttfs_axi_tile.v"), str(rtl / "mttfs_tile.v"),
           str(work / "harness.cpp"), str(work / "driver.o")]
    proc = subprocess.run(cmd, cwd=work, capture_output=True, text=True, check=False,
                          env={**os.environ, "MAKEFLAGS": ""})
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    run = subprocess.run([str(work / "obj_dir" / "Vharness")], capture_output=True, text=True,
                         check=False, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    return run.stdout


def _verdict(stdout: str, expected: list[str]) -> list[str]:
    """The harness's lines without the cycle counts, to compare with the golden ones."""
    got = []
    for line in stdout.splitlines():
        if line.startswith("window "):
            parts = line.split(" out", 1)
            assert " result 0 " in parts[0], line
            got.append(("out" + parts[1]).rstrip())
        elif line.startswith("counters "):
            got.append(line)
    return got


@pytest.fixture(scope="module")
def driver_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("drv")
    qnn, layer, config = _network(T=8, seed=3)
    manifest = generate(config, tmp / "rtl", ["mttfs_axi_tile"])
    data_h, expected = _data_h(qnn, layer, seed=3)
    stdout = _build_and_run(tmp / "rtl", manifest, data_h, tmp / "work")
    return stdout, expected, (tmp, qnn, layer, manifest)


def test_driver_runs_windows_on_verilator(driver_run):
    """The driver checks the ID and INFO registers, loads the layer (its own packing of every
    image), runs four windows and reads each window's counters: every output event and every
    counter equals the golden layer's."""
    stdout, expected, _ = driver_run
    lines = stdout.splitlines()
    assert lines[0] == "check 0" and lines[1] == "load 0", stdout
    assert _verdict(stdout, expected) == expected
    assert sum(e.count(":") for e in expected if e.startswith("out")) > 0  # not vacuous


def test_driver_run_fails_on_wrong_weights(driver_run):
    """The same run with every weight of the C data negated gives other outputs or counters:
    the comparison can fail."""
    _, expected, (tmp, qnn, layer, manifest) = driver_run
    data_h, _ = _data_h(qnn, layer, seed=3)
    head, rest = data_h.split("WEIGHTS[] = {", 1)
    weights, tail = rest.split("}", 1)
    negated = ", ".join(str(min(1, -int(w))) for w in weights.split(","))
    stdout = _build_and_run(tmp / "rtl", manifest, f"{head}WEIGHTS[] = {{{negated}}}{tail}",
                            tmp / "work_bad")
    assert _verdict(stdout, expected) != expected
