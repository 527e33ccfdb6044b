"""Write a report folder: tables (text, CSV, JSON) and plots, all or nothing.

Files are written into a temporary folder beside the destination and moved into place only when
all of them exist, so a failure leaves no half-written report.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from energy_model.model import EnergyReport
from energy_model.sensitivity import Sweep
from toolkit_base.checks import check_out_dir

#: File names of a report folder.
FILES = {
    "table": "energy_table.txt",
    "json": "energy_report.json",
    "csv": "energy_table.csv",
    "positions_csv": "energy_positions.csv",
    "ops_csv": "energy_ops.csv",
    "sensitivity_json": "energy_sensitivity.json",
    "sensitivity_csv": "energy_sensitivity.csv",
    "breakdown_png": "energy_breakdown.png",
    "sensitivity_png": "energy_sensitivity.png",
    "spike_times_png": "spike_times.png",
}


def write_report(
    report: EnergyReport, out_dir: str | Path, *, sweep: Sweep | None = None, plots: bool = True
) -> dict[str, Path]:
    """Write ``report`` (and its ``sweep``) into ``out_dir``; return key -> written path.

    The spike-time plot is written when the report's rates carry histograms. Only the files
    of :data:`FILES` are replaced; one of them not written this time (``plots=False``, no
    sweep) is removed, so the folder never mixes two reports. Other files stay.
    """
    check_out_dir(out_dir)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".energy-", dir=out_dir))
    written: dict[str, Path] = {}
    try:

        def put(key: str, text: str) -> None:
            (tmp / FILES[key]).write_text(text)
            written[key] = out_dir / FILES[key]

        put("table", report.table())
        put("json", report.to_json())
        put("csv", report.to_csv())
        put("positions_csv", report.positions_csv())
        put("ops_csv", report.ops_csv())
        if sweep is not None:
            put("sensitivity_json", sweep.to_json())
            put("sensitivity_csv", sweep.to_csv())
        if plots:
            from energy_model import plots as p

            p.plot_breakdown(report, tmp / FILES["breakdown_png"])
            written["breakdown_png"] = out_dir / FILES["breakdown_png"]
            if sweep is not None:
                p.plot_sensitivity(sweep, tmp / FILES["sensitivity_png"],
                                   title=f"{report.model.name}, {p.rates_label(report)}; "
                                   f"{p.costs_label(report)}")
                written["sensitivity_png"] = out_dir / FILES["sensitivity_png"]
            if report.rates.histograms:
                ks = tuple(k for k in report.rates.mttfs if k <= 2) or (0,)
                p.plot_spike_times(report.rates.histograms, tmp / FILES["spike_times_png"], ks,
                                   source=report.rates.source)
                written["spike_times_png"] = out_dir / FILES["spike_times_png"]
        for key, dest in written.items():
            os.replace(tmp / FILES[key], dest)
        # files of these names are this function's own, written by an earlier report: one
        # not written now (plots off, no sweep, no histograms) would be stale beside the rest
        for key, name in FILES.items():
            if key not in written and (out_dir / name).is_file():
                (out_dir / name).unlink()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return written
