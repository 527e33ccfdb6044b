"""Settings of the whole test run, tests/ and cocotb_tests/ alike (the shared fixtures are in
tests/conftest.py).

- No Hypothesis example database (when Hypothesis is installed: the test extras; the flow's
  regression runs its benches under pytest, which loads this file, without them): a failing
  example stored in ``.hypothesis/`` would make every later run in that clone replay it, so a
  run's outcome would depend on the clone's history; each run draws its own examples (a failure
  prints the example to reproduce it).
- The C++ optimization of the Verilator builds (:data:`regression.sim.ENV_VERILATOR_OPT`),
  unless the environment sets one: ``-O0`` for the default tests, whose runs are short, so that
  compiling the model, most of their time, is quick (the mesh system's C++ compiles seven times
  faster than at Verilator's ``-Os``); the slow tests' runs are long, so they keep Verilator's
  default.
"""

import os

import pytest

from regression.sim import ENV_VERILATOR_OPT

try:
    from hypothesis import settings
except ImportError:  # the main install: the benches of ./run flow, no property tests
    settings = None
if settings is not None:
    settings.register_profile("matterhorn", database=None)
    settings.load_profile("matterhorn")

#: The optimization the environment chose, if any: it wins for every test.
_USER_OPT = os.environ.get(ENV_VERILATOR_OPT)
#: The default tests' optimization.
DEFAULT_OPT = "-O0"


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    if _USER_OPT is not None:
        return
    if item.get_closest_marker("slow"):
        os.environ.pop(ENV_VERILATOR_OPT, None)
    else:
        os.environ[ENV_VERILATOR_OPT] = DEFAULT_OPT
