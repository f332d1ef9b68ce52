"""A server controlled over SSH (``control: ssh``) through a real OpenSSH server on 127.0.0.1: a
cold-cache TPC-H point restarts it with the connection's restart command and drops its page cache
on the host, both over SSH (the sshd's command log shows them), and measures valid numbers."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from mysqlbench.results.store import ResultsStore, samples

from conftest import REPO, SSH_CONN

SSH_TARGET = "mysqlbench_test_ssh_server"


@pytest.fixture(scope="module")
def ssh_target(airflow_db, target, managed, bench_password, sshd, session_dir):
    from airflow.models.pool import Pool

    # the session's managed MariaDB, as a server on a benchmark host would be: restarted by a
    # command run over SSH (here the project's own CLI on that host), its datadir named
    restart = ["env", f"MYSQLBENCH_WORK_DIR={session_dir / 'work'}", str(REPO / "bin" / "mysqlbench"), "target",
               "restart", "test"]
    os.environ[f"AIRFLOW_CONN_{SSH_TARGET.upper()}"] = json.dumps({
        "conn_type": "mysql", "host": "127.0.0.1", "port": managed.spec.port, "login": target.login,
        "password": bench_password,
        "extra": {"control": "ssh", "benchmark_target": True, "ssh_conn_id": SSH_CONN, "restart_command": restart,
                  "datadir": str(managed.datadir)}})
    Pool.create_or_update_pool(f"target_{SSH_TARGET}", slots=1, description="tests", include_deferred=False)
    return restart


def test_a_cold_tpch_point_restarts_and_drops_the_cache_over_ssh(ssh_target, sshd, managed):
    from airflow.dag_processing.dagbag import DagBag

    before = len(sshd.commands())
    dag = DagBag(dag_folder=str(Path(__file__).resolve().parents[2] / "dags")).get_dag("tpch_bka_study")
    out = dag.test(run_conf={"target_conn_id": SSH_TARGET, "scale_factor": 0.01, "schema": "tpch_ssh",
                             "cache": ["cold"], "repetitions": 1, "seed": 2,
                             "matrix": {"bka": [True], "buffers": [{"join_buffer_size": "6M",
                                                                     "mrr_buffer_size": "6M"}]}})
    assert str(out.state) == "success"
    commands = sshd.commands()[before:]
    assert any("bin/mysqlbench target restart test" in c for c in commands), commands
    assert any("iflag=nocache" in c and str(managed.datadir) in c for c in commands), commands
    rows = ResultsStore().measured_rows(samples, dag_id=out.dag_id, run_id=out.run_id)
    (timed,) = [r for r in rows if r["metric"] == "client_seconds"]
    assert timed["status"] == "ok" and timed["value"] > 0
    evidence = json.loads(timed["metadata"])["cache_evidence"]
    assert evidence["restart"] and evidence["method"] == "posix_fadvise(DONTNEED) over SSH"
    assert int(evidence["scope"].split()[0]) > 0 and evidence["host"] == f"127.0.0.1:{sshd.port}"
    # the cold run read from disk (the restart emptied the buffer pool)
    reads = [r for r in rows if r["metric"] == "physical_reads"]
    assert reads and reads[0]["value"] > 0
    state = json.loads(timed["metadata"])["host_state"]
    assert state["host"] == f"127.0.0.1:{sshd.port}" and state["free_bytes"][str(managed.datadir)] > 0


def test_restart_only_settings_are_not_applicable_over_ssh(ssh_target):
    from mysqlbench.errors import NotApplicable
    from mysqlbench.targets.connection import TargetConnection
    from mysqlbench.targets.control import SshControl

    control = SshControl(TargetConnection.from_airflow(SSH_TARGET))
    with pytest.raises(NotApplicable, match="innodb_buffer_pool_instances"):
        control.restart({"innodb_buffer_pool_instances": 4})


TOOLS_VIA_SSH = "mysqlbench_test_tools_via_ssh"


def test_mariadb_slap_runs_on_the_benchmark_host(airflow_db, target, bench_password, sshd):
    """The session's managed MariaDB, with its tools on the SSH host: the seed 004 study's
    mariadb-slap runs there (its statement file and client config written there over SFTP)."""
    from airflow.dag_processing.dagbag import DagBag
    from airflow.models.pool import Pool

    from conftest import TEST_CONN

    via = json.loads(os.environ[f"AIRFLOW_CONN_{TEST_CONN.upper()}"])
    via["extra"] = {**via["extra"], "ssh_conn_id": SSH_CONN}
    os.environ[f"AIRFLOW_CONN_{TOOLS_VIA_SSH.upper()}"] = json.dumps(via)
    Pool.create_or_update_pool(f"target_{TOOLS_VIA_SSH}", slots=1, description="tests", include_deferred=False)
    before = len(sshd.commands())
    dag = DagBag(dag_folder=str(Path(__file__).resolve().parents[2] / "dags")).get_dag("slap_partitioning_study")
    out = dag.test(run_conf={"target_conn_id": TOOLS_VIA_SSH, "rows": 1000, "schema": "slap_ssh", "repetitions": 1,
                             "seed": 1, "concurrency_scale": 1, "queries_per_client": 5, "units": ["select", "insert"],
                             "matrix": {"engine": ["InnoDB"], "layout": ["split"], "concurrency": [3]}})
    assert str(out.state) == "success"
    commands = sshd.commands()[before:]
    slaps = [c for c in commands if "mariadb-slap --defaults-file=/tmp/mysqlbench-" in c]
    assert len(slaps) >= 2 and all("--concurrency=3" in c for c in slaps)  # warm-up and measured runs, there
    assert bench_password not in "\n".join(commands)
    rows = ResultsStore().measured_rows(samples, dag_id=out.dag_id, run_id=out.run_id)
    clients = [r for r in rows if r["metric"] == "clients"]
    assert {r["value"] for r in clients} == {3.0}
    facts = json.loads(clients[0]["metadata"])["slap"]
    assert facts["tool"] == "mariadb-slap"
    series = [r for r in rows if r["metric"] == "os_cpu_user_pct" and r["kind"] == "series"]
    assert series  # sampled on the benchmark host, over SSH
    assert any("cat /proc/stat" in c for c in commands)


def test_a_wrong_host_key_stops_the_study_before_anything_runs(airflow_db, target, managed, bench_password, sshd,
                                                               tmp_path):
    """The study's first task opens the benchmark host's SSH connection: a host key that does not
    match fails it there, and no command reaches the host, no point runs."""
    import subprocess

    from airflow.dag_processing.dagbag import DagBag
    from airflow.models.pool import Pool

    from conftest import TEST_CONN

    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "other")], check=True)
    other = " ".join((tmp_path / "other.pub").read_text().split()[:2])
    os.environ["AIRFLOW_CONN_MYSQLBENCH_TEST_SSH_IMPOSTOR"] = json.dumps(sshd.connection(host_key=other))
    via = json.loads(os.environ[f"AIRFLOW_CONN_{TEST_CONN.upper()}"])
    via["extra"] = {**via["extra"], "ssh_conn_id": "mysqlbench_test_ssh_impostor"}
    os.environ["AIRFLOW_CONN_MYSQLBENCH_TEST_VIA_IMPOSTOR"] = json.dumps(via)
    Pool.create_or_update_pool("target_mysqlbench_test_via_impostor", slots=1, description="tests",
                               include_deferred=False)
    before = len(sshd.commands())
    dag = DagBag(dag_folder=str(Path(__file__).resolve().parents[2] / "dags")).get_dag("sysbench_cpu")
    out = dag.test(run_conf={"target_conn_id": "mysqlbench_test_via_impostor", "time_s": 1, "repetitions": 1,
                             "matrix": {"threads": [1]}})
    assert str(out.state) == "failed"
    states = {ti.task_id: ti.state for ti in out.get_task_instances()}
    assert str(states["check_spec"]) == "failed" and str(states["measure_point"]) != "success"
    assert len(sshd.commands()) == before  # nothing ran on the host
