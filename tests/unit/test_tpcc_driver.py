"""The driver's inputs (clause 2.x.1), its mix checks and how results are counted, without a server."""

from __future__ import annotations

import random

import numpy as np
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
        w, d_id, c_id, order_lines, all_local = inputs.new_order()
        supply, items, qty = (list(column) for column in zip(*order_lines, strict=True))
        count = len(order_lines)
        assert w == 2 and 1 <= d_id <= 10 and 1 <= c_id <= 3000 and 5 <= count <= 15
        assert all(1 <= q <= 10 for q in qty)
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
    # the edges at which the database's count was read: the same span for both counts, the
    # intervals still on the nominal grid
    read = d.results([a, b], config, window=(11.0, 26.0))
    assert read["new_orders"] == 2 and read["new_orders_per_min"] == pytest.approx(2 * 60 / 15)
    assert read["measure_s"] == 15.0 and [round(i["end_s"]) for i in read["intervals"]] == [10, 20, 30]
    assert read["new_orders_alive_at_reads"] is None  # no reads' round trips given
    # the committed New-Orders alive while a read was on its way: begun by the time it was answered,
    # not yet ended when it was sent (12.0 ended inside the first; 25.0 began at 24.96 and ended
    # after the second was sent; the rollback at 15.0 and 29.9, alive at neither, do not count)
    edged = d.results([a, b], config, window=(11.0, 26.0), reads=[(11.99, 12.01), (24.97, 24.98)])
    assert edged["new_orders_alive_at_reads"] == 2
    assert d.results([a, b], config, reads=[(15.0, 15.0)])["new_orders_alive_at_reads"] == 0


def test_driver_config_refuses_bad_windows():
    with pytest.raises(InvalidInput, match="connections"):
        d.DriverConfig(warehouses=1, connections=0, rampup_s=1, measure_s=1)
    with pytest.raises(InvalidInput, match="measure_s"):
        d.DriverConfig(warehouses=1, connections=1, rampup_s=1, measure_s=0)


def _dealt(mix, terminals: int, per_terminal: int, seed: int) -> list[str]:
    """Transaction types in the order they end, with terminals dealing side by side (each its own
    Dealer, as Driver._terminal does) and calls of random length (a Delivery three times longer)."""
    rng = random.Random(seed)
    ended = []
    for n in range(terminals):
        dealer, clock = d.Dealer(mix, random.Random(seed * 1000 + n)), 0.0
        for _ in range(per_terminal):
            kind = dealer.next()
            clock += rng.expovariate(1.0) * (3 if kind == "delivery" else 1)
            ended.append((clock, kind))
    return [kind for _, kind in sorted(ended)]


def _windows_below_minimums(kinds: list[str], k: int) -> int:
    """How many windows of k consecutive transactions hold less than a minimum of some type."""
    import numpy as np

    counts = np.vstack([np.zeros(len(d.TRANSACTIONS)),
                        np.cumsum(np.eye(len(d.TRANSACTIONS))[[d.TRANSACTIONS.index(x) for x in kinds]], axis=0)])
    share = 100 * (counts[k:] - counts[:-k]) / k
    minimums = np.array([d.MINIMUMS.get(t, 0.0) for t in d.TRANSACTIONS])
    return int((share < minimums).any(axis=1).sum())


@pytest.mark.parametrize("terminals", [1, 4, 8, 32])
def test_every_window_of_k_transactions_keeps_the_specifications_minimums(terminals):
    """Issue 26: a weighted draw at exactly the minimums fell below them in a measured window
    (Payment 42.86%, Delivery 3.81%). The spec deck keeps every minimum in every window of
    WINDOW_K_PER_TERMINAL transactions per terminal, over thousands of windows; the old weights do
    not, nor the peers' 10/10/1/1/1, whose 0.35-point margin needs longer windows."""
    k = d.WINDOW_K_PER_TERMINAL * terminals
    per_terminal = max(4000 // terminals, 12 * d.WINDOW_K_PER_TERMINAL)
    for seed in (1, 2):
        assert _windows_below_minimums(_dealt("spec", terminals, per_terminal, seed), k) == 0, seed
    assert _windows_below_minimums(_dealt(dict(d.STANDARD_MIX), terminals, per_terminal, 1), k) > 0
    if terminals == 8:
        assert _windows_below_minimums(_dealt("tpcc-mysql", terminals, per_terminal, 1), k) > 0


def test_a_deck_deals_exactly_its_cards_and_stock_level_keeps_the_terminals_district():
    dealer = d.Dealer("spec", random.Random(3))
    hands = [[dealer.next() for _ in range(22)] for _ in range(5)]
    assert all(sorted(h) == sorted(t for t, n in d.DECKS["spec"].items() for _ in range(n)) for h in hands)
    assert len({tuple(h) for h in hands}) == 5  # shuffled again for every deck
    inputs = d.Inputs(1, 1, d.Constants(100, 200, 300), random.Random(4), district=7)
    assert {inputs.stock_level()[1] for _ in range(50)} == {7}
    with pytest.raises(InvalidInput, match="unknown mix 'tpcc'"):
        d.check_mix("tpcc")


def test_intervals_start_at_the_window_and_a_short_one_is_left_out_of_the_stability_figure():
    """Issue 26 item 4: with a rampup that is not a multiple of the interval, an interval straddled
    the rampup's end, and a short last interval (a few calls over a fraction of the width) counted
    in the stability figure."""
    config = d.DriverConfig(warehouses=1, connections=1, rampup_s=5, measure_s=7, interval_s=2)
    assert d.interval_edges(config) == [0.0, 1.0, 3.0, 5.0, 7.0, 9.0, 11.0, 12.0]
    assert d.interval_edges(d.DriverConfig(warehouses=1, connections=1, rampup_s=2, measure_s=6, interval_s=2)) \
        == [0.0, 2.0, 4.0, 6.0, 8.0]
    record = d.Record()
    for end in np.arange(0.05, 12, 0.1):  # one New-Order every 0.1 s
        record.kind.append(0)
        record.end.append(float(end))
        record.latency.append(0.01)
        record.status.append(0)
        record.retries.append(0)
    out = d.results([record], config)
    kept = d.window_intervals(out["intervals"], config)
    assert [(i["start_s"], i["end_s"]) for i in kept] == [(5.0, 7.0), (7.0, 9.0), (9.0, 11.0)]
    assert all(i["new_orders_per_min"] == pytest.approx(600) for i in kept)
    # a peer's report intervals have no start: those ending an interval after the rampup count
    peer = [{"end_s": float(e)} for e in (2, 4, 6, 8, 10, 12)]
    assert [i["end_s"] for i in d.window_intervals(peer, config)] == [8.0, 10.0, 12.0]
