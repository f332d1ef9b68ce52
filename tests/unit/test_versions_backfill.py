"""The releases regression DAG's pure parts: its spec, which server a logical date picks, the
targets and study run ids it derives, and where a plan changes across versions. The backfill
itself, under a real scheduler, is tests/test_readme_commands.py::test_backfill_across_server_versions."""

from __future__ import annotations

import datetime as dt

import pandas as pd
import pytest

from mysqlbench import servers
from mysqlbench.errors import InvalidInput
from mysqlbench.paths import CONFIG_DIR
from mysqlbench.regression import versions
from mysqlbench.regression.spec import RegressionSpec, VersionsSpec, check_suite, load_regression

SHIPPED = load_regression(CONFIG_DIR / "regression" / "tpch_power_across_versions.yaml")


def test_the_shipped_releases_spec_checks():
    check_suite(SHIPPED)
    assert SHIPPED.analysed_studies() == ["tpch_power"]
    assert SHIPPED.versions == VersionsSpec(flavors=["mariadb", "mysql"], port_base=3370)
    assert SHIPPED.dag_ids() == {"mariadb": "tpch_power_across_versions_mariadb",
                                 "mysql": "tpch_power_across_versions_mysql"}


@pytest.mark.parametrize("change,message", [
    ({"suite": [{"study": "tpch_power"}, {"study": "sysbench_cpu"}]}, "measures one study"),
    ({"suite": [{"study": "tpch_power", "conf": {"target_conn_id": "mysqlbench_demo"}}]}, "conf names none"),
    ({"versions": {"flavors": ["postgres"]}}, "flavors"),
    ({"versions": {"flavors": []}}, "flavors"),
    ({"versions": {"flavors": ["mysql", "mysql"]}}, "each flavor line once"),
    ({"versions": {"flavor": "mysql"}}, "flavor"),
    ({"versions": {"port_base": 80}}, "port_base"),
    ({"versions": {"target_prefix": "v; DROP"}}, "target name prefix"),
])
def test_bad_releases_specs_are_refused(change, message):
    raw = SHIPPED.model_dump(mode="json", by_alias=True) | change
    with pytest.raises((InvalidInput, ValueError), match=message):
        RegressionSpec.model_validate(raw)


def test_versions_only_go_with_a_releases_schedule():
    raw = SHIPPED.model_dump(mode="json", by_alias=True) | {"schedule": "0 2 * * *"}
    with pytest.raises(ValueError, match="only a releases DAG"):
        RegressionSpec.model_validate(raw)


def test_each_flavor_line_is_its_own_dag_scheduled_on_its_own_release_dates():
    """Issue 23 item 6: Airflow's backfill decides "already exists" by DAG and logical date, so a
    MySQL-line backfill after a MariaDB one over the same range found every date taken and ran
    nothing; and a trend of one DAG divided MySQL by MariaDB. One DAG per flavor line, each on its
    own line's release dates."""
    from mysqlbench.regression.factory import build_releases_dag

    for flavor, dag_id in SHIPPED.dag_ids().items():
        events = versions.release_events(flavor)
        assert [e.date() for e in events] == sorted(s.released for s in servers.catalog().values()
                                                    if s.flavor == flavor)
        assert all(e.tzinfo is not None and e.time() == dt.time() for e in events)
        dag = build_releases_dag(SHIPPED, CONFIG_DIR / "regression" / "tpch_power_across_versions.yaml", flavor)
        assert dag.dag_id == dag_id and "flavor" not in dag.params
        assert dag.get_task("measure_version").flavor == flavor
        first = dag.timetable.next_dagrun_info(last_automated_data_interval=None, restriction=_anything())
        assert first.logical_date.date() == events[0].date()
    assert versions.release_events("mysql")[0].date() == servers.catalog()["mysql-8.0"].released


def _anything():
    from airflow.timetables.base import TimeRestriction

    return TimeRestriction(earliest=None, latest=None, catchup=True)


@pytest.mark.parametrize("flavor,when,expected", [
    ("mariadb", "2023-02-16", "mariadb-10.11"),   # its own release day
    ("mariadb", "2024-04-30", "mariadb-10.11"),   # a later day: the MariaDB current then
    ("mariadb", "2025-06-04", "mariadb-11.8"),
    ("mysql", "2026-04-21", "mysql-9.7"),
])
def test_a_logical_date_picks_the_server_current_then(flavor, when, expected):
    assert versions.pick(flavor, dt.datetime.fromisoformat(when)).id == expected


def test_a_date_without_a_runnable_server_is_not_measured_and_says_why():
    with pytest.raises(versions.NotMeasured, match="no mariadb server in the catalog was released by 2019-01-01"):
        versions.pick("mariadb", dt.datetime(2019, 1, 1))
    # MySQL 8.4 has no Debian suite and no basedir here
    with pytest.raises(versions.NotMeasured, match="mysql-8.4 was current at 2025-01-01 but is not applicable here"):
        versions.pick("mysql", dt.datetime(2025, 1, 1))


def test_each_server_has_its_own_target_and_port():
    spec = VersionsSpec(port_base=3400, target_prefix="vprobe")
    found = {sid: versions.target_of(sid, spec) for sid in servers.catalog()}
    assert found["mariadb-11.8"]["name"] == "vprobe_mariadb_11_8"
    assert found["mariadb-11.8"]["conn_id"] == "mysqlbench_vprobe_mariadb_11_8"
    assert len({t["port"] for t in found.values()}) == len(found) and min(t["port"] for t in found.values()) == 3400


def test_the_study_run_id_is_what_it_measures():
    key = {"spec_hash": "a" * 64, "server_version": "10.11.19-MariaDB", "host_hash": "b" * 64}
    first = versions.study_run_id("tpch_power_across_versions", "mariadb-10.11", key)
    assert first == versions.study_run_id("tpch_power_across_versions", "mariadb-10.11", dict(key))
    assert first.startswith("tpch_power_across_versions__mariadb-10.11__")
    assert first != versions.study_run_id("tpch_power_across_versions", "mariadb-10.11",
                                          {**key, "server_version": "10.11.20-MariaDB"})
    assert versions.study_run_id("tpch_power_across_versions", "mariadb-10.11", key, attempt=2) == first + "__2"


def test_the_spec_a_triggered_study_records_is_its_file_with_the_conf():
    data = versions.study_spec_data("tpch_power", {"scale_factor": 0.01, "queries": ["q06"],
                                                   "target_conn_id": "mysqlbench_vprobe_mariadb_11_8"})
    assert data["dataset"]["scale_factor"] == 0.01 and data["units"] == ["q06"]
    assert data["target"] == "mysqlbench_vprobe_mariadb_11_8"
    with pytest.raises(InvalidInput, match="repetitons"):
        versions.study_spec_data("tpch_power", {"repetitons": 3})


def test_plan_changes_are_marked_where_the_structure_differs_from_the_version_before():
    labels = ["01 mariadb 10.5.29", "02 mariadb 10.11.19", "03 mariadb 11.8.3"]
    table = pd.DataFrame([
        {"subject": "q03", "setting": "cache=warm", labels[0]: "p1", labels[1]: "p1", labels[2]: "p2"},
        {"subject": "q06", "setting": "cache=warm", labels[0]: "p3", labels[1]: None, labels[2]: "p3"},
        {"subject": "q10", "setting": "cache=warm", labels[0]: "p4", labels[1]: "p5", labels[2]: "p4"},
    ]).set_index(["subject", "setting"])
    changes = versions.plan_changes(table, labels)
    assert [(c["subject"], c["version"], c["since"]) for c in changes] == [
        ("q03", labels[2], labels[1]), ("q10", labels[1], labels[0]), ("q10", labels[2], labels[1])]
    assert changes[0]["plan_before"] == "p1" and changes[0]["plan_after"] == "p2"
    assert versions.plan_changes(None, labels) == []


def test_a_releases_run_takes_the_scale_factor_and_queries_as_params():
    """Issue 23: the releases DAG could only be made cheaper by editing its spec (its one param
    was the flavor). Its form and conf now take the study's scale factor and queries, defaulting to
    the spec's, validated when the run is triggered, and the study run gets them."""
    from airflow.sdk.definitions.param import ParamsDict
    from airflow.sdk.exceptions import ParamValidationError

    params = ParamsDict(versions.study_params(SHIPPED))
    assert params["scale_factor"] == SHIPPED.suite[0].conf["scale_factor"] and params["queries"] is None
    params["scale_factor"] = 0.01
    params["queries"] = ["q03", "q08"]
    conf = versions.study_conf(SHIPPED, params.dump(), "versions_x")
    assert conf == {**SHIPPED.suite[0].conf, "scale_factor": 0.01, "queries": ["q03", "q08"],
                    "target_conn_id": "versions_x"}
    assert versions.study_conf(SHIPPED, {"scale_factor": None, "queries": None}, "t")["scale_factor"] == \
        SHIPPED.suite[0].conf["scale_factor"]  # empty: the spec's
    for bad in ({"scale_factor": -1}, {"scale_factor": float("nan")}, {"queries": ["q3; DROP"]}, {"queries": []}):
        name, value = next(iter(bad.items()))
        with pytest.raises(ParamValidationError):
            params[name] = value


def test_the_trend_gives_each_versions_spread_and_the_ratio_with_its_interval(tmp_path, monkeypatch):
    """Issue 23 item 5: trend ratios came from one run per version with no spread. Two versions'
    study runs, recorded as the study tasks record them: the trend has each version's median with
    its quartiles and n, the ratio to the oldest with its interval, and the chart draws the spread."""
    from mysqlbench.paths import run_dir_name
    from mysqlbench.results.lineage import Lineage
    from mysqlbench.results.store import ResultsStore, Sample, Validation

    monkeypatch.setenv("MYSQLBENCH_WORK_DIR", str(tmp_path))
    store = ResultsStore(f"sqlite:///{tmp_path / 'results.db'}")
    dag_id = "tpch_power_across_versions_mariadb"
    for server_id, version, seconds in (("mariadb-10.5", "10.5.29", [0.10, 0.11, 0.12, 0.13]),
                                        ("mariadb-11.8", "11.8.3", [0.20, 0.21, 0.22, 0.23])):
        base = dict(study="tpch_power", dag_id="tpch_power", run_id=f"{dag_id}__{server_id}__0123456789ab",
                    try_number=1, spec_hash="spec", package_version="abc", server_flavor="mariadb",
                    server_version=f"{version}-MariaDB", variables_hash="v", host_hash="h", dataset_id="d")
        meta = {"target": f"mysqlbench_versions_{server_id}", "cache": "warm", "knobs": {}, "swept": {}}
        store.record(Lineage(task_id="measure_point", map_index=0, **base),
                     [Sample("client_seconds", s, "s", kind="metric", point="cache=warm", subject="q03", repetition=i,
                             metadata=meta) for i, s in enumerate(seconds)])
        store.record(Lineage(task_id="validate", map_index=-1, **base), [], [Validation("study", True, {}, [])])
    result = versions.trend(store, "tpch_power", dag_id)
    assert [v["server_id"] for v in result["versions"]] == ["mariadb-10.5", "mariadb-11.8"]
    medians = {m["version"].split(" ", 1)[1]: m for m in result["medians"]}
    old, new = medians["mariadb 10.5.29"], medians["mariadb 11.8.3"]
    assert (old["n"], old["median"], old["q1"], old["q3"]) == (4, pytest.approx(0.115), pytest.approx(0.1075),
                                                               pytest.approx(0.1225))
    assert new["n"] == 4 and new["q1"] < new["median"] < new["q3"]
    [row] = result["comparison"]["primary"]
    labels = [v["label"] for v in result["versions"]]
    ratio = f"{labels[1]} / {labels[0]}"
    assert row[ratio] == pytest.approx(1.83, abs=0.1) and row[f"{ratio}: n"] == "4 vs 4"
    assert row[f"{ratio}: verdict"] == "more" and row[f"{ratio}: 95% CI"].startswith("1.6")  # at 94.3%: 4 vs 4 allows no more
    written = versions.write_trend(result, dag_id=dag_id, run_id="backfill__2025-06-04T00:00:00+00:00")
    text = (tmp_path / "reports" / dag_id / run_dir_name("backfill__2025-06-04T00:00:00+00:00") / "index.html").read_text()
    assert written["versions"] == labels and "<svg" in text and "quartiles" in text
