"""cocotb regression of the generated Verilog against the golden model (docs/regress.md).

- :mod:`cocotb_tests.sim`: build and run on Icarus / Verilator through ``cocotb_tools.runner``;
- :mod:`cocotb_tests.stream`, :mod:`cocotb_tests.layout`: typed stream driver and monitor;
- :mod:`cocotb_tests.scoreboard`: in-order scoreboard;
- :mod:`cocotb_tests.reference`: stimulus and expected results from ``golden_models``;
- :mod:`cocotb_tests.coverage`: functional coverage (cocotb-coverage) and its merge;
- ``tb_*.py``: the benches (encoder, SRAM, tile, router, system) that run in the simulator;
- :mod:`cocotb_tests.regress`: jobs, the regression API and its summary.
"""
