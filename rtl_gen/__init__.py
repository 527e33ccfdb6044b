"""Amaranth RTL of the M-TTFS hardware and its elaboration to Verilog.

Submodules: :mod:`rtl_gen.params` (``RTLConfig``, derived widths), :mod:`rtl_gen.layouts`
(every payload and memory word, with ``pack``/``unpack``), :mod:`rtl_gen.mask` (the temporal
mask expression), :mod:`rtl_gen.simulation` (simulator drivers' shared steps, ``stream_put``,
``stream_get``), :mod:`rtl_gen.sram` (single-port SRAM bus, behavioural RAM, macro wrapper),
:mod:`rtl_gen.encoder` (dense codes to events), :mod:`rtl_gen.tile` (neuron tile, SRAM image
packer), :mod:`rtl_gen.tile_parts` (the sub-components of both tiles), :mod:`rtl_gen.dense`
(the dense baseline tile), :mod:`rtl_gen.router`, :mod:`rtl_gen.system`,
:mod:`rtl_gen.system_parts`, :mod:`rtl_gen.mapper` (mesh, system and its sub-components,
mapping) and :mod:`rtl_gen.generate` (Verilog files + manifest). Only the parameter class is
imported here, so importing one block does not elaborate or import the others.
"""

from rtl_gen.params import RTLConfig

__all__ = ["RTLConfig"]
