"""The README's commands that run Airflow's own services, from a fresh clone as a user has it
(tests/support/readme_clone.py), its `demo` target moved to a free port so it runs beside
tests/test_readme_commands.py's clone: `bin/airflow standalone` (a real scheduler with
LocalExecutor) where a point killed with SIGKILL mid-measure is undone by its restore journal and
its retry succeeds without duplicated rows; the nightly sweep from its cron schedule; Airflow's
backfill across server versions; and the results in the Airflow UI in a browser.

One stack serves the whole module (issue 25: one Airflow stack per executor kind for the whole
run; the CeleryExecutor's, with the api-server, scheduler, dag-processor and triggerer started as
four separate processes as a deployment runs them, is tests/test_celery_executor.py's). Each test
unpauses only what it runs and pauses it again on its way out, so one test's schedules and Asset
triggers do not run on into the next."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import quote, unquote

import pytest
from readme_clone import fresh_clone, move_demo_port, rest, run, user_env, wait
from services import free_port, stop_groups

from mysqlbench.paths import run_dir_name
from mysqlbench.regression.spec import load_regression

from conftest import EXTERNAL_MARKED_CONN, SUPPORT

REPO = Path(__file__).resolve().parents[1]
SF = 0.01


@pytest.fixture(scope="module")
def clone(session_dir):
    root = fresh_clone(session_dir / "airflow-clone" / "mysqlbench")
    move_demo_port(root, free_port())
    yield root
    subprocess.run([str(root / "bin" / "mysqlbench"), "target", "down", "demo"], env=user_env(root),
                   capture_output=True)


@pytest.fixture(scope="module")
def stack(clone, target):
    """The module's `bin/airflow standalone`, with what each of its tests needs in the environment
    a deployment would give it: the probe workload and its kill study (tests/support), the test
    nightly suite, the external marked server's connection, and a second user who may look but not
    trigger (the simple auth manager's viewer role)."""
    with _standalone(clone, MYSQLBENCH_WORKLOADS="probe=probe_workload:ProbeWorkload",
                     MYSQLBENCH_STUDY_DIRS=str(SUPPORT / "kill_studies"), PYTHONPATH=str(SUPPORT),
                     MYSQLBENCH_REGRESSION_DIRS=str(SUPPORT / "regression"),
                     AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS="admin:admin,viewer:viewer",
                     **{f"AIRFLOW_CONN_{EXTERNAL_MARKED_CONN.upper()}":
                        os.environ[f"AIRFLOW_CONN_{EXTERNAL_MARKED_CONN.upper()}"]}) as env:
        yield env


@contextlib.contextmanager
def _unpaused(clone, env, *dag_ids: str):
    """Each DAG parsed and unpaused as the README does it (`bin/airflow dags unpause`); paused again
    on the way out, through the REST API, whatever the test's outcome."""
    try:
        for dag_id in dag_ids:
            _parsed(clone, env, dag_id)
            _airflow(clone, env, "dags", "unpause", dag_id).check_returncode()
        yield
    finally:
        for dag_id in dag_ids:
            with contextlib.suppress(Exception):  # a stack that died has nothing left to run
                rest(env["_base"], "PATCH", f"/api/v2/dags/{dag_id}", {"is_paused": True}, env["_token"])


def _standalone_state(root: Path) -> str:
    """What a stuck standalone run was doing: the holds in its results store and its log's tail
    (task lines only), so a timeout explains itself."""
    import sqlite3

    try:
        holds = sqlite3.connect(root / "work" / "results.db").execute("SELECT * FROM holds").fetchall()
    except sqlite3.Error as exc:
        holds = f"(unreadable: {exc})"
    lines = [line for line in (root / "work" / "standalone.log").read_text().splitlines()
             if "dag-processor" not in line and "http.access" not in line]
    return f"holds at {time.time():.0f}: {holds}\nstandalone.log:\n" + "\n".join(line[:400] for line in lines[-40:])


def _global_variables(conn) -> dict[str, str]:
    from mysqlbench.results.lineage import server_variables, stable_variables

    return stable_variables(server_variables(conn))


@contextlib.contextmanager
def _standalone(clone, **extra_env):
    """`bin/airflow standalone` in the clone (api-server, scheduler with LocalExecutor, dag-processor,
    triggerer) on a free port, DAGs paused at creation (Airflow's default: a test unpauses what it
    runs, or the shipped nightly sweep would run its latest slot); yields the environment to
    run the airflow CLI with; stopped (process group) on the way out."""
    port = free_port()
    env = {**user_env(clone), "AIRFLOW__API__PORT": str(port),
           "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://127.0.0.1:{port}/execution/",
           "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "True",
           "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "5",
           # the DAG files do not change while a test runs: parsed when it starts, not every 30 s
           # (the default re-parse took 12 s of CPU a minute and a half, 13% of a core, beside
           # the other worker's tests)
           "AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL": "600",
           "AIRFLOW__SCHEDULER__TASK_QUEUED_TIMEOUT": "120", **extra_env}
    run(clone, "make setup")  # idempotent; lets a test run alone
    run(clone, "bin/mysqlbench target up demo")  # a pool and a managed server, as a user would have
    log = open(clone / "work" / "standalone.log", "w")
    proc = subprocess.Popen([str(clone / "bin" / "airflow"), "standalone"], cwd=clone, env=env, stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True)
    try:
        def healthy():
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v2/monitor/health", timeout=2) as r:
                    body = json.loads(r.read())
                return body["scheduler"]["status"] == "healthy" and body["dag_processor"]["status"] == "healthy"
            except Exception:  # noqa: BLE001 - not up yet
                return False

        wait(healthy, 240, "the standalone api-server, scheduler and dag-processor", proc)
        env["_proc"] = proc
        env["_base"], env["_token"] = _ui(clone, env)
        yield env
    finally:
        for private in ("_proc", "_base", "_token"):
            env.pop(private, None)
        stop_groups([proc])
        log.close()


def _airflow(clone, env, *args) -> subprocess.CompletedProcess:
    return subprocess.run([str(clone / "bin" / "airflow"), *args], cwd=clone, capture_output=True, text=True,
                          env={k: v for k, v in env.items() if not k.startswith("_")})


# What the tests wait on (a DAG parsed, its runs, a run's state) is read from the stack's REST API,
# as a monitoring script does: polled each second through the airflow CLI, every poll started a
# Python process that imports Airflow (seconds of CPU each), and two polling tests kept a core busy.
def _api(env, path: str):
    """GET ``path`` of the stack's REST API as its admin; None when it answers 404."""
    try:
        return rest(env["_base"], "GET", path, token=env["_token"])
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return None
        raise


def _parsed(clone, env, dag_id) -> None:
    wait(lambda: _api(env, f"/api/v2/dags/{dag_id}"), 120, f"the dag-processor to parse {dag_id}", env["_proc"])


def _runs(clone, env, dag_id) -> list[dict]:
    """The DAG's runs (run id, state, logical date), as the REST API lists them."""
    found = _api(env, f"/api/v2/dags/{dag_id}/dagRuns?limit=100") or {"dag_runs": []}
    return [{"run_id": r["dag_run_id"], "state": r["state"], "logical_date": r["logical_date"]}
            for r in found["dag_runs"]]


def _finished(clone, env, dag_id, run_id) -> str | None:
    """The run's final state, or None while it runs."""
    found = _api(env, f"/api/v2/dags/{dag_id}/dagRuns/{quote(run_id, safe='')}")
    state = found and found["state"]
    return state if state in ("success", "failed") else None


def test_standalone_runs_a_study_and_a_killed_point_is_undone(clone, stack, managed, admin):
    """`bin/airflow standalone` (api-server, scheduler with LocalExecutor, dag-processor,
    triggerer) runs probe_kill_study on a marked external server with a raw global variable.

    1. Its point is killed with SIGKILL mid-window: no cleanup runs, so the server is left changed;
       the retry takes the target, replays the restore journal, and measures again. Afterwards SHOW
       GLOBAL VARIABLES equals what it was before, and the point's rows are the retry's only.
    2. Issue 27 item 3, in a run triggered through the REST API: SIGTERM to the point's process (what
       a worker shutdown sends) stops the window, records the execution as killed, and Airflow
       retries; the retry, marked failed through the REST API (what the UI's "mark as failed" does),
       ends there although a retry is left. Both tries' executions stay in the store by try number,
       the report lists the earlier one, and the server is left as found."""
    from mysqlbench.results.store import ResultsStore, samples
    from mysqlbench.targets.connection import TargetConnection
    from mysqlbench.targets.journal import RestoreJournal

    before = _global_variables(admin)
    store = journal = None  # the clone's, once its set-up has made work/

    def measuring(other_than=None):
        with admin.cursor() as cur:
            cur.execute("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB = 'probe_kill' "
                        "AND COMMAND = 'Query' AND INFO LIKE 'SELECT SLEEP(0.2)%%'")
            busy = cur.fetchone()[0]
        state = busy and journal.record()
        return state if state and state["owner"]["pid"] != other_than else None

    env = stack
    with _unpaused(clone, env, "probe_kill_study"):
        proc = env["_proc"]
        store = ResultsStore(f"sqlite:///{clone / 'work' / 'results.db'}")
        # the server's journal (one per server, whichever connection id reached it), in the clone's results store
        journal = RestoreJournal.of(TargetConnection.from_airflow(EXTERNAL_MARKED_CONN), store)
        _airflow(clone, env, "pools", "set", f"target_{EXTERNAL_MARKED_CONN}", "1", "tests").check_returncode()
        _airflow(clone, env, "dags", "trigger", "probe_kill_study", "--run-id", "killed_point").check_returncode()
        state = wait(measuring, 300, "the point to start measuring", proc, lambda: _standalone_state(clone))
        with admin.cursor() as cur:
            cur.execute("SELECT @@GLOBAL.innodb_old_blocks_time")
            assert cur.fetchone()[0] == 777  # the point's raw global is in force
        os.kill(state["owner"]["pid"], signal.SIGKILL)
        outcome = wait(lambda: _finished(clone, env, "probe_kill_study", "killed_point"), 600, "the run to finish",
                        proc, lambda: _standalone_state(clone))
        assert outcome == "success", (clone / "work" / "standalone.log").read_text()[-5000:]
        assert _global_variables(admin) == before and journal.record() is None
        point_rows = store.rows(samples, dag_id="probe_kill_study", run_id="killed_point", task_id="measure_point")
        assert point_rows and {r["try_number"] for r in point_rows} == {2}  # what the run reads: the retry
        # (SIGKILL: the killed try recorded nothing; a stopped one keeps its rows under its try number)
        assert len([r for r in point_rows if r["metric"] == "statements_per_s"]) == 1

        # 2. stopped on purpose: SIGTERM is retried, a task marked failed through the API is not
        base = f"http://127.0.0.1:{env['AIRFLOW__API__PORT']}"
        password = json.loads((clone / ".airflow" / "simple_auth_manager_passwords.json.generated").read_text())["admin"]
        token = rest(base, "POST", "/auth/token", {"username": "admin", "password": password})["access_token"]
        run_id = rest(base, "POST", "/api/v2/dags/probe_kill_study/dagRuns", {"logical_date": None}, token)["dag_run_id"]
        first = wait(measuring, 300, "the point to start measuring", proc, lambda: _standalone_state(clone))
        os.kill(first["owner"]["pid"], signal.SIGTERM)
        wait(lambda: measuring(other_than=first["owner"]["pid"]), 300, "the retry to start measuring", proc,
             lambda: _standalone_state(clone))
        ti_path = f"/api/v2/dags/probe_kill_study/dagRuns/{quote(run_id, safe='')}/taskInstances/measure_point/0"
        rest(base, "PATCH", ti_path, {"new_state": "failed"}, token)
        outcome = wait(lambda: _finished(clone, env, "probe_kill_study", run_id), 600, "the stopped run to finish",
                       proc, lambda: _standalone_state(clone))
        ti = rest(base, "GET", ti_path, token=token)
        assert outcome == "failed" and (ti["state"], ti["try_number"]) == ("failed", 2), ti  # retries: 2, one unused
    assert _global_variables(admin) == before and journal.record() is None
    tries = store.rows(samples, every_try=True, dag_id="probe_kill_study", run_id=run_id, task_id="measure_point",
                       metric="statements_per_s")
    assert {(r["try_number"], r["status"]) for r in tries} == {(1, "killed"), (2, "killed")}, tries
    assert all(json.loads(r["metadata"])["why"] == "task terminated (on_kill)" for r in tries)
    summary = store.report_file("probe_kill_study", run_dir_name(run_id), "summary.json")
    earlier = json.loads(summary)["earlier_tries"]
    assert [(e["try"], e["executions"], e["replaced_by"]) for e in earlier] == [(1, {"killed": 1}, 2)], earlier


def test_nightly_regression_under_the_scheduler(clone, stack):
    """A nightly sweep (tests/support/regression/nightly_probe.yaml: sysbench cpu and tpch_power)
    run by the scheduler from its cron schedule (unpaused, it runs the latest 02:00 slot): each suite
    entry becomes its study's own DAG run, deferred on the triggerer while it waits, one after the
    other; the analysis reads their history; the alert task passes (one run per series: nothing to
    compare). The studies' published Assets also start regression_on_publish, so their runs join
    the same history. Other DAGs stay paused (the shipped nightly sweep would run its own suite)."""
    env = stack
    with _unpaused(clone, env, "sysbench_cpu", "tpch_power", "regression_on_publish", "nightly_probe"):

        def scheduled():
            return [r["run_id"] for r in _runs(clone, env, "nightly_probe") if r["run_id"].startswith("scheduled__")]
        [run_id] = wait(scheduled, 120, "the scheduler to create the nightly run", env["_proc"])
        outcome = wait(lambda: _finished(clone, env, "nightly_probe", run_id), 900, "the nightly sweep",
                        env["_proc"], lambda: _standalone_state(clone))
        assert outcome == "success", _standalone_state(clone)
        for i, study in enumerate(["sysbench_cpu", "tpch_power"]):
            assert _finished(clone, env, study, f"{run_id}__{i:02d}") == "success", study

        def analysed():  # (the Asset-triggered ones only)
            return [r for r in _runs(clone, env, "regression_on_publish")
                    if r["state"] == "success" and r["run_id"].startswith("asset_triggered__")]
        on_publish = wait(analysed, 300, "regression_on_publish triggered by the studies' Assets", env["_proc"],
                           lambda: _standalone_state(clone))
        # the Benchmarks pages take the ids the scheduler made (scheduled__<time>+00:00, and the
        # study runs it triggered, scheduled__...__00): the run's page and its report are served
        base, token = _ui(clone, env)
        for study_run in (f"{run_id}__00", f"{run_id}__01"):
            assert ":" in study_run and "+" in study_run
            study = "sysbench_cpu" if study_run.endswith("__00") else "tpch_power"
            _report_of_run_page(base, token, study, study_run)
        status, _, index = _get(base, "/mysqlbench/", token)
        assert status == 200 and f"/mysqlbench/reports/nightly_probe/{run_dir_name(run_id)}/index.html" in index
        assert _get(base, f"/mysqlbench/reports/nightly_probe/{run_dir_name(run_id)}/index.html", token)[0] == 200
    # each analysed the studies whose Assets fired (in this copy, earlier tests' published runs too,
    # queued until the DAG was unpaused), not every study
    import sqlite3

    published = {row[0] for row in sqlite3.connect(clone / "work" / "results.db").execute(
        "SELECT DISTINCT study FROM validations WHERE task_id = 'validate' AND success")}
    analysed = set()
    for run_ in on_publish:
        analysed |= set(json.loads((clone / "work" / "reports" / "regression_on_publish" / run_dir_name(
            run_["run_id"]) / "regression.json").read_text())["studies"])
    assert {"sysbench_cpu", "tpch_power"} <= analysed <= published, (analysed, published)
    report = json.loads((clone / "work" / "reports" / "nightly_probe" / run_dir_name(run_id)
                        / "regression.json").read_text())
    assert report["studies"] == ["sysbench_cpu", "tpch_power"] and report["alerts"] == []
    measured = {(s["key"]["study"], s["key"]["subject"]) for s in report["series"]
                if any(r["run_id"].startswith(f"{run_id}__") for r in s["runs"])}
    assert {("sysbench_cpu", "cpu"), ("tpch_power", "q01"), ("tpch_power", "q06")} <= measured
    assert not (clone / "work" / "nightly_probe_alerts.jsonl").exists()  # no regression, no notification


def _get(base: str, path: str, token: str | None = None) -> tuple[int, str, str]:
    """GET a page of the running API server: status, content type, body."""
    request = urllib.request.Request(base + path, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.headers.get("content-type", ""), response.read().decode("latin-1")
    except urllib.error.HTTPError as exc:
        return exc.code, "", exc.read().decode("latin-1")


def _ui(clone, env) -> tuple[str, str]:
    """The standalone API server's base URL and a token for its admin (simple auth manager)."""
    base = f"http://127.0.0.1:{env['AIRFLOW__API__PORT']}"
    password = json.loads((clone / ".airflow" / "simple_auth_manager_passwords.json.generated").read_text())["admin"]
    return base, rest(base, "POST", "/auth/token", {"username": "admin", "password": password})["access_token"]


def _report_of_run_page(base: str, token: str, dag_id: str, run_id: str) -> tuple[str, str, str]:
    """A run's Benchmark report tab as its link reaches it (the id quoted as one path segment),
    the report it frames, and that report's address; asserts both are served."""
    from urllib.parse import quote

    status, _, page = _get(base, f"/mysqlbench/runs/{dag_id}/{quote(run_id, safe='')}", token)
    assert status == 200, (run_id, page[:300])
    src = re.search(r"<iframe title='report' src='([^']+)'", page)
    assert src, (run_id, page[-500:])
    status, _, report = _get(base, src.group(1), token)
    assert status == 200 and f"<h1>{dag_id}" in report, (run_id, src.group(1), status)
    return page, report, src.group(1)


def _check_benchmark_pages(clone, env, study_runs: list[str]) -> None:
    """The plugin's Benchmarks pages in the running API server (issue 12, first part): refused
    without Airflow's authentication; with a token, the study runs with their validity, a run's
    report and its files, two runs side by side and the cross-version report; no path outside the
    reports and no connection password ever served."""
    get = _get
    base, token = _ui(clone, env)
    assert get(base, "/mysqlbench/")[0] == 401 and get(base, "/mysqlbench/api/runs")[0] == 401
    status, _, index = get(base, "/mysqlbench/", token)
    assert status == 200 and "<h2>tpch_power</h2>" in index and all(r in index for r in study_runs)
    assert "valid" in index and f"/mysqlbench/reports/{LINES['mariadb']}/" in index  # the trend reports are listed
    # the backfill's runs (backfill__<date>+00:00) each link their trend report from the index
    for backfill_run in (r["run_id"] for r in _runs(clone, env, LINES["mariadb"])):
        assert backfill_run.startswith("backfill__") and "+" in backfill_run
        link = f"/mysqlbench/reports/{LINES['mariadb']}/{run_dir_name(backfill_run)}/index.html"
        assert link in index and get(base, link, token)[0] == 200, backfill_run
    page, report, src = _report_of_run_page(base, token, "tpch_power", study_runs[0])
    assert "Validation:" in report
    chart = re.search(r"<img src='([^']+\.png)'", report).group(1)
    status, kind, _ = get(base, src.rsplit("/", 1)[0] + "/" + chart, token)
    assert status == 200 and kind == "image/png"
    status, _, side = get(base, f"/mysqlbench/compare?dag_id=tpch_power&a={study_runs[0]}&b={study_runs[-1]}", token)
    assert status == 200 and "two runs side by side" in side and "q03" in side and "Plan structure" in side
    # the columns are the runs, each run's server in its lineage row (issue 24: labelled by server)
    assert f"<td>run A</td><td>{study_runs[0]}</td><td>mariadb 10.11" in side
    assert f"<td>run B</td><td>{study_runs[-1]}</td><td>mariadb 11.8" in side and "run B / run A" in side
    assert "<img alt='ratio chart' src='data:image/png;base64," in side
    # what does not exist is 404, and no page (FastAPI's docs included) is served without a login
    assert get(base, "/mysqlbench/runs/tpch_power/manual__no_such_run", token)[0] == 404
    assert get(base, "/mysqlbench/runs/tpch_load/manual__no_such_run", token)[0] == 404
    for unserved in ("/mysqlbench/docs", "/mysqlbench/redoc", "/mysqlbench/openapi.json"):
        assert get(base, unserved)[0] in (401, 404) and get(base, unserved, token)[0] == 404, unserved
    for bad in ("/mysqlbench/reports/tpch_power/..%2F..%2F..%2F.airflow/airflow.cfg",
                "/mysqlbench/reports/x/y/results.db", "/mysqlbench/runs/tpch_power/..%2F..%2Fx"):
        assert get(base, bad, token)[0] in (400, 404), bad
    secret = json.loads(_airflow(clone, env, "connections", "get", "mysqlbench_versions_mariadb_11_8", "-o", "json")
                        .stdout.splitlines()[-1])[0]["password"]
    assert secret and all(secret not in text for text in (index, page, report, side))


RELEASES = "tpch_power_across_versions"
LINES = {"mariadb": f"{RELEASES}_mariadb", "mysql": f"{RELEASES}_mysql"}


def _readme_backfills() -> dict[str, str]:
    """The README's backfill commands, as written there (flavor line -> command)."""
    from test_readme_commands import readme_commands

    found = {flavor: [c for c in readme_commands() if c.startswith(f"bin/airflow backfill create --dag-id {dag_id} ")]
             for flavor, dag_id in LINES.items()}
    assert all(len(commands) == 1 for commands in found.values()), found
    return {flavor: commands[0] for flavor, commands in found.items()}


def test_backfill_across_server_versions(clone, stack):
    """The README's backfill commands as written, the scheduler running: the shipped releases spec
    is one DAG per flavor line, so the MySQL line's backfill, created right after the MariaDB
    line's over the same 2015..2026 range, runs (issue 23: one DAG found every date "already
    exists" and ran nothing). One run per release of each line in the catalog: MariaDB 10.5, 10.11
    and 11.8 each fetched, measured on its own target and stopped; MySQL 8.0 and 8.4 skipped with
    the reason (no package, no basedir), MySQL 9.7 measured. No "database is locked" from either
    command. Each line's trend stays within its flavor, with spread; a version already measured is
    found by the key its study run recorded."""
    backfills = _readme_backfills()
    env = stack
    names = []
    try:
        prepared = json.loads(run(clone, "bin/mysqlbench versions prepare").stdout)  # as the README
        ports = {t["server"]: t["port"] for t in prepared["targets"] if t["regression"] == RELEASES}
        assert ports == {"mariadb-10.5": 3370, "mariadb-10.11": 3371, "mariadb-11.8": 3372, "mysql-9.7": 3373}
        names = [f"versions_{server.replace('-', '_').replace('.', '_')}" for server in ports]
        with _unpaused(clone, env, "tpch_power", *LINES.values()):
            created = {flavor: run(clone, command) for flavor, command in backfills.items()}
            for done in created.values():
                assert "database is locked" not in done.stdout + done.stderr

            def finished():
                runs = {flavor: _runs(clone, env, dag_id) for flavor, dag_id in LINES.items()}
                ended = all(len(r) == 3 and all(x["state"] in ("success", "failed") for x in r) for r in runs.values())
                return runs if ended else None
            runs = wait(finished, 2400, "both lines' backfill runs", env["_proc"], lambda: _standalone_state(clone))
            study_runs = [r for r in _runs(clone, env, "tpch_power") if r["run_id"].startswith(f"{RELEASES}_")]
            _check_benchmark_pages(clone, env, sorted(r["run_id"] for r in study_runs
                                                      if r["run_id"].startswith(LINES["mariadb"])))
            for name in names:  # each stopped after its measurement
                assert json.loads(run(clone, f"bin/mysqlbench target status {name}").stdout)["running"] is False
    finally:
        for name in names:
            subprocess.run([str(clone / "bin" / "mysqlbench"), "target", "down", name], cwd=clone,
                           env=user_env(clone), capture_output=True)
    dates = {flavor: sorted(r["logical_date"][:10] for r in line) for flavor, line in runs.items()}
    assert dates == {"mariadb": ["2020-06-24", "2023-02-16", "2025-06-04"],
                     "mysql": ["2018-04-19", "2024-04-30", "2026-04-21"]}, dates
    assert all(r["run_id"].startswith("backfill__") and r["state"] == "success" for line in runs.values() for r in line)
    # each version measured once, by a study run named after its DAG and what it measures
    measured = sorted((r["run_id"].split("__")[0], r["run_id"].split("__")[1]) for r in study_runs)
    assert measured == [(LINES["mariadb"], "mariadb-10.11"), (LINES["mariadb"], "mariadb-10.5"),
                        (LINES["mariadb"], "mariadb-11.8"), (LINES["mysql"], "mysql-9.7")], study_runs
    assert {r["state"] for r in study_runs} == {"success"}
    reports = {}
    for flavor, line in runs.items():
        for r in line:
            path = clone / "work" / "reports" / LINES[flavor] / run_dir_name(r["run_id"])
            reports[(flavor, r["logical_date"][:10])] = (json.loads((path / "trend.json").read_text()), path / "index.html")
    notes = {day: trend["note"] for day, (trend, _) in reports.items()}
    for day in (("mysql", "2018-04-19"), ("mysql", "2024-04-30")):
        assert notes[day].startswith("This run measured nothing") and "not applicable here" in notes[day], notes
    assert not any("measured nothing" in note for (flavor, _), note in notes.items() if flavor == "mariadb"), notes
    for flavor in LINES:
        trend, html = max((v for k, v in reports.items() if k[0] == flavor), key=lambda item: len(item[0]["versions"]))
        assert {v["flavor"] for v in trend["versions"]} == {flavor}, trend["versions"]  # never one flavor over the other
        if flavor == "mysql":
            assert [v["server_id"] for v in trend["versions"]] == ["mysql-9.7"] and trend["comparison"] is None
            continue
        assert [v["server_id"] for v in trend["versions"]] == ["mariadb-10.5", "mariadb-10.11", "mariadb-11.8"]
        assert {m["subject"] for m in trend["medians"]} == {"q03", "q06"}
        # spread beside each median: the quartiles of the version's executions, and their number
        assert all(m["n"] == 3 and m["q1"] <= m["median"] <= m["q3"] for m in trend["medians"]), trend["medians"]
        primary = trend["comparison"]["primary"]
        labels = [v["label"] for v in trend["versions"]]
        assert {r["subject"] for r in primary} == {"q03", "q06"}
        for later in labels[1:]:
            ratio = f"{later} / {labels[0]}"
            # each ratio with its interval (or why there is none: 3 vs 3 is too few for 95%)
            assert all(r[ratio] > 0 and r[f"{ratio}: n"] == "3 vs 3" and r[f"{ratio}: 95% CI"] for r in primary), primary
        assert "physical_reads" in trend["comparison"]["counters"] and trend["comparison"]["plans"]
        text = html.read_text()
        assert "<svg" in text and "across server versions" in text and "quartiles" in text
        for change in trend["plan_changes"]:
            assert f'id="plan-change-{change["subject"]}-{labels.index(change["version"])}"' in text
    # the already-measured check's key is what the study run recorded: the spec hash of the conf as
    # the triggered run merged it, the exact server version and the host's hash
    from mysqlbench.regression import versions
    from mysqlbench.results.lineage import stable_hash
    from mysqlbench.results.store import ResultsStore

    store = ResultsStore(f"sqlite:///{clone / 'work' / 'results.db'}")
    conf = {**load_regression(clone / "include" / "configs" / "regression" / f"{RELEASES}.yaml").suite[0].conf,
            "scale_factor": 0.01, "queries": ["q03", "q06"]}  # the README's --dag-run-conf
    for flavor in LINES:
        trend = max((v[0] for k, v in reports.items() if k[0] == flavor), key=lambda t: len(t["versions"]))
        for measured_version in trend["versions"]:
            target = f"mysqlbench_versions_{measured_version['server_id'].replace('-', '_').replace('.', '_')}"
            key = {"study": "tpch_power", "server_version": measured_version["version"],
                   "host_hash": measured_version["host_hash"],
                   "spec_hash": stable_hash(versions.study_spec_data("tpch_power", {**conf, "target_conn_id": target}))}
            assert key["spec_hash"] == measured_version["spec_hash"]
            assert versions.already_measured(store, key)["run_id"] == measured_version["run_id"]


def _trigger_from_the_form(page, base: str, dag_id: str, typed: dict[tuple[str, str], str]) -> str:
    """Trigger ``dag_id`` from Airflow's own trigger form as a person does: open it, type each value
    (``typed``: (form section, param) -> the text typed) into its field, press Trigger; the run id
    is the one Airflow made, read from the run page the form opens."""
    page.goto(f"{base}/dags/{dag_id}")
    page.get_by_role("button", name="Trigger").first.click()
    opened = set()
    for (section, name), text in typed.items():
        if section not in opened:  # sections start closed; each opens once
            page.get_by_text(section, exact=True).click()
            opened.add(section)
        _type_into(page.locator(f"[name=element_{name}], #element_{name}").first, text)
    page.get_by_role("button", name="Trigger").last.click()
    page.wait_for_url(re.compile(rf"/dags/{dag_id}/runs/[^/?]+"), timeout=60_000)
    return unquote(re.search(rf"/dags/{dag_id}/runs/([^/?]+)", page.url).group(1))


def _type_into(field, text: str) -> None:
    """Replace a form field's value by typing ``text`` key by key (a list box: one item a line; a
    JSON field, Airflow's code editor: the text entered as a paste does, past its auto-closing)."""
    if field.evaluate("e => e.tagName") == "DIV":
        field.locator(".view-lines").click()
        field.page.keyboard.press("Control+a")
        field.page.keyboard.press("Backspace")
        field.page.keyboard.insert_text(text)
        field.page.keyboard.press("Tab")
        return
    field.click()
    field.press("Control+a")
    field.press("Backspace")
    if field.evaluate("e => e.tagName") == "TEXTAREA":
        field.fill(text)
    else:
        field.press_sequentially(text)
    field.press("Tab")


def test_results_in_the_airflow_ui_in_a_browser(clone, stack):
    """Issue 12's and issue 24's browser test, in headless Chromium: a study triggered from Airflow's
    own trigger form (its values typed into the form's fields, no run id: Airflow names it); then
    what a person sees: the Benchmarks page in the Airflow UI's navigation lists the run as valid,
    its Benchmark report tab shows the report with its chart and findings, its Rerun action
    triggers the same study again, and the compare page puts the two runs side by side with each
    ratio's interval, n and verdict. (A run triggered through the REST API, without a run id, is the
    standalone test's.) A bad value typed in the form
    shows its reason: letters in a number field leave it empty, "This field is required" and no
    Trigger; a value the study refuses (repetitions "fiv") starts a run that its first check
    refuses, and the run's Benchmark tab says why. Screenshots go to work/test-artifacts/ui/."""
    from playwright.sync_api import expect, sync_playwright

    artifacts = REPO / "work" / "test-artifacts" / "ui"
    artifacts.mkdir(parents=True, exist_ok=True)
    conf = {"scale_factor": SF, "queries": ["q03", "q06"], "repetitions": 2, "matrix": {"icp": [False, True]}}
    base, token, scheduler = stack["_base"], stack["_token"], stack["_proc"]

    def done(run_id):
        state = rest(base, "GET", f"/api/v2/dags/tpch_power/dagRuns/{quote(run_id, safe='')}", token=token)["state"]
        return state if state in ("success", "failed") else None

    with _unpaused(clone, stack, "tpch_power"), sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        try:
            anonymous = browser.new_page()
            assert anonymous.goto(f"{base}/mysqlbench/").status == 401
            context = browser.new_context(viewport={"width": 1500, "height": 1000})
            context.add_cookies([{"name": "_token", "value": token, "url": base}])
            page = context.new_page()
            # run A from the form, its values typed
            run_a = _trigger_from_the_form(page, base, "tpch_power", {
                ("Dataset", "scale_factor"): str(SF), ("Sweep", "units"): "\n".join(conf["queries"]),
                ("Sweep", "matrix"): json.dumps(conf["matrix"]),
                ("Measurement", "repetitions"): str(conf["repetitions"])})
            assert run_a.startswith("manual__") and "+" in run_a and ":" in run_a, run_a
            # what was typed is what the run got (a mistyped number once became the spec's SF 1)
            typed = rest(base, "GET", f"/api/v2/dags/tpch_power/dagRuns/{quote(run_a, safe='')}", token=token)["conf"]
            assert (typed["scale_factor"], typed["units"], typed["repetitions"], typed["matrix"]) == \
                (SF, conf["queries"], 2, conf["matrix"]), typed
            assert wait(lambda: done(run_a), 900, f"study run {run_a}", scheduler) == "success", run_a
            page.goto(f"{base}/plugin/benchmarks")
            pages = page.frame_locator("iframe").first
            expect(pages.get_by_role("heading", name="Benchmarks")).to_be_visible(timeout=60_000)
            expect(pages.get_by_role("link", name=run_a, exact=True)).to_be_visible()
            # each run with its numbers: its size and its primary metric over its executions
            expect(pages.get_by_role("row").filter(has_text=run_a)).to_contain_text(
                re.compile(r"tpch-sf0\.01; 2 points x 2 units; client_seconds [0-9.e-]+ \.\. [0-9.e-]+ s over 8 executions"))
            page.screenshot(path=artifacts / "benchmarks.png")
            # the pages take the Airflow UI's theme: dark where the user chose dark (issue 24)
            dark = browser.new_context(viewport={"width": 1500, "height": 1000})
            dark.add_cookies([{"name": "_token", "value": token, "url": base}])
            dark.add_init_script("localStorage.setItem('theme', 'dark')")  # next-themes' key, as the UI's toggle sets it
            in_dark = dark.new_page()
            in_dark.goto(f"{base}/plugin/benchmarks")
            expect(in_dark.locator("html")).to_have_class(re.compile(r"\bdark\b"))  # Airflow's own, dark
            dark_pages = in_dark.frame_locator("iframe").first
            expect(dark_pages.get_by_role("heading", name="Benchmarks")).to_be_visible(timeout=60_000)
            expect(dark_pages.locator("body")).to_have_css("background-color", "rgb(27, 27, 31)")
            expect(pages.locator("body")).to_have_css("background-color", "rgb(255, 255, 255)")
            in_dark.screenshot(path=artifacts / "benchmarks_dark.png")
            dark.close()
            # the trigger form draws a list of fixed choices as a multi-select (issue 24 item 3:
            # "Cache modes" was a free-text box), each chosen value a removable chip
            page.goto(f"{base}/dags/tpch_bka_study")
            page.get_by_role("button", name="Trigger").first.click()
            page.get_by_text("Sweep", exact=True).click()
            cache = page.locator("#element_cache")
            expect(cache).to_be_visible(timeout=30_000)
            assert cache.evaluate("e => e.tagName") != "TEXTAREA"
            expect(cache).to_contain_text("cold")
            expect(cache).to_contain_text("warm")
            # a field that may be left empty has no "*" (issue 24 item 3); one that may not, has
            form_text = page.get_by_role("dialog").inner_text()
            assert "Queries\n*" in form_text and "Fixed knobs\n*" not in form_text
            assert "Sweep matrix\n*" not in form_text and "Raw server variables\n*" not in form_text
            page.screenshot(path=artifacts / "trigger_form.png")
            page.keyboard.press("Escape")
            # the run's tab as Airflow's own UI opens it (its run page, then the plugin tab)
            page.goto(f"{base}/dags/tpch_power/runs/{quote(run_a, safe='')}")
            page.get_by_role("link", name="Benchmark report").click()
            run_page = page.frame_locator("iframe").first
            expect(run_page.get_by_text("valid;")).to_be_visible(timeout=60_000)
            report = run_page.frame_locator("iframe[title=report]")
            expect(report.get_by_role("heading", name="tpch_power")).to_be_visible(timeout=60_000)
            chart = report.locator("img[alt^='primary_q03']")
            expect(chart).to_be_visible()
            assert chart.evaluate("img => img.naturalWidth") > 100  # the PNG loaded, not a broken image
            # the findings: ICP on vs off per query, with n, and at 2 repetitions a side no interval:
            # inconclusive, and said so (never a difference claimed)
            findings = report.locator("h2", has_text="Findings").locator("xpath=following-sibling::*[1]")
            expect(findings).to_contain_text("icp on vs off")
            expect(findings).to_contain_text("n=2 vs 2")
            expect(findings).to_contain_text("inconclusive")
            page.screenshot(path=artifacts / "run_report.png", full_page=True)
            # run A's Rerun action: Airflow triggers it as this user; the tab then names the new run
            page.goto(f"{base}/dags/tpch_power/runs/{quote(run_a, safe='')}")
            page.get_by_role("link", name="Benchmark report").click()
            run_page = page.frame_locator("iframe").first
            run_page.get_by_role("button", name="Rerun").click()
            expect(run_page.get_by_role("heading", name="Rerun triggered")).to_be_visible(timeout=60_000)
            rerun_id = run_page.get_by_role("link", name=re.compile(r"^manual__")).inner_text()
            # a bad value typed in the form. Letters in a number field: Airflow's form leaves it
            # empty, says it is required and will not trigger (before, the spec's SF 1 ran)
            page.goto(f"{base}/dags/tpch_power")
            page.get_by_role("button", name="Trigger").first.click()
            page.get_by_text("Dataset", exact=True).click()
            scale = page.locator("[name=element_scale_factor]")
            _type_into(scale, "abc")
            assert scale.input_value() == ""
            expect(page.get_by_text("This field is required")).to_be_visible()
            expect(page.get_by_role("button", name="Trigger").last).to_be_disabled()
            page.screenshot(path=artifacts / "form_letters.png")
            page.keyboard.press("Escape")
            # a value the study refuses (the form cannot show the REST API's reason): the run is
            # made, its first check refuses it, and the run's Benchmark tab says why
            refused_run = _trigger_from_the_form(page, base, "tpch_power", {("Measurement", "repetitions"): "fiv"})
            assert refused_run not in {run_a, rerun_id}
            assert wait(lambda: done(rerun_id), 900, "the rerun", scheduler) == "success"
            assert wait(lambda: done(refused_run), 300, "the refused run", scheduler) == "failed"
            page.goto(f"{base}/dags/tpch_power/runs/{quote(run_a, safe='')}")
            page.get_by_role("link", name="Benchmark report").click()
            run_page = page.frame_locator("iframe").first
            # from run A's tab, the rerun chosen in its compare form
            run_page.get_by_role("combobox").select_option(rerun_id)
            run_page.get_by_role("button", name="side by side").click()
            expect(run_page.get_by_role("heading", name="tpch_power: two runs side by side")).to_be_visible(
                timeout=60_000)
            table = run_page.locator("table").nth(1)
            expect(table).to_contain_text("q03")
            expect(table).to_contain_text("run B / run A")
            chart = run_page.locator("img[alt='ratio chart']")
            expect(chart).to_be_visible()
            assert chart.evaluate("img => img.naturalWidth") > 100
            # each ratio with its interval, n and verdict (issue 22): 2 repetitions a side
            for column in ("95% CI", ": n", ": verdict"):
                expect(table.locator("th", has_text=column).first).to_be_visible()
            expect(table).to_contain_text("2 vs 2")
            page.screenshot(path=artifacts / "compare.png", full_page=True)
            page.goto(f"{base}/dags/tpch_power/runs/{quote(refused_run, safe='')}")
            page.get_by_role("link", name="Benchmark report").click()
            run_page = page.frame_locator("iframe").first
            expect(run_page.get_by_text("refused before anything was measured")).to_be_visible(timeout=60_000)
            expect(run_page.get_by_text("repetitions: Value error, a number of repetitions from 1 to 100, or auto; "
                                        "got 'fiv'", exact=False)).to_be_visible()
            page.screenshot(path=artifacts / "refused_run.png", full_page=True)
            # and the Benchmarks page lists it, with its state and why it measured nothing
            page.goto(f"{base}/plugin/benchmarks")
            row = page.frame_locator("iframe").first.get_by_role("row").filter(has_text=refused_run)
            expect(row).to_contain_text("refused: invalid params: repetitions", timeout=60_000)
            expect(row).to_contain_text("failed")
            expect(page.frame_locator("iframe").first.get_by_role("link", name=rerun_id, exact=True)).to_be_visible()
        finally:
            browser.close()
        tasks = rest(base, "GET", f"/api/v2/dags/tpch_power/dagRuns/{quote(refused_run, safe='')}/taskInstances",
                     token=token)["task_instances"]
        assert {t["task_id"]: t["state"] for t in tasks}["check_spec"] == "failed"
        assert not any(t["state"] == "success" for t in tasks if t["task_id"].startswith(("ensure", "measure")))
        status, _, summary = _get(base, f"/mysqlbench/reports/tpch_power/{run_dir_name(rerun_id)}/summary.json", token)
        reproduction = json.loads(summary)["reproduction"]
        assert status == 200 and reproduction["original"] == run_a and reproduction["differences"] == []
        # each point and query said against the original (n=2 vs 2: too few for an interval, and said so)
        assert {v["subject"] for v in reproduction["verdicts"]} == {"q03", "q06"}
        assert all("inconclusive" in v["said"] and not v["reproduced"] for v in reproduction["verdicts"])
        # a user Airflow lets look but not trigger: the action is refused by Airflow, nothing runs
        password = json.loads((clone / ".airflow" / "simple_auth_manager_passwords.json.generated").read_text())
        viewer = rest(base, "POST", "/auth/token", {"username": "viewer", "password": password["viewer"]})["access_token"]
        def run_ids():
            return {r["dag_run_id"] for r in rest(base, "GET", "/api/v2/dags/tpch_power/dagRuns?limit=100",
                                                   token=token)["dag_runs"]}
        before = run_ids()
        refused = urllib.request.Request(f"{base}/mysqlbench/runs/tpch_power/{quote(run_a, safe='')}/rerun", data=b"",
                                         headers={"Authorization": f"Bearer {viewer}"}, method="POST")
        with pytest.raises(urllib.error.HTTPError) as denied:
            urllib.request.urlopen(refused, timeout=60)
        assert denied.value.code == 403 and "does not let you trigger tpch_power" in denied.value.read().decode()
        assert run_ids() == before and {run_a, rerun_id} <= before  # the refused post started nothing
    assert all((artifacts / name).stat().st_size > 10_000 for name in ("benchmarks.png", "run_report.png",
                                                                       "compare.png", "refused_run.png"))
