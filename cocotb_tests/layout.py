"""Payload layouts and ports read from the generator's manifest (never retyped in a bench)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Field:
    name: str
    offset: int
    width: int
    signed: bool = False


@dataclass(frozen=True)
class PayloadLayout:
    """A flat payload vector: fields at bit offsets, LSB first (``amaranth.lib.data`` order)."""

    fields: tuple[Field, ...]

    def __post_init__(self) -> None:
        used = 0
        for f in self.fields:
            if f.width < 0 or f.offset < 0:
                raise ValueError(f"field {f.name!r} has a negative offset or width")
            mask = ((1 << f.width) - 1) << f.offset
            if used & mask:
                raise ValueError(f"field {f.name!r} overlaps another field")
            used |= mask

    @property
    def width(self) -> int:
        return max((f.offset + f.width for f in self.fields), default=0)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.fields)

    def field(self, name: str) -> Field:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(f"payload has no field {name!r}; fields: {self.names}")

    def pack(self, values: Mapping[str, int]) -> int:
        """Pack ``values`` (missing fields are 0) into one integer; range-checked."""
        unknown = set(values) - set(self.names)
        if unknown:
            raise ValueError(f"unknown payload fields {sorted(unknown)}; fields: {self.names}")
        word = 0
        for f in self.fields:
            v = int(values.get(f.name, 0))
            lo, hi = (
                (-(1 << (f.width - 1)), (1 << (f.width - 1)) - 1)
                if f.signed
                else (
                    0,
                    (1 << f.width) - 1,
                )
            )
            if not lo <= v <= hi:
                raise ValueError(f"payload field {f.name!r}={v} does not fit {lo}..{hi}")
            word |= (v & ((1 << f.width) - 1)) << f.offset
        return word

    def unpack(self, word: int) -> dict[str, int]:
        out = {}
        for f in self.fields:
            v = (int(word) >> f.offset) & ((1 << f.width) - 1)
            if f.signed and f.width and v >> (f.width - 1):
                v -= 1 << f.width
            out[f.name] = v
        return out

    @classmethod
    def of(cls, spec: Mapping[str, int] | list) -> PayloadLayout:
        """Build a layout from ``{name: width}`` (consecutive, LSB first) or manifest field
        records ``[{"name", "offset", "width"[, "signed"]}, ...]``."""
        if isinstance(spec, Mapping):
            fields, off = [], 0
            for name, width in spec.items():
                fields.append(Field(name, off, int(width)))
                off += int(width)
            return cls(tuple(fields))
        return cls(
            tuple(
                Field(
                    str(r["name"]),
                    int(r["offset"]),
                    int(r["width"]),
                    bool(r.get("signed", False)),
                )
                for r in spec
            )
        )
