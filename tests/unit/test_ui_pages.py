"""The Benchmarks pages' run lists (plugins/mysqlbench/ui/app.py): the index shows a study's newest
runs and links to a page with all of them; both offer the compare form. The pages themselves run in
a real Airflow in tests/test_readme_commands.py (browser) and tests/test_celery_executor.py."""

import re

from mysqlbench.ui.app import INDEX_RUNS, _study_runs


def _runs(n):
    return [{"run_id": f"run_{i:03d}", "measured_at": f"2026-12-{1 + i // 24:02d} {i % 24:02d}:00:00",
             "servers": ["mariadb 10.11"], "validity": "valid" if i % 2 else "INVALID"} for i in range(n, 0, -1)]


def _linked_runs(page: str) -> list[str]:
    return re.findall(r"href='/mysqlbench/runs/tpch_power/(\w+)'", page)


def test_the_index_caps_a_study_and_links_to_all_of_its_runs():
    runs = _runs(INDEX_RUNS + 12)
    index = "".join(_study_runs("/mysqlbench", "tpch_power", runs, limit=INDEX_RUNS))
    assert _linked_runs(index) == [r["run_id"] for r in runs[:INDEX_RUNS]]  # the newest, newest first
    assert f"href='/mysqlbench/studies/tpch_power'>all {INDEX_RUNS + 12} runs" in index
    every = "".join(_study_runs("/mysqlbench", "tpch_power", runs, limit=None))
    assert _linked_runs(every) == [r["run_id"] for r in runs]
    assert "/mysqlbench/studies/" not in every
    # the compare form offers every run, not only the shown ones; A the one before the newest
    assert index.count("<option") == 2 * len(runs)
    assert "<option value='run_061' selected>" in index and "<option value='run_062' selected>" in index
    # valid green, INVALID red, and a run not validated yet in neither (it may still be running)
    assert "<td class='ok'>valid</td>" in index and "<td class='bad'>INVALID</td>" in index
    pending = "".join(_study_runs("/mysqlbench", "tpch_power", [{**runs[0], "validity": "not validated"}], limit=None))
    assert "<td class='pending'>not validated</td>" in pending


def test_one_run_has_nothing_to_compare_and_names_are_escaped():
    page = "".join(_study_runs("/mb", "s<x>", [{"run_id": "manual__<b>", "measured_at": "", "servers": [],
                                                 "validity": "not validated"}], limit=INDEX_RUNS))
    assert "<form" not in page and "<b>" not in page and "s&lt;x&gt;" in page


def _airflow_run_ids() -> list[str]:
    """Run ids as Airflow makes them: manual (REST API, UI form, `dags test`), scheduled, backfill
    and asset-triggered, with and without a logical date (Airflow 3 adds a random suffix without)."""
    import datetime as dt

    from airflow.models.dagrun import DagRun
    from airflow.utils.types import DagRunType

    when = dt.datetime(2026, 12, 4, 16, 49, 28, 45205, tzinfo=dt.timezone.utc)
    return [DagRun.generate_run_id(run_type=kind, logical_date=logical, run_after=when)
            for kind in (DagRunType.MANUAL, DagRunType.SCHEDULED, DagRunType.BACKFILL_JOB, DagRunType.ASSET_TRIGGERED)
            for logical in (when, None)]


def test_every_run_id_airflow_makes_is_accepted_and_gets_a_folder_of_its_own():
    from mysqlbench import paths
    from mysqlbench.ui.app import RUN_DIR, run_href, run_id_ok

    ids = _airflow_run_ids()
    assert ids[0] == "manual__2026-12-04T16:49:28.045205+00:00"  # (what the blocker's users had)
    for run_id in ids + ["ui_a", "versions_probe__mariadb-10.11", "x" * 250]:
        assert run_id_ok(run_id), run_id
        folder = paths.run_dir_name(run_id)
        assert RUN_DIR.fullmatch(folder) and "/" not in folder and len(folder) <= paths.RUN_DIR_MAX, folder
        if len(run_id) < 60:
            assert paths.run_id_of_dir(folder) == run_id
    # one folder per run: ':' '+' and '_' no longer collapse into one name
    folders = {paths.run_dir_name(r) for r in ("a:b", "a+b", "a_b", "a~3ab", "a__b", "a~b")}
    assert len(folders) == 6
    assert paths.run_dir_name("a_b") == "a_b"  # plain ids keep their names (older reports stay where they are)
    assert paths.run_dir_name("..") not in ("..", ".") and not paths.run_dir_name(".hidden").startswith(".")
    long_a, long_b = "y" * 240 + "a", "y" * 240 + "b"
    assert paths.run_dir_name(long_a) != paths.run_dir_name(long_b)
    # a link quotes the id as one path segment; a form value is left to the browser
    href = run_href("/mysqlbench", "tpch_power", ids[0])
    assert href == "/mysqlbench/runs/tpch_power/manual__2026-12-04T16%3A49%3A28.045205%2B00%3A00"


def test_ids_that_are_not_run_ids_are_refused():
    from mysqlbench.ui.app import run_id_ok

    for bad in ("", "a/b", "../x", "a\x00b", "a\nb", "<b>", "x" * 251, "a\\b"):
        assert not run_id_ok(bad), repr(bad)


def test_the_run_list_links_each_generated_run_id_to_its_page():
    runs = [{"run_id": r, "measured_at": "2026-12-04 16:49:28", "servers": ["mariadb 10.11"], "validity": "valid"}
            for r in _airflow_run_ids()[:2]]
    page = "".join(_study_runs("/mysqlbench", "tpch_power", runs, limit=INDEX_RUNS))
    assert "href='/mysqlbench/runs/tpch_power/manual__2026-12-04T16%3A49%3A28.045205%2B00%3A00'" in page
    assert "<option value='manual__2026-12-04T16:49:28.045205+00:00'" in page


def test_a_run_without_a_report_is_404_unless_it_is_a_known_run_of_a_reporting_dag():
    """Issue 24 item 4: an unknown DAG or run answered 200 "No report (yet)", and so did every
    tpch_load run. A study, regression or releases DAG's known run without a report says its state
    in words; anything else is 404."""
    from mysqlbench.ui.app import no_report, reporting_dags

    dags = reporting_dags()
    assert {"tpch_bka_study", "tpcc_bp_sweep_study", "nightly_regression", "tpch_power_across_versions_mysql"} <= dags
    assert "tpch_load" not in dags and "tpcc_load" not in dags
    assert no_report("tpch_load", "manual__x", False, "success")[0] == 404
    assert no_report("no_such_dag", "manual__x", False, None)[0] == 404
    assert no_report("tpch_power", "manual__gone", False, None) == (404, "no run manual__gone of tpch_power")
    status, words = no_report("tpch_power", "manual__x", False, "running")
    assert status == 200 and words.startswith("This run is running") and "not validated" not in words
    status, words = no_report("tpch_power", "manual__x", False, "failed")
    assert status == 200 and "ended failed without a report" in words
    assert no_report("tpch_power", "manual__x", True, None)[0] == 200  # recorded: the store knows it


def test_no_page_is_served_outside_airflows_login():
    """FastAPI's /docs, /redoc and /openapi.json are served outside an app's dependencies: the app
    has none of them, so every route it has is behind Airflow's authentication."""
    from mysqlbench.ui.app import create_app

    app = create_app()
    paths = {route.path for route in app.routes}
    assert not paths & {"/docs", "/redoc", "/openapi.json", "/docs/oauth2-redirect"}, paths
    assert app.router.dependencies  # Airflow's requires_access_view, on every route


def test_runs_in_every_state_are_listed_with_their_state_in_words():
    """Issue 24 item 4: runs refused by check_spec or failed before measuring were not listed (the
    list came from measured samples alone). Airflow's runs of a study DAG join the measured ones:
    a measured run gets its state beside its validity, an unmeasured one says why it has none, and
    only measured runs are offered to compare."""
    from mysqlbench.ui.app import listed_runs

    measured = {"tpch_power": [{"study": "tpch_power", "run_id": "m1", "measured_at": "2026-12-07 10:00:00",
                                "servers": ["mariadb 10.11"], "validity": "valid"},
                               {"study": "tpch_power", "run_id": "m2", "measured_at": "2026-12-07 09:00:00",
                                "servers": ["mariadb 10.11"], "validity": "valid"}]}
    airflow = {"tpch_power": [
        {"run_id": "m1", "state": "success", "started": "2026-12-07 09:59:00", "refused": None},
        {"run_id": "r1", "state": "failed", "started": "2026-12-07 11:00:00",
         "refused": "invalid params: repetitions: got 'fiv'"},
        {"run_id": "f1", "state": "failed", "started": "2026-12-07 08:00:00", "refused": None},
        {"run_id": "q1", "state": "queued", "started": "2026-12-07 12:00:00", "refused": None}],
        "tpcc_bp_sweep_study": [{"run_id": "t1", "state": "running", "started": "2026-12-07 07:00:00",
                                 "refused": None}]}
    runs = listed_runs(measured, airflow)
    power = {r["run_id"]: r for r in runs["tpch_power"]}
    assert [r["run_id"] for r in runs["tpch_power"]] == ["q1", "r1", "m1", "m2", "f1"]  # newest first
    assert (power["m1"]["state"], power["m1"]["validity"]) == ("success", "valid")
    assert "state" not in power["m2"]  # a run Airflow does not have (another deployment's): no state
    assert power["r1"]["validity"] == "refused: invalid params: repetitions: got 'fiv'"
    assert power["f1"]["validity"] == "failed before measuring anything"
    assert power["q1"]["validity"] == "queued: nothing measured yet"
    assert runs["tpcc_bp_sweep_study"][0]["validity"] == "running: nothing measured yet"
    page = "".join(_study_runs("/mysqlbench", "tpch_power", runs["tpch_power"], limit=INDEX_RUNS))
    assert _linked_runs(page) == ["q1", "r1", "m1", "m2", "f1"]
    assert page.count("<option") == 4  # m1 and m2 in each select: nothing to compare in the others
    assert "<td class='pending'>refused: invalid params: repetitions: got &#x27;fiv&#x27;</td>" in page
