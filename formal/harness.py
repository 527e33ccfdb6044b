"""What every proof harness shares: free inputs, the stream rule, planted bugs.

A harness is an Amaranth ``Elaboratable`` that instantiates a generated block, drives its
inputs from free inputs of the harness (the solver chooses them every clock), constrains them
with ``Assume`` (the stream rule on input streams, parameter bounds) and states the property
with ``Assert``. The reset is assumed low: the solver starts from the reset state (every
register at its ``init``) and may then do anything the assumptions allow.

A mutant is a copy of a generator module with one line changed (:func:`mutant_module`): the
shipped source is read, the edit is applied in memory, and the copy is executed as a module of
its own, so the shipped generator's output never changes. A mutant lives in the module of the
line it edits; when that is a module of sub-components (``rtl_gen.tile_parts``), the block
built from them is executed again over the mutant (:func:`module_over`, :func:`block_module`).
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass, field

from amaranth.hdl import Assume, Elaboratable, ResetSignal, Signal

from rtl_gen import registry

__all__ = ["Harness", "Mutant", "Property", "block_module", "module_over", "mutant_module",
           "stream_rule"]


class Harness(Elaboratable):
    """Base of the proof harnesses: free inputs and the reset assumption.

    Subclasses build their checks in ``check(m)``; :meth:`free` makes a free input, and
    :attr:`ports` lists them for :func:`amaranth.back.rtlil.convert`.
    """

    def __init__(self):
        self._free: list[Signal] = []

    def free(self, shape, name: str) -> Signal:
        """A free input of the harness: any value on any clock."""
        sig = Signal(shape, name=name)
        self._free.append(sig)
        return sig

    @property
    def ports(self) -> list[Signal]:
        return list(self._free)

    def check(self, m) -> None:  # pragma: no cover - every harness overrides it
        raise NotImplementedError

    def elaborate(self, platform):
        from amaranth.hdl import Module

        m = Module()
        m.d.comb += Assume(~ResetSignal())
        self.check(m)
        return m


def stream_rule(m, port, kind, name: str) -> None:
    """The stream rule on ``port`` (an ``amaranth.lib.stream`` interface): once ``valid`` is
    high and ``ready`` low, the next clock has ``valid`` high and the same payload.

    ``kind`` is ``Assert`` for an output of the block and ``Assume`` for an input (what the
    environment promises).
    """
    payload = port.payload.as_value() if hasattr(port.payload, "as_value") else port.payload
    past = Signal(name=f"{name}_past")
    held = Signal(name=f"{name}_held")
    prev = Signal(len(payload), name=f"{name}_prev")
    m.d.sync += [past.eq(1), held.eq(port.valid & ~port.ready), prev.eq(payload)]
    with m.If(past & held):
        m.d.comb += kind(port.valid & (payload == prev), f"{name}: stream rule")


def drive_input(h: Harness, m, port, name: str) -> None:
    """Drive input stream ``port`` from free inputs that obey the stream rule (assumed)."""
    payload = port.payload.as_value() if hasattr(port.payload, "as_value") else port.payload
    valid = h.free(1, f"{name}_valid")
    data = h.free(len(payload), f"{name}_payload")
    m.d.comb += [port.valid.eq(valid), payload.eq(data)]
    stream_rule(m, port, Assume, name)


def drive_ready(h: Harness, m, port, name: str) -> None:
    """A free ``ready`` on output stream ``port`` (any backpressure)."""
    m.d.comb += port.ready.eq(h.free(1, f"{name}_ready"))


def _source(module: str) -> tuple[str, str]:
    """The file and source text of ``module`` (dotted name)."""
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise RuntimeError(f"mutant: module {module} not found")
    with open(spec.origin, encoding="utf-8") as f:
        return spec.origin, f.read()


def _execute(module: str, origin: str, source: str, what: str) -> types.ModuleType:
    """``source`` executed as a new module (a copy of ``module``, file ``origin``)."""
    name = f"formal_mutant_{module.replace('.', '_')}"
    copy = types.ModuleType(name)
    copy.__file__ = origin
    sys.modules[name] = copy  # dataclasses look their module up while the class is built
    try:
        exec(compile(source, f"{origin} ({what})", "exec"), copy.__dict__)
    finally:
        sys.modules.pop(name, None)
    return copy


def mutant_module(module: str, old: str, new: str) -> types.ModuleType:
    """A copy of ``module`` (dotted name) with the one occurrence of ``old`` replaced by ``new``.

    The copy's ``mutant_of`` names ``module``.

    Raises
    ------
    RuntimeError
        ``old`` does not occur exactly once: the generator changed and the mutant must be
        updated (a mutant that silently applies nowhere would prove nothing).
    """
    origin, source = _source(module)
    count = source.count(old)
    if count != 1:
        raise RuntimeError(f"mutant of {module}: {old!r} occurs {count} times, not once")
    copy = _execute(module, origin, source.replace(old, new), "mutant")
    copy.mutant_of = module
    return copy


def module_over(module: str, part: types.ModuleType) -> types.ModuleType:
    """A copy of ``module`` (dotted name) whose imports of the module ``part`` is a mutant of
    resolve to ``part``: a block built from the mutated sub-components.

    Raises
    ------
    RuntimeError
        ``part`` is not a mutant (:func:`mutant_module`), or ``module`` does not import the
        module it is a mutant of (the block would not contain the mutated line).
    """
    original = getattr(part, "mutant_of", None)
    if original is None:
        raise RuntimeError(f"module_over: {part!r} is not a mutant")
    origin, source = _source(module)
    if not re.search(rf"^\s*(from {re.escape(original)} import|import {re.escape(original)}\b)",
                     source, re.MULTILINE):
        raise RuntimeError(f"module_over: {module} does not import {original}, so a mutant of "
                           f"{original} changes nothing in it")
    shipped = sys.modules.get(original)
    sys.modules[original] = part
    try:
        copy = _execute(module, origin, source, f"over a mutant of {original}")
    finally:
        if shipped is None:
            sys.modules.pop(original, None)
        else:
            sys.modules[original] = shipped
    copy.mutant_of = original
    return copy


def block_module(module: types.ModuleType | None, name: str, block: str) -> types.ModuleType:
    """The module a harness builds ``block`` (a class name) from: ``name`` (dotted) when
    ``module`` is None, ``module`` when it defines ``block`` (the shipped module or a mutant of
    it), else ``name`` over ``module``, a mutant of the sub-components ``name`` imports
    (:func:`module_over`)."""
    if module is None:
        return importlib.import_module(name)
    if hasattr(module, block):
        return module
    return module_over(name, module)


@dataclass(frozen=True)
class Mutant:
    """A planted bug: in ``module``, the one occurrence of ``old`` becomes ``new``; the check
    must fail on the assertion whose message contains ``expect``."""

    name: str
    module: str
    old: str
    new: str
    what: str
    expect: str

    def load(self):
        return mutant_module(self.module, self.old, self.new)


@dataclass(frozen=True)
class Property:
    """One property: ``block`` is a registered block name, ``instance`` the sub-component
    inside it the harness checks (``None``: the block itself); ``syn``: checked (and its
    mutants) on the synthesized SMT model (:data:`formal.sby.SYN_ENGINE`), the same check,
    for the BMC models it makes faster."""

    name: str
    block: str
    params: dict
    mode: str
    depth: int
    statement: str
    build: Callable  # build(module_or_None) -> Harness
    mutants: tuple[Mutant, ...] = field(default_factory=tuple)
    instance: str | None = None
    syn: bool = False

    def __post_init__(self) -> None:
        registry.block(self.block)

    @property
    def target(self) -> str:
        """What the summary names: the block's Verilog module (and the instance inside it)."""
        module = registry.block(self.block).module
        return module if self.instance is None else f"{module} ({self.instance})"
