"""The memories of the generated designs, and their banking into macros.

:func:`memories` elaborates a component and lists every Amaranth ``Memory`` in it: its module
path, words x bits, ports and write granularity, as the generated Verilog has them (nothing is
re-derived from the parameters). :func:`block_memories` does it for each piece of an encoder
block (the tiles' weight, threshold and init SRAMs; the attention path's key and value memories
and the softmax row buffer; the add+LayerNorm unit's channel and row SRAMs).

:func:`bank` maps a memory onto the macro sizes of
:data:`synth_scripts.sram.macros.MACRO_SHAPES` (32-bit words, 16, 64 or 256 deep):

- **width**: ``ceil(bits / 32)`` macros side by side, read and written together (the last one
  partly unused when ``bits`` is not a multiple of 32);
- **depth**: the smallest macro depth that holds the memory (16 for 1..16 words, 64 for 17..64),
  else ``ceil(words / 256)`` macros of 256 words, one of them selected by the upper address bits
  (the others are deselected in that cycle, their clock running).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from synth_scripts.sram.macros import MACRO_SHAPES, Shape

__all__ = [
    "Banking",
    "MemoryShape",
    "bank",
    "block_memories",
    "memories",
]


@dataclass(frozen=True)
class MemoryShape:
    """One memory of a design: its module path (``weights.mem``), words x bits, ports and the
    bits a write port writes at once (``granularity``: the whole word unless the RTL writes
    parts of it)."""

    path: str
    words: int
    bits: int
    read_ports: int = 1
    write_ports: int = 1
    granularity: int | None = None

    def __post_init__(self) -> None:
        for name in ("words", "bits"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"memory {name} must be a positive integer, not {v!r}")

    def to_json(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Banking:
    """A memory as ``width x depth`` macros of ``macro``: ``width`` side by side (an access
    reads or writes all of them), ``depth`` stacked (an access selects one row of them)."""

    memory: MemoryShape
    macro: Shape
    width: int
    depth: int

    @property
    def macros(self) -> int:
        return self.width * self.depth

    @property
    def unused_bits(self) -> int:
        """Bits of the macros the memory does not use."""
        return self.macros * self.macro.words * self.macro.bits \
            - self.memory.words * self.memory.bits

    def describe(self) -> str:
        m = self.memory
        return (f"{m.path} {m.words}x{m.bits}: {self.width} x {self.depth} macros of "
                f"{self.macro.name}")

    def to_json(self) -> dict:
        return {"memory": self.memory.to_json(), "macro": self.macro.name, "width": self.width,
                "depth": self.depth, "macros": self.macros, "unused_bits": self.unused_bits}


def bank(memory: MemoryShape, shapes: tuple[Shape, ...] = MACRO_SHAPES) -> Banking:
    """``memory`` banked into ``shapes`` (one word width; module docstring)."""
    widths = {s.bits for s in shapes}
    if len(widths) != 1:
        raise ValueError(f"macro shapes of one word width are banked, not {sorted(widths)}")
    ordered = sorted(shapes)
    fit = next((s for s in ordered if s.words >= memory.words), ordered[-1])
    return Banking(memory, fit, math.ceil(memory.bits / fit.bits),
                   math.ceil(memory.words / fit.words))


def memories(component) -> list[MemoryShape]:
    """Every ``amaranth.lib.memory.Memory`` of ``component`` (elaborated here), by module path."""
    from amaranth.hdl import Fragment

    return _walk(Fragment.get(component, None), ())


def _walk(fragment, path: tuple[str, ...]) -> list[MemoryShape]:
    from amaranth.hdl import Shape as HdlShape
    from amaranth.lib.memory import Memory

    out = []
    for sub, name, _ in fragment.subfragments:
        mem = next((o for o in sub.origins or () if isinstance(o, Memory)), None)
        if mem is None:
            out += _walk(sub, (*path, str(name)))
            continue
        bits = HdlShape.cast(mem.shape).width
        grans = {p.signature.granularity for p in mem.write_ports} - {None}
        gran = min(grans) if grans else None
        out.append(MemoryShape(".".join((*path, str(name))), mem.depth, bits,
                               len(mem.read_ports), len(mem.write_ports),
                               gran if gran and gran < bits else None))
    return out


def block_memories(*, hidden: int, heads: int, ffn: int, seq_max: int, row_max: int,
                   T: int = 16, weight_bits: int = 4, tile_neurons: int = 48,
                   dense: bool = False) -> dict[str, list[MemoryShape]]:
    """The memories of an encoder block's hardware, per kind of unit: ``tile`` (a query, key,
    value or FFN-expand tile, ``n_in = hidden``), ``tile_raw_<n_in>`` (the attention-output and
    FFN-contract tiles, raw sums), ``score`` (query x key node), ``softmax``, ``context``
    (probability x value node), ``add_norm``; of the dense design with ``dense``."""
    from rtl_gen.add_norm import AddNorm
    from rtl_gen.attn_params import AttentionConfig
    from rtl_gen.attn_softmax import SoftmaxNode
    from rtl_gen.dense import DenseTile
    from rtl_gen.kv_tiles import ContextTile, DenseContextTile, ScoreTile
    from rtl_gen.params import RTLConfig
    from rtl_gen.tile import NeuronTile

    tile = DenseTile if dense else NeuronTile

    def tile_cfg(n_in: int, raw: bool) -> RTLConfig:
        return RTLConfig(T=T, k=0, weight_bits=weight_bits, n_in=n_in, raw_sums=raw,
                         tile_neurons=min(tile_neurons, 256), mesh_rows=1, mesh_cols=1)

    acfg = AttentionConfig(heads=heads, head_dim=hidden // heads, seq_max=seq_max, T=T,
                           row_max=row_max)
    norm = RTLConfig(T=T, weight_bits=weight_bits, hidden=hidden, ffn_dim=ffn,
                     head_dim=hidden // heads, seq_len=row_max)
    return {
        "tile": memories(tile(tile_cfg(hidden, False))),
        f"tile_raw_{hidden}": memories(tile(tile_cfg(hidden, True))),
        f"tile_raw_{ffn}": memories(tile(tile_cfg(ffn, True))),
        "score": memories(ScoreTile(acfg, dense=dense)),
        "softmax": memories(SoftmaxNode(acfg, dense=dense)),
        "context": memories(DenseContextTile(acfg) if dense else ContextTile(acfg)),
        "add_norm": memories(AddNorm(norm)),
    }
