"""The ground floor of the toolkit: what every layer needs and nothing that knows the CLI.

- :mod:`toolkit_base.toolchain`: where the external tools are (Icarus, Verilator, make, a C++
  compiler, Yosys, OpenSTA), and the one-line error of a tool that failed.
- :mod:`toolkit_base.files`: atomic file and folder writes; the files a command owns in a folder.
- :mod:`toolkit_base.signals`: SIGTERM unwinds like Ctrl-C (staging folders are removed).
- :mod:`toolkit_base.checks`: integer, seed and output-folder checks, the generator's ``T``
  limit, repeated values removed.
- :mod:`toolkit_base.tables`: Markdown tables.
- :mod:`toolkit_base.schemas`: JSON schemas of the documents the toolkit writes and reads.
- :mod:`toolkit_base.cluster`: where a sweep's jobs run (this process, a local Dask cluster, an
  existing scheduler).

This package imports only the standard library (and ``jsonschema`` for the schemas,
``distributed`` when a sweep runs on a cluster); every other
package may import it, and it imports none of them.
"""
