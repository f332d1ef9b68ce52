"""The driver's inputs (clause 2.x.1), its mix checks and how results are counted, without a server."""

from __future__ import annotations

import random

import pytest

from mysqlbench.errors import InvalidInput
from mysqlbench.workloads.tpcc import driver as d


def test_the_mix_must_name_known_transactions_and_sum_to_100():
    assert d.check_mix(d.STANDARD_MIX)["new_order"] == 45
    with pytest.raises(InvalidInput, match="unknown transaction"):
        d.check_mix({"new_order": 50, "refund": 50})
    with pytest.raises(InvalidInput, match="sum to 100"):
        d.check_mix({"new_order": 45, "payment": 43})
    with pytest.raises(InvalidInput, match="non-negative"):
        d.check_mix({"new_order": 110, "payment": -10})


def test_c_run_keeps_its_distance_from_the_load():
    rng = random.Random(3)
    for c_load in range(256):
        delta = abs(d.c_run(c_load, rng) - c_load)
        assert 65 <= delta <= 119 and delta not in (96, 112)


def test_new_order_inputs():
    inputs = d.Inputs(2, 4, d.Constants(100, 200, 300), random.Random(5))
    rollbacks = remote_lines = lines = 0
    for _ in range(20_000):
        w, d_id, c_id, count, items, supply, qty, all_local = inputs.new_order()
        items = [int(i) for i in items.split(",")]
        supply = [int(s) for s in supply.split(",")]
        assert w == 2 and 1 <= d_id <= 10 and 1 <= c_id <= 3000 and 5 <= count <= 15 and count == len(items)
        assert all(1 <= int(q) <= 10 for q in qty.split(","))
        if items[-1] == 100_001:
            rollbacks += 1  # the unused item is the last one
        else:
            assert list(zip(supply, items, strict=True)) == sorted(zip(supply, items, strict=True))
            assert all(1 <= i <= 100_000 for i in items)
        assert all_local == int(all(s == 2 for s in supply))
        lines += count
        remote_lines += sum(s != 2 for s in supply)
    assert 0.006 < rollbacks / 20_000 < 0.014
    assert 0.007 < remote_lines / lines < 0.013


def test_payment_and_order_status_pick_customers_by_name_60_percent():
    inputs = d.Inputs(1, 3, d.Constants(100, 200, 300), random.Random(6))
    payments = [inputs.payment() for _ in range(20_000)]
    by_name = [p for p in payments if p[4] == 0]
    assert 0.57 < len(by_name) / len(payments) < 0.63
    assert all(p[5] and p[5].isupper() for p in by_name)
    remote = [p for p in payments if p[2] != 1]
    assert 0.13 < len(remote) / len(payments) < 0.17 and all(1 <= p[2] <= 3 for p in remote)
    assert all(1.00 <= p[6] <= 5000.00 for p in payments)
    statuses = [inputs.order_status() for _ in range(5_000)]
    assert 0.56 < sum(s[2] == 0 for s in statuses) / 5_000 < 0.64


def test_results_count_only_the_measure_window():
    config = d.DriverConfig(warehouses=1, connections=2, rampup_s=10, measure_s=20, interval_s=10)
    a, b = d.Record(), d.Record()
    # (kind, end, latency, status): new orders in the rampup, in the window, after it
    for record, rows in ((a, [(0, 5.0, 0.010, 0), (0, 12.0, 0.020, 0), (0, 15.0, 0.030, 1), (1, 18.0, 0.005, 0)]),
                         (b, [(0, 25.0, 0.040, 0), (0, 29.9, 0.050, 0), (0, 31.0, 0.060, 0), (2, 20.0, 0.1, 2)])):
        for kind, end, latency, status in rows:
            record.kind.append(kind)
            record.end.append(end)
            record.latency.append(latency)
            record.status.append(status)
            record.retries.append(1 if kind == 1 else 0)
    out = d.results([a, b], config)
    assert out["new_orders"] == 3 and out["new_orders_per_min"] == pytest.approx(3 * 60 / 20)
    no = out["per_type"]["new_order"]
    assert (no["count"], no["ok"], no["rollbacks"], no["errors"]) == (4, 3, 1, 0)
    assert no["p50_ms"] == pytest.approx(40.0) and no["max_ms"] == pytest.approx(50.0)
    assert out["per_type"]["payment"]["retries"] == 1 and out["per_type"]["order_status"]["errors"] == 1
    assert [round(i["end_s"]) for i in out["intervals"]] == [10, 20, 30]
    assert [i["new_orders_per_min"] for i in out["intervals"]] == [6.0, 6.0, 12.0]


def test_driver_config_refuses_bad_windows():
    with pytest.raises(InvalidInput, match="connections"):
        d.DriverConfig(warehouses=1, connections=0, rampup_s=1, measure_s=1)
    with pytest.raises(InvalidInput, match="measure_s"):
        d.DriverConfig(warehouses=1, connections=1, rampup_s=1, measure_s=0)
