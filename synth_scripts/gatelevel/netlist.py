"""A component's Verilog mapped to a liberty, and the mapped netlist as the replay reads it.

:func:`map_netlist` maps the component's Verilog to a liberty with Yosys (flattened, the one
mapping script of :func:`synth_scripts.flow.mapping`, ``splitnets``, the PDK's tie cells by
``hilomap``), optionally cutting SRAM macros out: their read data becomes an input port of the
netlist, which the trace drives from ``extra_inputs``
(:func:`synth_scripts.gatelevel.trace.record`).
:func:`parse_netlist` reads the mapped netlist's ports, nets and cells (:class:`Netlist`).
Every tool runs in ``workdir`` with relative file names, so nothing written names a path of
this machine.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from synth_scripts import flow
from synth_scripts.gatelevel import liberty
from toolkit_base import toolchain
from toolkit_base.files import kept_value, source_digest

__all__ = ["Cell", "Netlist", "kept_elaborated", "kept_verilog", "map_netlist", "parse_netlist",
           "save"]



_DECL = re.compile(r"^\s*(input|output|wire)\s+(?:\[(\d+):(\d+)\]\s+)?(\\\S+|[\w$]+)\s*;", re.M)
_CELLINST = re.compile(r"^\s*([\w$]+)\s+(\\\S+|[\w$]+)\s*\((.*?)\);", re.M | re.S)
_CONN = re.compile(r"\.(\w+)\(\s*([^()]*?)\s*\)")
_ASSIGN = re.compile(r"^\s*assign\s+(.+?)\s*=\s*(.+?)\s*;", re.M)
_REF = re.compile(r"^(\\\S+|[\w$]+)(?:\s*\[(\d+)\])?$")
_PART = re.compile(r"^(\\\S+|[\w$]+)\s*\[(\d+):(\d+)\]$")
_CONST = re.compile(r"^(\d+)'[bhd]")
_ITEM = re.compile(r"\s*(\\\S+(?:\s*\[\d+(?::\d+)?\])?|[^,]+?)\s*(?:,|$)")


def _ref(text: str) -> str | None:
    """Canonical bit reference (``name`` or ``name[i]``, escaped names keep their backslash
    and trailing space) of a netlist expression; None for a constant or an open pin."""
    text = text.strip()
    if not text or re.match(r"^\d+'[bhd]", text):
        return None
    m = _REF.match(text)
    if m is None:
        raise ValueError(f"netlist expression {text!r} is not a single bit")
    name, idx = m.groups()
    if name.startswith("\\"):
        name += " "
    return name if idx is None else f"{name}[{idx}]"


def _base(name: str) -> str:
    """A declared name as :func:`_ref` writes it (an escaped name keeps a trailing space)."""
    return name + " " if name.startswith("\\") else name


def _bits(text: str, widths: dict[str, tuple[int, int]]) -> list[str | None]:
    """Bit references of one side of an ``assign``, least significant first (``None``: a
    constant bit): a bit, a part select ``name[hi:lo]``, a whole vector (``widths``: its
    declared ``(hi, lo)``), a constant or a concatenation of those."""
    text = text.strip()
    if text.startswith("{") and text.endswith("}"):
        items = [i for i in _ITEM.findall(text[1:-1]) if i]
        return [b for item in reversed(items) for b in _bits(item, widths)]
    m = _CONST.match(text)
    if m:
        return [None] * int(m.group(1))
    m = _PART.match(text)
    if m:
        base, hi, lo = _base(m.group(1)), int(m.group(2)), int(m.group(3))
        return [f"{base}[{i}]" for i in range(min(hi, lo), max(hi, lo) + 1)]
    if text in widths or _base(text) in widths:
        hi, lo = widths.get(text) or widths[_base(text)]
        if hi != lo:
            return [f"{_base(text)}[{i}]" for i in range(min(hi, lo), max(hi, lo) + 1)]
    return [_ref(text)]


@dataclass
class Cell:
    name: str
    type: str
    pins: dict[str, str | None]  # pin -> net (canonical bit reference of its class)


@dataclass
class Netlist:
    """A liberty-mapped, flattened netlist that simulates with the liberty's cell models."""

    top: str
    path: Path  # netlist.v
    cells_v: Path  # the liberty's cell models
    lib: liberty.Liberty
    inputs: dict[str, int]  # port -> width (clk and rst included)
    outputs: dict[str, int]
    cells: list[Cell]
    nets: list[str]  # one reference per electrical net (aliases merged), sorted
    clock: str = "clk"
    reset: str | None = "rst"
    clock_net: str | None = "clk"  # the net (alias representative) of the clock port
    cut: dict[str, int] = field(default_factory=dict)  # exposed read-data ports -> width
    digest: str = ""  # SHA-256 of netlist.v, what is kept of it is kept under
    # what synth_scripts.gatelevel.energy read of the liberty for it, per slew and wire load
    priced: dict = field(default_factory=dict, repr=False, compare=False)

    def area(self) -> float:
        """The cells' area, in the liberty's unit (square micrometres in NanGate 45 nm and
        sky130's)."""
        cells = self.lib.library.cells
        return math.fsum(cells[c.type].area for c in self.cells)

    def to_json(self) -> dict:
        types: dict[str, int] = {}
        for c in self.cells:
            types[c.type] = types.get(c.type, 0) + 1
        return {
            "top": self.top,
            "liberty": self.lib.source_name,
            "cells": len(self.cells),
            "cells_by_type": dict(sorted(types.items())),
            "nets": len(self.nets),
            "inputs": self.inputs,
            "outputs": self.outputs,
            "cut": self.cut,
        }


def _bitrefs(name: str, width: int) -> list[str]:
    base = f"\\{name} " if not re.fullmatch(r"[A-Za-z_][\w$]*", name) else name
    return [base] if width == 1 else [f"{base}[{i}]" for i in range(width)]


def _declarations(text: str) -> tuple[dict, dict, dict]:
    """Input and output ports (plain name -> width) and every vector's ``(hi, lo)`` (keyed as
    :func:`_ref` writes names) of a netlist."""
    inputs, outputs, widths = {}, {}, {}
    for kind, hi, lo, name in _DECL.findall(text):
        if hi:
            widths[_base(name)] = (int(hi), int(lo))
        if kind == "wire":
            continue
        width = abs(int(hi) - int(lo)) + 1 if hi else 1
        plain = name[1:] if name.startswith("\\") else name
        (inputs if kind == "input" else outputs)[plain] = width
    return inputs, outputs, widths


def parse_netlist(text: str) -> tuple[dict, dict, list[tuple[str, str, dict]], dict[str, str]]:
    """Ports, cells and aliases of a netlist written by ``write_verilog -noattr -noexpr``.

    Returns ``(inputs, outputs, cells, alias)`` with ``cells`` as ``(type, name, {pin: ref})``
    and ``alias`` mapping each bit reference to the representative of its net.
    """
    inputs, outputs, widths = _declarations(text)
    parent: dict[str, str] = {}

    def find(x):
        while parent.get(x, x) != x:
            x = parent[x]
        return x

    for lhs, rhs in _ASSIGN.findall(text):
        # bit by bit from the least significant (an output port assigned as a whole vector
        # from a concatenation of the nets that drive it)
        for a, b in zip(_bits(lhs, widths), _bits(rhs, widths), strict=False):
            if a is None or b is None:
                continue
            ra, rb = find(a), find(b)
            if ra != rb:
                # ports stay representatives: they are what a reader recognises
                parent[max(ra, rb)] = min(ra, rb)
    body = _ASSIGN.sub("", text[text.index(");") + 2:])
    body = _DECL.sub("", body)
    cells = []
    for ctype, cname, conns in _CELLINST.findall(body):
        if ctype in ("module", "endmodule"):
            continue
        pins = {pin: _ref(expr) for pin, expr in _CONN.findall(conns)}
        cells.append((ctype, cname, pins))
    refs = {r for _, _, pins in cells for r in pins.values() if r is not None}
    for name, width in (inputs | outputs).items():
        refs.update(_bitrefs(name, width))
    alias = {r: find(r) for r in refs | set(parent)}
    return inputs, outputs, cells, alias


def _cell_models(lib: liberty.Liberty, workdir: Path) -> Path:
    out = workdir / "cells.v"
    read = f"read_liberty -ignore_miss_func {flow.relative(lib.path, workdir)}"
    flow.run_tool(
        [toolchain.require("yosys"), "-q", "-p", f"{read}; write_verilog -noattr cells.v"],
        workdir, workdir / "cells.log", "yosys read_liberty (cell models)",
    )
    return out


@cache
def _generator() -> str:
    """What a component's Verilog is made by: the generator's sources and Amaranth's version."""
    import amaranth

    import rtl_gen
    from toolkit_base.files import folder_digest

    return json.dumps([folder_digest(Path(rtl_gen.__file__).parent, (".py", ".rdl")),
                       amaranth.__version__])


def kept_verilog(folder: Path | None, what: tuple[str, ...], convert: Callable[[], str]) -> str:
    """The Verilog ``convert()`` writes of the component ``what`` names (its module, its class,
    the ``repr`` of its configuration: everything it is made of), kept in ``folder/verilog``
    under the digest of ``what``, the generator's sources and Amaranth's version, so a later
    task or run reads it instead of converting again (a tile or attention node takes 2 to 4 s
    to convert; every pricing task converts its netlists' components to find them by their
    text's digest). Without a ``folder``, converted."""
    if folder is None:
        return convert()
    from toolkit_base.files import write_atomic

    _, path = _made_by(folder, "verilog", what, ".v")
    if path.is_file():
        return path.read_text(encoding="utf-8")
    text = convert()
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, text)
    return text


def kept_elaborated(folder: Path | None, what: tuple[str, ...], make: Callable[[], object]):
    """What ``make()`` reads of the elaborated component ``what`` names (as for
    :func:`kept_verilog`: e.g. the probes a recording of it takes), kept in
    ``folder/elaborated`` under the digest of ``what``, the generator's sources and Amaranth's
    version, as :func:`kept_verilog` keeps its Verilog: MiniLM's attention path takes 17 s to
    elaborate and name its signals. Without a ``folder``, made."""
    if folder is None:
        return make()
    key, path = _made_by(folder, "elaborated", what, ".pickle")
    path.parent.mkdir(parents=True, exist_ok=True)
    return kept_value(path, key, make)


def _made_by(folder: Path, kind: str, what: tuple[str, ...], suffix: str) -> tuple[str, Path]:
    """What a component ``what`` names is made by (``what``, the generator's sources and
    Amaranth's version: a key) and where what is kept of it is kept under that key's digest
    (``folder/<kind>/<what[0]>_<digest><suffix>``): :func:`kept_verilog`,
    :func:`kept_elaborated`."""
    key = json.dumps([list(what), _generator()])
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return key, Path(folder) / kind / f"{what[0]}_{digest}{suffix}"


def map_netlist(verilog_text: str, top: str, liberty_path, workdir,
                *, cut_macros: Mapping[str, str] | None = None,
                blackboxes: str | None = None, cut_memories: bool = False,
                no_fraig: bool = False) -> Netlist:
    """Map ``verilog_text`` (module ``top``) to the liberty and write a simulatable netlist.

    The mapping is done once per folder: when ``workdir`` already holds the netlist of the same
    Verilog, mapping script and liberty (a stamp of their digest, ``mapped``), Yosys does not
    run again; a lock keeps concurrent callers (worker processes pricing designs that share a
    netlist) to one mapping. Callers that name the folder after the digest of the Verilog
    share a netlist across designs and runs.

    Parameters
    ----------
    cut_macros : mapping of str to str, optional
        Macro module -> its read-data output pin, e.g. ``{"mttfs_sram_macro": "RDATA"}``. The
        net on that pin becomes an input port (``expose -input``, named after the wire, e.g.
        ``weights.bus__rdata``) and the macro is deleted, as the synthesized blocks do.
    blackboxes : str, optional
        Verilog of the cut macros' modules (blackbox stubs); by default
        :data:`rtl_gen.sram.MACRO_STUB` when ``mttfs_sram_macro`` is cut.
    cut_memories : bool
        Cut every behavioural memory (an ``amaranth.lib.memory.Memory`` with synchronous read
        ports, e.g. the attention tiles' key and value memories) out as if it were a macro: the
        flip-flops that register its read data are deleted and their output net becomes an
        input port (named after that net, e.g. ``weights._0_``: its module path, then the
        register's name), which the trace drives from the read port's ``data``; the array and
        its write logic go with them. Priced apart, as the macros. A table that Yosys makes a
        ROM of (a ``case`` statement) stays logic.
    no_fraig : bool
        Map with ABC's script without its equivalence steps (:func:`synth_scripts.flow.mapping`).

    Raises
    ------
    ValueError
        The liberty has no tie cells (those of its PDK table, :mod:`synth_scripts.gatelevel.pdk`,
        or for a library without a table, cells whose output is a constant 1 and 0), or no flip-flop
        (or, checked when the energy is computed, no clock-gating) cell.
    """
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    with (workdir / "map.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _map_locked(verilog_text, top, liberty_path, workdir, cut_macros=cut_macros,
                           blackboxes=blackboxes, cut_memories=cut_memories, no_fraig=no_fraig)


def _map_locked(verilog_text: str, top: str, liberty_path, workdir: Path, *, cut_macros,
                blackboxes, cut_memories: bool, no_fraig: bool) -> Netlist:
    """:func:`map_netlist` under its folder's lock."""
    lib = liberty.prepare(Path(liberty_path), workdir / "lib")
    if lib.pdk.tie_high is None or lib.pdk.tie_low is None:
        why = (f"it lacks {', '.join(lib.pdk.missing)} of its PDK table {lib.pdk.source}"
               if not lib.pdk.generic else "no cell without inputs drives a constant 1 and 0")
        raise ValueError(f"liberty {lib.source_name!r} (library {lib.name!r}) has no tie cells "
                         f"for constant nets: {why}")
    (hi, hpin), (lo, lpin) = lib.pdk.tie_high, lib.pdk.tie_low
    cut_macros = dict(cut_macros or {})
    cmds = []
    if cut_macros:
        if blackboxes is None:
            from rtl_gen.sram import MACRO_NAME, MACRO_STUB

            blackboxes = MACRO_STUB if MACRO_NAME in cut_macros else ""
        cmds.append("read_verilog -lib blackboxes.v")
    cmds += [f"read_verilog {top}.v", f"hierarchy -top {top}", "proc", "flatten"]
    if cut_memories:
        # opt_dff folds each read port's enable into its data register, which then takes the
        # read data straight from the (asynchronous) read cell; a memory read without a
        # register (an asynchronous read port) is not cut
        cmds += [
            "opt_dff",
            # the read ports of RAMs (a ROM that proc made of a case statement stays logic),
            # their data nets, the flip-flops those feed
            "select -set rdff t:$memrd* r:MEMID=*proc_rom* %d %x:+[DATA] %co:+[D] t:$*dff* %i",
            "select -set rdq @rdff %x:+[Q] @rdff %d",
            "expose -input @rdq",
            "delete @rdff",
        ]
    for macro, pin in sorted(cut_macros.items()):
        cmds += [
            f"select -set rdata t:{macro} %x:+[{pin}] t:{macro} %d",
            "expose -input @rdata",
            f"delete t:{macro}",
        ]
    cmds += [f"synth -flatten -top {top}",
             flow.mapping(lib, workdir, no_fraig=no_fraig).rstrip("\n")]
    cmds += [
        "setundef -zero",
        "splitnets",
        f"hilomap -hicell {hi} {hpin} -locell {lo} {lpin}",
        "opt_clean",
        "write_verilog -noattr -noexpr netlist.v",
    ]
    script = "\n".join(cmds) + "\n"
    digest = hashlib.sha256("\0".join(
        [script, verilog_text, blackboxes or "", lib.sha256, *lib.removed]).encode()).hexdigest()
    stamp = workdir / "mapped"
    if not (stamp.exists() and stamp.read_text(encoding="utf-8") == digest
            and (workdir / "netlist.v").exists() and (workdir / "cells.v").exists()):
        stamp.unlink(missing_ok=True)
        (workdir / f"{top}.v").write_text(verilog_text, encoding="utf-8")
        if cut_macros:
            (workdir / "blackboxes.v").write_text(blackboxes, encoding="utf-8")
        (workdir / "map.ys").write_text(script, encoding="utf-8")
        flow.run_tool([toolchain.require("yosys"), "-q", "-s", "map.ys"], workdir,
                      workdir / "map.log", f"yosys mapping {top}")
        _cell_models(lib, workdir)
        stamp.write_text(digest, encoding="utf-8")
    text = (workdir / "netlist.v").read_text(encoding="utf-8")
    digest = hashlib.sha256(text.encode()).hexdigest()
    # parsed once, kept beside it (a tile's netlist takes 3 s to parse, every task read it)
    inputs, outputs, cells, alias = kept_value(workdir / "parsed.pickle",
                                               f"{digest} {source_digest(__file__)}",
                                               lambda: parse_netlist(text))
    known = set(lib.outputs)
    unknown = sorted({t for t, _, _ in cells} - known)
    if unknown:
        raise ValueError(f"netlist {top!r} uses cells {unknown} that liberty "
                         f"{lib.source_name!r} does not define")
    nets = sorted(set(alias.values()))
    head = re.search(rf"^module \\?{re.escape(top)}\s*\(.*?^endmodule", verilog_text, re.M | re.S)
    declared = {n.lstrip("\\") for k, _, _, n in _DECL.findall(head.group(0) if head else "")
                if k == "input"}
    cut = ({p: w for p, w in inputs.items() if p not in declared}
           if cut_macros or cut_memories else {})
    return Netlist(
        top=top,
        path=workdir / "netlist.v",
        cells_v=workdir / "cells.v",
        lib=lib,
        inputs=inputs,
        outputs=outputs,
        cells=[Cell(n, t, {p: (alias[r] if r else None) for p, r in pins.items()})
               for t, n, pins in cells],
        nets=nets,
        reset="rst" if "rst" in inputs else None,
        clock_net=alias.get("clk"),
        cut=cut,
        digest=digest,
    )


def save(obj, path) -> None:
    """Write ``obj.to_json()`` as sorted, indented JSON (deterministic bytes)."""
    Path(path).write_text(json.dumps(obj.to_json(), indent=1, sort_keys=True) + "\n",
                          encoding="utf-8")
