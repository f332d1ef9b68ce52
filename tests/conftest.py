"""Test session set-up: a private work directory and Airflow home, and a real managed MariaDB
(tests/support/targets/test.yaml) started once for the whole session.

Everything a test process makes is its own, so pytest-xdist workers run side by side: the work
directory, Airflow home and metadata DB, connections (environment) and pools (that DB) are per
process, and the managed servers' ports are free ports picked when the process starts them. Tiers:
every test is marked ``unit`` (tests/unit: no server), ``server`` (tests/integration: servers the
session starts, library calls) or ``e2e`` (Airflow runs: dag.test, the scheduler, the README's
commands), by its folder; ``serial`` marks tests that judge a measured effect (time, CPU share,
a window's edges), which `make test` runs alone, after the parallel part."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SUPPORT = REPO / "tests" / "support"
sys.path.insert(0, str(SUPPORT))
_SESSION_DIR = Path(tempfile.mkdtemp(prefix="mysqlbench-tests-"))
os.chmod(_SESSION_DIR, 0o755)  # the server's OS user must reach its datadir

# Before anything imports Airflow: its home, DAGs and plugins for this session only.
os.environ.update({
    "MYSQLBENCH_WORK_DIR": str(_SESSION_DIR / "work"),
    "AIRFLOW_HOME": str(_SESSION_DIR / "airflow"),
    "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "dags"),
    "AIRFLOW__CORE__PLUGINS_FOLDER": str(REPO / "plugins"),
    "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
    "AIRFLOW__CORE__UNIT_TEST_MODE": "False",
    "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{_SESSION_DIR / 'airflow' / 'airflow.db'}",
    "GX_ANALYTICS_ENABLED": "False",
    # the test-only second workload and its study go through the same registry and factory
    "MYSQLBENCH_WORKLOADS": "probe=probe_workload:ProbeWorkload",
    "MYSQLBENCH_STUDY_DIRS": str(SUPPORT / "studies"),
    "PYTHONPATH": os.pathsep.join([str(REPO / "plugins"), str(SUPPORT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
})
(_SESSION_DIR / "airflow").mkdir(parents=True, exist_ok=True)

TEST_CONN = "mysqlbench_test"
EXTERNAL_CONN = "mysqlbench_external_unmarked"
EXTERNAL_MARKED_CONN = "mysqlbench_external_marked"
MYSQL_CONN = "mysqlbench_test_mysql"


@pytest.fixture(scope="session")
def session_dir() -> Path:
    return _SESSION_DIR


@pytest.fixture(scope="session")
def airflow_db():
    """Airflow's metadata DB for dag.test(), migrated once."""
    subprocess.run([str(Path(sys.executable).parent / "airflow"), "db", "migrate"], check=True,
                   capture_output=True, env=os.environ.copy())
    return os.environ["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"]


TIERS = {"unit": "unit", "integration": "server", "dags": "e2e"}  # folder under tests/ -> tier; else e2e
# The longest modules, longest first (from --durations of a full run, in seconds on two workers):
# `make test` hands modules to its workers in collection order (--no-loadscope-reorder), so these
# start first and the short ones fill the gaps, instead of a long module starting last and
# running alone at the end. A module not listed runs after these, in its usual order.
SLOWEST_FIRST = ("test_readme_commands.py",  # ~950
                 "test_readme_airflow.py",  # ~950
                 "dags/test_tpcc_studies.py",  # ~320
                 "test_celery_executor.py",  # ~300
                 "dags/test_studies.py",
                 "dags/test_concurrency.py",
                 "dags/test_servers.py",
                 "dags/test_sysbench_studies.py",
                 "dags/test_sequential_runs.py")
SERVER_FIXTURES = {"managed", "target", "mysql_managed", "mysql_target", "sshd", "admin", "airflow_db", "bag", "clone"}


def _rank(item) -> int:
    module = Path(str(item.fspath)).relative_to(REPO / "tests").as_posix()
    return SLOWEST_FIRST.index(module) if module in SLOWEST_FIRST else len(SLOWEST_FIRST)


def pytest_collection_modifyitems(config, items):
    """Mark each test with its tier by its folder; a unit test that asks for a server is an error.
    The slowest modules go first (a stable sort: each module's tests keep their order)."""
    items.sort(key=_rank)
    for item in items:
        parts = Path(str(item.fspath)).relative_to(REPO / "tests").parts
        tier = TIERS.get(parts[0], "e2e") if len(parts) > 1 else "e2e"
        item.add_marker(getattr(pytest.mark, tier))
        if tier == "unit" and SERVER_FIXTURES & set(getattr(item, "fixturenames", ())):
            raise pytest.UsageError(f"{item.nodeid} is in tests/unit but uses a server or Airflow fixture: "
                                    "move it to tests/integration or tests/dags")


def managed_spec(name: str):
    """A test target (tests/support/targets/NAME.yaml) on a free port of this process's own,
    written where ``ManagedSpec.load`` finds it (``work/targets/NAME/target.yaml``), so every task
    and CLI of the session that names the target reaches the same server."""
    import yaml
    from services import free_port

    from mysqlbench.targets.managed import ManagedSpec

    data = yaml.safe_load((SUPPORT / "targets" / f"{name}.yaml").read_text())
    data["port"] = free_port()
    path = ManagedSpec.path_of(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return ManagedSpec.load(name)


@pytest.fixture(scope="session")
def managed():
    """The test session's managed MariaDB, stopped at the end."""
    from mysqlbench.targets.managed import ManagedServer

    server = ManagedServer(managed_spec("test"))
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def mysql_managed():
    """MySQL 9.7 from Debian's archive (fetched into the session's work directory: a first fetch,
    as on a fresh machine), as a managed target; stopped at the end."""
    from mysqlbench import servers
    from mysqlbench.targets.managed import ManagedServer

    servers.fetch("mysql-9.7")
    server = ManagedServer(managed_spec("test_mysql"))
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def mysql_target(mysql_managed):
    """The managed MySQL as Airflow sees it (a connection in the environment)."""
    password = mysql_managed.ensure_benchmark_user()
    os.environ[f"AIRFLOW_CONN_{MYSQL_CONN.upper()}"] = json.dumps(
        {"conn_type": "mysql", "host": "127.0.0.1", "port": mysql_managed.spec.port, "login": "mysqlbench",
         "password": password, "extra": mysql_managed.connection_extra()})
    return mysql_managed.connection(password)


SSH_CONN = "mysqlbench_test_ssh"


@pytest.fixture(scope="session")
def sshd(session_dir):
    """A real OpenSSH server on 127.0.0.1 (own host key, key authentication, own port) that logs
    every command run through it; its Airflow connection is ``mysqlbench_test_ssh``."""
    from sshd import start_sshd

    server = start_sshd(session_dir / "sshd")
    os.environ[f"AIRFLOW_CONN_{SSH_CONN.upper()}"] = json.dumps(server.connection())
    yield server
    server.stop()


@pytest.fixture(scope="session")
def bench_password(managed) -> str:
    return managed.ensure_benchmark_user()


@pytest.fixture(scope="session")
def target(managed, bench_password):
    """The managed target as Airflow sees it: connections in the environment, as a deployment's
    secrets backend would supply them. Also an external connection to the same server that is not
    marked as a benchmark target."""
    conn = managed.connection(bench_password)
    base = {"conn_type": "mysql", "host": "127.0.0.1", "port": managed.spec.port,
            "login": conn.login, "password": bench_password}
    os.environ[f"AIRFLOW_CONN_{TEST_CONN.upper()}"] = json.dumps({**base, "extra": managed.connection_extra()})
    os.environ[f"AIRFLOW_CONN_{EXTERNAL_CONN.upper()}"] = json.dumps({**base, "extra": {"control": "external"}})
    os.environ[f"AIRFLOW_CONN_{EXTERNAL_MARKED_CONN.upper()}"] = json.dumps(
        {**base, "extra": {"control": "external", "benchmark_target": True}})
    return conn


@pytest.fixture()
def admin(managed):
    conn = managed.admin_connect()
    yield conn
    conn.close()


def pytest_sessionfinish(session, exitstatus):
    """Remove the session's work directory (datadir, generated data, Airflow home), unless
    MYSQLBENCH_KEEP_TEST_DIR is set to debug a failure from its logs."""
    import shutil

    if os.environ.get("MYSQLBENCH_KEEP_TEST_DIR"):
        print(f"\nkept the test session directory: {_SESSION_DIR}")
        return
    shutil.rmtree(_SESSION_DIR, ignore_errors=True)
