"""The AXI wrappers under AMBA's conventions, and their IP-XACT component (docs/rtl_axi.md).

For each AXI wrapper ``M`` (``mttfs_axi_tile``, ``mttfs_axi_system``, after ``--prefix``),
:func:`amba_files` writes

- ``M_amba.v``: module ``M_amba``, a Verilog-2005 shell around ``M`` with the names an
  integrator's tools expect: clock ``aclk``, active-low reset ``aresetn`` (AXI's; synchronous,
  as the block's ``rst`` is: ``rst = !aresetn``) and ``<bus>_<signal>`` ports
  (``s_axil_awaddr``, ``m_axis_tdata``) where Amaranth writes ``<bus>__<signal>``; no logic
  but the reset's inverter, lint clean under ``verilator -Wall`` with no waiver;
- ``M.xml``: an IP-XACT (IEEE 1685-2014) component of ``M_amba``: its ports, its bus
  interfaces (``s_axil`` an AXI4-Lite slave, ``s_axis`` an AXI4-Stream slave, ``m_axis`` an
  AXI4-Stream master, on ARM's AMBA4 bus definitions, with every port mapped to its logical
  name, and the clock and reset as ``aclk``/``aresetn``), and the register map (every
  register of ``rtl_gen/regmap/mttfs_axi.rdl`` at its offset, with its fields and access).

Both are text derived from the manifest entry and the compiled register map: same
configuration, same bytes, no paths.
"""

from __future__ import annotations

from xml.sax.saxutils import escape

from rtl_gen.params import RTLConfig

__all__ = ["BUSES", "amba_files", "amba_name", "ipxact"]

#: The bus interfaces of a wrapper: Amaranth's bus name -> (AMBA bus definition, mode).
BUSES = {
    "s_axil": ("AXI4-Lite", "r0p0_0", "slave"),
    "s_axis": ("AXI4Stream", "r0p0_1", "slave"),
    "m_axis": ("AXI4Stream", "r0p0_1", "master"),
}
#: The IP-XACT 2014 namespace.
IPXACT_NS = "http://www.accellera.org/XMLSchema/IPXACT/1685-2014"


def amba_name(port: str) -> str:
    """The AMBA-style name of a wrapper port: ``aclk``, ``aresetn``, ``s_axil_awaddr``."""
    return {"clk": "aclk", "rst": "aresetn"}.get(port, port.replace("__", "_"))


def _shell(module: str, ports: list[dict]) -> str:
    decl, conns = [], []
    for p in ports:
        rng = f"[{p['width'] - 1}:0] " if p["width"] > 1 else ""
        decl.append(f"  {'input' if p['dir'] == 'in' else 'output'} wire {rng}"
                    f"{amba_name(p['name'])}")
        value = "!aresetn" if p["name"] == "rst" else amba_name(p["name"])
        conns.append(f"    .{p['name']}({value})")
    return (f"// {module}_amba: {module} under AMBA's names (written by matterhorn generate,\n"
            "// docs/rtl_axi.md): aclk, aresetn (active low, synchronous), <bus>_<signal>.\n"
            f"module {module}_amba (\n" + ",\n".join(decl) + "\n);\n"
            f"  {module} core (\n" + ",\n".join(conns) + "\n  );\nendmodule\n")


def _access(reg) -> str:
    kinds = {f.kind for f in reg.fields}
    if kinds <= {"const", "hw"}:
        return "read-only"
    return "read-write"


def ipxact(module: str, ports: list[dict], regmap, version: str) -> str:
    """The IP-XACT 2014 component of ``module``'s AMBA shell (``module_amba``)."""
    lines = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        f"<!-- {module}_amba (written by matterhorn generate, docs/rtl_axi.md) -->",
        f'<ipxact:component xmlns:ipxact="{IPXACT_NS}">',
        "  <ipxact:vendor>matterhorn</ipxact:vendor>",
        "  <ipxact:library>mttfs</ipxact:library>",
        f"  <ipxact:name>{module}_amba</ipxact:name>",
        f"  <ipxact:version>{escape(version)}</ipxact:version>",
        "  <ipxact:busInterfaces>",
    ]
    for bus, (kind, rev, mode) in BUSES.items():
        members = [p for p in ports if p["name"].startswith(f"{bus}__")]
        lines += [
            "    <ipxact:busInterface>",
            f"      <ipxact:name>{bus}</ipxact:name>",
            (f'      <ipxact:busType vendor="amba.com" library="AMBA4" name="{kind}" '
            f'version="{rev}"/>'),
            "      <ipxact:abstractionTypes>",
            "        <ipxact:abstractionType>",
            (f'          <ipxact:abstractionRef vendor="amba.com" library="AMBA4" '
            f'name="{kind}_rtl" version="{rev}"/>'),
            "          <ipxact:portMaps>",
        ]
        for p in [*members, {"name": "clk"}, {"name": "rst"}]:
            logical = ("ACLK" if p["name"] == "clk" else "ARESETn" if p["name"] == "rst"
                       else p["name"].split("__", 1)[1].upper())
            lines += [
                "            <ipxact:portMap>",
                (f"              <ipxact:logicalPort><ipxact:name>{logical}</ipxact:name>"
                "</ipxact:logicalPort>"),
                (f"              <ipxact:physicalPort><ipxact:name>{amba_name(p['name'])}"
                "</ipxact:name></ipxact:physicalPort>"),
                "            </ipxact:portMap>",
            ]
        lines += ["          </ipxact:portMaps>", "        </ipxact:abstractionType>",
                  "      </ipxact:abstractionTypes>"]
        if mode == "slave" and bus == "s_axil":
            lines += [("      <ipxact:slave><ipxact:memoryMapRef memoryMapRef=\"registers\"/>"
                      "</ipxact:slave>")]
        else:
            lines.append(f"      <ipxact:{mode}/>")
        lines.append("    </ipxact:busInterface>")
    lines += [
        "  </ipxact:busInterfaces>",
        "  <ipxact:memoryMaps>",
        "    <ipxact:memoryMap>",
        "      <ipxact:name>registers</ipxact:name>",
        "      <ipxact:addressBlock>",
        "        <ipxact:name>regs</ipxact:name>",
        "        <ipxact:baseAddress>0</ipxact:baseAddress>",
        f"        <ipxact:range>{regmap.size}</ipxact:range>",
        "        <ipxact:width>32</ipxact:width>",
    ]
    for reg in regmap.registers:
        lines += [
            "        <ipxact:register>",
            f"          <ipxact:name>{reg.ident}</ipxact:name>",
            f"          <ipxact:addressOffset>{reg.address:#x}</ipxact:addressOffset>",
            "          <ipxact:size>32</ipxact:size>",
            f"          <ipxact:access>{_access(reg)}</ipxact:access>",
        ]
        for f in reg.fields:
            lines += [
                "          <ipxact:field>",
                f"            <ipxact:name>{f.name}</ipxact:name>",
                f"            <ipxact:bitOffset>{f.lsb}</ipxact:bitOffset>",
                f"            <ipxact:bitWidth>{f.width}</ipxact:bitWidth>",
                "          </ipxact:field>",
            ]
        lines.append("        </ipxact:register>")
    lines += [
        "      </ipxact:addressBlock>",
        "    </ipxact:memoryMap>",
        "  </ipxact:memoryMaps>",
        "  <ipxact:model>",
        "    <ipxact:ports>",
    ]
    for p in ports:
        name = amba_name(p["name"])
        vector = (f"<ipxact:vectors><ipxact:vector><ipxact:left>{p['width'] - 1}</ipxact:left>"
                  "<ipxact:right>0</ipxact:right></ipxact:vector></ipxact:vectors>"
                  if p["width"] > 1 else "")
        lines += [
            "      <ipxact:port>",
            f"        <ipxact:name>{name}</ipxact:name>",
            (f"        <ipxact:wire><ipxact:direction>{p['dir']}</ipxact:direction>{vector}"
            "</ipxact:wire>"),
            "      </ipxact:port>",
        ]
    lines += ["    </ipxact:ports>", "  </ipxact:model>", "</ipxact:component>"]
    return "\n".join(lines) + "\n"


def amba_files(config: RTLConfig, manifest: dict, version: str) -> dict[str, str]:
    """File name -> text of the AMBA shell and the IP-XACT component of every AXI wrapper in
    ``manifest`` (the manifest ``generate`` builds, its prefix applied)."""
    from rtl_gen.regmap import KINDS, register_map

    prefix = manifest.get("prefix", "")
    kinds = {v: k for k, v in KINDS.items()}
    files = {}
    for module, entry in manifest["modules"].items():
        base = module[len(prefix):]
        if base not in kinds or "ports" not in entry:
            continue
        files[f"{module}_amba.v"] = _shell(module, entry["ports"])
        files[f"{module}.xml"] = ipxact(module, entry["ports"],
                                        register_map(kinds[base], config), version)
    return files
