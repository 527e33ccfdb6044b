"""Matterhorn hardware toolkit: the command line and the end-to-end flow.

The science lives in the sibling packages (``golden_models``, ``rtl_gen``, ``cocotb_tests``,
``synth_scripts``, ``energy_model``); this package only orchestrates them.
"""

__version__ = "0.1.0"
