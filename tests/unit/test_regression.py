"""Change-point detection on captured series: the traps (NaN, a flat series, one outlier at the
end, one in the middle), a real step, the medians' effect rule, false alarms on series recorded
from real runs without a change, and the regression spec's validation."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest

from mysqlbench.errors import InvalidInput
from mysqlbench.regression.detect import change_points
from mysqlbench.regression.history import primary_metric
from mysqlbench.regression.spec import RegressionSpec, check_suite, load_regression
from mysqlbench.workloads.base import Better

DATA = Path(__file__).resolve().parents[1] / "data" / "regression"
SHIPPED = load_regression(Path(__file__).resolve().parents[2] / "include/configs/regression/nightly_regression.yaml")
T = SHIPPED.thresholds


def noisy(n: int, level: float, spread: float = 0.02, seed: int = 7) -> list[float]:
    rng = random.Random(seed)
    return [level * (1 + rng.gauss(0, spread)) for _ in range(n)]


def test_a_step_is_found_at_its_run_with_both_sides():
    series = noisy(12, 0.10) + noisy(6, 0.14, seed=8)
    [change] = change_points(series, T, Better.LOWER)
    assert change.index == 12 and change.regression and change.confirmed and change.alert
    assert change.before.runs == list(range(12)) and change.after.runs == list(range(12, 18))
    assert change.before.median == pytest.approx(0.10, rel=0.03) and change.after.median == pytest.approx(0.14, rel=0.03)
    assert change.effect == pytest.approx(0.4, abs=0.05) and change.pvalue < T.max_pvalue


def test_a_change_is_said_with_its_interval_over_one_value_per_run():
    """The shared estimator on the runs either side (12 before, 6 after, unpaired): the +40% step
    inside its interval, the verdict from the interval against the spec's min_effect."""
    series = noisy(12, 0.10) + noisy(6, 0.14, seed=8)
    [change] = change_points(series, T, Better.LOWER)
    i = change.interval
    assert (i["n_a"], i["n_b"], i["paired"]) == (12, 6, False) and i["band"] == T.min_effect
    assert i["estimate"] == pytest.approx(0.4, abs=0.03) and T.min_effect < i["ci_low"] < i["estimate"] < i["ci_high"]
    assert i["verdict"] == "more"
    assert change.interval_words.startswith(f"{100 * i['estimate']:+.1f}% (")
    assert "CI" in change.interval_words and "12 runs before vs 6 after): more" in change.interval_words
    assert change.as_dict()["interval_words"] == change.interval_words


def test_a_step_is_blamed_on_what_differs_between_its_sides_not_on_the_last_change():
    """Issue 23's q18: optimizer_search_depth changed two runs before the step, so both sides ran
    with it; the step's run changed the plan. Only the plan differs between the sides."""
    from mysqlbench.regression.history import sides_differences

    def run(variables, plan, version="10.11.6"):
        return {"variables_hash": variables, "plan_hash": plan, "server_version": version,
                "package_version": "abc", "spec_hash": "s1"}
    before = [run("depth62", "p1"), run("depth62", "p1"), run("depth2", "p1"), run("depth2", "p1"), run("depth2", "p1")]
    after = [run("depth2", "p2"), run("depth2", "p2"), run("depth2", "p2")]
    assert sides_differences(before, after) == [{"event": "plan", "field": "plan_hash", "before": "p1", "after": "p2"}]
    # a change every run on each side shares, and one the sides disagree on entirely, are both found
    after = [run("depth1", "p2", "10.11.7")] * 3
    blamed = {b["field"]: (b["before"], b["after"]) for b in sides_differences(before, after)}
    assert blamed == {"server_version": ("10.11.6", "10.11.7"), "variables_hash": ("depth2", "depth1"),
                      "plan_hash": ("p1", "p2")}


def test_direction_follows_the_metric():
    series = noisy(12, 1000.0) + noisy(6, 700.0, seed=8)  # throughput down: worse for a higher-is-better metric
    assert change_points(series, T, Better.HIGHER)[0].regression
    assert not change_points(series, T, Better.LOWER)[0].regression  # the same drop in seconds is an improvement


def test_nan_runs_are_taken_out_not_fatal():
    """Otava finds nothing in a series with one NaN; the run without a value is left out and the
    change is still found, at its position in the whole series."""
    series = noisy(12, 0.10) + noisy(6, 0.14, seed=8)
    series[4] = float("nan")
    series[14] = None
    [change] = change_points(series, T, Better.LOWER)
    assert change.index == 12 and 4 not in change.before.runs and 14 not in change.after.runs


def test_a_flat_series_and_a_tiny_step_are_not_changes():
    assert change_points([0.5] * 20, T, Better.LOWER) == []
    # Otava gives p = 0 to any step in a flat series: the effect size keeps a 1% step out
    assert change_points([0.5] * 10 + [0.505] * 10, T, Better.LOWER) == []


def test_the_effect_is_measured_on_the_medians_not_the_means():
    """Spikes in one run out of three lift the mean by half (Otava's t-test on the means finds a
    change at p = 0.006) while the typical run has not moved: not a change."""
    series = noisy(14, 0.1) + [0.105, 0.25, 0.104, 0.106, 0.25, 0.105, 0.104, 0.25, 0.105, 0.106]
    assert change_points(series, T.model_copy(update={"max_pvalue": 0.05}), Better.LOWER) == []


def test_a_single_outlier_at_the_end_does_not_alert():
    series = noisy(20, 0.10) + [0.30]
    changes = change_points(series, T, Better.LOWER)
    assert all(not c.confirmed and not c.alert for c in changes)
    assert changes and changes[0].index == 20  # seen, and held back by the confirmation rule


def test_a_single_outlier_in_the_middle_does_not_alert():
    series = noisy(10, 0.10) + [0.30] + noisy(10, 0.10, seed=9)
    assert not any(c.alert for c in change_points(series, T, Better.LOWER))


def test_a_step_after_too_short_a_baseline_is_held_back():
    """Three fast runs, then the rest slower: with three runs the baseline's spread is not known
    (recorded: tpch_power q06, bimodal noise on a shared core, flagged at p = 7e-7 without this rule)."""
    series = noisy(3, 0.10) + noisy(6, 0.16, seed=8)
    [change] = change_points(series, T, Better.LOWER)
    assert change.index == 3 and not change.confirmed and not change.alert
    assert "3 run(s) before it" in change.why_not_confirmed
    # the rule is a spec parameter: six runs before a +60% step alert at the default, not at 7
    series = noisy(6, 0.10) + noisy(6, 0.16, seed=8)
    assert change_points(series, T, Better.LOWER)[0].alert
    [held] = change_points(series, T.model_copy(update={"min_baseline_runs": 7}), Better.LOWER)
    assert not held.alert and "6 run(s) before it" in held.why_not_confirmed


def test_an_old_change_is_known_not_alerted():
    series = noisy(10, 0.10) + noisy(20, 0.14, seed=8)
    [change] = change_points(series, T, Better.LOWER)
    assert change.confirmed and change.regression and not change.recent and not change.alert


def test_too_short_a_series_has_no_change():
    assert change_points([0.1, 0.3], T, Better.LOWER) == []


def test_thresholds_are_spec_parameters():
    series = noisy(12, 0.10) + noisy(6, 0.108, seed=8)  # an 8% step
    assert change_points(series, T, Better.LOWER) == []
    loose = T.model_copy(update={"min_effect": 0.05})
    assert change_points(series, loose, Better.LOWER)[0].index == 12
    assert not change_points(noisy(12, 0.10) + noisy(2, 0.14, seed=8), T, Better.LOWER)[0].confirmed
    assert change_points(noisy(12, 0.10) + noisy(2, 0.14, seed=8), T.model_copy(update={"confirm_runs": 2}),
                         Better.LOWER)[0].confirmed


def _captured() -> list[tuple[str, Better, list[float]]]:
    out = []
    for path in sorted(DATA.glob("*.json")):
        data = json.loads(path.read_text())
        out += [(f"{path.name}: {s['label']}", primary_metric(s["key"]["study"]).better, s["values"])
                for s in data["series"]]
    return out


def test_no_false_alarm_on_series_recorded_without_a_change():
    """Series captured from real runs on this project's servers (nothing changed between runs;
    tests/data/regression/README.md says how they were recorded), analysed as the nightly sweep
    would after each of their runs: no alert at the shipped thresholds, and no confirmed change in
    the whole series."""
    captured = _captured()
    assert len(captured) >= 8 and all(len(values) >= 25 for _, _, values in captured)
    alerts = {label: [n for n in range(4, len(values) + 1)
                      if any(c.alert for c in change_points(values[:n], T, better))]
              for label, better, values in captured}
    assert {label: runs for label, runs in alerts.items() if runs} == {}
    confirmed = {label: [(c.index, round(c.effect, 3)) for c in change_points(values, T, better) if c.confirmed]
                 for label, better, values in captured}
    assert {label: found for label, found in confirmed.items() if found} == {}


def test_the_shipped_specs_are_valid_and_their_suites_check():
    check_suite(SHIPPED)
    assert SHIPPED.analysed_studies() == ["tpch_power", "tpch_bka_study", "tpch_mrr_study", "tpcc_bp_sweep_study",
                                          "sysbench_oltp"]


@pytest.mark.parametrize("change,message", [
    ({"schedule": "61 2 * * *"}, "neither a cron expression"),
    ({"suite": [{"study": "tpch_power", "conf": {"repetitons": 3}}]}, "repetitons"),
    ({"suite": [{"study": "no_such_study"}]}, "no study spec 'no_such_study'"),
    ({"suite": [{"study": "tpch_power; DROP"}]}, "study name"),
    ({"thresholds": {"min_effect": 0}}, "min_effect"),
    ({"thresholds": {"confirm_runs": 5, "recent_runs": 3}}, "nothing could alert"),
    ({"notifiers": [{"class": "os.system"}]}, "not an Airflow BaseNotifier"),
    ({"schedule": "on_publish"}, "runs no suite"),
])
def test_bad_regression_specs_are_refused_with_the_field(change, message):
    raw = SHIPPED.model_dump(mode="json", by_alias=True) | change
    with pytest.raises((InvalidInput, ValueError), match=message):
        check_suite(RegressionSpec.model_validate(raw))


def test_broken_regression_specs_are_reported_with_their_file(tmp_path, monkeypatch):
    from mysqlbench.regression.factory import regression_errors

    (tmp_path / "bad.yaml").write_text("regression: nightly_bad\nschedule: '0 2 * * *'\n"
                                       "suite: [{study: tpch_power, conf: {repetitons: 3}}]\n")
    (tmp_path / "twice.yaml").write_text("regression: nightly_regression\nschedule: on_publish\n")
    monkeypatch.setenv("MYSQLBENCH_REGRESSION_DIRS", str(tmp_path))
    problems = regression_errors()
    assert len(problems) == 2
    assert any(str(tmp_path / "bad.yaml") in p and "repetitons" in p for p in problems)
    assert any(str(tmp_path / "twice.yaml") in p and "also defined in" in p for p in problems)


Q08 = [0.030, 0.021, 0.023, 0.023, 0.024, 0.711, 0.364, 0.279, 0.292]  # issue 23 item 1, seconds per run


def test_the_recorded_q08_regression_alerts_by_its_third_slow_run():
    """Issue 23's q08 (optimizer_search_depth 2, a new plan, 12-30x slower; recorded on a busy
    machine, so the slow runs vary by half): Otava's t-test found it after two slow runs and lost
    it after three and four. The rank test alone cannot be surer than 1 / C(9, 4) with five runs
    before; the step measured in the baseline's own spread is, and the interval says how large."""
    for n in (6, 7):  # one and two slow runs: seen, held back
        [change] = change_points(Q08[:n], T, Better.LOWER)
        assert change.index == 5 and not change.alert and "needed" in change.why_not_confirmed
    for n in (8, 9):
        [change] = change_points(Q08[:n], T, Better.LOWER)
        assert change.index == 5 and change.confirmed and change.alert and change.pvalue <= T.max_pvalue
        assert change.interval["verdict"] == "more" and change.interval["ci_low"] > 5  # at least 6x slower


def _item_2_series(seed: int) -> list[float]:
    """Issue 23's item 2, built from its description: a steady query (CV ~15%), one bad night
    (100x: a lock wait, a backup), steady again, then a sustained 15-35x regression of four runs."""
    rng = random.Random(seed)

    def steady(n: int) -> list[float]:
        return [0.02 * math.exp(rng.gauss(0, 0.15)) for _ in range(n)]
    return steady(12) + [2.0] + steady(8) + [0.3, 0.5, 0.7, 0.4]


@pytest.mark.parametrize("seed", range(5))
def test_an_earlier_bad_night_neither_alerts_nor_hides_a_later_regression(seed):
    series = _item_2_series(seed)
    night, step = 12, 21
    nightly = {n: [c for c in change_points(series[:n], T, Better.LOWER) if c.alert] for n in range(4, len(series) + 1)}
    assert not any(abs(c.index - night) <= 1 for alerts in nightly.values() for c in alerts)  # never the bad night
    assert [c.index for c in nightly[step + 3]] == [step]  # the step, by its third run
    assert all(not alerts for n, alerts in nightly.items() if n <= step)  # nothing before it


def test_the_detector_decides_on_ranks_and_the_interval_not_on_otava_alone():
    """What Otava's t-test on the raw values makes of item 2 (nothing at all, even at p 0.05),
    against the detector: the bad night's variance must not decide."""
    from otava.analysis import compute_change_points

    series = _item_2_series(0)
    found, _ = compute_change_points(series, window_len=30, max_pvalue=0.001)
    assert not any(abs(int(cp.index) - 21) <= 1 for cp in found)
    assert any(c.alert and c.index == 21 for c in change_points(series, T, Better.LOWER))


def _quantile_baseline(cv: float = 0.10) -> list[float]:
    """Twenty runs at the normal quantiles of a 10% noise, in a shuffled order: a baseline whose
    ranks and spread are known exactly."""
    from statistics import NormalDist

    values = [math.exp(cv * NormalDist().inv_cdf((i + 0.5) / 20)) for i in range(20)]
    return [values[i] for i in (3, 17, 8, 12, 0, 19, 6, 14, 10, 1, 16, 5, 11, 18, 2, 9, 15, 7, 13, 4)]


def test_the_rank_test_decides_at_max_pvalue():
    """Three runs after twenty, one of them below the baseline's highest run: Mann-Whitney p =
    2 / C(23, 3) = 0.0011, just above the shipped 0.001 (and the step too small for the t-test on
    the baseline's spread): no alert; at max_pvalue 0.005 it alerts."""
    series = _quantile_baseline() + [1.32, 1.30, 1.16]
    assert not [c for c in change_points(series, T, Better.LOWER) if c.alert]
    [change] = change_points(series, T.model_copy(update={"max_pvalue": 0.005}), Better.LOWER)
    assert change.alert and change.index == 20 and change.pvalue == pytest.approx(2 / math.comb(23, 3))


def test_an_outlier_night_in_the_baseline_is_left_out_of_the_test():
    """A 100x night in the baseline stands above a later 1.5x step: counted, it would leave that
    step three ranks short (p = 7 / C(23, 3) = 0.004) until many more runs came."""
    baseline = _quantile_baseline()
    baseline[5] = 100.0
    [change] = [c for c in change_points(baseline + [1.5, 1.55, 1.6], T, Better.LOWER) if c.alert]
    assert change.index == 20 and change.pvalue <= 1 / math.comb(22, 3)
    assert (change.interval["n_a"], change.interval["n_b"]) == (19, 3)  # the night is not in the sample


def test_a_series_says_when_it_can_alert():
    """A new series has no baseline and says from when it will; with a baseline, by which run
    after a step a moderate one can alert (1 / C(B + k, k) <= max_pvalue)."""
    from mysqlbench.regression.detect import readiness

    young = readiness([0.1, 0.11, 0.1], [], T)
    assert not young["can_alert"] and "no baseline yet: 3 of the 5" in young["words"] and "2 more" in young["words"]
    grown = readiness(noisy(10, 0.1), [], T)
    assert grown["can_alert"] and grown["moderate_step_by_run"] == 4  # C(14, 4) = 1001 >= 1000
    assert readiness(noisy(30, 0.1), [], T)["moderate_step_by_run"] == 3  # 20 baseline runs: C(23, 3)
    assert "run 4 after it" in grown["words"]


def test_the_split_costs_median_is_numpys_bit_for_bit():
    """``detect._median`` (the split cost's fast median) gives exactly what ``np.median`` gives, for
    odd and even lengths, ties and one value: a cut the detector picks must not move with it."""
    import numpy as np

    from mysqlbench.regression.detect import _median

    rng = np.random.default_rng(7)
    for n in range(1, 41):
        for values in (rng.lognormal(size=n), np.round(rng.normal(size=n), 1)):
            assert _median(values) == float(np.median(values)), (n, values)
    assert _median(np.array([3.0, 1.0])) == 2.0 and _median(np.array([5.0])) == 5.0
    assert math.isnan(_median(np.array([])))
