"""The register maps of the AXI wrappers: one SystemRDL description, compiled per configuration.

``mttfs_axi.rdl`` (beside this module) is the only place the registers are written. It is
compiled with ``systemrdl-compiler`` and elaborated with the parameters of an
:class:`rtl_gen.params.RTLConfig` (:func:`register_map`); from the compiled model come

- the register file of the RTL (:class:`rtl_gen.axi_lite.RegisterFile`, built from the
  :class:`RegisterMap` this module returns),
- the C header (:func:`c_header`, PeakRDL-cheader) and
- the Markdown table (:func:`markdown`, PeakRDL-markdown),

so the three cannot drift apart (``tests/test_rtl_axi.py`` checks that they agree).

Why not PeakRDL-regblock for the RTL: its SystemVerilog (1.3.1) uses unpacked structs in a
package, which Icarus Verilog 11 rejects ("sorry: Unpacked structs not supported") and Yosys
0.23 too ("Only PACKED supported"); both are the toolkit's simulators and synthesizer
(docs/toolchain.md). The register file is therefore generated in Amaranth from the same
compiled model, and is Verilog-2005 like every other block (docs/rtl_axi.md).
"""

from __future__ import annotations

import functools
import os
import tempfile
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from rtl_gen.params import RTLConfig, check_config

__all__ = [
    "KINDS",
    "RDL_FILE",
    "Field",
    "Register",
    "RegisterMap",
    "c_header",
    "markdown",
    "rdl_parameters",
    "rdl_source",
    "register_map",
]

#: The wrapped block of each address map: ``kind -> addrmap name`` in ``mttfs_axi.rdl``.
KINDS = {"tile": "mttfs_axi_tile", "system": "mttfs_axi_system"}
#: The SystemRDL source, shipped with the package.
RDL_FILE = "mttfs_axi.rdl"
#: Bits of every register (AXI4-Lite data width).
REG_BITS = 32

#: Field kinds the register file implements (anything else in the description is refused):
#: ``const`` (software reads the reset value), ``hw`` (software reads what the hardware drives),
#: ``store`` (software writes, the hardware reads; ``swmod`` adds a one-clock write strobe),
#: ``sticky`` (the hardware sets it, software writes 1 to clear).
FIELD_KINDS = ("const", "hw", "store", "sticky")


@dataclass(frozen=True)
class Field:
    """One field: name, bit position and width, kind (:data:`FIELD_KINDS`), reset, strobe."""

    name: str
    lsb: int
    width: int
    kind: str
    reset: int = 0
    swmod: bool = False

    @property
    def mask(self) -> int:
        return ((1 << self.width) - 1) << self.lsb


@dataclass(frozen=True)
class Register:
    """One 32-bit register at byte ``address``; ``name`` is its path below the map, e.g.
    ``NODE[2].events_in``; ``ident`` the same as an identifier (``NODE_2_events_in``)."""

    name: str
    address: int
    fields: tuple[Field, ...]

    @property
    def ident(self) -> str:
        return self.name.replace("[", "_").replace("].", "_").replace("]", "").replace(".", "_")

    @property
    def writable(self) -> bool:
        return any(f.kind in ("store", "sticky") for f in self.fields)

    def field(self, name: str) -> Field:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(f"register {self.name} has no field {name!r}")

    @property
    def reset(self) -> int:
        return sum(f.reset << f.lsb for f in self.fields if f.kind in ("const", "store",
                                                                       "sticky"))


@dataclass(frozen=True)
class RegisterMap:
    """A compiled address map: its name, registers in address order and its size in bytes."""

    name: str
    registers: tuple[Register, ...]
    size: int
    parameters: tuple[tuple[str, int], ...]

    def __getitem__(self, name: str) -> Register:
        for r in self.registers:
            if r.name == name:
                return r
        raise KeyError(f"{self.name} has no register {name!r}")

    @property
    def address_bits(self) -> int:
        """Bits of the smallest byte address space that holds the map."""
        return max(1, (self.size - 1).bit_length())


def rdl_source() -> str:
    """The text of ``mttfs_axi.rdl``."""
    return resources.files("rtl_gen.regmap").joinpath(RDL_FILE).read_text(encoding="utf-8")


def _kind(kind: object) -> str:
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {tuple(KINDS)}, not {kind!r}")
    return kind  # type: ignore[return-value]


def rdl_parameters(kind: str, config: RTLConfig) -> dict[str, int]:
    """The SystemRDL parameters of ``kind``'s address map for ``config``."""
    from rtl_gen.layouts import system_load_layout, system_widths

    check_config(config)
    _kind(kind)
    common = {
        "T": config.T, "K": config.k, "WEIGHT_BITS": config.weight_bits,
        "ASYM": int(config.family == "asym"), "N_IN": config.n_in,
        "TILE_NEURONS": config.tile_neurons, "TIME_W": config.time_width,
        "LOAD_ADDR_W": config.load_addr_width,
    }
    if kind == "tile":
        return {**common, "LOAD_WORDS": _words(config.load_data_width),
                "OUT_ADDR_W": config.out_addr_width}
    sw = system_widths(config)
    layout = system_load_layout(config)
    return {**common, "LOAD_WORDS": _words(layout["data"].width),
            "OUT_ADDR_W": sw["out_addr"], "LOAD_ADDR_W": layout["addr"].width,
            "NODE_W": sw["node"], "ROWS": config.mesh_rows, "COLS": config.mesh_cols,
            "NODES": config.mesh_rows * config.mesh_cols}


def _words(bits: int) -> int:
    return -(-bits // REG_BITS)


def _compile(kind: str, parameters: dict[str, int], name: str | None = None):
    """The elaborated ``systemrdl`` root of ``kind``, its top instance named ``name`` (the
    address map's by default); raises ``ValueError`` with the compiler's first message if the
    description does not compile."""
    from systemrdl import RDLCompileError, RDLCompiler

    from toolkit_base.signals import deferred

    compiler = RDLCompiler()
    with resources.as_file(resources.files("rtl_gen.regmap").joinpath(RDL_FILE)) as path:
        try:
            # the C++ parser drops or mangles an exception raised in the Python it calls: a
            # SIGTERM or Ctrl-C that lands there is delivered once the map is compiled
            with deferred():
                compiler.compile_file(str(path))
                return compiler.elaborate(KINDS[kind], name or KINDS[kind],
                                          parameters=parameters)
        except RDLCompileError as exc:
            raise ValueError(f"{RDL_FILE}: the {KINDS[kind]} register map does not compile "
                             f"with {parameters}") from exc


def _field(node) -> Field:
    from systemrdl.rdltypes import AccessType, OnWriteType

    sw, hw = node.get_property("sw"), node.get_property("hw")
    onwrite, hwset = node.get_property("onwrite"), node.get_property("hwset")
    reset = node.get_property("reset")
    reset = 0 if reset is None else int(reset)
    if sw == AccessType.r and hw == AccessType.na:
        kind = "const"
    elif sw == AccessType.r and hw == AccessType.w:
        kind = "hw"
    elif sw == AccessType.rw and hw == AccessType.r and onwrite is None and not hwset:
        kind = "store"
    elif sw == AccessType.rw and hwset and onwrite == OnWriteType.woclr:
        kind = "sticky"
    else:
        raise ValueError(f"{RDL_FILE}: field {node.get_path()} (sw={sw.name}, hw={hw.name}, "
                         f"onwrite={onwrite}, hwset={hwset}) is not one of the kinds the "
                         f"register file implements: {FIELD_KINDS}")
    return Field(node.inst_name, node.lsb, node.width, kind, reset,
                 bool(node.get_property("swmod")))


@functools.lru_cache(maxsize=16)
def _register_map(kind: str, params: tuple[tuple[str, int], ...]) -> RegisterMap:
    from systemrdl.node import RegNode

    root = _compile(kind, dict(params))
    top = root.top
    regs = []
    for node in top.descendants(unroll=True):
        if not isinstance(node, RegNode):
            continue
        if node.get_property("regwidth") != REG_BITS:
            raise ValueError(f"{RDL_FILE}: register {node.get_path()} is not {REG_BITS} bits")
        name = node.get_path().split(".", 1)[1]
        regs.append(Register(name, node.absolute_address,
                             tuple(sorted((_field(f) for f in node.fields()),
                                          key=lambda f: f.lsb))))
    regs.sort(key=lambda r: r.address)
    return RegisterMap(KINDS[kind], tuple(regs), top.total_size, params)


def register_map(kind: str, config: RTLConfig) -> RegisterMap:
    """The compiled register map of the ``kind`` (``"tile"`` or ``"system"``) AXI wrapper of
    ``config`` (cached per parameter set).

    Raises
    ------
    TypeError
        ``config`` is not an :class:`RTLConfig`.
    ValueError
        ``kind`` is unknown, or the description uses a field kind the register file does not
        implement.
    """
    params = rdl_parameters(kind, config)
    return _register_map(kind, tuple(sorted(params.items())))


def _export(kind: str, config: RTLConfig, suffix: str, write, prefix: str = "") -> str:
    name = prefix + KINDS[kind]
    root = _compile(kind, rdl_parameters(kind, config), name)
    # the exporters write files; the file name becomes the header guard, so it is the final one
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{name}{suffix}"
        write(root, os.fspath(path))
        return path.read_text(encoding="utf-8")


#: The end of PeakRDL-cheader's header, where the size check goes.
_HEADER_END = "#ifdef __cplusplus\n}\n#endif\n\n#endif"


def c_header(kind: str, config: RTLConfig, prefix: str = "") -> str:
    """The C header of the map (PeakRDL-cheader): a packed struct of the registers and, per
    field, ``_bm``/``_bp``/``_bw`` macros (and ``_reset`` for the constants); names follow the
    instance path (``MTTFS_AXI_SYSTEM__STATUS__BUSY_bm``), after ``prefix`` when given (so two
    configurations' headers can be included in one program).

    It is C99 (PeakRDL's ``gnu99``: no anonymous unions, no ``static_assert``), C11 and C++:
    the struct's size is checked with a negative-size array type instead of ``static_assert``
    (which C99 lacks), so a packing error still fails the compile in every language.
    """
    from peakrdl_cheader.c_standards import CStandard
    from peakrdl_cheader.exporter import CHeaderExporter

    text = _export(kind, config, ".h",
                   lambda root, path: CHeaderExporter().export(
                       root, path, reuse_typedefs=False, std=CStandard.gnu99), prefix)
    name, size = prefix + KINDS[kind], register_map(kind, config).size
    check = (f"/* the struct is the map: {size:#x} bytes (C89 to C23 and C++, no static_assert) "
             f"*/\ntypedef char {name}_size_check[(sizeof({name}_t) == {size:#x}u) ? 1 : -1];"
             "\n\n")
    if text.count(_HEADER_END) != 1:
        raise ValueError(f"PeakRDL-cheader's {name}.h does not end as expected")
    return text.replace(_HEADER_END, check + _HEADER_END)


def markdown(kind: str, config: RTLConfig, prefix: str = "") -> str:
    """The Markdown description of the map (PeakRDL-markdown): the address table, then one
    table of fields per register."""
    from peakrdl_markdown.exporter import MarkdownExporter

    return _export(kind, config, "_regs.md",
                   lambda root, path: MarkdownExporter().export(root, path), prefix)
