"""Destructive steps only on marked targets and on schemas the project created."""

import pytest

from mysqlbench import ownership
from mysqlbench.errors import UnsafeOperation
from mysqlbench.targets.connection import TargetConnection
from mysqlbench.workloads import lifecycle
from mysqlbench.workloads.tpch.build import TpchBuild
from mysqlbench.workloads.tpch.models import TpchLoadParams


def test_foreign_schema_is_never_touched(target, admin):
    """The lifecycle's first step empties the schema it builds in: never one we did not create,
    even one whose tables have a dataset's names."""
    with admin.cursor() as cur:
        cur.execute("DROP SCHEMA IF EXISTS someone_elses")
        cur.execute("CREATE SCHEMA someone_elses")
        cur.execute("CREATE TABLE someone_elses.lineitem (x INT)")
    build = TpchBuild(TpchLoadParams(scale_factor=0.01, schema="someone_elses", target_conn_id=target.conn_id), target)
    for step in TpchBuild.steps:  # the first claims the schema; any later one, run on its own, checks it
        with pytest.raises(UnsafeOperation, match="was not created by mysqlbench"):
            lifecycle.step(build, step, {"dataset_id": "tpch-sf0.01-x"})
    with admin.cursor() as cur:
        cur.execute("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'someone_elses'")
        assert cur.fetchone()[0] == 1
        cur.execute("DROP SCHEMA someone_elses")


def test_claimed_schema_is_reused_and_marked(target, admin):
    conn = target.connect()
    assert ownership.claim_schema(conn, target, "owned_once") is True
    assert ownership.claim_schema(conn, target, "owned_once") is False
    assert ownership.read_marker(conn, "owned_once")["owner"] == "mysqlbench"
    conn.close()
    with admin.cursor() as cur:
        cur.execute("DROP SCHEMA owned_once")


def test_unmarked_external_target_refuses_schema_changes(target):
    from conftest import EXTERNAL_CONN

    external = TargetConnection.from_airflow(EXTERNAL_CONN)
    conn = external.connect()
    with pytest.raises(UnsafeOperation, match="not marked as a benchmark target"):
        ownership.claim_schema(conn, external, "not_allowed")
    assert not ownership.schema_exists(conn, "not_allowed")
    conn.close()


def test_exclusive_lock_excludes_a_second_holder(target, tmp_path):
    from mysqlbench.errors import MysqlbenchError
    from mysqlbench.results.store import ResultsStore
    from mysqlbench.targets.hold import HoldTimeout
    from mysqlbench.targets.lock import exclusive

    with exclusive(target):
        # the same deployment: its results store's hold
        with pytest.raises(HoldTimeout, match="still held"):
            with exclusive(target, wait_s=0):
                pass
        # another deployment, with its own results store: the server-side lock
        with pytest.raises(MysqlbenchError, match="holds mysqlbench:exclusive"):
            with exclusive(target, wait_s=0, store=ResultsStore(f"sqlite:///{tmp_path / 'other.db'}")):
                pass
    with exclusive(target, wait_s=0):  # released on exit
        pass
