"""The FuseSoC generator ``mttfs`` (fusesoc_cores/matterhorn.core): runs in the toolkit's
Python environment, see rtl_gen.fusesoc_generator.run_generator and docs/fusesoc.md."""

import sys

from rtl_gen.fusesoc_generator import run_generator

if __name__ == "__main__":
    sys.exit(run_generator(sys.argv[1]))
