"""Yosys and OpenSTA synthesis of the unit-cost operators and the generated blocks.

The entry point is :func:`synth_scripts.run.synthesize` (``matterhorn synth``); it writes
``synth_report.json`` (schema in docs/synth.md), whose ``unit_costs_pJ`` section the energy model
reads. Modules: ``operators`` (widths and reference models of ``operators.v``), ``activity``
(golden-model operand streams and toggle statistics), ``blocks`` (rtl_gen blocks), ``liberty``
(the one Liberty reader), ``pdk`` (the PDK tables of ``pdks/``),
``flow`` (tool runs, ``*.ys``/``*.tcl`` templates), ``parse``, ``scaling``, ``paper``, ``report``.
"""
