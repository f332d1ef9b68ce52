"""Effect estimates with confidence intervals and verdicts: one estimator for every difference the
project states (study findings, the compare page, servers side by side, trends, regressions, bench
ratios), so that a stated difference always carries its interval, its n and its method.

The effect of B against A is the ratio of their central values, said as a change (``+0.25`` is
25% more). It is estimated on the log scale, where timing noise is close to symmetric and a ratio
is a difference: the Hodges-Lehmann estimator (the median of the pairwise averages, or of the
pairwise differences) with its exact distribution-free interval, from the Wilcoxon signed-rank
distribution when the sides are paired (measured back to back in blocks: drift on a shared machine
cancels) and from the Mann-Whitney distribution when they are not. For log-normal noise the
estimate is the ratio of the medians. Why not scipy's bootstrap: at n = 3 its "95%" interval of a
paired median covers the true effect about 75% of the time (it cannot be wider than the three
values), while the exact method says there is no 95% interval at n = 3; at 5 and 10 the two agree
within a point of coverage (tests/unit/test_statistics.py measures both). The exact interval
keeps its level at any n, needs no symmetry of the raw noise when paired (the difference of two
like noises is symmetric), and an outlier moves it little.

Exact intervals come in steps: the level is the achievable one closest to the asked one (95%), as
long as it is within ``LEVEL_SLACK`` of it, and is stated (93.8% at n = 5 pairs). Below that n there
is no interval, and the verdict says so rather than pretend.

The verdict follows from the interval against a practical-equivalence band (``band``: 3% means
ratios between 1/1.03 and 1.03 are "no difference that matters"): ``more`` or ``less`` only when
the whole interval lies beyond the band, ``same`` when it lies inside, else ``inconclusive``.
"""

from __future__ import annotations

import enum
import math
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Iterable, Sequence

import numpy as np

CONFIDENCE = 0.95
LEVEL_SLACK = 0.02  # an exact interval at 93% or more stands for the 95% one (coverage 92-97% asked)
DEFAULT_BAND = 0.03
EXACT_MAX = 60  # exact null distributions up to this many pairs (or per side); a normal approximation above


class Verdict(str, enum.Enum):
    MORE = "more"                  # the whole interval above the band
    LESS = "less"                  # the whole interval below it
    SAME = "same"                  # the whole interval inside it: no difference larger than the band
    INCONCLUSIVE = "inconclusive"  # the interval straddles a band edge, or there is none


@dataclass(frozen=True)
class Effect:
    """B against A: ``estimate`` and the interval as changes (ratio - 1), or None without one."""

    estimate: float | None
    ci_low: float | None
    ci_high: float | None
    confidence: float | None  # the interval's exact level (None: no interval at this n)
    n_a: int
    n_b: int
    paired: bool
    method: str
    band: float
    verdict: Verdict
    why: str  # what decided the verdict, in words

    @property
    def n(self) -> int:
        """Pairs when paired, else the smaller side."""
        return min(self.n_a, self.n_b)

    def as_dict(self) -> dict:
        out = asdict(self)
        out["verdict"] = self.verdict.value
        out["n"] = self.n
        return out

    def interval_words(self) -> str:
        """"-24.0% (95.9% CI -31.0% .. -17.0%, n=6 vs 6)", or "-24.0% (n=2 vs 2: no 95% interval)"."""
        if self.estimate is None:
            return f"no estimate ({self.why})"
        sample = f"n={self.n} pairs" if self.paired else f"n={self.n_a} vs {self.n_b}"
        if self.ci_low is None:
            return f"{_pct(self.estimate)} ({sample}: no 95% interval)"
        return f"{_pct(self.estimate)} ({100 * self.confidence:.3g}% CI {_pct(self.ci_low)} .. {_pct(self.ci_high)}, {sample})"

    def ratio_words(self) -> str:
        """The effect as a ratio B / A with its interval: "1.050 (93.8% CI 1.010 .. 1.090, n=5 pairs)",
        or "1.050 (n=1 pairs: no 95% interval)" (a bench's side-by-side ratios)."""
        if self.estimate is None:
            return f"no ratio ({self.why})"
        sample = f"n={self.n} pairs" if self.paired else f"n={self.n_a} vs {self.n_b}"
        if self.ci_low is None:
            return f"{1 + self.estimate:.3f} ({sample}: no 95% interval)"
        return (f"{1 + self.estimate:.3f} ({100 * self.confidence:.3g}% CI {1 + self.ci_low:.3f} .. "
                f"{1 + self.ci_high:.3f}, {sample})")

    def verdict_words(self, less: str, more: str) -> str:
        """The verdict in the metric's words (``less``/``more``: "less time"/"more time")."""
        if self.verdict is Verdict.MORE:
            return more
        if self.verdict is Verdict.LESS:
            return less
        if self.verdict is Verdict.SAME:
            return f"no difference larger than {100 * self.band:.3g}%"
        if self.ci_low is None:
            return "inconclusive: too few repetitions for an interval" if self.estimate is not None else "not compared"
        return "inconclusive at this noise: more repetitions or a larger scale factor would tell"


def _pct(change: float) -> str:
    return f"{100 * change:+.1f}%"


@lru_cache(maxsize=None)
def _signed_rank_cdf(n: int) -> np.ndarray:
    """P(T+ <= t) for t = 0 .. n(n+1)/2 under the null (Wilcoxon's signed-rank statistic)."""
    counts = np.zeros(n * (n + 1) // 2 + 1)
    counts[0] = 1.0
    for k in range(1, n + 1):
        counts[k:] = counts[k:] + counts[:-k].copy()
    return np.cumsum(counts) / 2.0 ** n


@lru_cache(maxsize=None)
def _rank_sum_cdf(m: int, n: int) -> np.ndarray:
    """P(U <= u) for u = 0 .. mn under the null (Mann-Whitney), from the Gaussian binomial
    recursion [i+j, i] = [i+j-1, i-1] + q^i [i+j-1, i]."""
    table: dict[tuple[int, int], np.ndarray] = {}
    for i in range(m + 1):
        for j in range(n + 1):
            if i == 0 or j == 0:
                table[(i, j)] = np.ones(1)
                continue
            out = np.zeros(i * j + 1)
            left = table[(i - 1, j)]
            out[: len(left)] += left
            up = table[(i, j - 1)]
            out[i: i + len(up)] += up
            table[(i, j)] = out
    counts = table[(m, n)]
    return np.cumsum(counts) / counts.sum()


def _order_index(cdf: np.ndarray, total: int, confidence: float) -> tuple[int, float] | None:
    """The exact interval's order statistic: ``k`` (1-based) such that [W_(k), W_(total-k+1)] has
    level 1 - 2 P(T <= k-1), the achievable level closest to ``confidence`` and at least
    ``confidence - LEVEL_SLACK``; None when n is too small for that."""
    best = None
    for k in range(1, total // 2 + 1):
        level = 1.0 - 2.0 * float(cdf[k - 1])
        if level < confidence - LEVEL_SLACK:
            break
        if best is None or abs(level - confidence) < abs(best[1] - confidence):
            best = (k, level)
    return best


def _normal_index(total: int, mean: float, sd: float, confidence: float) -> tuple[int, float]:
    from scipy.stats import norm

    z = norm.ppf(0.5 + confidence / 2)
    k = max(1, int(math.floor(mean - z * sd)))
    return min(k, total // 2 or 1), confidence


def _logs(values: Iterable[float], counts: bool) -> np.ndarray:
    data = np.asarray([float(v) for v in values], dtype=float)
    return np.log1p(data) if counts else np.log(data)


def compare(a: Sequence[float], b: Sequence[float], *, paired: bool = False, band: float = DEFAULT_BAND,
            confidence: float = CONFIDENCE, counts: bool = False) -> Effect:
    """The effect of B against A (ratio of central values - 1) with its exact interval and verdict.

    ``paired``: a[i] and b[i] were measured in the same block (back to back), so the estimate is
    made on the per-block ratios. ``counts``: the values are event counts that may be 0 (physical
    reads), compared as 1 + count. Non-finite values are left out, and said so in ``why``; a
    non-positive time or rate leaves no estimate."""
    method = ("Hodges-Lehmann on paired log ratios, exact Wilcoxon signed-rank interval" if paired
              else "Hodges-Lehmann on log ratios, exact Mann-Whitney interval")
    if counts:
        method += " (counts compared as 1 + count)"
    a_values, b_values = list(a), list(b)
    if paired and len(a_values) != len(b_values):
        raise ValueError(f"paired samples need one value per block on each side: {len(a_values)} vs {len(b_values)}")
    if paired:  # a block missing a value on either side drops out whole
        keep = [(x, y) for x, y in zip(a_values, b_values, strict=True) if _finite(x) and _finite(y)]
        a_values, b_values = [x for x, _ in keep], [y for _, y in keep]
    else:
        a_values, b_values = [x for x in a_values if _finite(x)], [y for y in b_values if _finite(y)]
    n_a, n_b = len(a_values), len(b_values)

    def none(why: str) -> Effect:
        return Effect(None, None, None, None, n_a, n_b, paired, method, band, Verdict.INCONCLUSIVE, why)

    if n_a == 0 or n_b == 0:
        return none("no measured value on one side")
    floor = -1.0 if counts else 0.0
    if min(a_values + b_values) <= floor:
        return none("a value is zero or negative: a ratio is undefined")
    la, lb = _logs(a_values, counts), _logs(b_values, counts)
    if paired:
        d = lb - la
        i, j = np.triu_indices(len(d))
        pool = np.sort((d[i] + d[j]) / 2.0)  # Walsh averages
        n = len(d)
        if n <= EXACT_MAX:
            found = _order_index(_signed_rank_cdf(n), len(pool), confidence)
        else:
            found = _normal_index(len(pool), n * (n + 1) / 4, math.sqrt(n * (n + 1) * (2 * n + 1) / 24), confidence)
    else:
        pool = np.sort((lb[None, :] - la[:, None]).ravel())  # every B - A difference
        if max(n_a, n_b) <= EXACT_MAX:
            found = _order_index(_rank_sum_cdf(n_a, n_b), len(pool), confidence)
        else:
            found = _normal_index(len(pool), n_a * n_b / 2, math.sqrt(n_a * n_b * (n_a + n_b + 1) / 12), confidence)
    estimate = float(np.expm1(np.median(pool)))
    if found is None:
        sample = f"{n_a} pairs" if paired else f"{n_a} vs {n_b} values"
        return Effect(estimate, None, None, None, n_a, n_b, paired, method, band, Verdict.INCONCLUSIVE,
                      f"{sample} are too few for a {100 * confidence:.0f}% interval")
    k, level = found
    low, high = float(np.expm1(pool[k - 1])), float(np.expm1(pool[len(pool) - k]))
    verdict, why = decide(low, high, band)
    return Effect(estimate, low, high, level, n_a, n_b, paired, method, band, verdict, why)


def rank_sum_pvalue(a: Sequence[float], b: Sequence[float], greater: bool) -> float:
    """One-sided Mann-Whitney p-value that B lies above A (``greater``) or below it: exact (from
    the same null distribution as ``compare``'s unpaired interval) up to ``EXACT_MAX`` values per
    side, a normal approximation with continuity correction above. Ties count one half. Works on
    any monotone transform of the values alike (ranks only)."""
    xa, xb = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    m, n = len(xa), len(xb)
    if m == 0 or n == 0:
        return 1.0
    diff = xb[None, :] - xa[:, None]
    u = float(np.sum(diff > 0) + 0.5 * np.sum(diff == 0))  # pairs with B above A
    if not greater:
        u = m * n - u
    if max(m, n) <= EXACT_MAX:
        # P(U >= u) = 1 - P(U <= ceil(u) - 1); a half from a tie rounds toward the null
        k = math.ceil(u) - 1
        return 1.0 if k < 0 else float(max(0.0, 1.0 - _rank_sum_cdf(m, n)[k]))
    from scipy.stats import norm

    z = (u - 0.5 - m * n / 2) / math.sqrt(m * n * (m + n + 1) / 12)
    return float(norm.sf(z))


def decide(low: float, high: float, band: float) -> tuple[Verdict, str]:
    """The verdict an interval (as changes) supports against the band (symmetric on the log scale)."""
    edge = math.log1p(band)
    lo, hi = math.log1p(low), math.log1p(high)
    if lo > edge:
        return Verdict.MORE, f"the whole interval is above +{100 * band:.3g}%"
    if hi < -edge:
        return Verdict.LESS, f"the whole interval is below -{100 * band:.3g}%"
    if -edge <= lo and hi <= edge:
        return Verdict.SAME, f"the whole interval is within ±{100 * band:.3g}%"
    return Verdict.INCONCLUSIVE, (f"{100 * low:+.0f}% .. {100 * high:+.0f}% straddles ±{100 * band:.3g}%: more repetitions "
                                  "or a larger scale factor would tell")


def _finite(value) -> bool:
    try:
        return value is not None and math.isfinite(float(value))
    except (TypeError, ValueError):
        return False
