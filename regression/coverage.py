"""Functional coverage (cocotb-coverage) and its merge across runs.

Cover items, per bench and per ``T`` (bins depend only on ``T``):

- ``<bench>.T<T>.out.cross``: event time ``t`` x masked/unmasked x backpressure (the beat saw
  ``ready`` low before it transferred). A masked event never leaves, so (masked, stalled) is an
  ignored bin: ``3*T`` bins. The encoder's mask is fixed at elaboration, so its items are
  named ``encoder.T<T>.imax<I>.k<k>`` and declare only the reachable (time, masked) pairs.
- ``<bench>.T<T>.fire.step``: fire step ``t`` x how many neurons fired in that step of the
  window (one / several, several makes the fire walk stall): ``2*T`` bins (tile).
- ``<bench>.T<T>.in.time``: input event time ``tau``: ``T`` bins (tile).
- ``<bench>.T<T>.reset.phase``: the phase a mid-window reset hit: integrate / fire (tile).
- ``system.T<T>.out.kind``: output events free / stalled / masked, and
  ``system.T<T>.layer.active``: every layer of the QNN transmitted events in some inference.

Inside the simulator :class:`CoverageModel` samples; it exports hits per bin as JSON, and
:func:`merge` adds exports of several runs (both simulators, several builds) together.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from golden_models.mask import transmitted


class CoverageModel:
    """Cover items of one bench run (simulator side; needs ``cocotb_coverage``)."""

    def __init__(
        self,
        bench: str,
        T: int,
        *,
        tile: bool = False,
        mask: tuple[int, int] | None = None,
        system: bool = False,
        layers: int = 0,
    ) -> None:
        from cocotb_coverage import coverage as cov

        self.prefix = p = f"{bench}.T{T}"
        times = list(range(T))
        ignore = [(None, True, True)]
        if mask is not None:
            # a mask fixed at elaboration: only its own silent times can be masked
            i_max, k = mask
            p += f".imax{i_max}.k{k}"
            self.prefix = p
            for t in times:
                ignore.append((t, transmitted(t, i_max, k), None))

        if system:
            # the system's output times follow its QNN, not the bench: cover the kinds of
            # output (transmitted with/without backpressure, masked) and layer activity
            @cov.CoverPoint(
                f"{p}.out.kind",
                xf=lambda t, m, s: "masked" if m else ("stalled" if s else "free"),
                bins=["free", "stalled", "masked"],
            )
            def sample_out(t, masked, stalled):
                pass

            @cov.CoverPoint(f"{p}.layer.active", bins=list(range(layers)))
            def sample_layer(layer):
                pass

            self.sample_out = sample_out
            self.sample_layer = sample_layer
            self.items = [f"{p}.out.kind", f"{p}.layer.active"]
            return

        @cov.CoverPoint(f"{p}.out.time", xf=lambda t, m, s: t, bins=times)
        @cov.CoverPoint(f"{p}.out.masked", xf=lambda t, m, s: m, bins=[False, True])
        @cov.CoverPoint(f"{p}.out.stall", xf=lambda t, m, s: s, bins=[False, True])
        @cov.CoverCross(
            f"{p}.out.cross",
            items=[f"{p}.out.time", f"{p}.out.masked", f"{p}.out.stall"],
            ign_bins=ignore,
        )
        def sample_out(t, masked, stalled):
            pass

        self.sample_out = sample_out
        self.items = [f"{p}.out.cross"]
        if tile:

            @cov.CoverPoint(f"{p}.fire.time", xf=lambda t, n: t, bins=times)
            @cov.CoverPoint(f"{p}.fire.many", xf=lambda t, n: n > 1, bins=[False, True])
            @cov.CoverCross(f"{p}.fire.step", items=[f"{p}.fire.time", f"{p}.fire.many"])
            def sample_fire(t, n):
                pass

            @cov.CoverPoint(f"{p}.in.time", bins=times)
            def sample_in(tau):
                pass

            @cov.CoverPoint(f"{p}.reset.phase", bins=["integrate", "fire"])
            def sample_reset(phase):
                pass

            self.sample_fire = sample_fire
            self.sample_in = sample_in
            self.sample_reset = sample_reset
            self.items += [f"{p}.fire.step", f"{p}.in.time", f"{p}.reset.phase"]

    def export(self) -> dict:
        """``{item: {bin label: hits}}`` for every declared item (JSON-able)."""
        from cocotb_coverage.coverage import coverage_db

        return {
            name: {_label(b): int(h) for b, h in coverage_db[name].detailed_coverage.items()}
            for name in self.items
        }


def _label(b) -> str:
    if isinstance(b, tuple):
        return "(" + ",".join(_label(x) for x in b) + ")"
    return str(b)


def merge(exports: Iterable[Mapping]) -> dict:
    """Add the hits of several exports bin by bin."""
    out: dict[str, dict[str, int]] = {}
    for export in exports:
        for name, bins in export.items():
            dst = out.setdefault(name, {})
            for label, hits in bins.items():
                dst[label] = dst.get(label, 0) + int(hits)
    return out


def summary(merged: Mapping) -> dict:
    """Per item: declared bins, covered bins, percent, and the labels still uncovered."""
    items = {}
    total = covered = 0
    for name in sorted(merged):
        bins = merged[name]
        hit = sum(1 for h in bins.values() if h > 0)
        items[name] = {
            "bins": len(bins),
            "covered": hit,
            "percent": round(100.0 * hit / len(bins), 2) if bins else 100.0,
            "missing": sorted(label for label, h in bins.items() if h == 0),
        }
        total += len(bins)
        covered += hit
    return {
        "bins": total,
        "covered": covered,
        "percent": round(100.0 * covered / total, 2) if total else 100.0,
        "items": items,
    }
