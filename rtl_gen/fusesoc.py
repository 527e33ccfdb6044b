"""FuseSoC CAPI2 cores of the generated blocks: the generated folder is a FuseSoC library.

:func:`core_files` writes, for every module of a manifest, ``<module>.core`` with

- the VLNV ``matterhorn:mttfs:<module>_<tag>:<version>``: ``tag`` is ``t<T>k<k>_<hash>`` where
  the hash covers every :class:`rtl_gen.params.RTLConfig` field (:func:`config_tag`), so two
  configurations never share a name in one library, and ``version`` is the toolkit's;
- the file sets: ``rtl`` (the module's Verilog and ``<module>.vlt``, its Verilator lint waivers
  for its own file, so a user's lint of a design around it passes; a wrapper depends on its
  block's core),
  ``sw`` (an AXI wrapper's C header, Markdown register table and SystemRDL source), ``tb``
  (a self-checking smoke testbench ``tb_<module>.v``) and ``synth`` (a Yosys script);
- the targets ``lint`` (Verilator ``--lint-only`` with the manifest's flags and waivers), ``sim``
  (Icarus Verilog runs the smoke testbench; it prints ``PASS`` or stops with ``$fatal``) and
  ``synth`` (Yosys: generic ``synth``, ``stat``, the netlist), all on Edalize's flow API.

The smoke testbench holds reset, then checks that no output is X (but an SRAM's read data,
undefined until the first read) and no ``*valid`` output is high; on an AXI wrapper it also
reads the identification register (its value from the register map) and an unmapped address
(SLVERR) over AXI4-Lite. docs/fusesoc.md shows the flow in a user's project. Everything
here is text: same configuration, same bytes, no paths.
"""

from __future__ import annotations

import hashlib
import json

from rtl_gen.params import RTLConfig, check_config

__all__ = ["GENERATOR_PARAMETERS", "LIBRARY", "SYNTH_SCRIPT", "config_tag", "core_files",
           "generated_core", "owned_files", "version", "vlnv"]

#: The vendor and library parts of every VLNV.
LIBRARY = "matterhorn:mttfs"
#: The Yosys script of a core's ``synth`` target.
SYNTH_SCRIPT = "synth_{module}.tcl"
#: What each target of a module's core does (its ``description``).
TARGETS = {
    "default": "what a design that instantiates the module pulls in",
    "lint": "Verilator lint of the module, -Wall with its waivers",
    "sim": "Icarus smoke test (the simulator's default flags): no X and no valid after reset",
    "synth": "Yosys generic synthesis: statistics and netlist",
}
#: Clocks the smoke testbench may run before it declares a hang.
TB_TIMEOUT_NS = 100_000


def version() -> str:
    """The toolkit's version (the cores' and the IP-XACT component's)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("matterhorn-toolkit")
    except PackageNotFoundError:  # a source tree that was never installed
        return "0.0.0"


def config_tag(module: str, manifest: dict) -> str:
    """``t<T>k<k>_<8 hex digits>``: the readable parameters, and a hash of what the core's
    Verilog is (the sha256 of ``module``'s file and of the files it needs, from the manifest
    ``generate`` wrote), so a field that does not change a module's Verilog (``axis_width`` for
    the tile) does not rename its core, and two different Verilogs never share a name."""
    entry = manifest["modules"][module]
    files = [entry["sha256"], *(manifest["modules"][f[:-2]]["sha256"]
                                for f in entry.get("depends", ()))]
    digest = hashlib.sha256(json.dumps(files).encode()).hexdigest()
    p = manifest["parameters"]
    return f"t{p['T']}k{p['k']}_{digest[:8]}"


def vlnv(module: str, manifest: dict) -> str:
    """The VLNV of ``module``'s core in the set ``manifest`` describes."""
    return f"{LIBRARY}:{module}_{config_tag(module, manifest)}:{version()}"


def owned_files(modules) -> set[str]:
    """The file names :func:`core_files` may write for ``modules`` (generate owns them)."""
    names = set()
    for m in modules:
        names |= {f"{m}.core", f"tb_{m}.v", f"{m}.h", f"{m}_regs.md", f"{m}.vlt",
                  f"{m}_driver.h", f"{m}_driver.c", f"{m}_amba.v", f"{m}.xml",
                  SYNTH_SCRIPT.format(module=m)}
    return names | {"mttfs_axi.rdl"}


def _yaml_list(items, indent: int) -> str:
    pad = " " * indent
    return "".join(f"{pad}- {json.dumps(i)}\n" for i in items)


def _core(module: str, manifest: dict, lint_flags: list[str], description: str) -> str:
    entry = manifest["modules"][module]
    axi = entry.get("axi")
    deps = [vlnv(r[:-2], manifest) for r in entry.get("depends", ())]
    script = SYNTH_SCRIPT.format(module=module)
    text = [
        "CAPI=2:\n",
        "# Written by matterhorn generate (docs/fusesoc.md); parameters in manifest.json.\n",
        f"name: {vlnv(module, manifest)}\n",
        f"description: {json.dumps(description)}\n",
        "\nfilesets:\n",
        "  rtl:\n",
        "    files:\n",
        f"      - {entry['file']}\n",
        # the lint waivers travel with the core: a user's Verilator run of a design that
        # instantiates it reads them for this module's file only
        f"      - {module}.vlt: {{file_type: vlt}}\n",
        # the shell under AMBA's names (aclk, aresetn), docs/rtl_axi.md
        *([f"      - {module}_amba.v\n"] if axi else []),
        "    file_type: verilogSource\n",
    ]
    if deps:
        text += ["    depend:\n", _yaml_list(deps, 6)]
    if axi:
        files = axi["s_axil"]["files"]
        text += [
            "  sw:\n",
            "    files:\n",
            f"      - {files[0]}: {{file_type: cSource, is_include_file: true}}\n",
            f"      - {files[1]}: {{file_type: user}}\n",
            f"      - {files[2]}: {{file_type: systemRDL}}\n",
            f"      - {module}.xml: {{file_type: user}}\n",
            *(f"      - {f}: {{file_type: cSource{', is_include_file: true' * f.endswith('.h')}}}\n"
              for f in files[3:]),
        ]
    text += [
        "  tb:\n",
        "    files:\n",
        f"      - tb_{module}.v\n",
        "    file_type: verilogSource\n",
        "  synth:\n",
        "    files:\n",
        f"      - {script}: {{file_type: user, copyto: {script}}}\n",
        "\ntargets:\n",
        "  default:\n",
        f"    description: {json.dumps(TARGETS['default'])}\n",
        f"    filesets: [rtl{', sw' if axi else ''}]\n",
        f"    toplevel: {module}\n",
        "  lint:\n",
        f"    description: {json.dumps(TARGETS['lint'])}\n",
        "    filesets: [rtl]\n",
        f"    toplevel: {module}\n",
        "    flow: lint\n",
        "    flow_options:\n",
        "      tool: verilator\n",
        "      verilator_options:\n",
        _yaml_list(lint_flags, 8),
        "  sim:\n",
        f"    description: {json.dumps(TARGETS['sim'])}\n",
        "    filesets: [rtl, tb]\n",
        f"    toplevel: tb_{module}\n",
        "    flow: sim\n",
        "    flow_options:\n",
        "      tool: icarus\n",
        "  synth:\n",
        f"    description: {json.dumps(TARGETS['synth'])}\n",
        "    filesets: [rtl, synth]\n",
        f"    toplevel: {module}\n",
        "    flow: generic\n",
        "    flow_options:\n",
        "      tool: yosys\n",
        # Edalize wants an architecture; the core's script runs the generic synth instead
        "      arch: generic\n",
        "      output_format: verilog\n",
        f"      yosys_template: {script}\n",
    ]
    return "".join(text)


def _waivers(module: str, entry: dict, lint_flags: list[str]) -> str:
    """The Verilator configuration file of ``module``'s core: a ``lint_off`` per waived rule
    (every ``-Wno-`` flag of the core's lint), for the module's own file."""
    rules = [f[len("-Wno-"):] for f in lint_flags if f.startswith("-Wno-")]
    lines = [
        "`verilator_config\n",
        f"// Written by matterhorn generate (docs/fusesoc.md): the lint waivers of {module}\n",
        "// (docs/rtl_interfaces.md, \"Verilator lint\"), for its file only.\n",
    ]
    lines += [f'lint_off -rule {r} -file "*{entry["file"]}"\n' for r in dict.fromkeys(rules)]
    return "".join(lines)


_SYNTH_TCL = """\
# Yosys script of the synth target of {module}'s core (docs/fusesoc.md): the generic synthesis
# of the core's Verilog, its statistics and the netlist. Edalize writes the procs file.
yosys -import
source edalize_yosys_procs.tcl
verilog_defaults -push
verilog_defaults -add -defer
set_defines
set_incdirs
read_files
set_params
verilog_defaults -pop
hierarchy -check -top {module}
yosys synth -top {module}
yosys tee -o {module}_stat.txt stat
yosys write_verilog -noattr {module}_netlist.v
"""


def _tb(module: str, entry: dict, regmap=None) -> str:
    ports = [p for p in entry["ports"] if p["name"] not in ("clk", "rst")]

    def decl(p):
        rng = f"[{p['width'] - 1}:0] " if p["width"] > 1 else ""
        return (f"  reg {rng}{p['name']} = 0;\n" if p["dir"] == "in"
                else f"  wire {rng}{p['name']};\n")

    # a memory's read data is undefined until its first read, as in silicon
    outs = [p["name"] for p in ports if p["dir"] == "out" and not p["name"].endswith("rdata")]
    valids = [n for n in outs if n.endswith("valid")]
    lines = [
        "`timescale 1ns/1ps\n",
        f"// Smoke test of {module} (written by matterhorn generate, docs/fusesoc.md): after\n",
        "// reset no output is X and no valid is high",
        "; the AXI4-Lite slave answers ID and SLVERR.\n" if regmap else ".\n",
        f"module tb_{module};\n",
        "  reg clk = 0;\n",
        "  reg rst = 1;\n",
        "  always #5 clk = ~clk;\n",
        *(decl(p) for p in ports),
        f"  {module} dut (\n",
        "    .clk(clk), .rst(rst)",
        *(f",\n    .{p['name']}({p['name']})" for p in ports),
        "\n  );\n",
    ]
    if regmap:
        lines += [
            "  reg [31:0] data;\n",
            "  reg [1:0] resp;\n",
            "  task axil_read(input [31:0] addr);\n",
            "    begin\n",
            "      @(negedge clk) s_axil__araddr = addr; s_axil__arvalid = 1;\n",
            "      while (!s_axil__arready) @(negedge clk);\n",
            "      @(negedge clk) s_axil__arvalid = 0; s_axil__rready = 1;\n",
            "      while (!s_axil__rvalid) @(negedge clk);\n",
            "      data = s_axil__rdata; resp = s_axil__rresp;\n",
            "      @(negedge clk) s_axil__rready = 0;\n",
            "    end\n",
            "  endtask\n",
        ]
    lines += [
        "  initial begin\n",
        "    repeat (3) @(posedge clk);\n",
        "    @(negedge clk) rst = 0;\n",
        "    repeat (4) @(negedge clk);\n",
        f"    if (^{{{', '.join(outs)}}} === 1'bx)\n",
        "      $fatal(1, \"FAIL: an output is X after reset\");\n",
    ]
    if valids:
        lines.append(f"    if (|{{{', '.join(valids)}}}) $fatal(1, \"FAIL: a valid is high after "
                     "reset\");\n")
    if regmap:
        ident = regmap["ID"]
        unmapped = next(a for a in range(0, regmap.size, 4)
                        if a not in {r.address for r in regmap.registers})
        lines += [
            f"    axil_read(32'h{ident.address:x});\n",
            f"    if (resp !== 2'b00 || data !== 32'h{ident.reset:08x})\n",
            "      $fatal(1, \"FAIL: ID reads %h (response %b)\", data, resp);\n",
            f"    axil_read(32'h{unmapped:x});\n",
            "    if (resp !== 2'b10) $fatal(1, \"FAIL: an unmapped address answers %b\", resp);\n",
        ]
    lines += [
        "    $display(\"PASS\");\n",
        "    $finish;\n",
        "  end\n",
        f"  initial begin #{TB_TIMEOUT_NS}; $fatal(1, \"FAIL: timeout\"); end\n",
        "endmodule\n",
    ]
    return "".join(lines)


#: One line per generated module for the core's description.
DESCRIPTIONS = {
    "mttfs_encoder": "M-TTFS encoder: dense codes to a masked event stream",
    "mttfs_sram": "weight SRAM of the neuron tile",
    "mttfs_tile": "M-TTFS neuron tile",
    "mttfs_router": "XY mesh router",
    "mttfs_system": "M-TTFS mesh system: encoder, tiles on an XY mesh, sequencer",
    "dense_tile": "dense INT4 baseline tile",
    "mttfs_axi_tile": "M-TTFS neuron tile behind AXI4-Stream and AXI4-Lite",
    "mttfs_axi_system": "M-TTFS mesh system behind AXI4-Stream and AXI4-Lite",
}


def core_files(config: RTLConfig, manifest: dict) -> dict[str, str]:
    """File name -> text of the cores, smoke testbenches and the Yosys script of every module
    in ``manifest`` (the manifest ``generate`` builds for ``config``)."""
    from rtl_gen.regmap import KINDS, register_map

    check_config(config)
    flags = [f for f in manifest["lint"]["flags"] if f != "--lint-only"]
    files = {}
    kinds = {v: k for k, v in KINDS.items()}
    prefix = manifest.get("prefix", "")
    for module, entry in manifest["modules"].items():
        if "file" not in entry:
            continue
        base = module[len(prefix):]
        extra = [f"-Wno-{w['warning']}" for w in entry.get("lint_waivers", ())]
        params = ", ".join(f"{k}={v}" for k, v in config.as_dict().items())
        what = DESCRIPTIONS.get(base, base)
        files[f"{module}.core"] = _core(module, manifest, flags + extra, f"{what} ({params})")
        files[f"{module}.vlt"] = _waivers(module, entry, flags + extra)
        regmap = register_map(kinds[base], config) if base in kinds else None
        files[f"tb_{module}.v"] = _tb(module, entry, regmap)
        files[SYNTH_SCRIPT.format(module=module)] = _SYNTH_TCL.format(module=module)
    return files


# -- the FuseSoC generator: a user's core asks for a configuration by parameters ---------------

#: What a user's core may give the generator ``mttfs`` (``fusesoc_cores/matterhorn.core``):
#: the :class:`rtl_gen.params.RTLConfig` fields of a generated set, ``modules`` (the modules
#: to generate, with what they need; every one by default) and ``prefix``.
GENERATOR_PARAMETERS = ("T", "k", "family", "i_max_in", "i_max_out", "weight_bits", "n_in",
                        "tile_neurons", "lanes", "mesh_rows", "mesh_cols", "sram_macro",
                        "axil_addr_width", "axis_width", "modules", "prefix")
#: The folder, below the generator's working folder, that the generated set goes into.
GENERATED_DIR = "rtl"


def generated_core(name: str, manifest: dict) -> str:
    """The core the generator hands back to FuseSoC, named ``name`` (FuseSoC's
    ``<vendor>:<library>:<name>-<generate entry>:<version>``): it depends on the core
    ``generate`` wrote for every module of the set (in ``GENERATED_DIR``, which FuseSoC reads
    as well), so a design gets each module's Verilog, its lint waivers and, for an AXI
    wrapper, the C header, driver and register table."""
    deps = [vlnv(m, manifest) for m, e in manifest["modules"].items() if "file" in e]
    what = f"M-TTFS IP (prefix {manifest.get('prefix', '')!r}): {', '.join(manifest['modules'])}"
    return "".join([
        "CAPI=2:\n",
        "# Written by the matterhorn FuseSoC generator (docs/fusesoc.md).\n",
        f"name: {name}\n",
        f"description: {json.dumps(what)}\n",
        "filesets:\n",
        "  rtl:\n",
        "    depend:\n",
        _yaml_list(deps, 6),
        "targets:\n",
        "  default:\n",
        f"    description: {json.dumps(TARGETS['default'])}\n",
        "    filesets: [rtl]\n",
    ])
