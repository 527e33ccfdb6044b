"""Spike rates and bit-events: one average, per position, or read from a statistics file.

A :class:`Rates` holds everything activity-dependent a report needs, each value with its source:

- the rate-coded and TTFS baselines (the paper re-evaluates them at their published rates);
- the per-step spike rate of Matterhorn's standard TTFS and of M-TTFS at each radius ``k``;
- bit-events per delivery of the bit-serial QNN at each ``k``;
- optionally the code histograms they were computed from (for plots).

Rates are fractions inside (``0.0157``); files and the CLI speak percent (``1.57``).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from energy_model.histogram import (
    BIT_CONVENTIONS,
    Histogram,
    bit_events_per_value,
    mttfs_rate,
    ttfs_rate,
)
from golden_models.codespace import CodeSpace, check_T
from golden_models.positions import LABEL_OF_KEY, POSITION_FAMILY, POSITIONS
from toolkit_base.jsonfile import naming, read_json


def _norm(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


_POSITION_KEYS = {_norm(p): p for p in POSITIONS}
# Short names a statistics producer may use.
_POSITION_KEYS.update(
    {
        "qin": "Q-proj. input",
        "kin": "K-proj. input",
        "vin": "V-proj. input",
        "query": "Query activation",
        "queryact": "Query activation",
        "attnprob": "Attn. probability",
        "attnprobs": "Attn. probability",
        "attnout": "Attn.-out. input",
        "attnoutin": "Attn.-out. input",
        "ffnin": "FFN-expand input",
        "ffnexpand": "FFN-expand input",
        "ffnmid": "FFN-contract input",
        "ffncontract": "FFN-contract input",
    }
)
# the identifier-style keys of the MiniLM statistics documents
_POSITION_KEYS.update({_norm(key): label for key, label in LABEL_OF_KEY.items()})


def position_name(name: object) -> str:
    """The canonical position name for ``name`` (case, spaces and punctuation ignored)."""
    if isinstance(name, str) and _norm(name) in _POSITION_KEYS:
        return _POSITION_KEYS[_norm(name)]
    raise ValueError(f"unknown spike-encoded position {name!r}; valid: {', '.join(POSITIONS)}")


def _check_fraction(value: object, label: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise TypeError(f"spike rate for {label} must be a number of percent, not {value!r}")
    if not 0 <= value <= 1:
        raise ValueError(f"spike rate for {label} must be in 0..100 %, not {value * 100:g} %")
    return float(value)


@dataclass(frozen=True)
class Rate:
    """A per-step spike rate, one value for the block or one per position.

    Parameters
    ----------
    value : float or Mapping[str, float]
        Fraction of values spiking per step (``s / T``); a mapping must name all eight positions.
    source : str
        Provenance.
    label : str
        What it is the rate of (used in messages).
    """

    value: float | Mapping[str, float]
    source: str
    label: str = "rate"

    def __post_init__(self) -> None:
        if isinstance(self.value, Mapping):
            values = {}
            for name, v in self.value.items():
                pos = position_name(name)
                values[pos] = _check_fraction(v, f"{self.label} at {pos}")
            missing = [p for p in POSITIONS if p not in values]
            if missing:
                raise ValueError(
                    f"per-position rates for {self.label} lack {', '.join(map(repr, missing))}"
                )
            object.__setattr__(self, "value", {p: values[p] for p in POSITIONS})
        else:
            object.__setattr__(self, "value", _check_fraction(self.value, self.label))

    @classmethod
    def percent(cls, value: float | Mapping[str, float], source: str, label: str = "rate") -> Rate:
        """A rate given in percent (what the paper prints)."""
        if isinstance(value, Mapping):
            return cls({k: _percent(v, f"{label} at {k}") for k, v in value.items()}, source, label)
        return cls(_percent(value, label), source, label)

    @property
    def per_position(self) -> bool:
        return isinstance(self.value, Mapping)

    def at(self, position: str) -> float:
        return self.value[position] if isinstance(self.value, Mapping) else self.value

    def to_json(self) -> dict:
        value = (
            {p: v * 100 for p, v in self.value.items()}
            if isinstance(self.value, Mapping)
            else self.value * 100
        )
        return {"percent": value, "source": self.source}


def _percent(value: object, label: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise TypeError(f"spike rate for {label} must be a number of percent, not {value!r}")
    if not 0 <= value <= 100:
        raise ValueError(f"spike rate for {label} must be in 0..100 %, not {value:g} %")
    return value / 100


def check_ttfs_events(T: int, rate: Rate, what: str) -> None:
    """TTFS sends at most one spike per value: ``s = T * rate <= 1`` at every position.

    Rate-coded rows are exempt (a rate-coded neuron spikes up to ``T`` times per window:
    SpikingBERT's 25 % at T=16 is ``s = 4``); only the 0..100 % bound applies to them.

    Raises
    ------
    ValueError
        ``s > 1``; the message names ``what``, ``T``, the rate and ``s``.
    """
    for position in POSITIONS if rate.per_position else (None,):
        r = rate.at(position) if position else rate.value
        s = T * r
        if s > 1 + 1e-12:
            at = f" at {position}" if position else ""
            raise ValueError(
                f"{what}{at}: T={T} at {r * 100:g} % per step gives s = T*rate = {s:.4g} events "
                "per value, but TTFS sends at most one spike per value (s <= 1)"
            )


@dataclass(frozen=True)
class BitEvents:
    """Bit-serial routed bit-events per delivery, one value or one per position.

    Parameters
    ----------
    value : float or Mapping[str, float]
    source : str
    """

    value: float | Mapping[str, float]
    source: str

    def __post_init__(self) -> None:
        def check(v: object, where: str) -> float:
            if (
                isinstance(v, bool)
                or not isinstance(v, int | float)
                or not (math.isfinite(v) and v >= 0)
            ):
                raise ValueError(f"bit-events per delivery{where} must be a number >= 0, not {v!r}")
            return float(v)

        if isinstance(self.value, Mapping):
            values = {position_name(k): check(v, f" at {k}") for k, v in self.value.items()}
            missing = [p for p in POSITIONS if p not in values]
            if missing:
                raise ValueError(f"per-position bit-events lack {', '.join(map(repr, missing))}")
            object.__setattr__(self, "value", {p: values[p] for p in POSITIONS})
        else:
            object.__setattr__(self, "value", check(self.value, ""))

    def at(self, position: str) -> float:
        return self.value[position] if isinstance(self.value, Mapping) else self.value

    def to_json(self) -> dict:
        return {"per_delivery": self.value, "source": self.source}


@dataclass(frozen=True)
class Baseline:
    """A published spiking model re-evaluated under our unit costs at its reported rate."""

    name: str
    encoding: str  # "rate" or "ttfs"
    T: int
    rate: Rate


@dataclass(frozen=True)
class Rates:
    """The activity inputs of one report.

    Parameters
    ----------
    T : int
        Time steps of Matterhorn's TTFS and M-TTFS rows.
    ttfs : Rate, optional
        Standard TTFS at ``T``.
    mttfs : Mapping[int, Rate]
        M-TTFS rate per radius ``k``.
    bit_serial : Mapping[int, BitEvents]
        Bit-serial QNN bit-events per delivery per ``k`` pattern.
    baselines : tuple of Baseline
    histograms : Mapping[str, Histogram]
        Code histograms per position, if the rates came from statistics.
    source : str
    """

    T: int = 16
    ttfs: Rate | None = None
    mttfs: Mapping[int, Rate] = field(default_factory=dict)
    bit_serial: Mapping[int, BitEvents] = field(default_factory=dict)
    baselines: tuple[Baseline, ...] = ()
    histograms: Mapping[str, Histogram] = field(default_factory=dict)
    source: str = ""

    def __post_init__(self) -> None:
        check_T(self.T)
        for k in list(self.mttfs) + list(self.bit_serial):
            if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k < self.T:
                raise ValueError(f"dead-zone radius k must be in 0..{self.T - 1}, not {k!r}")
        if self.ttfs is not None:
            check_ttfs_events(self.T, self.ttfs, "TTFS")
        for k, rate in self.mttfs.items():
            check_ttfs_events(self.T, rate, f"M-TTFS k={k}")
        for b in self.baselines:
            if b.encoding == "ttfs":
                check_ttfs_events(b.T, b.rate, b.name)
        object.__setattr__(self, "mttfs", dict(sorted(self.mttfs.items())))
        object.__setattr__(self, "bit_serial", dict(sorted(self.bit_serial.items())))

    @classmethod
    def paper(cls, task: str = "SST-2", *, implied_bit_events: bool = True) -> Rates:
        """The paper's printed rates for ``task`` (a GLUE task or ``"avg"``) at T=16.

        ``implied_bit_events`` adds the bit-serial rows with the bit-events per delivery the
        paper's printed rows imply (1.08 / 0.64 / 0.43); its histograms are not published, so
        these are labelled inputs, never computed.
        """
        ref = paper_reference()
        table = ref["spike_rate_percent_T16"]
        if task not in table["TTFS"] or task == "s":
            tasks = [t for t in table["TTFS"] if t != "s"]
            raise ValueError(f"unknown task {task!r}; valid tasks: {', '.join(tasks)}")
        src = f"paper, Table 'Per-step spike rate', {task}"
        bits = {}
        if implied_bit_events:
            implied = ref["implied_bit_events_per_delivery"]
            bits = {k: BitEvents(implied[f"k={k}"], implied["source"]) for k in (0, 1, 2)}
        return cls(
            T=16,
            ttfs=Rate.percent(table["TTFS"][task], src, "TTFS"),
            mttfs={
                k: Rate.percent(table[f"M-TTFS k={k}"][task], src, f"M-TTFS k={k}") for k in (0, 1)
            },
            bit_serial=bits,
            baselines=paper_baselines(),
            source=f"paper ({task})",
        )

    @classmethod
    def paper_llama(cls, size: str) -> Rates:
        """The paper's LLaMA-2 rates (Table 'Spiking LLaMA', WikiText-2/C4 average) at T=16.

        ``size`` is ``"7B"``, ``"13B"`` or ``"70B"``. No baselines: they are BERT-sized models.
        """
        table = paper_reference()["llama_spike_rate_percent"]
        if size not in table:
            raise ValueError(f"unknown LLaMA-2 size {size!r}; valid: {', '.join(table)}")
        src = f"paper, Table 'Spiking LLaMA at three scales', {size}"
        rates = table[size]
        return cls(
            T=16,
            ttfs=Rate.percent(rates["TTFS"], src, "TTFS"),
            mttfs={k: Rate.percent(rates[f"k={k}"], src, f"M-TTFS k={k}") for k in (0, 1, 2)},
            source=f"paper (LLaMA-2 {size})",
        )

    @classmethod
    def uniform(
        cls,
        percent: float | Mapping[str, float],
        *,
        T: int = 16,
        k: int = 1,
        source: str = "given",
        baselines: bool = True,
    ) -> Rates:
        """One M-TTFS row at radius ``k`` with the given rate (percent, or per position)."""
        return cls(
            T=T,
            mttfs={k: Rate.percent(percent, source, f"M-TTFS k={k}")},
            baselines=paper_baselines() if baselines else (),
            source=source,
        )

    @classmethod
    def from_histograms(
        cls,
        histograms: Mapping[str, Histogram],
        *,
        ks: tuple[int, ...] = (0, 1, 2),
        convention: str = "signed",
        source: str = "histograms",
        baselines: bool = True,
        mus: Mapping[str, int] | None = None,
    ) -> Rates:
        """Per-position rates and bit-events from one code histogram per position.

        ``mus`` gives each position's silent integer ``mu`` (default 0, the paper's rule).
        """
        mus = {} if mus is None else {position_name(p): m for p, m in mus.items()}
        records = {
            position_name(p): [(h, mus.get(position_name(p), 0))] for p, h in histograms.items()
        }
        return cls.from_records(
            records,
            {k: records for k in ks},
            convention=convention,
            source=source,
            baselines=baselines,
        )

    @classmethod
    def from_records(
        cls,
        ttfs_records: Mapping[str, list[tuple[Histogram, int]]],
        k_records: Mapping[int, Mapping[str, list[tuple[Histogram, int]]]],
        *,
        convention: str = "signed",
        source: str = "histograms",
        baselines: bool = True,
    ) -> Rates:
        """Rates from several ``(histogram, mu)`` records per position (e.g. one per block).

        ``ttfs_records`` are the unmasked histograms (standard TTFS is lossless);
        ``k_records[k]`` the pre-mask histograms of the network run with radius ``k`` (they
        differ from the unmasked ones once ``k > 0`` changes upstream values). A position's rate
        is the activation-weighted mean over its records.
        """
        if convention not in BIT_CONVENTIONS:
            raise ValueError(f"bit convention must be one of {BIT_CONVENTIONS}, not {convention!r}")

        def complete(records, what):
            missing = [p for p in POSITIONS if not records.get(p)]
            if missing:
                raise ValueError(f"{what} lack positions {', '.join(map(repr, missing))}")
            return {p: records[p] for p in POSITIONS}

        def mean(records, f):
            return sum(f(h, mu) * h.total for h, mu in records) / sum(h.total for h, _ in records)

        ttfs_records = complete(ttfs_records, f"statistics ({source})")
        k_records = {
            k: complete(r, f"statistics ({source}) for k={k}") for k, r in k_records.items()
        }
        Ts = {h.space.T for recs in ttfs_records.values() for h, _ in recs}
        if len(Ts) != 1:
            raise ValueError(f"histograms must share one T, not {sorted(Ts)}")
        (T,) = Ts
        label = f"{source} ({convention} bit convention)"
        plot = {}
        for p, recs in ttfs_records.items():
            counts: dict[int, float] = {}
            for h, _ in recs:
                for q, n in h.counts.items():
                    counts[q] = counts.get(q, 0) + n
            plot[p] = Histogram(recs[0][0].space, counts)
        return cls(
            T=T,
            ttfs=Rate(
                {p: mean(r, lambda h, mu: ttfs_rate(h)) for p, r in ttfs_records.items()},
                source,
                "TTFS",
            ),
            mttfs={
                k: Rate(
                    {p: mean(r, lambda h, mu, k=k: mttfs_rate(h, k, mu)) for p, r in recs.items()},
                    source,
                    f"M-TTFS k={k}",
                )
                for k, recs in k_records.items()
            },
            bit_serial={
                k: BitEvents(
                    {
                        p: mean(
                            r,
                            lambda h, mu, k=k: bit_events_per_value(
                                h, k, mu=mu, convention=convention
                            ),
                        )
                        for p, r in recs.items()
                    },
                    label,
                )
                for k, recs in k_records.items()
            },
            baselines=paper_baselines() if baselines else (),
            histograms=plot,
            source=source,
        )

    def to_json(self) -> dict:
        return {
            "T": self.T,
            "source": self.source,
            "ttfs": self.ttfs.to_json() if self.ttfs else None,
            "mttfs": {f"k={k}": r.to_json() for k, r in self.mttfs.items()},
            "bit_serial": {f"k={k}": b.to_json() for k, b in self.bit_serial.items()},
            "baselines": [
                {"name": b.name, "encoding": b.encoding, "T": b.T, **b.rate.to_json()}
                for b in self.baselines
            ],
        }


def paper_reference() -> dict:
    """The paper's printed tables (rates, breakdown, Rel. column, sensitivity claims)."""
    text = resources.files("energy_model").joinpath("data/paper_reference.json").read_text()
    return json.loads(text)


def paper_baselines() -> tuple[Baseline, ...]:
    """SpikingBERT, SpikingLM, Sorbet and Otters at their reported T and rates."""
    out = []
    for name, b in paper_reference()["baselines"].items():
        src = f"paper, Table 'Energy per transformer block': {name}'s reported rate"
        encoding = "rate" if b["encoding"] == "rate" else "ttfs"
        out.append(Baseline(name, encoding, b["T"], Rate.percent(b["rate_percent"], src, name)))
    return tuple(out)


# --- statistics files -------------------------------------------------------------------------


def _histogram_of(entry: object, where: str, T: int | None) -> Histogram:
    if not isinstance(entry, dict):
        raise ValueError(f"{where} must be an object with 'histogram' and 'family'")
    T = entry.get("T", T)
    family = entry.get("family")
    if family is None:
        raise ValueError(f"{where} lacks 'family' ('sym' or 'asym')")
    if T is None:
        raise ValueError(f"{where} lacks 'T' (give it per position or at the top level)")
    space = CodeSpace(T, family)
    raw = entry.get("histogram")
    if isinstance(raw, dict) and "counts" in raw:
        q_min = raw.get("q_min", space.q_min)
        counts = dict(enumerate(raw["counts"], start=q_min))
    elif isinstance(raw, dict):
        try:
            counts = {int(code): c for code, c in raw.items()}
        except ValueError:
            raise ValueError(f"{where} histogram keys must be integer codes") from None
    elif isinstance(raw, list):
        counts = dict(enumerate(raw, start=space.q_min))
    else:
        raise ValueError(
            f"{where} 'histogram' must be a code->count object, a list of counts from the lowest "
            f"level, or {{'q_min': ..., 'counts': [...]}}"
        )
    try:
        return Histogram(space, counts)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{where}: {exc}") from None


def load_stats(
    path: str | Path, *, ks: tuple[int, ...] = (0, 1, 2), convention: str = "signed"
) -> Rates:
    """Read a statistics file (golden-model statistics or a regression summary).

    Read fields (everything else is ignored):

    - ``positions``: position -> ``{"family", "histogram", ["T"]}``: code histograms; rates and
      bit-events are computed from them;
    - or ``spike_rate_percent``: ``{"TTFS": x, "M-TTFS k=1": x or {position: x}, ...}`` with
      ``T`` at the top level (a regression summary's measured rates);
    - optional ``bit_events_per_delivery``: ``{"k=0": x or {position: x}, ...}``.
    """
    path = Path(path)
    with naming(path, "statistics file"):
        return _load_stats(path, ks, convention)


def _load_stats(path: Path, ks: tuple[int, ...], convention: str) -> Rates:
    data = read_json(path, "statistics file")
    if not isinstance(data, dict):
        raise ValueError(f"statistics file {path.name} must hold a JSON object")
    source = f"statistics file {path.name}"
    T = data.get("T")
    schema = data.get("schema")
    if schema == GOLDEN_SCHEMA:
        return _golden_stats(data, path.name, ks, convention, source)
    if schema == MINILM_SCHEMA:
        return _minilm_stats(data, path.name, ks, convention, source)
    if schema == MINILM_RATES_SCHEMA:
        raise ValueError(
            f"statistics file {path.name} is the rates summary of matterhorn stats "
            f"({MINILM_RATES_SCHEMA}), which holds no histograms; give the stats.json "
            "written beside it"
        )
    if "positions" in data:
        positions = data["positions"]
        if not isinstance(positions, dict):
            raise ValueError(f"'positions' in {path.name} must be an object")
        hists = {
            position_name(name): _histogram_of(entry, f"{path.name}: position {name!r}", T)
            for name, entry in positions.items()
        }
        return Rates.from_histograms(hists, ks=ks, convention=convention, source=source)
    if "spike_rate_percent" in data:
        if T is None:
            raise ValueError(f"statistics file {path.name} lacks 'T'")
        table = data["spike_rate_percent"]
        if not isinstance(table, dict):
            raise ValueError(f"'spike_rate_percent' in {path.name} must be an object")
        ttfs, mttfs = None, {}
        for key, value in table.items():
            m = re.fullmatch(r"M-TTFS k=(\d+)", key)
            if key == "TTFS":
                ttfs = Rate.percent(value, source, key)
            elif m:
                mttfs[int(m.group(1))] = Rate.percent(value, source, key)
            else:
                raise ValueError(
                    f"unknown key {key!r} in 'spike_rate_percent' of {path.name}; "
                    "valid: 'TTFS', 'M-TTFS k=<k>'"
                )
        bits = {}
        table = data.get("bit_events_per_delivery", {})
        if not isinstance(table, dict):
            raise ValueError(f"'bit_events_per_delivery' in {path.name} must be an object")
        for key, value in table.items():
            m = re.fullmatch(r"k=(\d+)", key)
            if not m:
                raise ValueError(
                    f"unknown key {key!r} in 'bit_events_per_delivery' of {path.name}; "
                    "valid: 'k=<k>'"
                )
            bits[int(m.group(1))] = BitEvents(value, source)
        return Rates(
            T=T,
            ttfs=ttfs,
            mttfs=mttfs,
            bit_serial=bits,
            baselines=paper_baselines(),
            source=source,
        )
    raise ValueError(
        f"statistics file {path.name} has neither 'positions' (code histograms) nor "
        "'spike_rate_percent'"
    )


#: Statistics written by :func:`golden_models.statistics.write_stats`.
GOLDEN_SCHEMA = "matterhorn.golden_stats/1"
#: Statistics of the converted MiniLM (:mod:`networks.stats`).
MINILM_SCHEMA = "matterhorn.minilm_stats/1"
#: The per-block rates summary ``rates.json`` that ``matterhorn stats`` writes beside it.
MINILM_RATES_SCHEMA = "matterhorn.minilm_rates/1"


def _tau_histogram(counts: object, space: CodeSpace, where: str) -> Histogram:
    """A histogram given by event time (``counts[t]`` is code ``c - t``)."""
    if not isinstance(counts, list) or len(counts) != space.T:
        raise ValueError(f"{where} must be a list of {space.T} counts, not {counts!r}")
    try:
        return Histogram(space, {space.c - t: n for t, n in enumerate(counts)})
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{where}: {exc}") from None


def _golden_stats(data: dict, name: str, ks, convention: str, source: str) -> Rates:
    from golden_models.statistics import PositionStats

    records = data.get("positions")
    if not isinstance(records, list):
        raise ValueError(f"{name}: field 'positions' must be a list")
    out: dict[str, list[tuple[Histogram, int]]] = {}
    for i, record in enumerate(records):
        try:
            stats = PositionStats.from_dict(record)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{name}: positions[{i}]: {exc}") from None
        hist = _tau_histogram(list(stats.counts), stats.space, f"{name}: positions[{i}].histogram")
        mu = stats.space.c - stats.i_max
        out.setdefault(position_name(stats.name), []).append((hist, mu))
    return Rates.from_records(out, {k: out for k in ks}, convention=convention, source=source)


def _minilm_stats(data: dict, name: str, ks, convention: str, source: str) -> Rates:
    T = data.get("T")
    blocks = data.get("blocks")
    if isinstance(T, bool) or not isinstance(T, int):
        raise ValueError(f"{name}: field 'T' must be an integer, not {T!r}")
    try:
        check_T(T)
    except ValueError as exc:
        raise ValueError(f"{name}: field 'T': {exc}") from None
    if not isinstance(blocks, list) or not blocks:
        raise ValueError(f"{name}: field 'blocks' must be a non-empty list")
    ttfs: dict[str, list[tuple[Histogram, int]]] = {}
    per_k: dict[int, dict[str, list[tuple[Histogram, int]]]] = {}
    per_block: list[dict] = []  # block -> {"TTFS": records, k: records} over its positions
    for b, block in enumerate(blocks):
        positions = block.get("positions") if isinstance(block, dict) else None
        if not isinstance(positions, dict):
            raise ValueError(f"{name}: field 'blocks[{b}].positions' must be an object")
        mine: dict = {"TTFS": []}
        per_block.append(mine)
        for pos, entry in positions.items():
            where = f"{name}: blocks[{b}].positions[{pos!r}]"
            try:
                canon = position_name(pos)
            except ValueError as exc:
                raise ValueError(f"{where}: {exc}") from None
            space = CodeSpace(T, POSITION_FAMILY[canon])
            i_max = entry.get("i_max") if isinstance(entry, dict) else None
            if isinstance(i_max, bool) or not isinstance(i_max, int) or not 0 <= i_max < T:
                raise ValueError(f"{where}.i_max must be an integer in 0..{T - 1}, not "
                                 f"{i_max!r}")
            mu = space.c - i_max
            record = (_tau_histogram(entry.get("histogram_tau"), space, f"{where}.histogram_tau"),
                      mu)
            ttfs.setdefault(canon, []).append(record)
            mine["TTFS"].append(record)
            by_k = entry.get("histogram_tau_k")
            if not isinstance(by_k, dict):
                raise ValueError(f"{where}.histogram_tau_k must be an object")
            for key, counts in by_k.items():
                m = re.fullmatch(r"k=(\d+)", key)
                if not m:
                    raise ValueError(f"{where}.histogram_tau_k has a key {key!r}, not 'k=<k>'")
                k = int(m.group(1))
                if k in ks:
                    hist = _tau_histogram(counts, space, f"{where}.histogram_tau_k[{key!r}]")
                    per_k.setdefault(k, {}).setdefault(canon, []).append((hist, mu))
                    mine.setdefault(k, []).append((hist, mu))
    if not per_k:
        raise ValueError(f"{name}: no histogram_tau_k for any of k = {', '.join(map(str, ks))}")
    rates = Rates.from_records(
        ttfs, dict(sorted(per_k.items())), convention=convention, source=source
    )
    _check_measured(data.get("positions"), rates, name)
    # the measured network and block rates must be the ones of the histograms too (a NaN or
    # negative rate, or one of another run, is refused rather than shown beside them)
    _check_rates(data.get("rates"), _rates_of([r for m in per_block for r in m["TTFS"]],
                                              {k: [r for m in per_block for r in m.get(k, [])]
                                               for k in per_k}, T),
                 f"{name}: field rates")
    for b, (block, mine) in enumerate(zip(blocks, per_block, strict=True)):
        _check_rates(block.get("rates"),
                     _rates_of(mine["TTFS"], {k: mine.get(k, []) for k in per_k}, T),
                     f"{name}: field blocks[{b}].rates")
    _check_pooled(data.get("positions"), ttfs, name)
    return rates


def _rates_of(ttfs_records, k_records, T: int) -> dict[str, float]:
    """Per-step rates (fractions) pooled over ``(histogram, mu)`` records, as the statistics
    document writes them: ``TTFS`` and ``k=<k>``."""
    def pooled(records, f):
        total = sum(h.total for h, _ in records)
        return sum(f(h, mu) * h.total for h, mu in records) / total if total else 0.0

    out = {"TTFS": pooled(ttfs_records, lambda h, mu: ttfs_rate(h))}
    for k, records in k_records.items():
        out[f"k={k}"] = pooled(records, lambda h, mu, k=k: mttfs_rate(h, k, mu))
    return out


def _agrees(measured: object, ours: float) -> bool:
    """A measured rate of the file (6 decimals) is the one of its histograms."""
    return (not isinstance(measured, bool) and isinstance(measured, int | float)
            and abs(ours - measured) <= 1e-6)


def _check_rates(table: object, ours: dict[str, float], where: str) -> None:
    """Every rate of ``table`` (optional) the histograms give (``TTFS``, ``k=<k>`` read) must
    agree with them."""
    if table is None:
        return
    if not isinstance(table, dict):
        raise ValueError(f"{where} must be an object of rates ('TTFS', 'k=<k>'), not {table!r}")
    for key, value in ours.items():
        if key in table and not _agrees(table[key], value):
            raise ValueError(f"{where}[{key!r}] ({table[key]!r}) disagrees with the rate of its "
                             f"histograms ({value:.6f})")


def _check_pooled(positions: object, ttfs: dict, name: str) -> None:
    """A position's pooled ``histogram_tau`` must be the sum of its blocks' histograms."""
    if not isinstance(positions, list):
        return
    for i, entry in enumerate(positions):
        if not isinstance(entry, dict) or "histogram_tau" not in entry:
            continue
        pos = _position_of(entry, f"{name}: field 'positions[{i}]'")
        records = ttfs.get(pos, [])
        if not records:
            continue
        space = records[0][0].space
        want = [sum(h.counts.get(space.c - t, 0) for h, _ in records) for t in range(space.T)]
        if entry["histogram_tau"] != want:
            raise ValueError(f"{name}: field 'positions[{i}].histogram_tau' is not the sum of "
                             "its blocks' histograms")


def _position_of(entry: dict, where: str) -> str:
    try:
        return position_name(entry.get("position", entry.get("label")))
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None


def _check_measured(positions: object, rates: Rates, name: str) -> None:
    """The file's measured per-position rates (6 decimals) must match its histograms."""
    if not isinstance(positions, list):
        return
    for i, entry in enumerate(positions):
        if not isinstance(entry, dict) or not isinstance(entry.get("rates"), dict):
            continue
        pos = _position_of(entry, f"{name}: field 'positions[{i}]'")
        for key, measured in entry["rates"].items():
            m = re.fullmatch(r"k=(\d+)", key)
            if key == "TTFS":
                ours = rates.ttfs.at(pos)
            elif m and int(m.group(1)) in rates.mttfs:
                ours = rates.mttfs[int(m.group(1))].at(pos)
            else:
                continue
            if not _agrees(measured, ours):
                raise ValueError(
                    f"{name}: field positions[{i}].rates[{key!r}] ({measured!r}) disagrees with "
                    f"the rate of its histograms ({ours:.6f})"
                )


def family_of(position: str) -> str:
    """The paper's quantizer family of ``position``."""
    return POSITION_FAMILY[position_name(position)]
