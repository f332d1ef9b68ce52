"""The dataset lifecycle itself (workloads/lifecycle.py), with a small declared build on the test
session's managed MariaDB: steps in order from an emptied schema, the verified marker and its
fingerprint, reuse while unchanged, a rebuild after a change, a failed verification marked invalid,
and a failed step left where it stopped. Every workload's build goes through these functions; the
load DAGs' and the studies' tests hold each workload's own steps."""

from __future__ import annotations

from types import SimpleNamespace

import pandas as pd
import pytest

from mysqlbench import ownership
from mysqlbench.errors import MysqlbenchError
from mysqlbench.results.store import ResultsStore, Sample, samples, validations
from mysqlbench.workloads import lifecycle
from mysqlbench.workloads.lifecycle import DatasetBuild, StepOutcome

SCHEMA = "lifecycle_toy"


class ToyBuild(DatasetBuild):
    """Three steps over one table of ``rows`` rows; ``short`` loads one row too few (GX must
    refuse it), ``fail_at`` raises in that step."""

    what = "toy"
    steps = ("create_tables", "load", "analyze")

    def __init__(self, target, rows: int = 5, short: bool = False, fail_at: str | None = None) -> None:
        super().__init__(None, target)
        self.rows, self.short, self.fail_at = rows, short, fail_at
        self.calls: list[str] = []

    @property
    def schema(self) -> str:
        return SCHEMA

    def identify(self, recorder=None):
        return {"dataset_id": f"toy-{self.rows}"}

    def _called(self, name: str) -> None:
        self.calls.append(name)
        if name == self.fail_at:
            raise RuntimeError(f"{name} broke")

    def create_tables(self, data):
        self._called("create_tables")
        with self.target.session() as conn, conn.cursor() as cur:
            cur.execute(f"CREATE TABLE {SCHEMA}.t (id INT PRIMARY KEY, v INT NOT NULL)")
        return StepOutcome()

    def load(self, data):
        self._called("load")
        n = self.rows - 1 if self.short else self.rows
        with self.target.session() as conn, conn.cursor() as cur:
            cur.executemany(f"INSERT INTO {SCHEMA}.t VALUES (%s, %s)", [(i, i * i) for i in range(1, n + 1)])
        return StepOutcome(n, [Sample("load_rows", float(n), "rows")], facts={"loaded_rows": n})

    def analyze(self, data):
        self._called("analyze")
        with self.target.session() as conn:
            return StepOutcome(lifecycle.analyze_tables(conn, SCHEMA, ["t"]))

    def validate(self, conn, data):
        import great_expectations as gx

        from mysqlbench.checks import validate_frames

        with conn.cursor() as cur:
            cur.execute(f"SELECT COUNT(*) FROM {SCHEMA}.t")
            frame = pd.DataFrame({"rows": [cur.fetchone()[0]]})
        wanted = [gx.expectations.ExpectColumnValuesToBeBetween(column="rows", min_value=self.rows,
                                                                max_value=self.rows, meta={"check": "rows"})]
        return validate_frames("toy", [("t", frame, wanted)])


@pytest.fixture()
def recorder(tmp_path):
    from mysqlbench.recording import TaskRecorder

    ti = SimpleNamespace(dag_id="toy_study", run_id="toy_run", task_id="ensure_dataset", map_index=-1, try_number=1)
    return TaskRecorder({"ti": ti}, study="toy_study", spec={}, store=ResultsStore(f"sqlite:///{tmp_path / 'r.db'}"))


@pytest.fixture()
def fresh(target, admin):
    with admin.cursor() as cur:
        cur.execute(f"DROP SCHEMA IF EXISTS {SCHEMA}")
    yield
    with admin.cursor() as cur:
        cur.execute(f"DROP SCHEMA IF EXISTS {SCHEMA}")


def marker(admin) -> dict:
    return ownership.read_marker(admin, SCHEMA)


def tables(admin) -> list[str]:
    with admin.cursor() as cur:
        cur.execute("SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s ORDER BY 1", (SCHEMA,))
        return [r[0] for r in cur.fetchall()]


def test_a_build_runs_its_steps_in_order_from_an_emptied_schema_and_is_verified(target, admin, fresh, recorder):
    """What an earlier build or a user left in our schema (a table, a view, a procedure, a function)
    is gone; the
    steps ran in their declared order; the marker says verified, with the dataset id, a step's
    facts and a fingerprint of exactly the tables the build made; samples and the verdict are
    recorded."""
    with target.session() as conn:
        ownership.claim_schema(conn, target, SCHEMA)
    with admin.cursor() as cur:
        cur.execute(f"CREATE TABLE {SCHEMA}.leftover (x INT)")
        cur.execute(f"CREATE VIEW {SCHEMA}.leftover_view AS SELECT x FROM {SCHEMA}.leftover")
        cur.execute(f"CREATE PROCEDURE {SCHEMA}.stale() SELECT 1")
        cur.execute(f"CREATE FUNCTION {SCHEMA}.stale_f() RETURNS INT DETERMINISTIC RETURN 1")
    build = ToyBuild(target)
    out = lifecycle.ensure(build, recorder)
    assert out == {"dataset_id": "toy-5", "reused": False}
    assert build.calls == ["create_tables", "load", "analyze"]
    assert tables(admin) == ["mysqlbench_owner", "t"]
    with admin.cursor() as cur:
        cur.execute("SELECT COUNT(*) FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = %s", (SCHEMA,))
        assert cur.fetchone()[0] == 0
    m = marker(admin)
    assert (m["state"], m["dataset_id"], m["loaded_rows"]) == ("verified", "toy-5", 5)
    assert set(m["fingerprint"]) == {"t"} and m["verified_at"] and m["verified_server_time"]
    stored = recorder.store.rows(samples, run_id="toy_run")
    assert [(r["metric"], r["value"]) for r in stored] == [("load_rows", 5.0)]
    (verdict,) = recorder.store.rows(validations, run_id="toy_run")
    assert verdict["success"]


def test_an_unchanged_dataset_is_reused_and_a_changed_one_rebuilt(target, admin, fresh, recorder):
    first = ToyBuild(target)
    lifecycle.ensure(first, recorder)
    again = ToyBuild(target)
    assert lifecycle.ensure(again, recorder)["reused"] is True and again.calls == []
    # a row changed behind the lifecycle's back: rebuilt, and verified again
    with admin.cursor() as cur:
        cur.execute(f"UPDATE {SCHEMA}.t SET v = v + 1 WHERE id = 1")
    changed = ToyBuild(target)
    assert lifecycle.ensure(changed, recorder)["reused"] is False
    assert changed.calls == ["create_tables", "load", "analyze"] and marker(admin)["state"] == "verified"
    # a table added to the schema is not part of the verified dataset: rebuilt without it
    with admin.cursor() as cur:
        cur.execute(f"CREATE TABLE {SCHEMA}.added (x INT)")
    added = ToyBuild(target)
    assert not lifecycle.plan(added, added.identify())
    assert marker(admin)["state"] == "changed"
    lifecycle.ensure(added, recorder)
    assert tables(admin) == ["mysqlbench_owner", "t"]
    # another dataset (another id) in the same schema is never taken for this one
    other = ToyBuild(target, rows=6)
    assert lifecycle.ensure(other, recorder)["reused"] is False and marker(admin)["dataset_id"] == "toy-6"


def test_a_dataset_that_fails_validation_is_marked_invalid_and_never_reused(target, admin, fresh, recorder):
    short = ToyBuild(target, short=True)
    with pytest.raises(MysqlbenchError, match="toy dataset in lifecycle_toy failed validation"):
        lifecycle.ensure(short, recorder)
    assert marker(admin)["state"] == "invalid"
    (verdict,) = recorder.store.rows(validations, run_id="toy_run")
    assert not verdict["success"]
    retry = ToyBuild(target)
    assert not lifecycle.plan(retry, retry.identify())


def test_a_failed_step_leaves_the_marker_at_the_last_step_done(target, admin, fresh, recorder):
    broken = ToyBuild(target, fail_at="analyze")
    with pytest.raises(RuntimeError, match="analyze broke"):
        lifecycle.ensure(broken, recorder)
    m = marker(admin)
    assert (m["state"], m["dataset_id"]) == ("load", "toy-5") and "fingerprint" not in m
    fixed = ToyBuild(target)
    assert not lifecycle.plan(fixed, fixed.identify())
    assert lifecycle.ensure(fixed, recorder)["reused"] is False and marker(admin)["state"] == "verified"


def test_an_unknown_step_is_named_with_the_declared_ones(target):
    with pytest.raises(KeyError, match=r"toy has no dataset step 'rename'.*create_tables"):
        ToyBuild(target).run("rename", {"dataset_id": "toy-5"})


def test_a_connection_only_tpcc_target_gets_its_dataset_back_by_a_rebuild(target, admin, recorder):
    """TPC-C's runs change its data; on a target without a managed instance (no datadir snapshot)
    each repetition starts from the dataset rebuilt by the lifecycle: a row a run changed is back,
    and the schema is verified again."""
    from mysqlbench.studies.spec import load_spec
    from mysqlbench.targets.connection import TargetConnection
    from mysqlbench.workloads.tpcc.workload import TpccWorkload

    from conftest import EXTERNAL_MARKED_CONN

    schema = "tpcc_reload"
    spec = load_spec("tpcc_bp_instances_study", {"dataset": {"warehouses": 1, "schema": schema},
                                                 "target": EXTERNAL_MARKED_CONN})
    external = TargetConnection.from_airflow(EXTERNAL_MARKED_CONN)
    workload = TpccWorkload(spec)
    try:
        data = workload.ensure_dataset(external, recorder)
        assert data["snapshot"] is None and not data["reused"]
        with admin.cursor() as cur:
            cur.execute(f"UPDATE {schema}.warehouse SET w_ytd = w_ytd + 1 WHERE w_id = 1")
        assert workload.reset_dataset(external, None, "holder")["how"] == "reload"
        assert lifecycle.plan(workload._build(external), data)  # verified, and the checksums match again
        workload.check_dataset(external, data["dataset_id"])
    finally:
        with admin.cursor() as cur:
            cur.execute(f"DROP SCHEMA IF EXISTS {schema}")


def test_a_dataset_build_keeps_its_dataset_held_between_its_steps_until_it_ends(target, tmp_path):
    """A build that spans tasks (tpch_load's steps): after each step the dataset stays held under
    the build's token, by no process (the step's task ends; only the lease says when the build is
    gone), so another build waits; the build's next step takes it up again, and the end of the
    build frees it. (Issue 25 item 4: reached only by whole Airflow runs before.)"""
    import json

    from mysqlbench.targets.hold import Hold, HoldTimeout, dataset_resource
    from mysqlbench.targets.lock import building, end_build

    store = ResultsStore(f"sqlite:///{tmp_path / 'holds.db'}")
    resource = dataset_resource(target, "build_held")
    with building(target, "build_held", "tpch_load__run_a", wait_s=5, store=store):
        pass
    with store.engine.connect() as conn:
        [owner] = [json.loads(row.owner) for row in conn.execute(Hold(store, [resource], "x").table.select())]
    assert owner["pid"] is None and owner["purpose"] == "dataset build tpch_load__run_a"
    other = Hold(store, [resource], "another build")
    with pytest.raises(HoldTimeout, match="dataset build tpch_load__run_a"):
        other.acquire(wait_s=0.5)
    with building(target, "build_held", "tpch_load__run_a", wait_s=5, store=store):  # its next step
        pass
    end_build(target, "build_held", "tpch_load__run_a", store=store)
    other.acquire(wait_s=0.5).release()
