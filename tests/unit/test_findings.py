"""Findings in words and the per-point summaries, on data captured from a real tpch_bka_study run
(SF 0.1, 64M buffer pool: the data does not fit, so BKA's effect on physical reads shows)."""

import json
from pathlib import Path

import pandas as pd
import pytest

from mysqlbench.studies.analysis import execution_frame, findings, summaries
from mysqlbench.workloads.base import Better, Metric

CAPTURED = json.loads((Path(__file__).parents[1] / "data" / "bka_sf0.1_points.json").read_text())["points"]
TIME = Metric("client_seconds", "s", Better.LOWER, "time")


def frame(points=CAPTURED) -> pd.DataFrame:
    """The captured per-point summaries in the summary frame's columns."""
    return pd.DataFrame([{"subject": p["query"], "point": p["point"], "cache": p["cache"],
                          "swept": json.dumps(p["swept"], sort_keys=True), "median": p["median_s"],
                          "warm": p.get("warm"), "Innodb_buffer_pool_reads": p["Innodb_buffer_pool_reads"],
                          "Innodb_buffer_pool_read_ahead": p["Innodb_buffer_pool_read_ahead"]} for p in points])


def test_bka_cuts_physical_reads_and_time_as_in_the_seed():
    cold = next(s for s in findings(frame(), TIME) if "cold cache" in s)
    assert cold.startswith("bka on vs off, cold cache (2 paired points): ")
    assert "fewer physical reads (Innodb_buffer_pool_reads)" in cold
    assert "more read-ahead" in cold and "less time" in cold and cold.endswith("(better).")


def test_reversed_effect_reverses_the_sentence():
    reversed_points = [{**p, "swept": {**p["swept"], "bka": not p["swept"]["bka"]}} for p in CAPTURED]
    cold = next(s for s in findings(frame(reversed_points), TIME) if "cold cache" in s)
    assert "more physical reads" in cold and "less read-ahead" in cold and "more time" in cold
    assert cold.endswith("(worse).")


def test_direction_follows_the_primary_metric():
    throughput = Metric("new_orders_per_min", "1/min", Better.HIGHER, "throughput")
    cold = next(s for s in findings(frame(), throughput) if "cold cache" in s)
    assert "less throughput" in cold and cold.endswith("(worse).")


def test_numbers_in_the_sentence_are_computed():
    halved = [{**p, "Innodb_buffer_pool_reads": p["Innodb_buffer_pool_reads"] * (0.5 if p["swept"]["bka"] else 1)}
              for p in CAPTURED]
    pct = lambda s: int(s.split(": ")[1].split("%")[0])  # noqa: E731
    before = next(s for s in findings(frame(), TIME) if "cold" in s)
    after = next(s for s in findings(frame(halved), TIME) if "cold" in s)
    assert pct(after) > pct(before)


def test_no_switch_swept_no_finding():
    plain = [{**p, "swept": {"join_buffer_size": "6M"}} for p in CAPTURED]
    assert findings(frame(plain), TIME) == []


def test_a_warm_cache_that_never_warmed_is_said_so():
    points = [{**p, "warm": False if p["cache"] == "warm" else None} for p in CAPTURED]
    said = findings(frame(points), TIME)
    assert "never fully warm" in next(s for s in said if "warm cache" in s)
    assert "never fully warm" not in next(s for s in said if "cold cache" in s)


def rows(times, statuses=None, point="p1", subject="q01", cache="warm", reads=None, kind_extra=()):
    """Sample rows as the store holds them, for one point's executions."""
    out = []
    for i, t in enumerate(times):
        status = (statuses or ["ok"] * len(times))[i]
        meta = json.dumps({"point": point, "cache": cache, "swept": {}, "cache_evidence": {"warm": True}})
        base = {"point": point, "subject": subject, "repetition": i, "metadata": meta, "series": None}
        out.append({**base, "metric": "client_seconds", "value": t if status == "ok" else None, "status": status,
                    "kind": "metric", "unit": "s"})
        if reads is not None:
            out.append({**base, "metric": "Innodb_buffer_pool_reads", "value": reads[i], "status": "ok",
                        "kind": "counter", "unit": "count"})
        for metric, value, kind in kind_extra:
            out.append({**base, "metric": metric, "value": value, "status": "ok", "kind": kind, "unit": "x"})
    return out


def test_summaries_take_the_median_not_the_mean():
    summary = summaries(execution_frame(rows([1.0, 1.0, 10.0]), TIME))
    assert summary.loc[0, "median"] == 1.0 and summary.loc[0, "min"] == 1.0 and summary.loc[0, "max"] == 10.0


def test_coefficient_of_variation_is_population_std_over_mean():
    summary = summaries(execution_frame(rows([1.0, 3.0]), TIME))
    assert summary.loc[0, "cv"] == pytest.approx(0.5)  # std 1 (population), mean 2


def test_timeouts_do_not_enter_the_statistics_but_are_counted():
    summary = summaries(execution_frame(rows([1.0, 2.0, 99.0], ["ok", "ok", "timeout"]), TIME))
    assert summary.loc[0, "median"] == 1.5 and summary.loc[0, "timeouts"] == 1 and summary.loc[0, "runs"] == 3


def test_os_and_series_samples_are_not_counters():
    frame_ = execution_frame(rows([1.0], reads=[5], kind_extra=[("os_cpu_user_pct", 40.0, "os"),
                                                                  ("throughput", 12.0, "series")]), TIME)
    assert "Innodb_buffer_pool_reads" in frame_ and frame_.loc[0, "Innodb_buffer_pool_reads"] == 5
    assert "os_cpu_user_pct" not in frame_ and "throughput" not in frame_


def test_an_absent_counter_stays_absent_in_the_summary():
    summary = summaries(execution_frame(rows([1.0, 2.0]), TIME), counters=("Innodb_rows_read",))
    assert summary.loc[0, "Innodb_rows_read"] != summary.loc[0, "Innodb_rows_read"]  # NaN, never 0
