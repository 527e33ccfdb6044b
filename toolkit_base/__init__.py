"""The ground floor of the toolkit: what every layer needs and nothing that knows the CLI.

- :mod:`toolkit_base.toolchain`: where the external tools are (Icarus, Verilator, Yosys, OpenSTA).
- :mod:`toolkit_base.files`: atomic file and folder writes.
- :mod:`toolkit_base.checks`: integer parameter checks and the generator's ``T`` limit.
- :mod:`toolkit_base.tables`: Markdown tables.
- :mod:`toolkit_base.schemas`: JSON schemas of the documents the toolkit writes and reads.

This package imports only the standard library (and ``jsonschema`` for the schemas); every other
package may import it, and it imports none of them.
"""
