"""Formal proofs of the generated hardware's invariants (``matterhorn prove``, docs/formal.md).

Harnesses per block (:mod:`formal.encoder`, :mod:`formal.tile`, :mod:`formal.router`), shared
pieces and mutants (:mod:`formal.harness`), the property list (:mod:`formal.properties`), the
SymbiYosys runner (:mod:`formal.sby`) and the summary (:mod:`formal.prove`).
"""
