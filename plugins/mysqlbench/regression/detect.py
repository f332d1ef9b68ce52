"""Change points in one series of run values, found by Apache Otava's E-Divisive (the Hunter
paper's split and t-test merge steps: ``otava.analysis.compute_change_points``), and the three
rules that keep noise from alerting: a minimum effect size, a p-value threshold and a confirmation
rule (a change needs ``confirm_runs`` runs from it on, before the next change, and
``min_baseline_runs`` runs before it, since the previous change, to count).

The traps, each handled here rather than left to the library: Otava needs a plain list (an array
raises) and silently finds nothing in a series holding one NaN, so runs without a value are taken
out and the indexes mapped back; a flat series gives p = 0 for the tiniest step, so the effect size
is checked on the medians on either side as well as by Otava's ``min_magnitude`` on the means; a
last-run outlier is a change point with one run after it, which the confirmation rule holds back.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from mysqlbench.workloads.base import Better


class Thresholds(BaseModel):
    """What counts as a change. Spec parameters of every regression analysis."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    min_effect: float = Field(0.10, gt=0, lt=10,
                              description="the smallest relative change of the medians that counts (0.10 = 10%)")
    max_pvalue: float = Field(0.001, gt=0, le=0.5, description="a change's largest p-value (t-test between the sides)")
    confirm_runs: int = Field(3, ge=1, le=100,
                              description="runs a change needs from it on (before the next change) to be confirmed")
    min_baseline_runs: int = Field(5, ge=2, le=100,
                                   description="runs a change needs before it (since the previous change): with "
                                               "fewer, the baseline's spread is not known")
    window_runs: int = Field(30, ge=4, le=1000, description="E-Divisive's sliding window, in runs")
    recent_runs: int = Field(7, ge=1, le=1000,
                             description="a confirmed regression alerts while its first run is among the last "
                                         "this many runs of its series; older ones are reported as known")

    @model_validator(mode="after")
    def _alertable(self) -> "Thresholds":
        if self.recent_runs < self.confirm_runs:
            raise ValueError(f"recent_runs ({self.recent_runs}) below confirm_runs ({self.confirm_runs}): "
                             "a change would never be confirmed while it is recent, so nothing could alert")
        return self


@dataclass
class Side:
    runs: list[int]              # positions in the series
    median: float
    q1: float
    q3: float

    @property
    def iqr(self) -> float:
        return self.q3 - self.q1


@dataclass
class Change:
    index: int                   # position (in the whole series) of the first run after the change
    pvalue: float
    before: Side
    after: Side
    effect: float                # after median / before median - 1
    direction: str               # "worse" | "better" (by the metric's better direction)
    confirmed: bool
    recent: bool
    why_not_confirmed: str | None = None
    # the same estimator as a study's findings (``mysqlbench.statistics.compare``), its sample one
    # value per run on each side (unpaired): the effect with its interval, n and verdict
    interval: dict[str, Any] | None = None

    @property
    def interval_words(self) -> str:
        """"+35.2% (95.1% CI +30.0% .. +40.1%, 6 runs before vs 4 after): more"."""
        i = self.interval or {}
        if i.get("estimate") is None:
            return "no interval"
        sample = f"{i['n_a']} runs before vs {i['n_b']} after"
        if i.get("ci_low") is None:
            return f"{100 * i['estimate']:+.1f}% ({sample}: too few for an interval)"
        return (f"{100 * i['estimate']:+.1f}% ({100 * i['confidence']:.3g}% CI {100 * i['ci_low']:+.1f}% .. "
                f"{100 * i['ci_high']:+.1f}%, {sample}): {i['verdict']}")

    @property
    def regression(self) -> bool:
        return self.direction == "worse"

    @property
    def alert(self) -> bool:
        return self.regression and self.confirmed and self.recent

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out.update(regression=self.regression, alert=self.alert, effect_pct=round(100 * self.effect, 2),
                   interval_words=self.interval_words)
        for side in ("before", "after"):
            out[side]["iqr"] = getattr(self, side).iqr
        return out


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    position = (len(ordered) - 1) * q
    low, high = math.floor(position), math.ceil(position)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def _side(positions: list[int], values: list[float]) -> Side:
    return Side(runs=positions, median=_quantile(values, 0.5), q1=_quantile(values, 0.25),
                q3=_quantile(values, 0.75))


def change_points(values: list[float | None], thresholds: Thresholds, better: Better) -> list[Change]:
    """The changes in ``values`` (one per run, oldest first; None or NaN: a run without a value),
    each with the medians and spread on either side, its effect, direction, and whether it is
    confirmed. Sides run from the previous change to the next, as Otava's t-test compares them."""
    present = [i for i, v in enumerate(values) if v is not None and not (isinstance(v, float) and math.isnan(v))]
    series = [float(values[i]) for i in present]
    if len(series) < 3:
        return []
    from otava.analysis import compute_change_points

    from mysqlbench.statistics import compare  # (numpy: not at DAG parse time, which reads Thresholds)

    found, _weak = compute_change_points(series, window_len=thresholds.window_runs, max_pvalue=thresholds.max_pvalue,
                                         min_magnitude=thresholds.min_effect)
    cuts = sorted(int(cp.index) for cp in found)
    pvalues = {int(cp.index): float(cp.stats.pvalue) for cp in found}
    bounds = [0, *cuts, len(series)]
    changes = []
    for k, cut in enumerate(cuts):
        left, right = range(bounds[k], cut), range(cut, bounds[k + 2])
        before = _side([present[i] for i in left], [series[i] for i in left])
        after = _side([present[i] for i in right], [series[i] for i in right])
        if before.median == 0:
            continue  # no relative effect from a zero median; Otava's own magnitude is undefined there too
        effect = after.median / before.median - 1
        if abs(effect) < thresholds.min_effect or pvalues[cut] > thresholds.max_pvalue:
            continue  # Otava kept it on the means; the medians say the step is smaller than asked
        worse = effect > 0 if better == Better.LOWER else effect < 0
        short = []
        if len(right) < thresholds.confirm_runs:
            short.append(f"{len(right)} run(s) from the change on before the next change or the end; "
                         f"{thresholds.confirm_runs} needed")
        if len(left) < thresholds.min_baseline_runs:
            short.append(f"{len(left)} run(s) before it since the previous change or the start; "
                         f"{thresholds.min_baseline_runs} needed")
        index = present[cut]
        interval = compare([series[i] for i in left], [series[i] for i in right], band=thresholds.min_effect)
        changes.append(Change(
            index=index, pvalue=pvalues[cut], before=before, after=after, effect=effect,
            direction="worse" if worse else "better", confirmed=not short,
            recent=len(values) - index <= thresholds.recent_runs, why_not_confirmed="; ".join(short) or None,
            interval=interval.as_dict()))
    return changes
