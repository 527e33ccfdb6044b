"""The AXI wrappers under AMBA's names (``<wrapper>_amba.v``: aclk, aresetn, s_axil_awaddr) and
their IP-XACT component (``<wrapper>.xml``), rtl_gen.amba."""

from __future__ import annotations

import re
import subprocess
import xml.etree.ElementTree as ET

import pytest

from rtl_gen.amba import BUSES, IPXACT_NS
from rtl_gen.generate import generate
from rtl_gen.params import RTLConfig
from rtl_gen.regmap import register_map

SMALL = RTLConfig(T=4, k=1, n_in=4, tile_neurons=2, mesh_rows=1, mesh_cols=2)
NS = {"ipxact": IPXACT_NS}


@pytest.fixture(scope="module")
def rtl(tmp_path_factory):
    out = tmp_path_factory.mktemp("amba")
    return out, generate(SMALL, out, ["mttfs_axi_tile", "mttfs_axi_system"], prefix="p_")


def _ports(text: str) -> set[str]:
    return set(re.findall(r"^\s*(?:input|output) wire (?:\[\d+:0\] )?(\w+)", text, re.M))


@pytest.mark.parametrize("kind", ["tile", "system"])
def test_the_amba_shell_lints_clean_without_waivers(rtl, kind):
    """``-Wall`` on the shell with no waiver of its own (the wrapped modules' .vlt files only
    cover their files)."""
    from toolkit_base.toolchain import require, setup_verilator_env

    out, manifest = rtl
    setup_verilator_env()
    top = f"p_mttfs_axi_{kind}"
    entry = manifest["modules"][top]
    files = [out / f"{top}_amba.v", out / entry["file"], *(out / f for f in entry["depends"])]
    vlts = [out / f"{top}.vlt", *(out / f.replace(".v", ".vlt") for f in entry["depends"])]
    proc = subprocess.run([require("verilator"), "--lint-only", "-Wall", "--top-module",
                           f"{top}_amba", *map(str, vlts), *map(str, files)],
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    ports = _ports((out / f"{top}_amba.v").read_text())
    assert {"aclk", "aresetn", "s_axil_awaddr", "s_axis_tdata", "m_axis_tlast"} <= ports
    assert not any("__" in p for p in ports)


@pytest.mark.parametrize("kind", ["tile", "system"])
def test_the_ipxact_component_maps_every_port_and_register(rtl, kind):
    out, manifest = rtl
    top = f"p_mttfs_axi_{kind}"
    root = ET.parse(out / f"{top}.xml").getroot()
    assert root.find("ipxact:name", NS).text == f"{top}_amba"
    ports = _ports((out / f"{top}_amba.v").read_text())
    model = {p.find("ipxact:name", NS).text for p in root.iterfind(".//ipxact:port", NS)}
    assert model == ports
    buses = root.findall(".//ipxact:busInterface", NS)
    assert [b.find("ipxact:name", NS).text for b in buses] == list(BUSES)
    for b in buses:
        mapped = {m.find("ipxact:physicalPort/ipxact:name", NS).text
                  for m in b.iterfind(".//ipxact:portMap", NS)}
        bus = b.find("ipxact:name", NS).text
        assert mapped == {p for p in ports if p.startswith(bus + "_")} | {"aclk", "aresetn"}
    regs = {r.find("ipxact:name", NS).text: int(r.find("ipxact:addressOffset", NS).text, 16)
            for r in root.iterfind(".//ipxact:register", NS)}
    rm = register_map(kind, SMALL)
    assert regs == {r.ident: r.address for r in rm.registers}
    assert int(root.find(".//ipxact:range", NS).text) == rm.size
