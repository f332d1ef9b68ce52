"""docker-compose.yaml as Docker Compose itself reads it (Debian's `docker-compose config`; no engine
runs here and no image can be built), checked against what the project needs: Airflow's official
CeleryExecutor stack, the repository mounted in every Airflow service, two workers on different
queues with their own work directories, the targets, benchmark host and results database, secrets
only from .env, and connections our own code accepts."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from mysqlbench.targets.connection import TargetConnection

REPO = Path(__file__).resolve().parents[2]
SECRETS = {"POSTGRES_PASSWORD": "pg-secret-1", "RESULTS_DB_PASSWORD": "results-secret-2",
           "TARGET_PASSWORD": "target-secret-3", "TARGET_ROOT_PASSWORD": "root-secret-4",
           "AIRFLOW_FERNET_KEY": "fernet-secret-5", "AIRFLOW_JWT_SECRET": "jwt-secret-6",
           "BENCH_HOST_KEY": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHostKeyForTheTest"}
AIRFLOW = ("airflow-apiserver", "airflow-scheduler", "airflow-dag-processor", "airflow-worker",
           "airflow-worker-bench", "airflow-triggerer", "airflow-init")


def argv(command) -> list[str]:
    """A service's command as a list (docker-compose 1.29 prints the string as written)."""
    return shlex.split(command) if isinstance(command, str) else list(command)


def mounts(service: dict) -> dict[str, str]:
    """Container path -> source (a host path, or a named volume) of a service's volumes."""
    out = {}
    for volume in service.get("volumes", []):
        if isinstance(volume, str):
            source, target = volume.split(":")[:2]
        else:
            source, target = volume["source"], volume["target"]
        out[target] = source
    return out


def compose_config(env: dict[str, str]) -> subprocess.CompletedProcess:
    binary = shutil.which("docker-compose")
    assert binary, "docker-compose is not installed (bin/setup installs Debian's)"
    clean = {k: v for k, v in os.environ.items() if k not in SECRETS}
    return subprocess.run([binary, "--project-directory", str(REPO), "-f", str(REPO / "docker-compose.yaml"),
                           "config"], capture_output=True, text=True, env={**clean, **env}, timeout=120)


@pytest.fixture(scope="module")
def config() -> dict:
    done = compose_config(SECRETS)
    assert done.returncode == 0, done.stderr
    return yaml.safe_load(done.stdout)


def test_compose_refuses_to_start_without_the_secrets():
    done = compose_config({k: v for k, v in SECRETS.items() if k != "TARGET_PASSWORD"})
    assert done.returncode != 0 and "set it in .env" in done.stderr


def test_the_official_celery_stack_plus_targets_host_and_results_database(config):
    services = config["services"]
    assert set(AIRFLOW) | {"postgres", "redis", "results-db", "mariadb", "mysql", "bench-host"} == set(services)
    for name in AIRFLOW:
        env = services[name]["environment"]
        assert env["AIRFLOW__CORE__EXECUTOR"] == "CeleryExecutor", name
        assert env["AIRFLOW__CELERY__BROKER_URL"].startswith("redis://:@redis:6379/"), name
        assert env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"].startswith("postgresql+psycopg2://airflow:pg-secret-1@postgres/")
        # the driver named: SQLAlchemy 2.1's plain postgresql:// means psycopg 3, which is not installed
        assert env["AIRFLOW__CELERY__RESULT_BACKEND"].startswith("db+postgresql+psycopg2://airflow:pg-secret-1@postgres/")
        assert env["AIRFLOW__CORE__EXECUTION_API_SERVER_URL"] == "http://airflow-apiserver:8080/execution/"
        mounted = mounts(services[name])
        for part in ("dags", "plugins", "include"):  # the repository's layout: include/configs beside plugins/
            assert mounted[f"/opt/mysqlbench/{part}"] == str(REPO / part), (name, part)
        assert env["PYTHONPATH"] == "/opt/mysqlbench/plugins" and env["AIRFLOW__CORE__PLUGINS_FOLDER"] == \
            "/opt/mysqlbench/plugins" and env["AIRFLOW__CORE__DAGS_FOLDER"] == "/opt/mysqlbench/dags"
        assert services[name]["build"]["dockerfile"] == "docker/airflow.Dockerfile"
    commands = {name: argv(services[name]["command"]) for name in AIRFLOW if name != "airflow-init"}
    assert commands["airflow-apiserver"] == ["api-server"] and commands["airflow-dag-processor"] == ["dag-processor"]
    assert commands["airflow-scheduler"] == ["scheduler"] and commands["airflow-triggerer"] == ["triggerer"]


def test_two_workers_on_their_own_queues_and_work_directories(config):
    services = config["services"]
    queues, work = {}, {}
    for name in ("airflow-worker", "airflow-worker-bench"):
        command = argv(services[name]["command"])
        assert command[:2] == ["celery", "worker"]
        queues[name] = command[command.index("--queues") + 1]
        work[name] = mounts(services[name])["/opt/mysqlbench/work"]
        assert work[name] in config["volumes"]  # a named volume of its own, not a host directory
        assert services[name]["environment"]["MYSQLBENCH_WORK_DIR"] == "/opt/mysqlbench/work"
    assert queues == {"airflow-worker": "default", "airflow-worker-bench": "bench_host"}
    assert len(set(work.values())) == 2  # no work directory shared through a disk
    assert all("/opt/mysqlbench/work" not in mounts(services[n]) for n in AIRFLOW if n not in queues)


def test_connections_are_ones_our_code_accepts_and_secrets_come_from_env(config):
    env = config["services"]["airflow-worker"]["environment"]
    targets = {}
    for key in ("AIRFLOW_CONN_MYSQLBENCH_COMPOSE_MARIADB", "AIRFLOW_CONN_MYSQLBENCH_COMPOSE_MYSQL",
                "AIRFLOW_CONN_MYSQLBENCH_BENCH_HOST"):
        conn = json.loads(env[key])
        targets[key] = TargetConnection.from_fields(key.removeprefix("AIRFLOW_CONN_").lower(), host=conn["host"],
                                                    port=conn["port"], login=conn["login"], password=conn["password"],
                                                    extra=conn["extra"])
        assert targets[key].password == "target-secret-3"
        assert targets[key].host in config["services"]  # a service of this stack
    assert all(t.marked for t in targets.values())
    bench = targets["AIRFLOW_CONN_MYSQLBENCH_BENCH_HOST"]
    assert bench.ssh_conn_id == "mysqlbench_bench_host_ssh" and bench.control == "ssh"
    ssh = json.loads(env["AIRFLOW_CONN_MYSQLBENCH_BENCH_HOST_SSH"])
    assert ssh["host"] == "bench-host" and ssh["extra"]["host_key"] == SECRETS["BENCH_HOST_KEY"]  # pinned, checked
    assert "no_host_key_check" not in ssh["extra"]
    assert env["AIRFLOW_CONN_MYSQLBENCH_RESULTS"] == "postgresql://mysqlbench:results-secret-2@results-db:5432/mysqlbench"
    # the file itself holds no secret: every password is a ${VAR:?...} from .env, listed in env.example
    text = (REPO / "docker-compose.yaml").read_text()
    assert not any(secret in text for secret in SECRETS.values())
    required = set(re.findall(r"\$\{([A-Z_]+):\?", text))
    listed = {line.split("=", 1)[0] for line in (REPO / "docker" / "env.example").read_text().splitlines()
              if "=" in line and not line.startswith("#")}
    assert required == set(SECRETS) and required <= listed


def test_the_images_install_from_the_repository_files():
    dockerfile = (REPO / "docker" / "airflow.Dockerfile").read_text()
    pinned = re.search(r"^apache-airflow==(\S+)$", (REPO / "requirements.txt").read_text(), re.M).group(1)
    # the official image unless a build says otherwise (the compose stack test builds a stand-in)
    assert f"ARG AIRFLOW_IMAGE=apache/airflow:{pinned}-python3.11" in dockerfile and "FROM ${AIRFLOW_IMAGE}" in dockerfile
    assert "ARG BASE_IMAGE=debian:12" in (REPO / "docker" / "benchhost.Dockerfile").read_text()
    for name in ("requirements.txt", "constraints.txt", "requirements-nodeps.txt"):
        assert name in dockerfile and (REPO / name).exists()
    # what runs, not what tests or documents it (pytest, mkdocs: requirements-dev.txt): mkdocs-material's
    # pymdown-extensions wants Python 3.11.5, and the image could not be built on an older 3.11
    assert "requirements-dev.txt" not in dockerfile
    assert not re.search(r"^(pytest|mkdocs|ruff|playwright)", (REPO / "requirements.txt").read_text(), re.M)
    assert "-c /opt/mysqlbench/constraints.txt" in dockerfile and "--require-hashes" in dockerfile
    for path in re.findall(r"COPY (?:--\S+ )?((?:docker/\S+ ?)+) ", (REPO / "docker" / "benchhost.Dockerfile").read_text()):
        for name in path.split():
            assert (REPO / name).exists(), name
    assert (REPO / "docker" / "targets" / "grant.sql").exists()


def test_the_ssh_key_script_makes_the_pinned_host_key_and_the_client_key(tmp_path, monkeypatch):
    (tmp_path / "docker").mkdir()
    script = shutil.copy2(REPO / "docker" / "make-ssh-keys.sh", tmp_path / "docker")
    done = subprocess.run([script], capture_output=True, text=True, check=True)
    line = done.stdout.strip()
    host_pub = (tmp_path / "docker" / "ssh" / "host" / "ssh_host_ed25519_key.pub").read_text().split()
    assert line == f'BENCH_HOST_KEY="ssh-ed25519 {host_pub[1]}"' and host_pub[0] == "ssh-ed25519"
    # the workers' connection, as the compose file builds it from that line, gives the SSH provider
    # an Ed25519 host key to pin (printed without its type, the provider read it as RSA: Invalid key)
    from airflow.providers.ssh.hooks.ssh import SSHHook

    value = line.split("=", 1)[1].strip('"')
    connection = {"conn_type": "ssh", "host": "bench-host", "port": 22, "login": "root",
                  "extra": {"key_file": str(tmp_path / "docker" / "ssh" / "client" / "id_ed25519"), "host_key": value}}
    monkeypatch.setenv("AIRFLOW_CONN_COMPOSE_BENCH_HOST", json.dumps(connection))
    hook = SSHHook(ssh_conn_id="compose_bench_host")
    assert hook.host_key.get_name() == "ssh-ed25519" and hook.host_key.get_base64() == host_pub[1]
    client_pub = (tmp_path / "docker" / "ssh" / "client" / "id_ed25519.pub").read_text()
    assert (tmp_path / "docker" / "ssh" / "host" / "authorized_keys").read_text() == client_pub
    assert subprocess.run([script], capture_output=True, text=True, check=True).stdout == done.stdout  # idempotent


def test_the_bench_host_outlives_a_mariadb_restart(config):
    """Issue 24 item 2: the bench host's PID 1 waited on the first mariadbd, so the container
    exited at the first restart a cold point makes over SSH, with no restart policy. Now sshd is PID
    1's program (under compose's init, which reaps the mariadbd-safe a restart leaves), and a
    restart's server runs in a session of its own. Read from the files: no container is started
    here (the stack test is still to come)."""
    host = config["services"]["bench-host"]
    assert host["init"] is True and host["restart"] == "unless-stopped"
    entrypoint = (REPO / "docker" / "benchhost" / "entrypoint").read_text()
    last = [line for line in entrypoint.splitlines() if line.strip() and not line.startswith("#")][-2:]
    assert last[0].startswith("exec /usr/sbin/sshd -D") and "tail --pid" not in entrypoint
    assert "setsid mariadbd-safe" in (REPO / "docker" / "benchhost" / "restart-mariadb").read_text()


def test_the_workers_can_write_their_work_and_read_their_key_as_airflow_uid(config):
    """Issue 24 item 2: the workers' named work volumes started root-owned and /opt/mysqlbench/work
    was never handed to AIRFLOW_UID; the SSH client key mounted from the host (0600, its owner's)
    was unreadable by AIRFLOW_UID 50000; the MySQL 8.4 target started with local_infile off, which
    every load needs and mysqlbench rightly never changes. airflow-init (root) now hands the work
    volumes and a copy of the key to AIRFLOW_UID, the workers read the key from that volume, and the
    MySQL target starts with local_infile on. Read from the rendered file (no container runs here)."""
    services = config["services"]
    init = services["airflow-init"]
    assert init["user"] == "0:0"
    volumes = mounts(init)
    work = {volumes["/sources/work-default"], volumes["/sources/work-bench"]}
    assert work == {mounts(services[w])["/opt/mysqlbench/work"] for w in ("airflow-worker", "airflow-worker-bench")}
    assert volumes["/sources/ssh-client"] == str(REPO / "docker" / "ssh" / "client")
    script = " ".join(argv(init["command"]))
    uid = "50000"  # AIRFLOW_UID unset: the official image's airflow user
    assert f'chown -R "{uid}:0" /sources/work-default /sources/work-bench' in script
    assert f'install -m 0600 -o "{uid}" -g 0 /sources/ssh-client/id_ed25519 /sources/ssh/id_ed25519' in script
    assert script.index("chown") < script.index("airflow db migrate")
    for worker in ("airflow-worker", "airflow-worker-bench"):
        assert mounts(services[worker])["/opt/mysqlbench/ssh"] == volumes["/sources/ssh"], worker
        assert services[worker]["user"] == f"{uid}:0"
    assert "--local-infile=1" in argv(services["mysql"]["command"])


def test_every_service_has_a_health_check_and_none_is_privileged(config):
    """What the compose stack test waits for before it runs a study; and a privileged container
    cannot even be created where privileges are refused (the benchmark host's default cold eviction
    needs none)."""
    services = config["services"]
    assert [name for name, s in services.items() if name != "airflow-init" and "healthcheck" not in s] == []
    assert [name for name, s in services.items() if s.get("privileged")] == []
