"""SRAM macros from a real compiler: every memory of the generated designs as OpenRAM FreePDK45
macros, their read, write and deselected-cycle energy and their leakage measured with ngspice
(docs/sram_macros.md).

- :mod:`synth_scripts.sram.shapes`: the memories of a generated design (words x bits, ports) and
  their banking into the macro sizes of :data:`synth_scripts.sram.macros.MACRO_SHAPES`;
- :mod:`synth_scripts.sram.macros`: a macro's netlist from OpenRAM (``netlist_only``) and its
  trimmed form for simulation;
- :mod:`synth_scripts.sram.spice`: the ngspice testbench and one macro's characterization;
- :mod:`synth_scripts.sram.table`: the shipped table of characterized macros (by shape and
  corner, with provenance) and its regeneration;
- :mod:`synth_scripts.sram.pricing`: a memory's energy from its recorded reads, writes and idle
  cycles, its leakage over a run, and the cross-check against the per-bit figure.

Importing the package loads none of OpenRAM, ngspice or Amaranth.
"""
