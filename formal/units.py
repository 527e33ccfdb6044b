"""Proof harnesses of the stream rule on the non-linear units (``rtl_gen.softmax.Softmax``,
``rtl_gen.add_norm.AddNorm``).

Each unit's output ``o`` holds ``valid`` and its payload until ``ready``, with free ``load`` and
input streams (which obey the rule themselves, assumed) and any backpressure. The units'
datapaths (products, shifts, the root and the reciprocal) are free to compute anything: the
property is about the output register and the phase machine, which are the same at every size,
so the units are built tiny (rows of two, narrow scores and streams).
"""

from __future__ import annotations

from amaranth.hdl import Assert

from formal.harness import Harness, block_module, drive_input, drive_ready, stream_rule
from rtl_gen.params import RTLConfig

__all__ = ["AddNormStream", "SoftmaxStream"]


class SoftmaxStream(Harness):
    """The stream rule on the softmax unit's output."""

    #: the row buffer is checked as registers (formal.sby)
    map_memories = True

    def __init__(self, config: RTLConfig, module=None):
        super().__init__()
        self.config = config
        self.dut = block_module(module, "rtl_gen.softmax", "Softmax").Softmax(config)

    def check(self, m):
        m.submodules.dut = dut = self.dut
        drive_input(self, m, dut.load, "load")
        drive_input(self, m, dut.i, "i")
        drive_ready(self, m, dut.o, "o")
        stream_rule(m, dut.o, Assert, "o")


class AddNormStream(Harness):
    """The stream rule on the residual-add + LayerNorm unit's output."""

    map_memories = True

    def __init__(self, config: RTLConfig, module=None):
        super().__init__()
        self.config = config
        self.dut = block_module(module, "rtl_gen.add_norm", "AddNorm").AddNorm(config)

    def check(self, m):
        m.submodules.dut = dut = self.dut
        drive_input(self, m, dut.load, "load")
        drive_input(self, m, dut.r, "r")
        drive_input(self, m, dut.v, "v")
        drive_ready(self, m, dut.o, "o")
        stream_rule(m, dut.o, Assert, "o")
