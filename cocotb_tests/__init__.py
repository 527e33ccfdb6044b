"""cocotb regression of the generated Verilog against the golden model (docs/regress.md).

- :mod:`regression.sim`: build and run on Icarus / Verilator through ``cocotb_tools.runner``;
- :mod:`cocotb_tests.stream`, :mod:`cocotb_tests.layout`: typed stream driver and monitor;
- :mod:`regression.scoreboard`: in-order scoreboard;
- :mod:`regression.reference`: stimulus and expected results from ``golden_models``;
- :mod:`regression.coverage`: functional coverage (cocotb-coverage) and its merge;
- ``tb_*.py``: the benches (encoder, SRAM, tile, router, system) that run in the simulator;
- :mod:`cocotb_tests.regress`: jobs, the regression API and its summary.
"""
