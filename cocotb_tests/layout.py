"""Payload layouts and ports read from the generator's manifest (never retyped in a bench).

A :class:`PayloadLayout` is an ``amaranth.lib.data.FlexibleLayout`` built from the manifest's
field records, so a bench packs and unpacks a beat the way Amaranth does
(``layout.const(values).as_bits()``, ``layout.from_bits(word)``), with widths and offsets read
from the generated design rather than from ``rtl_gen.layouts``: a packing error on either side
shows up as a mismatch.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property

from amaranth.hdl import signed, unsigned
from amaranth.lib import data

#: Distinct beats remembered per layout and direction (a bound on the memory the memo takes).
_MEMO_SIZE = 1 << 16


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

    @cached_property
    def amaranth_layout(self) -> data.FlexibleLayout:
        """The same fields as an ``amaranth.lib.data.FlexibleLayout`` (does the packing)."""
        return data.FlexibleLayout(self.width, {
            f.name: data.Field((signed if f.signed else unsigned)(f.width), f.offset)
            for f in self.fields
        })

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
        """Pack ``values`` (missing fields are 0) into one integer; range-checked.

        ``amaranth_layout.const(values).as_bits()``; a bench packs the same few beats many
        times, so each distinct beat is packed once (memoized).
        """
        key = tuple(sorted((name, int(v)) for name, v in values.items()))
        word = self._packed.get(key)
        if word is not None:
            return word
        unknown = set(values) - set(self.names)
        if unknown:
            raise ValueError(f"unknown payload fields {sorted(unknown)}; fields: {self.names}")
        for f in self.fields:
            v = int(values.get(f.name, 0))
            if f.signed:
                lo, hi = -(1 << (f.width - 1)), (1 << (f.width - 1)) - 1
            else:
                lo, hi = 0, (1 << f.width) - 1
            if not lo <= v <= hi:
                raise ValueError(f"payload field {f.name!r}={v} does not fit {lo}..{hi}")
        word = self.amaranth_layout.const(dict(key)).as_bits()
        return self._memo(self._packed, key, word)

    def unpack(self, word: int) -> dict[str, int]:
        """Field values of ``word`` (signed fields two's complement): ``from_bits``, memoized."""
        word = int(word)
        values = self._unpacked.get(word)
        if values is None:
            const = self.amaranth_layout.from_bits(word)
            values = self._memo(self._unpacked, word,
                                {f.name: int(const[f.name]) for f in self.fields})
        return dict(values)

    @cached_property
    def _packed(self) -> dict:
        return {}

    @cached_property
    def _unpacked(self) -> dict:
        return {}

    @staticmethod
    def _memo(cache: dict, key, value):
        if len(cache) >= _MEMO_SIZE:
            cache.clear()
        cache[key] = value
        return value

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
