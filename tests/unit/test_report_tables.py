"""The study report's OS chart and per-point table (plugins/mysqlbench/studies/report.py), as a
reader sees them (issue 24 item 5): no figure of empty panels, and no pandas or Python placeholders."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from mysqlbench.studies.report import _os_chart, _readable

pytestmark = pytest.mark.unit


def _series(length_s: float) -> pd.DataFrame:
    """One OS series per metric for one window, sampled every second as the sampler stores it."""
    offsets = [float(t) for t in range(1, int(length_s) + 1)] + ([length_s] if length_s % 1 else [])
    return pd.DataFrame([{"metric": metric, "point": "cache=warm", "subject": "q03", "repetition": 0,
                          "series": json.dumps({"offsets_s": offsets, "values": [10.0] * len(offsets)})}
                         for metric in ("os_cpu_user_pct", "os_disk_read_ops")])


def test_windows_shorter_than_a_sample_get_a_reason_not_empty_panels(tmp_path):
    why = _os_chart(_series(0.42), tmp_path / "os.png")
    assert why.startswith("No OS chart: every measured window was shorter than the 1 s OS sampling")
    assert "0.42 s" in why and not (tmp_path / "os.png").exists()
    assert _os_chart(_series(3.0), tmp_path / "os.png") is None and (tmp_path / "os.png").stat().st_size > 5000


def test_the_per_point_table_says_words_not_placeholders():
    table = pd.DataFrame({"point": ["a", "b", "c"], "warm": pd.array([True, False, pd.NA], dtype="boolean"),
                          "not_applicable": [None, "removed in MariaDB 10.6", None], "median": [1.0, None, 2.0]})
    html = _readable(table).to_html(index=False, na_rep="absent")
    assert "&lt;NA&gt;" not in html and "None" not in html
    assert list(_readable(table)["warm"]) == ["yes", "no", "-"]
    assert list(_readable(table)["not_applicable"]) == ["", "removed in MariaDB 10.6", ""]
    assert "absent" in html  # a missing number still says absent


def test_a_round_is_said_with_its_repetition_or_why_it_stopped():
    from mysqlbench.studies.report import _round_words

    one = {"round": 7, "repetitions": [6, 7], "points": ["a", "b"], "why": "1 comparison(s) not decided"}
    assert _round_words(one) == "round 7: repetition 7 of 2 point(s) (1 comparison(s) not decided)"
    assert _round_words({**one, "repetitions": [6, 8]}).startswith("round 7: repetitions 7-8 of 2 point(s)")
    assert _round_words({**one, "stopped": "decided"}) == "round 7: nothing measured; stopped: decided"


def test_the_report_says_what_the_server_ran_with_at_each_swept_point(tmp_path):
    """Issue 26 item 4: a default point is labelled 'buffer_pool_instances=default' while MySQL
    9.7 sized the instances itself, and a reader could not see it; the report now gives each swept
    knob's variable as the server reported it in the measuring session."""
    from mysqlbench.results.lineage import Lineage
    from mysqlbench.results.store import ResultsStore, Sample, samples
    from mysqlbench.studies.analysis import swept_as_used
    from mysqlbench.studies.spec import load_spec

    store = ResultsStore(f"sqlite:///{tmp_path / 'results.db'}")
    spec = load_spec("tpcc_bp_instances_study", {"matrix": {"buffer_pool_instances": [{}, 8]}})
    for index, (point, instances, swept) in enumerate((
            ("buffer_pool_instances=default cache=warm", "1", {}),
            ("buffer_pool_instances=8 cache=warm", "8", {"buffer_pool_instances": 8}))):
        config = store.keep_server_snapshot("mysql", "9.7.0", {"innodb_buffer_pool_instances": instances,
                                                               "innodb_buffer_pool_size": "1073741824"})
        store.record(Lineage(task_id="measure_point", study=spec.study, dag_id=spec.study, run_id="manual__1",
                             map_index=index, try_number=1, spec_hash="s", package_version="p", server_flavor="mysql",
                             server_version="9.7.0", variables_hash=config, host_hash="h", dataset_id="d"),
                     [Sample("new_orders_per_min", 100.0, "1/min", kind="metric", point=point, subject="mix",
                             repetition=0, metadata={"swept": swept, "cache": "warm"})])
    rows = store.measured_rows(samples, dag_id=spec.study, run_id="manual__1")
    used = swept_as_used(spec, rows, store.server_snapshot)
    assert used.to_dict()["buffer_pool_instances"] == {
        "buffer_pool_instances=8 cache=warm": "8 -> innodb_buffer_pool_instances = 8",
        "buffer_pool_instances=default cache=warm": "default -> innodb_buffer_pool_instances = 1"}
    # on MariaDB 10.11 the knob names no variable: said so, not a value from another variable
    mariadb = [{**r, "server_flavor": "mariadb", "server_version": "10.11.6-MariaDB"} for r in rows]
    assert set(swept_as_used(spec, mariadb, store.server_snapshot)["buffer_pool_instances"]) == {
        "default (not applicable here)", "8 (not applicable here)"}
    assert swept_as_used(load_spec("tpch_power"), rows, store.server_snapshot) is None
