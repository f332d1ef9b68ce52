"""Servers (or runs) side by side (plugins/mysqlbench/studies/compare.py): each ratio to the first
server is an effect estimate with its interval, n per side and verdict, never a bare quotient of
medians; a counter a server lacks stays absent."""

import json

import numpy as np
import pytest

from mysqlbench.studies.analysis import execution_frame
from mysqlbench.studies.compare import compare
from mysqlbench.workloads.base import Better, Metric

TIME = Metric("client_seconds", "s", Better.LOWER, "time")


def frame(times_by_server: dict[str, list[float]], rows_read: dict[str, bool] | None = None):
    rows = []
    for target, times in times_by_server.items():
        flavor, version = ("mysql", "9.7.4") if "mysql" in target else ("mariadb", "10.11.14")
        for i, t in enumerate(times):
            base = {"point": f"target={target} bka=on cache=cold", "subject": "q03", "repetition": i,
                    "metadata": json.dumps({"cache": "cold", "swept": {"bka": True}, "target": target}),
                    "series": None, "server_flavor": flavor, "server_version": version}
            rows.append({**base, "metric": "client_seconds", "value": t, "status": "ok", "kind": "metric",
                         "unit": "s"})
            if (rows_read or {}).get(target):
                rows.append({**base, "metric": "Innodb_rows_read", "value": 1000.0, "status": "ok",
                             "kind": "counter", "unit": "count"})
    return execution_frame(rows, TIME)


def test_each_ratio_carries_its_interval_n_and_verdict():
    rng = np.random.default_rng(5)
    a = list(1.0 * np.exp(rng.normal(0, 0.05, 6)))
    b = list(0.5 * np.exp(rng.normal(0, 0.05, 6)))
    result = compare(frame({"maria": a, "mysql": b}, {"mysql": True}), TIME, ("Innodb_rows_read",))
    table = result["primary"].reset_index()
    ratio = "mysql 9.7.4 (mysql) / mariadb 10.11.14 (maria)"
    row = table.iloc[0]
    assert row[ratio] == pytest.approx(0.5, abs=0.05)
    low, high = (float(x) for x in row[f"{ratio}: 95% CI"].split(" (")[0].split(" .. "))
    assert low < row[ratio] < high < 0.97 and row[f"{ratio}: n"] == "6 vs 6" and row[f"{ratio}: verdict"] == "less"
    counters = result["counters"]["Innodb_rows_read"].reset_index().iloc[0]
    assert np.isnan(counters["mariadb 10.11.14 (maria)"]) and counters["mysql 9.7.4 (mysql)"] == 1000.0


def test_two_repetitions_give_a_ratio_but_no_interval_and_no_verdict():
    table = compare(frame({"maria": [1.0, 1.1], "mysql": [0.5, 0.52]}), TIME)["primary"].reset_index()
    ratio = "mysql 9.7.4 (mysql) / mariadb 10.11.14 (maria)"
    assert table.iloc[0][ratio] == pytest.approx(0.49, abs=0.03)
    assert table.iloc[0][f"{ratio}: 95% CI"].startswith("none (") and table.iloc[0][f"{ratio}: verdict"] == "inconclusive"
