"""The shared effect estimator (plugins/mysqlbench/statistics.py) on simulated measurements with a
known effect, 2,000 comparisons per case, fixed seed: log-normal noise of CV 10-50%, a level that
moves from block to block (a shared machine), drift inside a block (the second of a pair runs a
little slower; the order alternates), and outliers (3-5x hiccups). Its 95% interval must cover the
true effect 92-97% of the time wherever n allows an interval, and say "inconclusive" where it does
not; a verdict must follow from the interval."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mysqlbench.statistics import Verdict, compare, decide

N = 2000
SEED = 20261204


def simulate(rng, n, ratio, cv, *, block_cv=0.3, drift=0.05, outliers=0.0):
    """n blocks of (A, B) pairs: B's true level is ``ratio`` times A's."""
    sigma = math.sqrt(math.log1p(cv ** 2))
    block = np.exp(rng.normal(0, math.sqrt(math.log1p(block_cv ** 2)), n))
    a = block * np.exp(rng.normal(0, sigma, n))
    b = ratio * block * np.exp(rng.normal(0, sigma, n))
    b_second = np.arange(n) % 2 == 0  # alternating order: whoever runs second pays the drift
    b = np.where(b_second, b * (1 + drift), b)
    a = np.where(~b_second, a * (1 + drift), a)
    for side in (a, b):
        hit = rng.random(n) < outliers
        side[hit] *= rng.uniform(3, 5, hit.sum())
    return a, b


def coverage(n, ratio, cv, *, paired=True, **noise):
    rng = np.random.default_rng(SEED + n)
    covered = intervals = 0
    for _ in range(N):
        a, b = simulate(rng, n, ratio, cv, **noise)
        if not paired:
            rng.shuffle(b)  # independent sides: no block shared by a pair
        effect = compare(a, b, paired=paired)
        if effect.ci_low is None:
            assert effect.verdict is Verdict.INCONCLUSIVE and "too few" in effect.why
            continue
        assert effect.ci_low <= effect.estimate <= effect.ci_high
        intervals += 1
        covered += effect.ci_low <= ratio - 1 <= effect.ci_high
    return covered / intervals if intervals else None, intervals


CASES = [  # (n, true ratio, CV, noise)
    (5, 1.25, 0.10, {}),
    (5, 0.70, 0.50, {}),
    (5, 1.10, 0.30, {"outliers": 0.10}),
    (10, 1.25, 0.10, {}),
    (10, 0.70, 0.50, {}),
    (10, 1.10, 0.30, {"outliers": 0.10, "drift": 0.10}),
]


@pytest.mark.parametrize("n,ratio,cv,noise", CASES)
def test_the_paired_interval_covers_the_true_effect(n, ratio, cv, noise):
    rate, intervals = coverage(n, ratio, cv, **noise)
    assert intervals == N  # 5 pairs and more always give an interval
    assert 0.92 <= rate <= 0.97, rate


@pytest.mark.parametrize("n,ratio,cv", [(5, 1.25, 0.3), (10, 0.7, 0.5)])
def test_the_unpaired_interval_covers_the_true_effect(n, ratio, cv):
    rate, intervals = coverage(n, ratio, cv, paired=False, block_cv=0.0, drift=0.0)
    assert intervals == N and 0.92 <= rate <= 0.97, rate


@pytest.mark.parametrize("n,sides", [(1, (True, False)), (2, (True, False)), (3, (True, False)), (4, (True,))])
def test_too_few_repetitions_give_no_interval_and_an_inconclusive_verdict(n, sides):
    """The shipped TPC-C specs repeat once and make demo twice: no 95% interval exists there (4
    pairs reach 87.5% at most; 4 values a side unpaired reach 94.3%, which stands)."""
    rng = np.random.default_rng(SEED)
    for paired in sides:
        a, b = simulate(rng, n, 3.0, 0.05)
        effect = compare(a, b, paired=paired)
        assert effect.ci_low is None and effect.confidence is None
        assert effect.verdict is Verdict.INCONCLUSIVE and "too few for a 95% interval" in effect.why
        assert effect.estimate == pytest.approx(2.0, abs=0.5)  # the estimate is still said
        assert "no 95% interval" in effect.interval_words()


def test_the_level_is_the_exact_one_and_said():
    rng = np.random.default_rng(SEED)
    a, b = simulate(rng, 5, 1.2, 0.1)
    assert compare(a, b, paired=True).confidence == pytest.approx(1 - 2 / 32)  # [min, max] of 5 pairs
    a, b = simulate(rng, 10, 1.2, 0.1)
    assert compare(a, b, paired=True).confidence == pytest.approx(0.951, abs=0.001)
    assert "95.1% CI" in compare(a, b, paired=True).interval_words()


def test_pairing_cancels_the_blocks_level():
    """A 10% effect under a level that moves 50% between blocks, 3% noise within: paired, the
    effect is found nearly always; the same values compared unpaired cannot tell."""
    rng = np.random.default_rng(SEED)
    paired = unpaired = 0
    for _ in range(500):
        a, b = simulate(rng, 10, 1.10, 0.03, block_cv=0.5, drift=0.0)
        paired += compare(a, b, paired=True).verdict is Verdict.MORE
        unpaired += compare(a, b, paired=False).verdict is Verdict.MORE
    assert paired / 500 > 0.95 and unpaired / 500 < 0.2, (paired, unpaired)


def test_no_effect_is_rarely_called_an_effect():
    """With no true effect, 'more' or 'less' is a false claim: at most the interval's 5%, split."""
    rng = np.random.default_rng(SEED)
    false_claims = same = 0
    for _ in range(N):
        a, b = simulate(rng, 10, 1.0, 0.3, outliers=0.05)
        verdict = compare(a, b, paired=True).verdict
        false_claims += verdict in (Verdict.MORE, Verdict.LESS)
        same += verdict is Verdict.SAME
    assert false_claims / N <= 0.05
    rng = np.random.default_rng(SEED)
    quiet = sum(compare(*simulate(rng, 10, 1.0, 0.01, block_cv=0.2, drift=0.0), paired=True).verdict is Verdict.SAME
                for _ in range(200))
    assert quiet / 200 > 0.95  # little noise, no effect: "no difference larger than 3%"


def test_one_outlier_moves_the_estimate_little():
    a = np.array([1.00, 1.02, 0.99, 1.01, 1.00, 0.98, 1.01])
    b = a * 1.5
    b_hiccup = b.copy()
    b_hiccup[3] *= 10
    assert compare(a, b_hiccup, paired=True).estimate == pytest.approx(0.5, abs=0.05)
    assert compare(a, b_hiccup, paired=False).estimate == pytest.approx(0.5, abs=0.1)


@pytest.mark.parametrize("low,high,band,verdict", [
    (0.05, 0.20, 0.03, Verdict.MORE),
    (-0.30, -0.04, 0.03, Verdict.LESS),
    (-0.02, 0.02, 0.03, Verdict.SAME),
    (-0.24, 0.51, 0.03, Verdict.INCONCLUSIVE),
    (0.01, 0.20, 0.03, Verdict.INCONCLUSIVE),   # above 0 but not beyond the band: not "more"
    (0.05, 0.20, 0.10, Verdict.INCONCLUSIVE),   # a wider band needs a larger effect
    (-0.02, 0.02, 0.01, Verdict.INCONCLUSIVE),
    (0.03, 0.20, 0.03, Verdict.INCONCLUSIVE),   # touching the band's edge is not wholly beyond it
    (-0.01, 0.03, 0.03, Verdict.SAME),          # the edge itself is inside the band
])
def test_the_verdict_follows_from_the_interval_and_the_band(low, high, band, verdict):
    assert decide(low, high, band)[0] is verdict


def test_counts_with_zeros_are_compared_and_times_with_zeros_are_not():
    cold_reads_off, cold_reads_on = [4000, 4100, 3900, 4050, 3980], [2500, 2450, 2600, 2480, 2550]
    effect = compare(cold_reads_off, cold_reads_on, counts=True)
    assert effect.verdict is Verdict.LESS and effect.estimate == pytest.approx(-0.38, abs=0.03)
    assert compare([0, 0, 0, 0, 0], [0, 0, 0, 0, 0], counts=True).verdict is Verdict.SAME
    no_ratio = compare([0.0, 1.0, 1.0], [1.0, 1.0, 1.0])
    assert no_ratio.estimate is None and "zero" in no_ratio.why
    lost = compare([1.0, float("nan"), 1.1, 1.0, 0.9, 1.0], [1.2, 1.3, 1.2, 1.25, 1.2, 1.3], paired=True)
    assert lost.n == 5  # a missing value drops its pair, not the comparison


def test_a_bootstrap_interval_at_three_repetitions_claims_more_than_it_covers():
    """Why the exact interval (module docstring): scipy's paired bootstrap of the median ratio at
    n = 3 calls its interval 95% and covers the true effect far less often; at n = 10 both keep
    their level."""
    from scipy import stats

    rng = np.random.default_rng(SEED)

    def ratio_of_pairs(x, y, axis=-1):
        return np.median(y / x, axis=axis)

    def boot_coverage(n, runs=500):
        hits = 0
        for _ in range(runs):
            a, b = simulate(rng, n, 1.25, 0.3)
            low, high = stats.bootstrap((a, b), ratio_of_pairs, paired=True, vectorized=True, n_resamples=999,
                                        method="percentile", rng=rng).confidence_interval
            hits += low <= 1.25 <= high
        return hits / runs

    assert boot_coverage(3) < 0.85
    assert boot_coverage(10) > 0.9


def test_beyond_the_exact_tables_the_normal_approximation_keeps_the_level():
    """Above 60 per side (a long sysbench or TPC-C interval series) the order statistic comes from
    the normal approximation; its interval still covers the true effect at about 95%."""
    rng = np.random.default_rng(SEED)
    for paired in (True, False):
        covered = 0
        for _ in range(400):
            a, b = simulate(rng, 70, 1.1, 0.3, block_cv=0.0 if not paired else 0.3, drift=0.0)
            effect = compare(a, b, paired=paired)
            assert effect.confidence == 0.95
            covered += effect.ci_low <= 0.1 <= effect.ci_high
        assert 0.92 <= covered / 400 <= 0.98, (paired, covered)


def test_a_bench_ratio_is_said_with_its_interval_and_pairs():
    """make bench's side-by-side ratios: B / A with the paired interval, or that one pair has none."""
    plain = [10.0, 10.4, 9.8, 10.1, 10.2, 9.9, 10.3]
    ours = [p * 0.8 for p in plain]
    words = compare(plain, ours, paired=True).ratio_words()
    assert words.startswith("0.800 (") and "CI 0.800 .. 0.800, n=7 pairs)" in words
    assert compare([10.0], [8.0], paired=True).ratio_words() == "0.800 (n=1 pairs: no 95% interval)"


def test_the_recorded_method_says_which_design_was_analysed():
    """An effect records how it was made (the report and the store show it): paired blocks by the
    signed-rank interval, unpaired sides by the Mann-Whitney one, counts as 1 + count. (Killed the
    mutants of `make mutate` that turned the paired label into the unpaired one and back.)"""
    a, b = [1.0, 1.1, 0.9, 1.05, 0.98, 1.02], [1.2, 1.3, 1.1, 1.25, 1.18, 1.22]
    assert compare(a, b, paired=True).method == \
        "Hodges-Lehmann on paired log ratios, exact Wilcoxon signed-rank interval"
    assert compare(a, b).method == "Hodges-Lehmann on log ratios, exact Mann-Whitney interval"
    assert compare([0, 3, 2, 5], [4, 6, 5, 9], counts=True).method.endswith(" (counts compared as 1 + count)")


@pytest.mark.parametrize("m,n", [(1, 6), (4, 7), (9, 5), (40, 45), (70, 65)])
def test_the_rank_sum_pvalue_is_scipys_mann_whitney(m, n):
    """The change-point detector's rank test, against scipy's own Mann-Whitney U (exact up to
    EXACT_MAX values a side, normal with continuity correction above), in both directions; an
    empty side proves nothing. (Killed the mutants of `make mutate` that counted a one-value side
    as empty or took the other direction's U as m / n - u.)"""
    from scipy.stats import mannwhitneyu

    from mysqlbench.statistics import EXACT_MAX, rank_sum_pvalue

    rng = np.random.default_rng(m * 100 + n)
    a, b = rng.normal(0, 1, m), rng.normal(0.8, 1, n)  # continuous: no ties
    method = "exact" if max(m, n) <= EXACT_MAX else "asymptotic"
    for greater, alternative in ((True, "greater"), (False, "less")):
        want = mannwhitneyu(b, a, alternative=alternative, method=method, use_continuity=True).pvalue
        assert rank_sum_pvalue(a, b, greater=greater) == pytest.approx(want, rel=1e-9, abs=1e-12), (greater, m, n)
    assert rank_sum_pvalue([], b, greater=True) == 1.0 == rank_sum_pvalue(a, [], greater=False)
