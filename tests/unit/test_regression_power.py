"""The regression detector's power table (issue 23): a reduced, seeded table regenerated here and
compared with the shipped one (docs/regression-power.json, made by bench/regression_power.py), and
the acceptance goals asserted on the shipped table where it says they are met."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SHIPPED = json.loads((REPO / "docs/regression-power.json").read_text())
sys.path.insert(0, str(REPO / "bench"))


def _cell(cells: list[dict], **key) -> dict:
    [found] = [c for c in cells if all(c[k] == v for k, v in key.items())]
    return found


def _tolerance(p: float, n_small: int, n_big: int) -> float:
    """Four standard errors of the difference of two shares, and never below 15 points."""
    p = min(max(p, 0.05), 0.95)
    return max(0.15, 4 * math.sqrt(p * (1 - p) * (1 / n_small + 1 / n_big)))


def test_the_shipped_table_was_made_at_the_shipped_thresholds():
    from regression_power import SHIPPED as SPEC

    from mysqlbench.regression.spec import load_regression

    assert SHIPPED["plan"]["thresholds"] == load_regression(SPEC).thresholds.model_dump()


def test_a_reduced_table_regenerated_here_agrees_with_the_shipped_one():
    """Same generator, noise fit, thresholds and seed, fewer cells and series (about a minute on
    one core): every share within sampling error of the shipped cell, and the alarms as rare."""
    from regression_power import build

    reduced = json.loads(json.dumps(build(reduced=True, workers=1)))  # as the shipped JSON reads
    assert reduced["noise"] == SHIPPED["noise"]  # the same recorded histories, fitted alike
    n_big = SHIPPED["plan"]["series_per_cell"]
    for cell in reduced["detection"] + reduced["after_outlier"]:
        group = "detection" if cell in reduced["detection"] else "after_outlier"
        shipped = _cell(SHIPPED[group], cv=cell["cv"], factor=cell["factor"], direction=cell["direction"])
        for k in ("3", "5", "7"):
            ours, theirs = cell["found_by_run"][k], shipped["found_by_run"][k]
            assert abs(ours - theirs) <= _tolerance(theirs, cell["n"], n_big), (group, cell["cv"], cell["factor"],
                                                                                cell["direction"], k, ours, theirs)
    for single in reduced["single_outlier"]:
        assert single["alerted"] == 0 == _cell(SHIPPED["single_outlier"], cv=single["cv"])["alerted"]
    for alarm in reduced["false_alarms"]:
        shipped = _cell(SHIPPED["false_alarms"], cv=alarm["cv"])
        assert alarm["alarms"] <= max(3, 3 * shipped["per_1000_nights"] * alarm["nights"] / 1000), alarm


def _by(cell: dict, run: int) -> float:
    return cell["found_by_run"][str(run)]


def test_the_shipped_table_meets_the_goals_it_claims():
    """What the README states, held by the shipped table: x2 steps alerted by their 3rd run at
    95% up to CV 10% (x5 and more up to CV 30%); x1.3 steps within 5 runs at 95% up to CV 5%; a
    single bad night never alerts up to CV 30%; a bad night does not hide a later step; at most
    1 false alarm per 1,000 series-nights at every noise level simulated (2-50%)."""
    detection = SHIPPED["detection"]
    for cv in (0.02, 0.05, 0.10):
        assert _by(_cell(detection, cv=cv, factor=2.0, direction="slower"), 3) >= 0.95, cv
    for cv in (0.02, 0.05, 0.10, 0.20, 0.30):
        for factor in (5.0, 15.0, 100.0):
            assert _by(_cell(detection, cv=cv, factor=factor, direction="slower"), 3) >= 0.95, (cv, factor)
    for cv in (0.02, 0.05):
        assert _by(_cell(detection, cv=cv, factor=1.3, direction="slower"), 5) >= 0.95, cv
    assert all(s["alerted"] == 0 for s in SHIPPED["single_outlier"] if s["cv"] <= 0.30)
    for masked in SHIPPED["after_outlier"]:
        plain = _cell(detection, cv=masked["cv"], factor=masked["factor"], direction="slower")
        assert _by(masked, 7) >= _by(plain, 7) - 0.10, masked["cv"]
    assert all(alarm["per_1000_nights"] <= 1.0 for alarm in SHIPPED["false_alarms"])
    # the limits the README states are the table's: x2 by run 3 falls short at CV 20%, x1.3 at 10%
    assert _by(_cell(detection, cv=0.20, factor=2.0, direction="slower"), 3) < 0.95
    assert _by(_cell(detection, cv=0.10, factor=1.3, direction="slower"), 5) < 0.95
