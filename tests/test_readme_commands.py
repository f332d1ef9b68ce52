"""Every command the README shows, run as a user runs it from a fresh clone (tests/support/
readme_clone.py: a copy of the working tree's tracked and unignored files, the project's .venv
linked in, with none of the test session's environment). Scale factors are the small ones;
everything else is the command as written. The commands that run Airflow's own services
(`bin/airflow standalone`, backfill, the UI) are in tests/test_readme_airflow.py, on a clone of
their own, so the two halves run on two workers side by side."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from readme_clone import fresh_clone, run, user_env

REPO = Path(__file__).resolve().parents[1]
SF = 0.01

# README command (as written, up to its comment) -> the test that runs it
COVERED = {
    "make demo": "test_make_demo",
    "make test": "this suite itself (CI runs it through .ci/run)",
    "make setup": "test_make_demo (make demo runs make setup)",
    "bin/mysqlbench target up demo": "test_cli_commands",
    "bin/airflow dags test tpch_load --conf '{\"scale_factor\": 1}'": "test_cli_commands (SF 0.01)",
    "bin/airflow dags test tpch_bka_study --conf '{\"scale_factor\": 1, \"cache\": [\"cold\"], \"repetitions\": 3}'":
        "test_make_demo (make demo runs this command, with SF 0.01, both caches and 4 repetitions)",
    "bin/mysqlbench results --dag-id tpch_load": "test_cli_commands",
    "bin/airflow dags test tpcc_load --conf '{\"warehouses\": 2}'": "test_cli_commands (1 warehouse)",
    "bin/mysqlbench lint": "test_cli_commands",
    "bin/mysqlbench spool list": "test_cli_commands",
    "bin/airflow dags test sysbench_cpu --conf '{\"time_s\": 5, \"repetitions\": 1}'": "test_cli_commands",
    "bin/mysqlbench peer build tpcc-mysql": "test_cli_commands (MYSQLBENCH_PEER_SOURCES: this checkout's refs)",
    "bin/airflow standalone": "test_standalone_runs_a_study_and_a_killed_point_is_undone",
    "make bench": "test_make_bench_short",
    "bin/mysqlbench server list": "test_server_commands",
    "bin/mysqlbench server fetch mysql-9.7": "test_server_commands",
    "bin/mysqlbench target up my97 --server mysql-9.7 --port 3347": "test_server_commands",
    "bin/airflow dags test tpch_power --conf '{\"scale_factor\": 1, \"target_conn_id\": \"mysqlbench_my97\"}'":
        "test_server_commands (SF 0.01)",
    "bin/mysqlbench history tpch_power": "test_server_commands",
    "bin/airflow dags test regression_on_publish --conf '{\"studies\": [\"tpch_power\"]}'": "test_server_commands",
    "bin/mysqlbench versions prepare": "test_backfill_across_server_versions",
    "bin/airflow backfill create --dag-id tpch_power_across_versions_mariadb --from-date 2015-01-01 --to-date "
    "2026-12-01 --dag-run-conf '{\"scale_factor\": 0.01, \"queries\": [\"q03\", \"q06\"]}'":
        "test_backfill_across_server_versions (as written)",
    "bin/airflow backfill create --dag-id tpch_power_across_versions_mysql --from-date 2015-01-01 --to-date "
    "2026-12-01 --dag-run-conf '{\"scale_factor\": 0.01, \"queries\": [\"q03\", \"q06\"]}'":
        "test_backfill_across_server_versions (as written)",
    "make down": "test_make_down",
    "make clean": "test_make_clean_stops_every_managed_server_first",
}


def readme_commands() -> list[str]:
    text = (REPO / "README.md").read_text()
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.S):
        for line in block.splitlines():
            command = line.split("  #", 1)[0].strip()
            if command and not command.startswith("#"):
                commands.append(command)
    return commands


def test_every_readme_command_is_run_by_a_test():
    commands = readme_commands()
    assert "make demo" in commands and "make test" in commands
    assert [c for c in commands if c not in COVERED] == []


@pytest.fixture(scope="module")
def clone(session_dir):
    root = fresh_clone(session_dir / "clone" / "mysqlbench")
    yield root
    for name in ("demo", "bench"):
        subprocess.run([str(root / "bin" / "mysqlbench"), "target", "down", name], env=user_env(root),
                       capture_output=True)


def test_make_demo(clone):
    done = run(clone, "make demo DEMO_SF=0.01", timeout=1200)
    report = re.search(r"report:\s+(\S+index\.html)", done.stdout)
    assert report and Path(report.group(1)).exists(), done.stdout
    assert "Findings:" in done.stdout and "bka on vs off" in done.stdout
    assert json.loads((clone / "work" / "demo-results.json").read_text())["validations"][0]["success"]


def test_cli_commands(clone):
    run(clone, "bin/mysqlbench target up demo")
    run(clone, "bin/airflow dags test tpch_load --conf '{\"scale_factor\": 0.01}'")
    results = json.loads(run(clone, "bin/mysqlbench results --dag-id tpch_load").stdout)
    assert results["validations"] and results["validations"][0]["success"]
    assert "study spec(s) valid" in run(clone, "bin/mysqlbench lint").stderr
    assert json.loads(run(clone, "bin/mysqlbench spool list").stdout) == {"spooled": []}  # every point stored its rows
    run(clone, "bin/airflow dags test sysbench_cpu --conf '{\"time_s\": 5, \"repetitions\": 1}'")
    results = json.loads(run(clone, "bin/mysqlbench results --dag-id sysbench_cpu").stdout)
    assert [v["success"] for v in results["validations"]] == [True]
    eps = [s for s in results["samples"] if s["metric"] == "events_per_s"]
    assert len(eps) == 3 and all(s["value"] > 0 for s in eps)  # threads 1, 2, 4
    run(clone, "bin/airflow dags test tpcc_load --conf '{\"warehouses\": 1}'")
    results = json.loads(run(clone, "bin/mysqlbench results --dag-id tpcc_load").stdout)
    assert [v["success"] for v in results["validations"]] == [True]
    from mysqlbench.workloads.tpcc import peers

    sources = peers.default_sources()  # a clone has no ../shared/refs beside it
    if sources is not None:
        built = json.loads(run(clone, "bin/mysqlbench peer build tpcc-mysql", MYSQLBENCH_PEER_SOURCES=str(sources)).stdout)
        assert built["built"] and (clone / "work" / "peers" / "tpcc-mysql" / "tpcc_start").exists()


def test_make_bench_short(clone):
    from mysqlbench.workloads.tpcc import peers

    sources = peers.default_sources()  # the clone has no ../shared/refs beside it: point at this checkout's
    # without the peers' sources here the bench is asked for ours alone (asked for a peer it cannot
    # build, it fails: tests/unit/test_tpcc_peers.py)
    done = run(clone, "make bench", timeout=1800, BENCH_SF="0.01", BENCH_RUNS="1", BENCH_STUDY_SF="0.01",
               BENCH_STUDY_REPETITIONS="1", BENCH_POWER="0", BENCH_TPCC_WAREHOUSES="1", BENCH_TPCC_RAMPUP_S="2",
               BENCH_TPCC_MEASURE_S="6",
               BENCH_TPCC_INTERVAL_S="2", BENCH_TPCC_RUNS="1", BENCH_TPCC_MAX_RUNS="1", BENCH_TPCC_PROCESSES="1",
               BENCH_PARSE_SIZES="", BENCH_PARSE_RUNS="1", BENCH_PARSE_FORM_ON_DAG_UP_TO="0", BENCH_HISTORY_NIGHTS="12",
               **({"MYSQLBENCH_PEER_SOURCES": str(sources)} if sources else {"BENCH_TPCC_PEERS": ""}))
    for line in ("stat stamp (what every load and study does)", "ratio ours / plain", "parse time of all DAG files",
                 "floor form after tasks", "regression analysis, all series",
                 "orchestration overhead share", "New-Orders/min (database)", "statements/NO",
                 "ratio ours-procedures / ours-statements", "our client alone"):
        assert line in done.stdout, done.stdout
    # a ratio measured side by side says its sample: one run is one pair, too few for an interval
    [ratio] = [line for line in done.stdout.splitlines() if "ratio ours / plain" in line]
    assert "paired: " in ratio and "(n=1 pairs: no 95% interval)" in ratio, ratio
    if sources:
        assert ("ratio ours-statements / tpcc-mysql" in done.stdout
                and "ratio ours-statements / sysbench-tpcc" in done.stdout), done.stdout
        # one block gives no interval: the goal cannot be met on it, and the bench says so
        assert "goal (ours-statements at least the fastest peer, with less driver CPU): NOT met" in done.stdout
    else:
        assert "no peer asked for (BENCH_TPCC_PEERS is empty): ours alone" in done.stdout, done.stdout
        assert "goal (ours-statements at least the fastest peer): no peer measured" in done.stdout


def test_server_commands(clone):
    """The catalog, a first fetch of MySQL 9.7 into this clone's work directory, a managed target
    of it, and a TPC-H study on it, as the README shows them."""
    run(clone, "make setup")  # idempotent; lets this test run alone
    listed = json.loads(run(clone, "bin/mysqlbench server list").stdout)["servers"]
    assert {"mariadb-10.5", "mariadb-10.11", "mariadb-11.8", "mysql-9.7"} <= {s["server"] for s in listed}
    fetched = json.loads(run(clone, "bin/mysqlbench server fetch mysql-9.7").stdout)
    assert fetched["version"].startswith("9.") and fetched["root"].startswith(str(clone / "work" / "servers"))
    assert json.loads(run(clone, "bin/mysqlbench server fetch mysql-9.7").stdout)["fetched"] is False
    up = json.loads(run(clone, "bin/mysqlbench target up my97 --server mysql-9.7 --port 3347").stdout)
    assert up["server"] == "mysql-9.7" and up["conn_id"] == "mysqlbench_my97"
    try:
        run(clone, "bin/airflow dags test tpch_power --conf "
                   "'{\"scale_factor\": 0.01, \"target_conn_id\": \"mysqlbench_my97\"}'")
        results = json.loads(run(clone, "bin/mysqlbench results --dag-id tpch_power").stdout)
        assert results["validations"] and all(v["success"] for v in results["validations"])
        assert {s["server_version"] for s in results["samples"] if s["task_id"] == "measure_point"} == {up["version"]}
        history = json.loads(run(clone, "bin/mysqlbench history tpch_power").stdout)
        assert history["series"] and all(s["key"]["flavor"] == "mysql" for s in history["series"])
        # each series' plan, outlined from MySQL's own EXPLAIN FORMAT=JSON: a line per table access
        assert all(len(s["plans"]) == 1 and all(next(iter(s["plans"].values()))) for s in history["series"])
        run(clone, "bin/airflow dags test regression_on_publish --conf '{\"studies\": [\"tpch_power\"]}'")
        report = json.loads(next((clone / "work" / "reports" / "regression_on_publish").glob("*/regression.json"))
                            .read_text())
        assert report["alerts"] == [] and len(report["series"]) == len(history["series"])  # one run: no change
    finally:
        run(clone, "bin/mysqlbench target down my97")


def test_make_down(clone):
    run(clone, "make down")
    status = json.loads(run(clone, "bin/mysqlbench target status demo").stdout)
    assert status == {"name": "demo", "running": False}


def test_make_clean_stops_every_managed_server_first(clone):
    """After make bench, the bench target runs too (not only demo): make clean stops both before it
    deletes their datadirs, and no server is left holding a port."""
    run(clone, "bin/mysqlbench target up demo")
    run(clone, "make clean")
    assert not (clone / "work").exists()
    left = subprocess.run(["pgrep", "-f", f"--defaults-file={clone}/work/targets/"], capture_output=True, text=True)
    assert left.stdout.strip() == ""
