"""The execution frame and the per-point summaries, column by column, from sample rows shaped as
the results store holds them: every kind an execution records (metrics, counters, gauges, OS
figures, the answer), a timeout, a killed execution with no primary metric, a point not applicable
on this server, and samples that belong to no execution. Every finding, validation and report is
read from these two frames, so each column is held here, not only where a finding happens to use it."""

import json
import math

import pandas as pd
import pytest

from mysqlbench.studies.analysis import execution_frame, summaries
from mysqlbench.workloads.base import Better, Metric

TIME = Metric("client_seconds", "s", Better.LOWER, "time")
ON, OFF, NA, KILLED = "bka=on cache=cold", "bka=off cache=cold", "bka=na cache=cold", "bka=k cache=warm"


def _rows() -> list[dict]:
    out = []

    def execution(point, repetition, meta, samples, subject="q03", status="ok", flavor="mariadb",
                  version="10.11.19-MariaDB-0+deb12u1-log"):
        base = {"point": point, "subject": subject, "repetition": repetition, "metadata": json.dumps(meta),
                "series": None, "server_flavor": flavor, "server_version": version}
        for kind, metric, value, *row_status in samples:
            out.append({**base, "kind": kind, "metric": metric, "value": value,
                        "status": row_status[0] if row_status else status})

    on = {"cache": "cold", "swept": {"bka": True}, "cache_evidence": {"warm": False}, "target": "mysqlbench_demo"}
    execution(ON, 0, {**on, "order": 2}, [("metric", "client_seconds", 1.0), ("metric", "server_seconds", 0.5),
                                          ("counter", "physical_reads", 10.0), ("gauge", "pages_data_bytes", -4.0),
                                          ("os", "os_other_cpu_pct", 25.0), ("os", "os_steal_pct", 0.0)])
    execution(ON, 1, {**on, "order": 5}, [("metric", "client_seconds", 3.0), ("metric", "server_seconds", 1.5),
                                          ("counter", "physical_reads", 30.0), ("os", "os_other_cpu_pct", 5.0),
                                          ("os", "os_steal_pct", 6.0)])
    for repetition in (0, 1):
        out.append({"point": ON, "subject": "q03", "repetition": repetition, "kind": "answer", "metric": "answer",
                    "value": 7.0, "status": "ok", "series": None, "server_flavor": "mariadb",
                    "server_version": "10.11.19", "metadata": json.dumps({"checksum": f"c{repetition}",
                                                                          "oracle": "match"})})
    off = {"cache": "cold", "swept": {"bka": False}, "cache_evidence": {"warm": False}, "target": "mysqlbench_demo"}
    execution(OFF, 0, {**off, "order": 1}, [("metric", "client_seconds", 2.0), ("counter", "physical_reads", 20.0),
                                            ("os", "os_other_cpu_pct", 1.0)])
    execution(OFF, 1, {**off, "order": 4}, [("metric", "client_seconds", None)], status="timeout")
    execution(OFF, 2, {**off, "order": 6}, [("metric", "client_seconds", 4.0), ("counter", "physical_reads", 40.0)])
    # exactly at both noise limits: not noisy (the limits are "more than"); two swept knobs, in reverse order
    execution("mrr=on bka=on cache=cold", 0, {"cache": "cold", "swept": {"mrr": True, "bka": True}},
              [("metric", "client_seconds", 5.0), ("os", "os_other_cpu_pct", 20.0), ("os", "os_steal_pct", 5.0)])
    # not applicable on this server: one metric row, no unit ever ran (no repetition)
    execution(NA, None, {"cache": "cold", "swept": {"bka": "na"}, "why": "removed in MariaDB 10.6"},
              [("metric", "client_seconds", None)], status="not_applicable")
    # killed before its primary metric: the execution's status is its other rows'
    execution(KILLED, 0, {"cache": "warm", "swept": {"bka": "k"}, "cache_evidence": {"warm": True}},
              [("metric", "server_seconds", 9.0)], status="killed", flavor=None, version=None)
    # samples of no execution: a run-level fact and a point-level plan
    out.append({"point": None, "subject": None, "repetition": None, "kind": "run", "metric": "load_s", "value": 3.0,
                "status": "ok", "metadata": "{}", "series": None})
    out.append({"point": ON, "subject": None, "repetition": None, "kind": "plan", "metric": "plan", "value": None,
                "status": "ok", "metadata": "{}", "series": None})
    return out


@pytest.fixture
def frame() -> pd.DataFrame:
    """Built for each test (not once a module): mutmut runs, for a mutant, only the tests it saw
    call the function, and a module-scoped fixture's call is seen by the first test alone."""
    return execution_frame(_rows(), TIME)


def _absent(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _row(frame, point, repetition) -> dict:
    [row] = frame[(frame["point"] == point) & (frame["repetition"] == repetition)].to_dict("records")
    return row


def test_one_row_per_execution_and_nothing_else(frame):
    assert sorted(zip(frame["point"], frame["repetition"], strict=True)) == sorted(
        [(ON, 0), (ON, 1), (OFF, 0), (OFF, 1), (OFF, 2), (NA, -1), (KILLED, 0), ("mrr=on bka=on cache=cold", 0)])
    assert set(frame["subject"]) == {"q03"}


def test_each_executions_columns(frame):
    first = _row(frame, ON, 0)
    assert (first["status"], first["primary"], first["cache"], first["order"]) == ("ok", 1.0, "cold", 2)
    assert json.loads(first["swept"]) == {"bka": True} and first["warm"] == False  # noqa: E712 - pandas' boolean
    assert (first["target"], first["server"]) == ("mysqlbench_demo", "mariadb 10.11.19") and _absent(first["why"])
    assert (first["checksum"], first["oracle"]) == ("c0", "match")
    assert (first["client_seconds"], first["server_seconds"], first["physical_reads"]) == (1.0, 0.5, 10.0)
    assert first["pages_data_bytes"] == -4.0  # a gauge's negative change is kept
    assert (first["other_cpu"], first["steal"], bool(first["noisy"])) == (25.0, 0.0, True)  # other processes > 20%
    second = _row(frame, ON, 1)
    assert (second["other_cpu"], second["steal"], bool(second["noisy"])) == (5.0, 6.0, True)  # steal > 5%
    assert second["checksum"] == "c1" and math.isnan(second["pages_data_bytes"])  # absent, not zero
    quiet = _row(frame, OFF, 0)
    assert (quiet["other_cpu"], bool(quiet["noisy"])) == (1.0, False) and math.isnan(quiet["steal"])
    no_figures = _row(frame, OFF, 2)  # no OS figure at all marks nothing
    assert math.isnan(no_figures["other_cpu"]) and not bool(no_figures["noisy"])
    assert _absent(no_figures["checksum"]) and _absent(no_figures["oracle"])
    timeout = _row(frame, OFF, 1)
    assert timeout["status"] == "timeout" and math.isnan(timeout["primary"])
    na = _row(frame, NA, -1)
    assert na["status"] == "not_applicable" and na["why"] == "removed in MariaDB 10.6" and math.isnan(na["primary"])
    edge = _row(frame, "mrr=on bka=on cache=cold", 0)
    assert (edge["other_cpu"], edge["steal"], bool(edge["noisy"])) == (20.0, 5.0, False)
    assert edge["swept"] == '{"bka": true, "mrr": true}'  # one spelling whatever the order: points group by it
    killed = _row(frame, KILLED, 0)
    assert killed["status"] == "killed" and math.isnan(killed["primary"]) and killed["server_seconds"] == 9.0
    assert killed["warm"] == True and killed["server"] == "? ?"  # noqa: E712 - no lineage recorded


def test_no_rows_is_an_empty_frame_with_every_column():
    empty = execution_frame([{"point": None, "subject": None, "kind": "run"}], TIME)
    assert empty.empty and list(empty.columns) == [
        "point", "subject", "repetition", "cache", "status", "primary", "order", "swept", "warm", "checksum", "oracle",
        "why", "target", "server", "other_cpu", "steal", "noisy"]


def test_summaries_per_point(frame):
    out = summaries(frame, counters=("physical_reads", "Innodb_buffer_pool_read_ahead")).set_index("point")
    on, off, na, killed = out.loc[ON], out.loc[OFF], out.loc[NA], out.loc[KILLED]
    assert (on["runs"], on["timeouts"], on["killed"], on["cache"], on["target"]) == (2, 0, 0, "cold", "mysqlbench_demo")
    assert (on["median"], on["min"], on["max"]) == (2.0, 1.0, 3.0)
    assert on["cv"] == pytest.approx(0.5)  # population std 1.0 over mean 2.0
    assert on["median_server"] == 1.0 and on["physical_reads"] == 20.0
    assert math.isnan(on["Innodb_buffer_pool_read_ahead"])  # a counter this server lacks: absent, not zero
    assert json.loads(on["swept"]) == {"bka": True} and on["server"] == "mariadb 10.11.19" and not on["warm"]
    # the timeout counts as a run and a timeout, and stays out of the figures
    assert (off["runs"], off["timeouts"], off["median"], off["min"], off["max"]) == (3, 1, 3.0, 2.0, 4.0)
    assert off["cv"] == pytest.approx(1 / 3) and off["physical_reads"] == 30.0
    assert na["not_applicable"] == "removed in MariaDB 10.6" and na["runs"] == 1 and math.isnan(na["median"])
    assert killed["killed"] == 1 and math.isnan(killed["median"]) and bool(killed["warm"])
    assert _absent(off["not_applicable"])


def test_one_execution_has_no_spread():
    one = execution_frame([r for r in _rows() if r["point"] == ON and r["repetition"] == 0], TIME)
    [row] = summaries(one).to_dict("records")
    assert row["cv"] == 0.0 and row["median"] == row["min"] == row["max"] == 1.0


def test_summaries_of_nothing_is_empty():
    assert summaries(pd.DataFrame()).empty
