"""The cocotb regression as a library: generate, build once per simulator, run benches, summarise.

``run_regression(...)`` is what ``matterhorn regress`` and ``matterhorn flow`` call; the pytest
files in ``cocotb_tests`` run the same jobs one by one. A *job* is one bench on one generated
parameter set on one simulator, with its typed stimulus (seeded, from the golden models).

- :mod:`regression.cache`: generated Verilog per parameter set and one build per simulator;
- :mod:`regression.jobs`: :class:`Job` and :class:`JobResult`;
- :mod:`regression.stimulus`: the stimulus dataclass of each bench, the stall probabilities;
- :mod:`regression.benches`: per bench, its module, cocotb bench and configuration builder;
- :mod:`regression.axi`: the AXI wrappers' bench kinds (``axi_tile``, ``axi_system``);
- :mod:`regression.planner`: the jobs of a regression over ``T`` and ``k``;
- :mod:`regression.execute`: running jobs, :func:`run_regression`, :func:`run_tile`;
- :mod:`regression.summary`: the summary JSON and its table;
- :mod:`regression.sim`: build and run on Icarus / Verilator through ``cocotb_tools.runner``;
- :mod:`regression.reference`: stimulus and expected results from ``golden_models``;
- :mod:`regression.coverage`, :mod:`regression.scoreboard`: coverage model and in-order
  scoreboard (pure Python, shared by the benches).
"""

from regression.benches import BENCHES
from regression.benches.tile import tile_config
from regression.cache import generate_rtl
from regression.execute import (
    DEFAULT_ROOT,
    run_job,
    run_jobs,
    run_regression,
    run_tile,
    tile_params,
)
from regression.jobs import Job, JobResult, job
from regression.planner import block_params, regression_jobs
from regression.summary import SCHEMA, format_table, summarize

__all__ = [
    "BENCHES",
    "DEFAULT_ROOT",
    "SCHEMA",
    "Job",
    "JobResult",
    "block_params",
    "format_table",
    "generate_rtl",
    "job",
    "regression_jobs",
    "run_job",
    "run_jobs",
    "run_regression",
    "run_tile",
    "summarize",
    "tile_config",
    "tile_params",
]
