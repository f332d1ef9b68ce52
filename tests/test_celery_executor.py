"""Issue 12, item 4: distributed execution, as docker-compose.yaml deploys it, on this machine.

Airflow with the CeleryExecutor: a Redis broker and a PostgreSQL server (metadata database,
Celery results and the mysqlbench results store) started by the test on their own ports, the
api-server, scheduler, dag-processor and triggerer as separate processes, and two Celery workers
on different queues (``default``, and ``bench_host`` as the benchmark host's, chosen by
``MYSQLBENCH_BENCH_QUEUE`` as in the compose file), each with its own work directory and log
folder, so nothing passes between tasks through a local disk. A TPC-H study at SF 0.01 runs end
to end across them, and its validation is compared with the same study under the local executor."""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import subprocess
import urllib.request
from pathlib import Path

import pytest
import yaml
from readme_clone import fresh_clone, rest, run, user_env, wait
from services import free_port, start_postgres, start_redis, stop_groups

from conftest import EXTERNAL_MARKED_CONN

REPO = Path(__file__).resolve().parents[1]
QUEUES = {"default": "default", "bench": "bench_host"}
TARGET_SIDE = {"check_spec", "ensure_dataset", "measure_point", "restore_target"}
# what the compose file's Airflow services and this test's processes both set (value, or its prefix)
SHARED_SETTINGS = {"AIRFLOW__CORE__EXECUTOR": "CeleryExecutor",
                   "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": "postgresql+psycopg2://airflow:",
                   "AIRFLOW__CELERY__BROKER_URL": "redis://:",
                   "AIRFLOW__CELERY__RESULT_BACKEND": "db+postgresql+psycopg2://airflow:",
                   "AIRFLOW_CONN_MYSQLBENCH_RESULTS": "postgresql://mysqlbench:",
                   "MYSQLBENCH_BENCH_QUEUE": "bench_host"}
CONF = {"scale_factor": 0.01, "queries": ["q03", "q06"], "repetitions": 2, "target_conn_id": EXTERNAL_MARKED_CONN}


@pytest.fixture(scope="module")
def clone(session_dir) -> Path:
    """This test's own fresh clone (its local-executor run's SQLite store is its own)."""
    return fresh_clone(session_dir / "celery-clone" / "mysqlbench")


def compose_services() -> dict:
    return yaml.safe_load((REPO / "docker-compose.yaml").read_text())["services"]


def compose_worker_queues() -> dict[str, str]:
    """The compose file's two workers and their queues: what this test runs must be what it deploys."""
    services = compose_services()
    out = {}
    for name in ("airflow-worker", "airflow-worker-bench"):
        command = services[name]["command"].split()
        out[name] = command[command.index("--queues") + 1]
    return out


def shares_settings(env: dict[str, str]) -> bool:
    return all(str(env.get(k, "")).startswith(v) for k, v in SHARED_SETTINGS.items())


@contextlib.contextmanager
def celery_deployment(clone, root: Path, target_conn_json: str):
    """PostgreSQL, Redis, the four Airflow services and two workers; yields (base URL, token, env,
    the workers' directories). Everything is stopped on the way out."""
    pg = start_postgres(root / "postgres")
    redis = start_redis(root / "redis")
    procs: list[subprocess.Popen] = []
    try:
        passwords = {name: secrets.token_urlsafe(12) for name in ("airflow", "mysqlbench")}
        for name, password in passwords.items():
            pg.create_database(name, name, password)
        port = free_port()
        env = {**user_env(clone),
               "AIRFLOW_HOME": str(root / "airflow"),
               "AIRFLOW__CORE__EXECUTOR": "CeleryExecutor",
               "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": pg.url("airflow", "airflow", passwords["airflow"]),
               "AIRFLOW__CELERY__BROKER_URL": redis.url(),
               "AIRFLOW__CELERY__RESULT_BACKEND": pg.url("airflow", "airflow", passwords["airflow"],
                                                          driver="db+postgresql+psycopg2"),
               "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_urlsafe(32),
               "AIRFLOW__API__PORT": str(port),
               "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://127.0.0.1:{port}/execution/",
               "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "True",
               "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "5",
               "AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL": "600",  # parsed once: the files do not change
               "MYSQLBENCH_BENCH_QUEUE": QUEUES["bench"],
               "MYSQLBENCH_WORK_DIR": str(root / "work-services"),
               "AIRFLOW_CONN_MYSQLBENCH_RESULTS": pg.url("mysqlbench", "mysqlbench", passwords["mysqlbench"],
                                                         driver="postgresql"),
               f"AIRFLOW_CONN_{EXTERNAL_MARKED_CONN.upper()}": target_conn_json}
        assert shares_settings(env)
        # as compose's airflow-init: the metadata database migrated (make setup does it) and the pool
        run(clone, "make setup", **env)
        run(clone, "bin/airflow pools set target_mysqlbench_demo 1 'one point at a time'", **env)
        workers = {}
        for name in ("api-server", "scheduler", "dag-processor", "triggerer"):
            extra = ["--port", str(port)] if name == "api-server" else []
            procs.append(_start(clone, root / f"{name}.log", env, name, *extra))
        for name, queue in QUEUES.items():
            workers[name] = root / f"worker-{name}"
            own = {"MYSQLBENCH_WORK_DIR": str(workers[name] / "work"),
                   "AIRFLOW__LOGGING__BASE_LOG_FOLDER": str(workers[name] / "logs"),
                   "AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT": str(free_port())}
            procs.append(_start(clone, root / f"worker-{name}.log", {**env, **own}, "celery", "worker", "--queues",
                                queue, "--concurrency", "1" if name == "bench" else "2",
                                "--celery-hostname", f"{name}@%h"))
        base = f"http://127.0.0.1:{port}"

        def healthy():
            try:
                body = rest(base, "GET", "/api/v2/monitor/health")
                return all(body[k]["status"] == "healthy" for k in ("scheduler", "dag_processor", "triggerer"))
            except Exception:  # noqa: BLE001 - not up yet
                return False

        wait(healthy, 300, "api-server, scheduler, dag-processor and triggerer on PostgreSQL", procs[0],
              lambda: (root / "api-server.log").read_text()[-3000:])
        password = json.loads((root / "airflow" / "simple_auth_manager_passwords.json.generated").read_text())["admin"]
        token = rest(base, "POST", "/auth/token", {"username": "admin", "password": password})["access_token"]
        yield base, token, env, workers, pg, passwords
    finally:
        stop_groups(procs)
        redis.stop()
        pg.stop()


def _start(clone, log: Path, env: dict, *args: str) -> subprocess.Popen:
    return subprocess.Popen([str(clone / "bin" / "airflow"), *args], cwd=clone, env=env, stdout=open(log, "w"),
                            stderr=subprocess.STDOUT, start_new_session=True)


def _get(base: str, path: str, token: str) -> str:
    request = urllib.request.Request(base + path, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return response.read().decode()


def _task_logs(worker: Path, run_id: str) -> set[str]:
    """The task ids whose logs this worker wrote for the run (Airflow's log folder layout)."""
    found = set()
    for path in (worker / "logs").glob(f"dag_id=tpch_power/run_id={run_id}/task_id=*"):
        found.add(path.name.removeprefix("task_id="))
    return found


def _validation(store, run_id: str) -> tuple[bool, dict]:
    """The run's study validation: GX's verdict and statistics (expectations evaluated, met)."""
    from mysqlbench.results.store import validations

    rows = [r for r in store.rows(validations, dag_id="tpch_power", run_id=run_id) if r["task_id"] == "validate"]
    assert len(rows) == 1, rows
    statistics = json.loads(rows[0]["statistics"])
    return bool(rows[0]["success"]), statistics


def test_compose_and_this_test_deploy_the_same_queues_and_settings():
    assert compose_worker_queues() == {"airflow-worker": QUEUES["default"], "airflow-worker-bench": QUEUES["bench"]}
    assert SHARED_SETTINGS["MYSQLBENCH_BENCH_QUEUE"] == QUEUES["bench"]
    services = compose_services()
    for name in ("airflow-apiserver", "airflow-scheduler", "airflow-dag-processor", "airflow-worker",
                 "airflow-worker-bench", "airflow-triggerer"):
        assert shares_settings(services[name]["environment"]), name


def test_a_tpch_study_across_two_celery_workers(clone, target, session_dir):
    """The study's target-side tasks (check, dataset, points, restore) run on the bench_host
    worker, the rest on the default worker; the dataset files exist only in the bench worker's
    work directory, the report only in the default worker's; every row is in PostgreSQL (no SQLite
    store appears anywhere); and GX's verdict and expectations equal a local-executor run's."""
    from mysqlbench.results.store import ResultsStore, samples

    conn_json = os.environ[f"AIRFLOW_CONN_{EXTERNAL_MARKED_CONN.upper()}"]
    root = session_dir / "celery"
    root.mkdir(parents=True, exist_ok=True)
    with celery_deployment(clone, root, conn_json) as (base, token, env, workers, pg, passwords):
        def parsed():
            try:
                return rest(base, "GET", "/api/v2/dags/tpch_power", token=token)
            except Exception:  # noqa: BLE001 - not parsed yet
                return None
        wait(parsed, 180, "the dag-processor to parse tpch_power")
        rest(base, "PATCH", "/api/v2/dags/tpch_power", {"is_paused": False}, token)
        rest(base, "POST", "/api/v2/dags/tpch_power/dagRuns",
              {"dag_run_id": "celery_a", "logical_date": None, "conf": CONF}, token)

        def done():
            state = rest(base, "GET", "/api/v2/dags/tpch_power/dagRuns/celery_a", token=token)["state"]
            return state if state in ("success", "failed") else None

        def explain():
            return "\n".join(f"--- {p.name}\n{p.read_text()[-2500:]}" for p in sorted(root.glob("*.log")))

        state = wait(done, 1200, "the study run on two Celery workers", explain=explain)
        tis = rest(base, "GET", "/api/v2/dags/tpch_power/dagRuns/celery_a/taskInstances", token=token)
        assert state == "success", (tis, explain())
        by_task: dict[str, set[str]] = {}
        ran, skipped = set(), set()
        for ti in tis["task_instances"]:
            assert ti["state"] in ("success", "skipped"), ti
            (ran if ti["state"] == "success" else skipped).add(ti["task_id"])
            by_task.setdefault(ti["task_id"], set()).add(ti["queue"])
        # two repetitions, one a round: rounds 1 and 2 measure, plan_round_3 finds nothing left and
        # skips every later round at once
        assert {"measure_point", "plan_round_2", "measure_round_2", "plan_round_3"} <= ran, ran
        assert skipped and all(re.fullmatch(r"(plan|measure)_round_([3-9]|1[0-9])", t) for t in skipped), skipped
        assert "measure_round_3" in skipped
        assert by_task["measure_point"] == {QUEUES["bench"]}
        for task_id, queues in by_task.items():
            on_host = task_id in TARGET_SIDE or task_id.startswith("measure_round_")  # a later round's points
            assert queues == {QUEUES["bench"] if on_host else QUEUES["default"]}, (task_id, queues)
        # where each ran: each worker writes its own task logs, in its own folder
        on_bench = TARGET_SIDE | {t for t in ran if t.startswith("measure_round_")}
        assert _task_logs(workers["bench"], "celery_a") == on_bench
        assert _task_logs(workers["default"], "celery_a") == ran - on_bench
        # no state through a shared disk: the data where it was generated, the report where it was written
        bench_work, default_work = workers["bench"] / "work", workers["default"] / "work"
        assert list((bench_work / "data" / "tpch").glob("sf0.01/*.tbl"))
        assert not (default_work / "data").exists()
        assert list((default_work / "reports" / "tpch_power").glob("celery_a*/index.html"))
        assert not (bench_work / "reports").exists()
        assert not list(root.rglob("results.db")), "a task fell back to the SQLite store"
        store = ResultsStore(pg.url("mysqlbench", "mysqlbench", passwords["mysqlbench"]))
        measured = store.measured_rows(samples, dag_id="tpch_power", run_id="celery_a")
        assert {r["subject"] for r in measured if r["kind"] == "metric"} == {"q03", "q06"}
        # the DuckDB oracle checked every answer on the bench worker, from the files generated there
        assert {r["subject"] for r in measured if r["kind"] == "answer"} == {"q03", "q06"}
        celery_verdict, celery_stats = _validation(store, "celery_a")
        assert store.report_file("tpch_power", "celery_a", "index.html") is not None
        # the Benchmarks pages on the api-server (a third work directory, no report files on its disk)
        # show the run's report from the results store
        services_work = Path(env["MYSQLBENCH_WORK_DIR"])
        assert not (services_work / "reports").exists()
        page = _get(base, "/mysqlbench/runs/tpch_power/celery_a", token)
        assert "valid;" in page and "/mysqlbench/reports/tpch_power/celery_a/index.html" in page
        assert "/mysqlbench/runs/tpch_power/celery_a" in _get(base, "/mysqlbench/studies/tpch_power", token)
        report = _get(base, "/mysqlbench/reports/tpch_power/celery_a/index.html", token)
        assert "<h1>tpch_power" in report and "q03" in report
        # no secret on any page: the store's URL is shown with its password hidden
        index = _get(base, "/mysqlbench/", token)
        assert "postgresql" in index and "***" in index
        target_password = json.loads(conn_json)["password"]
        for shown in (index, page, report):
            assert passwords["mysqlbench"] not in shown and passwords["airflow"] not in shown
            assert target_password not in shown

    # the same study under the local executor (dags test, the SQLite store in the clone's work directory)
    run(clone, "make setup")  # the clone's own Airflow home and SQLite metadata database
    run(clone, f"bin/airflow dags test tpch_power --conf '{json.dumps(CONF)}'", timeout=1200,
        **{f"AIRFLOW_CONN_{EXTERNAL_MARKED_CONN.upper()}": conn_json})
    from mysqlbench.results.store import validations

    local_store = ResultsStore(f"sqlite:///{clone / 'work' / 'results.db'}")
    local_run = max(local_store.rows(validations, dag_id="tpch_power"), key=lambda r: r["recorded_at"])["run_id"]
    local_verdict, local_stats = _validation(local_store, local_run)
    assert celery_verdict is True and local_verdict is True
    assert celery_stats["evaluated_expectations"] == local_stats["evaluated_expectations"] > 0
    assert celery_stats["successful_expectations"] == local_stats["successful_expectations"]
