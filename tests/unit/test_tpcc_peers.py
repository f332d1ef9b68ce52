"""The TPC-C peers' output parsed on captured runs (tpcc-mysql @ 1ec1c5e and sysbench-tpcc @ 585e2b8
on sysbench 1.0.20, against MariaDB 10.11), failed and killed runs as clear errors, the password
kept out of what is stored, and the peer options checked before anything runs."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from mysqlbench import sysbench_output
from mysqlbench.errors import InvalidInput
from mysqlbench.workloads.tpcc import peers

DATA = Path(__file__).resolve().parents[1] / "data" / "peers"
# the captured runs: 2 warehouses, 8 connections, 5 s rampup, 20 s measured, 10 s intervals
CONFIG = peers.PeerRunConfig(warehouses=2, connections=8, rampup_s=5, measure_s=20, interval_s=10)


def text(name: str) -> str:
    return (DATA / name).read_text()


def test_tpcc_mysql_run_is_parsed_into_our_shape():
    out = peers.parse_tpcc_mysql(text("tpcc_mysql_run.txt"), CONFIG)
    new_order = out["per_type"]["new_order"]
    assert new_order["ok"] == 3351 and new_order["late"] == 3342 and new_order["errors"] == 0 and new_order["retries"] == 0
    assert out["new_orders_per_min"] == pytest.approx(3351 * 60 / 20)
    assert out["tool_figure"] == {"tpmC": 10053.0}
    assert out["transactions"] == sum(t["ok"] for t in out["per_type"].values())
    # the window's intervals, placed after the rampup; New-Order's p95 per interval as printed
    assert [i["end_s"] for i in out["intervals"]] == [15.0, 25.0]
    assert [i["new_orders_per_min"] for i in out["intervals"]] == [1689 * 6, 1662 * 6]
    assert [i["p95_ms"] for i in out["intervals"]] == [42.007, 45.069]
    # the largest of the intervals' maxima per type; what tpcc-mysql does not print is absent
    assert new_order["max_ms"] == 83.162 and out["per_type"]["stock_level"]["max_ms"] == 147.803
    assert new_order["p50_ms"] is None and new_order["p99_ms"] is None and new_order["rollbacks"] is None


def test_tpcc_mysql_failed_connection_is_an_error_not_zeros():
    # tpcc-mysql exits 0 and prints a report of zeros when its terminals cannot connect
    with pytest.raises(peers.PeerOutputError, match="2002, HY000, Can't connect"):
        peers.parse_tpcc_mysql(text("tpcc_mysql_connect_failed.txt"), CONFIG)


def test_tpcc_mysql_killed_run_has_no_report():
    whole = text("tpcc_mysql_run.txt")
    killed = whole[:whole.index("STOPPING THREADS")]
    with pytest.raises(peers.PeerOutputError, match="no final report"):
        peers.parse_tpcc_mysql(killed, CONFIG)


def test_sysbench_report_and_intervals():
    report = sysbench_output.parse_report(text("sysbench_tpcc_run.txt"))
    assert report["transactions"] == 7748 and report["tps"] == 309.49 and report["ignored_errors"] == 38
    assert report["latency_ms"] == {"min": 0.78, "avg": 25.82, "max": 232.81, "p95": 64.47, "sum": 200068.24}
    assert report["fairness"]["events_stddev"] == 31.73 and report["total_time_s"] == 25.0346
    intervals = sysbench_output.parse_intervals(text("sysbench_tpcc_run.txt"))
    assert [i["t_s"] for i in intervals] == [10.0, 20.0]
    assert intervals[0]["tps"] == 322.38 and intervals[0]["errors_per_s"] == 1.6
    assert intervals[1]["latency_pct_ms"] == 68.05 and intervals[1]["writes_per_s"] == 3936.99


def test_sysbench_tpcc_window_is_the_intervals_after_the_rampup():
    config = peers.PeerRunConfig(warehouses=2, connections=8, rampup_s=10, measure_s=10, interval_s=10)
    out = peers.parse_sysbench_tpcc(text("sysbench_tpcc_run.txt"), config)
    assert out["tool_figure"]["tps_in_window"] == 295.10  # only the 20 s interval: 10 s is rampup
    assert out["per_type"] == {} and out["new_orders_per_min"] is None  # sysbench-tpcc has no per-type figures


def test_sysbench_failed_and_killed_runs_are_clear_errors():
    with pytest.raises(sysbench_output.SysbenchOutputError, match="unable to connect to MySQL server"):
        sysbench_output.parse_report(text("sysbench_tpcc_connect_failed.txt"))
    whole = text("sysbench_tpcc_run.txt")
    with pytest.raises(sysbench_output.SysbenchOutputError, match="no final report"):
        sysbench_output.parse_report(whole[:whole.index("General statistics")])


def test_peer_output_is_redacted(tmp_path):
    script = "import sys; print('option p with value', sys.argv[1]); print('[pass]:', sys.argv[1])"
    seen = []
    proc = peers.PeerProcess([sys.executable, "-c", script, "s3cret-pw"], tmp_path, ["s3cret-pw"], seen.append)
    assert proc.start().wait(30) == 0
    assert "s3cret-pw" not in proc.output and "s3cret-pw" not in "".join(seen)
    assert "[pass]: ***" in proc.output


def test_a_peer_does_not_inherit_airflow_connections(tmp_path, monkeypatch):
    monkeypatch.setenv("AIRFLOW_CONN_MYSQLBENCH_X", "mysql://u:hunter2@h/db")
    script = "import os; print(sorted(k for k in os.environ if 'AIRFLOW' in k))"
    proc = peers.PeerProcess([sys.executable, "-c", script], tmp_path, [])
    assert proc.start().wait(30) == 0 and proc.output.strip() == "[]"


def test_peer_options_are_checked_before_anything_runs(monkeypatch, tmp_path):
    from mysqlbench.workloads.tpcc.workload import TpccParams

    with pytest.raises(ValueError, match="whole seconds: rampup_s=2.5"):
        TpccParams(driver="tpcc-mysql", rampup_s=2.5)
    with pytest.raises(ValueError, match="multiple of interval_s"):
        TpccParams(driver="sysbench-tpcc", measure_s=25, interval_s=10)
    with pytest.raises(ValueError, match="its own fixed mix"):
        TpccParams(driver="tpcc-mysql", mix={"new_order": 50, "payment": 50})
    with pytest.raises(ValueError, match="issues its own"):
        TpccParams(driver="sysbench-tpcc", protocol="statements")
    with pytest.raises(ValueError):
        TpccParams(driver="hammerdb")
    with pytest.raises(ValueError):
        TpccParams(protocol="prepared")
    assert TpccParams(protocol="statements").protocol == "statements"
    monkeypatch.setenv("MYSQLBENCH_WORK_DIR", str(tmp_path))
    with pytest.raises(peers.PeerUnavailable, match="bin/mysqlbench peer build tpcc-mysql"):
        peers.locate("tpcc-mysql")
    with pytest.raises(InvalidInput, match="unknown TPC-C driver"):
        peers.locate("ours2")


def test_build_refuses_a_folder_that_is_not_the_peer(tmp_path):
    with pytest.raises(peers.PeerUnavailable, match="not a tpcc-mysql checkout"):
        peers.build("tpcc-mysql", tmp_path)


def test_a_peers_cpu_is_read_while_it_runs_and_absent_once_it_is_gone(tmp_path):
    proc = peers.PeerProcess([sys.executable, "-c", "import time; sum(range(3_000_000)); time.sleep(1)"], tmp_path, [])
    proc.start()
    time.sleep(0.8)
    busy = proc.cpu_seconds()
    assert busy is not None and busy > 0
    proc.wait(30)
    assert proc.cpu_seconds() is None  # reaped: absent, not zero


def test_the_bench_fails_before_any_server_when_a_peer_asked_for_cannot_run(monkeypatch, tmp_path):
    """Issue 26 item 4: make bench skipped a peer it could not build and exited 0, so a comparison
    could quietly lose a side. Asked for (BENCH_TPCC_PEERS, all by default), it must run or fail."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    import tpcc_bench

    monkeypatch.setenv("MYSQLBENCH_WORK_DIR", str(tmp_path / "work"))
    monkeypatch.setenv("MYSQLBENCH_PEER_SOURCES", str(tmp_path / "no-such-refs"))
    monkeypatch.delenv("BENCH_TPCC_PEERS", raising=False)
    with pytest.raises(SystemExit, match="asked for tpcc-mysql, sysbench-tpcc but cannot run tpcc-mysql: "):
        tpcc_bench.asked_peers()
    monkeypatch.setenv("BENCH_TPCC_PEERS", "hammerdb")
    with pytest.raises(SystemExit, match=r"unknown peer\(s\) \['hammerdb'\]"):
        tpcc_bench.asked_peers()
    monkeypatch.setenv("BENCH_TPCC_PEERS", "")
    assert tpcc_bench.asked_peers() == []
