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


def execution_rows(target: str, setting: str, times: list[float], *, status: str = "ok", why: str | None = None,
                   version: str = "") -> list[dict]:
    flavor, default = ("mysql", "9.7.4") if "mysql" in target else ("mariadb", "10.11.14")
    rows = []
    for i, t in enumerate(times):
        meta = {"cache": "cold", "target": target, **({"why": why} if why else {})}
        rows.append({"point": f"target={target} {setting}", "subject": "q03", "repetition": i,
                     "metadata": json.dumps(meta), "series": None, "server_flavor": flavor,
                     "server_version": version or default, "metric": "client_seconds",
                     "value": None if status != "ok" else t, "status": status, "kind": "metric", "unit": "s"})
    return rows


SLOW = [2.0, 2.1, 2.2, 1.9, 2.05, 2.15]
FAST = [1.0, 1.05, 0.95, 1.02, 0.98, 1.01]
MARIA, MYSQL = "mariadb 10.11.14 (maria)", "mysql 9.7.4 (mysql)"


def test_each_setting_is_compared_on_its_own_with_the_first_server_as_baseline():
    """Medians per server and setting, the servers in their sorted order (the first is the
    baseline of every ratio), the interval said with its level, and a setting one server could not
    run kept with its reason."""
    from mysqlbench.statistics import compare as estimate

    rows = (execution_rows("mysql", "bka=off", SLOW) + execution_rows("maria", "bka=off", FAST)
            + execution_rows("maria", "bka=on", FAST) + execution_rows("mysql", "bka=on", FAST)
            + execution_rows("mysql", "mrr=on", [0.0], status="not_applicable", why="no such switch"))
    result = compare(execution_frame(rows, TIME), TIME)
    assert result["servers"] == [MARIA, MYSQL] and result["better"] == "lower"
    table = result["primary"]
    ratio = f"{MYSQL} / {MARIA}"
    off, on = table.loc[("q03", "bka=off")], table.loc[("q03", "bka=on")]
    assert off[MARIA] == pytest.approx(float(np.median(FAST))) and off[MYSQL] == pytest.approx(float(np.median(SLOW)))
    assert off[ratio] == pytest.approx(2.0, abs=0.1) and off[f"{ratio}: verdict"] == "more"
    # the same times on both servers: a ratio of 1, an interval too wide at n=6 to say "same"
    assert on[ratio] == pytest.approx(1.0) and on[f"{ratio}: verdict"] == estimate(FAST, FAST).verdict.value
    effect = estimate(FAST, SLOW)
    assert off[f"{ratio}: 95% CI"] == (f"{1 + effect.ci_low:.3f} .. {1 + effect.ci_high:.3f} "
                                       f"({100 * effect.confidence:.3g}%)")
    assert off[f"{ratio}: n"] == "6 vs 6"
    assert result["not_applicable"].to_dict() == {("q03", "mrr=on", MYSQL): "no such switch"}


def test_a_setting_measured_on_one_server_only_has_no_ratio_and_says_why():
    rows = execution_rows("maria", "bka=on", FAST) + execution_rows("mysql", "bka=off", SLOW)
    table = compare(execution_frame(rows, TIME), TIME)["primary"]
    ratio = f"{MYSQL} / {MARIA}"
    on = table.loc[("q03", "bka=on")]
    assert on[ratio] is None and on[f"{ratio}: n"] == "6 vs 0" and on[f"{ratio}: verdict"] == "inconclusive"
    assert on[f"{ratio}: 95% CI"] and not on[f"{ratio}: 95% CI"].startswith("none (")  # no estimate at all


def test_nothing_to_compare_with_fewer_than_two_servers():
    assert compare(execution_frame([], TIME), TIME) == {"servers": [], "primary": None, "counters": {}, "plans": None}
    alone = compare(execution_frame(execution_rows("maria", "bka=on", FAST), TIME), TIME)
    assert alone == {"servers": [MARIA], "primary": None, "counters": {}, "plans": None}


def test_plans_are_compared_by_their_structure_per_setting():
    rows = execution_rows("maria", "bka=on", FAST) + execution_rows("mysql", "bka=on", FAST) \
        + execution_rows("maria", "bka=off", FAST) + execution_rows("mysql", "bka=off", FAST)
    plans = [{"subject": "q03", "point": "target=maria bka=on", "plan_hash": "m1", "comparable_hash": "same"},
             {"subject": "q03", "point": "target=mysql bka=on", "plan_hash": "y1", "comparable_hash": "same"},
             {"subject": "q03", "point": "target=maria bka=off", "plan_hash": "m2", "comparable_hash": None},
             {"subject": "q03", "point": "target=mysql bka=off", "plan_hash": "y2", "comparable_hash": None},
             {"subject": "q03", "point": "target=gone bka=off", "plan_hash": "z", "comparable_hash": "z"}]
    table = compare(execution_frame(rows, TIME), TIME, plans=plans)["plans"]
    assert table.loc[("q03", "bka=on"), MARIA] == "same" and bool(table.loc[("q03", "bka=on"), "same plan structure"])
    # without a comparable hash each server's own hash is shown, and they differ
    assert table.loc[("q03", "bka=off"), MYSQL] == "y2" and not table.loc[("q03", "bka=off"), "same plan structure"]


def test_the_point_label_less_its_server_is_the_setting():
    from mysqlbench.studies.compare import setting_of

    assert setting_of("target=mysqlbench_demo bka=on cache=cold") == "bka=on cache=cold"
    assert setting_of("target=mysqlbench_demo") == "(base)"
    assert setting_of("bka=on") == "bka=on"


def test_a_recorded_rows_server_is_its_flavor_and_numeric_version():
    from mysqlbench.studies.compare import server_of

    assert server_of({"server_flavor": "mariadb", "server_version": "10.11.19-MariaDB-0+deb12u1"}) == "mariadb 10.11.19"
    assert server_of({"server_flavor": "mysql", "server_version": None}) == "mysql ?"
    assert server_of({"server_version": "9.7.4"}) == "? 9.7.4"
    assert server_of({"server_flavor": "mysql", "server_version": "devel"}) == "mysql devel"


def test_recorded_runs_become_one_frame_and_the_summary_has_plain_values():
    """Two recorded runs compared as servers: each run's points told apart and labelled by run,
    their plans kept with a hash comparable across flavors; summary.json's records have null
    where a value is absent, never NaN."""
    from mysqlbench.studies.compare import as_records, frame_of_runs

    def recorded(times):
        rows = [{**r, "point": r["point"].removeprefix("target=x "), "kind": "metric"}
                for r in execution_rows("x", "bka=on", times)]
        plan = {"query_block": {"table": {"table_name": "orders", "access_type": "ALL"}}}
        rows.append({**rows[0], "kind": "plan", "metric": "plan", "value": None,
                     "metadata": json.dumps({"plan_hash": "h", "plan": plan})})
        return rows

    frame, plans = frame_of_runs([("run a", recorded(SLOW)), ("run b", recorded(FAST))], TIME)
    assert sorted(frame["server"].unique()) == ["run a", "run b"] and frame["target"].isna().all()
    assert sorted(frame["point"].unique()) == ["target=run0 bka=on", "target=run1 bka=on"]
    assert [p["point"] for p in plans] == ["target=run0 bka=on", "target=run1 bka=on"]
    assert plans[0]["comparable_hash"] == plans[1]["comparable_hash"] and plans[0]["plan_hash"] == "h"
    frame["Innodb_rows_read"] = 7.0
    comparison = compare(frame, TIME, ("Innodb_rows_read",), plans=plans)
    assert comparison["servers"] == ["run a", "run b"]
    records = as_records(comparison)
    assert records["servers"] == ["run a", "run b"]
    (row,) = records["primary"]
    assert row["setting"] == "bka=on" and row["run b / run a"] == pytest.approx(0.5, abs=0.05)
    assert records["plans"][0]["same plan structure"] is True
    assert records["counters"] == {"Innodb_rows_read": [{"subject": "q03", "setting": "bka=on", "run a": 7.0,
                                                         "run b": 7.0}]}
    gap = as_records({"servers": ["a"], "primary": comparison["primary"].assign(missing=float("nan")),
                      "counters": {}, "plans": None})
    assert gap["primary"][0]["missing"] is None and gap["plans"] == []


def test_the_band_decides_the_verdict_and_counters_are_medians_per_setting():
    from mysqlbench.statistics import compare as estimate

    slower = [t * 1.2 for t in FAST]
    rows = execution_rows("maria", "bka=on", FAST) + execution_rows("mysql", "bka=on", slower) \
        + execution_rows("maria", "bka=off", SLOW) + execution_rows("mysql", "bka=off", SLOW)
    reads = {("maria", "bka=on"): [1.0, 2.0, 9.0], ("mysql", "bka=on"): [5.0, 6.0, 100.0]}
    rows += [{**r, "metric": "Innodb_rows_read", "kind": "counter", "unit": "count",
              "value": reads[(json.loads(r["metadata"])["target"], r["point"].split(" ", 1)[1])][r["repetition"]]}
             for r in rows if r["repetition"] < 3 and "bka=on" in r["point"]]
    ratio = f"{MYSQL} / {MARIA}"
    frame_ = execution_frame(rows, TIME)
    default = compare(frame_, TIME, ("Innodb_rows_read",))
    wide = compare(frame_, TIME, band=0.5)["primary"].loc[("q03", "bka=on")]
    assert default["primary"].loc[("q03", "bka=on")][f"{ratio}: verdict"] == "more"
    assert wide[f"{ratio}: verdict"] == estimate(FAST, slower, band=0.5).verdict.value == "same"
    counters = default["counters"]["Innodb_rows_read"]
    assert counters.loc[("q03", "bka=on"), MARIA] == 2.0 and counters.loc[("q03", "bka=on"), MYSQL] == 6.0
    assert np.isnan(counters.loc[("q03", "bka=off"), MARIA])  # not counted there: absent, not 0


def test_a_server_that_ran_nothing_keeps_its_column():
    rows = execution_rows("maria", "bka=on", FAST) \
        + execution_rows("mysql", "bka=on", [0.0], status="not_applicable", why="no BKA")
    plans = [{"subject": "q03", "point": "target=maria bka=on", "plan_hash": "m", "comparable_hash": "m"}]
    result = compare(execution_frame(rows, TIME), TIME, ("Innodb_rows_read",), plans=plans)
    assert list(result["primary"].columns[:2]) == [MARIA, MYSQL] and np.isnan(result["primary"].iloc[0][MYSQL])
    assert list(result["plans"].columns[:2]) == [MARIA, MYSQL]
    assert not result["plans"].iloc[0]["same plan structure"]  # one plan is not "the same" as none


def test_a_frame_without_servers_compares_nothing():
    import pandas as pd

    assert compare(pd.DataFrame({"point": ["bka=on"], "status": ["ok"]}), TIME)["servers"] == []


def test_runs_with_other_plans_hash_apart_and_no_runs_make_an_empty_frame():
    from mysqlbench.studies.compare import frame_of_runs

    def recorded(table):
        rows = [{**r, "point": r["point"].removeprefix("target=x ")} for r in execution_rows("x", "bka=on", FAST)]
        plan = {"query_block": {"table": {"table_name": table, "access_type": "ALL"}}}
        return rows + [{**rows[0], "kind": "plan", "metric": "plan", "value": None,
                        "metadata": json.dumps({"plan_hash": table, "plan": plan})}]

    _, plans = frame_of_runs([("a", recorded("orders")), ("b", recorded("lineitem"))], TIME)
    assert plans[0]["comparable_hash"] != plans[1]["comparable_hash"]
    frame, none = frame_of_runs([], TIME)
    assert frame.empty and none == []


def test_a_plan_missing_at_one_setting_does_not_undo_another_settings_match():
    rows = execution_rows("maria", "bka=on", FAST) + execution_rows("mysql", "bka=on", FAST) \
        + execution_rows("maria", "bka=off", FAST) + execution_rows("mysql", "bka=off", FAST)
    plans = [{"subject": "q03", "point": "target=maria bka=on", "plan_hash": "m", "comparable_hash": "s"},
             {"subject": "q03", "point": "target=mysql bka=on", "plan_hash": "y", "comparable_hash": "s"},
             {"subject": "q03", "point": "target=maria bka=off", "plan_hash": "m", "comparable_hash": "t"}]
    same = compare(execution_frame(rows, TIME), TIME, plans=plans)["plans"]["same plan structure"]
    assert bool(same.loc[("q03", "bka=on")]) and not same.loc[("q03", "bka=off")]
