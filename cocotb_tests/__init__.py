"""cocotb benches and the pytest files of the regression (docs/regress.md).

The library behind them is :mod:`regression` (jobs, builds, reference, coverage, scoreboard,
summary). This package holds what runs inside the simulator and the tests:

- ``tb_*.py``: the benches (encoder, SRAM, tile, router, system, and the stream buffer of the
  self-checks) that cocotb loads by module name;
- :mod:`cocotb_tests.bench`, :mod:`cocotb_tests.stream`, :mod:`cocotb_tests.layout`: the bench
  base class, the typed stream driver and monitor, and the payload layouts they use (cocotb
  coroutines that run inside the simulator);
- ``test_*.py``: the regression and the self-checks, run by pytest.
"""
