"""Change points in one series of run values (one per run, oldest first): located by Apache
Otava's E-Divisive, decided by the statistics the study findings use.

Otava (``otava.analysis.compute_change_points``: the Hunter paper's split and merge steps) runs
on the logs of the values, winsorised, at a permissive p-value, plus the best split of the last
few runs (``locate``): that says where the series may change. Its t-test on the raw values is not
the verdict: one outlier night inflates a side's variance until a later sustained step passes no
t-test, and a large step whose slow runs vary passes less often than a tidy small one (issue 23).

Each located change is decided on its two sides (``decide``): outlier nights left out, blips too
short to confirm joined away, then, as Otava's merge step does, the weakest failing change dropped
and the rest re-placed and re-tested until all hold. A change holds when its sides pass a
one-sided Mann-Whitney test at ``max_pvalue`` (or a t-test of the step against the baseline's own
spread, for steps too large for ranks to measure at small n), its exact 95% interval
(``statistics.compare``) lies wholly beyond ``min_effect``, and it is at least two sd of the
noise. A held change is confirmed with ``confirm_runs`` runs after it and ``min_baseline_runs``
before it; a last-run outlier is seen and held back. The thresholds' power, false alarms and the
runs a series needs are measured by simulation (``simulate.py``, docs/regression-power.md).

The traps handled here: Otava needs a plain list and silently finds nothing in a series holding
one NaN, so runs without a value are taken out and the indexes mapped back; a flat series gives
any step p = 0, so a step must also be large against ``min_effect`` and the noise.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from mysqlbench.workloads.base import Better

if TYPE_CHECKING:  # numpy is imported where used: DAG files read Thresholds at parse time
    import numpy as np

REFINE = 2  # runs a located cut may move to where it splits its segment best
WINSOR = 4.0  # robust sd from the median at which Otava's input is clipped
T_WEIGHT = 4.0  # the baseline t-test is held to max_pvalue / 4: its null assumes log-normal noise, which skewed
#                 or bimodal noise is not; the shipped table's false alarms are measured with it
MIN_STRENGTH = 2.0  # a change holds only as a step of 2 sd of its sides' noise at least (docs/regression-power.md)
FLOOR_CV = 0.02  # the least run-to-run spread assumed of a baseline (log sd): a flat one is not noiseless
OUTLIER = 6.0  # robust sd of the baseline beyond which a run is an outlier night, left out of a test


class Thresholds(BaseModel):
    """What counts as a change. Spec parameters of every regression analysis."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, frozen=True)

    min_effect: float = Field(0.10, gt=0, lt=10,
                              description="the smallest relative change of the medians that counts (0.10 = 10%)")
    max_pvalue: float = Field(0.001, gt=0, le=0.5,
                              description="a change's largest p-value (one-sided Mann-Whitney test between its "
                                          "sides, or the t-test against the baseline's spread at a quarter of it)")
    locate_pvalue: float = Field(0.2, gt=0, le=0.5,
                                 description="Otava's p-value for where to look (on the log values); permissive, "
                                             "since the rank test decides")
    confirm_runs: int = Field(3, ge=1, le=100,
                              description="runs a change needs from it on (before the next change) to be confirmed")
    min_baseline_runs: int = Field(5, ge=2, le=100,
                                   description="runs a change needs before it (since the previous change): with "
                                               "fewer, the baseline's spread is not known")
    window_runs: int = Field(30, ge=4, le=1000, description="E-Divisive's sliding window, in runs")
    baseline_runs: int = Field(20, ge=2, le=1000,
                               description="the most runs before a change its test compares with (since the previous "
                                           "change): older runs leave the baseline, so slow drift is not a step")
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
    noise_words: str | None = None  # runs after it measured under noise that count anyway, and why
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


@dataclass
class _Test:
    p: float                     # one-sided Mann-Whitney p-value, in the direction of the estimate
    shift: float                 # Hodges-Lehmann estimate of the step, on the log scale
    n_before: int                # runs compared on each side (outlier nights left out)
    n_after: int
    pending: bool                # waiting for runs: too few after it (the last) or before it (the first)
    strength: float = 0.0        # |shift| in robust sd of the two sides (each around its median)
    p_rank: float = 1.0          # the Mann-Whitney p-value alone
    effect: Any = None           # statistics.Effect of the sides (set once the p-value passes)


def _robust_sd(x: "np.ndarray") -> float:
    """The sd from the trimmed mean absolute deviation around the median: the mean of the smallest
    80% of the deviations, times 1.790 (the sd for normal noise). Not the median absolute deviation:
    benchmark noise has a dense core and a long tail (most runs within 2%, some 20% off), where the
    MAD reads 0 or a fraction of the spread; not the plain mean deviation either, which one 20x
    night inflates."""
    import numpy as np

    deviations = np.sort(np.abs(x - np.median(x)))
    kept = deviations[:max(1, math.ceil(0.8 * len(deviations)))]
    return 1.790 * float(kept.mean())


def _without_outlier_nights(side: "np.ndarray", spread: float) -> "np.ndarray":
    """A side without its outlier nights: runs beyond ``OUTLIER`` times ``spread`` (the baseline's
    ``_robust_sd``) from the side's median, at most one in five runs (more is not an outlier but a
    mode; a side of three may lose one). A bad night in the baseline above a later step's level
    would otherwise cost that step the rank test for many runs (issue 23's item 2), and one among
    a step's first runs would count as a run of the step."""
    import numpy as np

    if len(side) < 3 or spread <= 0:
        return side
    far = np.abs(side - np.median(side)) > OUTLIER * spread
    return side[~far] if 0 < far.sum() <= max(1, len(side) // 5) else side


def _baseline_t_pvalue(before: "np.ndarray", after: "np.ndarray", greater: bool) -> float:
    """One-sided p-value of the step in units of the baseline's own spread: Student's t of the
    difference of the mean logs over the baseline's sd (its ``_robust_sd``, never below
    ``FLOOR_CV``) with the baseline's degrees of freedom. The rank test cannot say more than
    1 / C(B + k, k), however large the step (five runs at 0.023 s, then four at 0.28-0.71 s reach
    0.008 at best); Welch's t-test, which Otava uses, divides by the spread of the slow runs too,
    so a 30x step whose slow runs vary by half passes it less often than a tidy 2x one (issue
    23's item 1). Measured against the baseline alone, a step many times the baseline's spread is
    significant after a few runs, as a DBA would read it."""
    import numpy as np
    from scipy.stats import t as student

    if len(before) < 3 or len(after) == 0:
        return 1.0
    spread = max(_robust_sd(before), FLOOR_CV)
    stat = (float(np.mean(after)) - float(np.mean(before))) / (spread * math.sqrt(1 / len(before) + 1 / len(after)))
    return float(student.sf(stat if greater else -stat, df=len(before) - 1))


def _test(logs: "np.ndarray", lo: int, cut: int, hi: int, th: Thresholds) -> _Test:
    """One located change: the runs since the previous change (at most ``baseline_runs`` of them)
    against the runs up to the next one, each without its outlier nights. Significance: the
    smaller p-value of a one-sided Mann-Whitney test (ranks: a run weighs as one whatever its
    size) and a t-test against the baseline's spread (``_baseline_t_pvalue``: what the ranks
    cannot see, the size of a step); magnitude: the Hodges-Lehmann estimate and exact interval of
    ``statistics.compare``, the findings' estimator."""
    import numpy as np

    from mysqlbench.statistics import compare, rank_sum_pvalue

    before, after = logs[max(lo, cut - th.baseline_runs):cut], logs[cut:hi]
    spread = _robust_sd(before) if len(before) >= 5 else 0.0
    before, after = _without_outlier_nights(before, spread), _without_outlier_nights(after, spread)
    # waiting: the last change without its confirm_runs yet, or the first without its baseline
    pending = (hi == len(logs) and len(after) < th.confirm_runs) or (lo == 0 and cut < th.min_baseline_runs)
    if len(before) == 0 or len(after) == 0:
        return _Test(1.0, 0.0, len(before), len(after), pending)
    shift = float(np.median((after[None, :] - before[:, None]).ravel()))
    p_rank = rank_sum_pvalue(before, after, greater=shift > 0)
    p = min(p_rank, T_WEIGHT * _baseline_t_pvalue(before, after, shift > 0))
    residuals = np.concatenate([before - np.median(before), after - np.median(after)])
    test = _Test(p, shift, len(before), len(after), pending, abs(shift) / max(_robust_sd(residuals), 1e-9), p_rank)
    if p <= th.max_pvalue and not pending:
        test.effect = compare(np.exp(before), np.exp(after), band=th.min_effect)
    return test


def _holds(t: _Test, th: Thresholds) -> bool:
    """A located change stays when it has ``confirm_runs`` runs after it, its sides pass the rank
    test (or the baseline t-test at a quarter of it) at ``max_pvalue``, the interval of the step
    lies wholly beyond ``min_effect`` (the verdict "more" or "less", as a study finding would say
    it) and the step is ``MIN_STRENGTH`` sd of the noise. A change still waiting for runs (the
    last, or the first without its baseline) stays when every run on one side is beyond every run
    on the other by ``min_effect`` and ``MIN_STRENGTH``: it is seen, and held back by the
    confirmation rule (a last-night outlier)."""
    from mysqlbench.statistics import Verdict

    if abs(t.shift) < math.log1p(th.min_effect):
        return False
    if t.pending:  # every run on one side beyond every run on the other, as a step of the noise
        return (t.n_after > 0 and t.strength >= MIN_STRENGTH
                and t.p_rank <= 1.0 / math.comb(t.n_before + t.n_after, t.n_after) + 1e-12)
    return (t.n_after >= th.confirm_runs and t.p <= th.max_pvalue and t.effect is not None and t.strength >= MIN_STRENGTH
            and t.effect.verdict in (Verdict.MORE, Verdict.LESS))


def _split_cost(logs: "np.ndarray", lo: int, c: int, hi: int) -> float:
    """How badly a cut at ``c`` splits ``logs[lo:hi]``: the absolute deviations of the logs from
    each side's median (a robust least-squares split)."""
    import numpy as np

    a, b = logs[lo:c], logs[c:hi]
    return float(np.abs(a - _median(a)).sum() + np.abs(b - _median(b)).sum())


def _median(x: "np.ndarray") -> float:
    """``np.median`` of a short, NaN-free 1-D array, bit for bit, without its generic machinery:
    ``_split_cost`` asks for two medians per candidate cut, about a third of the detector's time
    (a simulated power table) in ``np.median``'s overhead on arrays of a few dozen runs."""
    import numpy as np

    s = np.sort(x)
    n = len(s)
    if n == 0:
        return float("nan")
    return float(s[n // 2]) if n % 2 else float((s[n // 2 - 1] + s[n // 2]) / 2)


def locate(logs: "np.ndarray", th: Thresholds) -> list[int]:
    """Where the series may change: Apache Otava's E-Divisive (its split and merge steps) on the
    logs of the values winsorised at ``WINSOR`` robust sd from their median, at the permissive
    ``locate_pvalue``, and the best split of the last ``recent_runs`` runs. A place to look, not a
    verdict. On the raw values, and even on logs, one large outlier inflates a side's variance so
    much that a later sustained step passes no t-test (issue 23's item 2); winsorised, the outlier
    stays the highest value without its weight. E-Divisive is weakest at a window's end, where a
    nightly check looks: the tail split covers a step with only a few runs after it."""
    import numpy as np
    from otava.analysis import compute_change_points

    median = float(np.median(logs))
    spread = 1.4826 * float(np.median(np.abs(logs - median)))
    clipped = np.clip(logs, median - WINSOR * spread, median + WINSOR * spread) if spread > 0 else logs
    found, _weak = compute_change_points([float(x) for x in clipped], window_len=th.window_runs,
                                         max_pvalue=th.locate_pvalue, min_magnitude=0.0)
    cuts = {int(cp.index) for cp in found}
    n = len(logs)
    lo = max((c for c in cuts if c < n - th.recent_runs), default=0)
    tail = range(max(lo + 1, n - th.recent_runs), n)
    if tail:
        cuts.add(min(tail, key=lambda c: _split_cost(clipped, lo, c, n)))
    return sorted(cuts)


def _refine(logs: np.ndarray, cuts: list[int], th: Thresholds) -> list[int]:
    """Each cut moved to the place within ``REFINE`` runs (between its neighbours) that splits its
    segment best (``_split_cost``): E-Divisive on a short window often lands a run early or late,
    and a rank test cannot place a cut (moving a step's first run to the wrong side can still leave
    the sides apart)."""
    out = list(cuts)
    for k in range(len(out)):
        lo = out[k - 1] if k else 0
        hi = out[k + 1] if k + 1 < len(out) else len(logs)
        spots = range(max(lo + 1, out[k] - REFINE), min(hi - 1, out[k] + REFINE) + 1)
        if spots:
            out[k] = min(spots, key=lambda c: (_split_cost(logs, lo, c, hi), abs(c - out[k])))
    return sorted(set(out))


def _tests(logs: np.ndarray, cuts: list[int], th: Thresholds) -> list[_Test]:
    bounds = [0, *cuts, len(logs)]
    return [_test(logs, bounds[k], cut, bounds[k + 2], th) for k, cut in enumerate(cuts)]


def _absorb_blips(logs: "np.ndarray", cuts: list[int], th: Thresholds) -> list[int]:
    """Cuts around segments shorter than ``confirm_runs`` (other than the last) joined away: a test
    next to a one-night blip is uninformative, whichever side the blip is on. A blip at the start
    joins the segment after it; any other joins the neighbour whose median is closer to its own (an
    early split just before a step goes back to the baseline; an outlier night joins either side,
    and is then one rank there)."""
    import numpy as np

    cuts = list(cuts)
    while True:
        bounds = [0, *cuts, len(logs)]
        short = [j for j in range(len(cuts)) if bounds[j + 1] - bounds[j] < th.confirm_runs]
        if not short:
            return cuts
        j = short[0]
        if j == 0:
            del cuts[0]
            continue
        seg = [float(np.median(logs[bounds[i]:bounds[i + 1]])) for i in (j - 1, j, j + 1)]
        del cuts[j - 1 if abs(seg[1] - seg[0]) <= abs(seg[1] - seg[2]) else j]


def decide(logs: "np.ndarray", cuts: list[int], th: Thresholds) -> tuple[list[int], list[_Test]]:
    """The located cuts that hold. Blips are joined away first (``_absorb_blips``); then, while
    some cut fails, the weakest is dropped and the others are re-placed and re-tested on the joined
    sides: the merge step of Otava's own algorithm, with a rank test in place of its t-test on the
    means. Weakest is the smallest step in robust sd, not the largest p-value: a rank test's
    smallest p-value depends on the sides' sizes, so a clear step with three runs after it would
    lose to a baseline wobble with ten. A failing cut's weaker left neighbour may go in its place
    (it holds only because it cut the failing one's baseline short)."""
    cuts = _absorb_blips(logs, _refine(logs, cuts, th), th)
    while True:
        tests = _tests(logs, cuts, th)
        failing = [k for k, t in enumerate(tests) if not _holds(t, th)]
        if not failing:
            return cuts, tests
        # a failing cut's left neighbour, when weaker, goes before it: three low runs just before a
        # step would otherwise hold as a change of their own and leave the step too short a baseline
        droppable = set(failing) | {k - 1 for k in failing if k and tests[k - 1].strength < tests[k].strength}
        drop = min(droppable, key=lambda k: (tests[k].strength, -tests[k].p))
        cuts = _absorb_blips(logs, _refine(logs, cuts[:drop] + cuts[drop + 1:], th), th)


def change_points(values: list[float | None], thresholds: Thresholds, better: Better) -> list[Change]:
    """The changes in ``values`` (one per run, oldest first; None or NaN: a run without a value),
    each with the medians and spread on either side, its effect with its interval (the study
    findings' estimator, one value per run, unpaired), direction, and whether it is confirmed.

    Otava locates candidates (``locate``) and ``decide`` keeps those whose sides pass the rank
    test. A single outlier is a one-run segment that cannot hold, so it joins the baseline, where
    it weighs as one rank: it can neither alert nor mask a later step."""
    import numpy as np

    from mysqlbench.statistics import compare

    present = [i for i, v in enumerate(values) if v is not None and not (isinstance(v, float) and math.isnan(v))]
    series = [float(values[i]) for i in present]
    if len(series) < 3 or min(series) <= 0:
        return []
    th = thresholds
    logs = np.log(np.asarray(series))
    cuts, tests = decide(logs, locate(logs, th), th)
    changes = []
    bounds = [0, *cuts, len(series)]
    for k, (cut, t) in enumerate(zip(cuts, tests, strict=True)):
        left, right = range(bounds[k], cut), range(cut, bounds[k + 2])
        before = _side([present[i] for i in left], [series[i] for i in left])
        after = _side([present[i] for i in right], [series[i] for i in right])
        short = []
        if len(right) < th.confirm_runs:
            short.append(f"{len(right)} run(s) from the change on before the next change or the end; "
                         f"{th.confirm_runs} needed")
        if len(left) < th.min_baseline_runs:
            short.append(f"{len(left)} run(s) before it since the previous change or the start; "
                         f"{th.min_baseline_runs} needed")
        worse = t.shift > 0 if better == Better.LOWER else t.shift < 0
        index = present[cut]
        interval = t.effect or compare(series[max(bounds[k], cut - th.baseline_runs):cut], series[cut:bounds[k + 2]],
                                       band=th.min_effect)
        changes.append(Change(
            index=index, pvalue=t.p, before=before, after=after, effect=after.median / before.median - 1,
            direction="worse" if worse else "better", confirmed=not short and t.p <= th.max_pvalue,
            recent=len(values) - index <= th.recent_runs, why_not_confirmed="; ".join(short) or None,
            interval=interval.as_dict()))
    return changes


def readiness(values: list[float | None], changes: list[Change], th: Thresholds) -> dict[str, Any]:
    """What a series can say about its next runs, in words: how many runs its baseline has (since
    the start or its last confirmed change), whether that is enough to alert at all, and by which
    run after a step a moderate step can alert (ranks: the k with 1 / C(B + k, k) <= max_pvalue)."""
    runs = [i for i, v in enumerate(values) if v is not None and not (isinstance(v, float) and math.isnan(v))]
    confirmed = [c.index for c in changes if c.confirmed]
    since = confirmed[-1] if confirmed else 0
    baseline = min(sum(1 for i in runs if i >= since), th.baseline_runs)
    out: dict[str, Any] = {"baseline_runs": baseline, "since": "its last confirmed change" if confirmed else "its start"}
    if baseline < th.min_baseline_runs:
        out.update(can_alert=False, words=f"no baseline yet: {baseline} of the {th.min_baseline_runs} runs a change "
                                          f"needs before it (since {out['since']}); a step can alert once "
                                          f"{th.min_baseline_runs - baseline} more steady run(s) are recorded")
        return out
    k = th.confirm_runs
    while 1.0 / math.comb(baseline + k, k) > th.max_pvalue:
        k += 1
    out.update(can_alert=True, moderate_step_by_run=k,
               words=f"{baseline} baseline runs: a moderate step can alert by its run {k} after it, a step many times "
                     f"the noise by run {th.confirm_runs}")
    return out
