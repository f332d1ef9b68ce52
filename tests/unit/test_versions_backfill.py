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
    assert SHIPPED.versions == VersionsSpec(flavor="mariadb", port_base=3370)


@pytest.mark.parametrize("change,message", [
    ({"suite": [{"study": "tpch_power"}, {"study": "sysbench_cpu"}]}, "measures one study"),
    ({"suite": [{"study": "tpch_power", "conf": {"target_conn_id": "mysqlbench_demo"}}]}, "conf names none"),
    ({"versions": {"flavor": "postgres"}}, "flavor"),
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


def test_the_schedule_is_every_catalog_release_date():
    events = versions.release_events()
    assert [e.date() for e in events] == sorted(s.released for s in servers.catalog().values())
    assert all(e.tzinfo is not None and e.time() == dt.time() for e in events)


@pytest.mark.parametrize("flavor,when,expected", [
    ("mariadb", "2023-02-16", "mariadb-10.11"),   # its own release day
    ("mariadb", "2024-04-30", "mariadb-10.11"),   # MySQL 8.4's release day: the same MariaDB again
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
    was flavor). Its form and conf now take the study's scale factor and queries, defaulting to
    the spec's, validated when the run is triggered, and the study run gets them."""
    from airflow.sdk.definitions.param import ParamsDict
    from airflow.sdk.exceptions import ParamValidationError

    params = ParamsDict(versions.study_params(SHIPPED))
    assert params["scale_factor"] == SHIPPED.suite[0].conf["scale_factor"] and params["queries"] is None
    params["scale_factor"] = 0.01
    params["queries"] = ["q03", "q08"]
    conf = versions.study_conf(SHIPPED, {**params.dump(), "flavor": "mariadb"}, "versions_x")
    assert conf == {**SHIPPED.suite[0].conf, "scale_factor": 0.01, "queries": ["q03", "q08"],
                    "target_conn_id": "versions_x"}
    assert versions.study_conf(SHIPPED, {"scale_factor": None, "queries": None}, "t")["scale_factor"] == \
        SHIPPED.suite[0].conf["scale_factor"]  # empty: the spec's
    for bad in ({"scale_factor": -1}, {"scale_factor": float("nan")}, {"queries": ["q3; DROP"]}, {"queries": []}):
        name, value = next(iter(bad.items()))
        with pytest.raises(ParamValidationError):
            params[name] = value
