"""Change-point detection on captured series: the traps (NaN, a flat series, one outlier at the
end, one in the middle), a real step, the medians' effect rule, false alarms on series recorded
from real runs without a change, and the regression spec's validation."""

from __future__ import annotations

import json
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
    assert change_points(series, T.model_copy(update={"min_baseline_runs": 3}), Better.LOWER)[0].alert


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
