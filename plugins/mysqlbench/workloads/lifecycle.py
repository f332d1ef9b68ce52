"""The one dataset lifecycle, for every workload whose data lives in a schema on the target.

A workload *declares* its dataset as a :class:`DatasetBuild`: what it is (its id and summary), the
steps that build it (``create_tables``, ``load``, ``add_constraints``, ...: one method each, in
``steps`` order), how Great Expectations judges it, and what is checked before anything starts.
This module *runs* it, the same way for every workload:

1. **check**: the target is ours to change (a marked target or a proven managed instance), the disk
   can hold the dataset, and the workload's own bounds; nothing is touched yet.
2. **identify**: the dataset's id (TPC-H generates its files here, or finds them intact).
3. **plan**: a schema that holds this dataset, verified, whose tables' definitions and checksums are
   what was verified, is *reused*; anything else is rebuilt.
4. **build**: the schema is claimed (never one we did not create), emptied of every table and
   routine but its marker, then each step runs; the marker says which step was last done.
5. **verify**: Great Expectations decides; on success the marker records the dataset id, the
   time, every table's fingerprint (definition hash and ``CHECKSUM TABLE``) and the workload's
   facts; on failure the schema is marked invalid and the run fails.
6. **release**: a load DAG's build holds the dataset across its tasks; its teardown gives it back.

A study's dataset step runs all of it in one task (:func:`ensure`) under the target's exclusive
hold; a load DAG (``mysqlbench.studies.load_factory``) runs each step as its own task under the
build's hold (:func:`run_step`, :func:`validate`). A workload that changes its data while measuring
(TPC-C) rebuilds it with :func:`rebuild` inside the point's hold."""

from __future__ import annotations

import contextlib
import logging
import shutil
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from pydantic import BaseModel

    from mysqlbench.recording import TaskRecorder
    from mysqlbench.results.store import Sample
    from mysqlbench.targets.connection import TargetConnection

log = logging.getLogger(__name__)

# A bulk load's session: with unique and foreign-key checks off InnoDB bulk-loads an empty table
# (every workload's load connections set it).
LOAD_SESSION = {"unique_checks": 0, "foreign_key_checks": 0}


@dataclass
class StepOutcome:
    """What one build step did: a small, secret-free ``value`` (a load DAG's task returns it),
    the ``samples`` it measured, and ``facts`` kept in the schema's marker (read by later runs)."""

    value: Any = None
    samples: list["Sample"] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)


class DatasetBuild(ABC):
    """One workload's dataset on one target, declared. Subclasses set ``what``, ``steps`` (each a
    method ``name(self, data) -> StepOutcome``) and implement ``schema``, ``identify`` and
    ``validate``; the rest has defaults."""

    what: ClassVar[str]                   # "TPC-H": in messages and hold purposes
    steps: ClassVar[tuple[str, ...]]      # the build, in order, after the schema is emptied
    generates_files: ClassVar[bool] = False  # identify() generates files (a load DAG's "generate" task)
    # a load DAG's params (the dataset, target_conn_id, load options); None: no load DAG
    params_model: ClassVar[type["BaseModel"] | None] = None

    def __init__(self, params: "BaseModel", target: "TargetConnection") -> None:
        self.params = params
        self.target = target

    @classmethod
    def from_params(cls, raw: dict[str, Any]) -> "DatasetBuild":
        """A load DAG's build from its (checked) params: shape and names validated, the target
        read from its Airflow connection."""
        from mysqlbench.params import validate_params
        from mysqlbench.targets.connection import TargetConnection

        params = validate_params(cls.params_model, raw)
        return cls(params, TargetConnection.from_airflow(params.target_conn_id))

    @property
    @abstractmethod
    def schema(self) -> str:
        """The schema the dataset lives in."""

    @abstractmethod
    def identify(self, recorder: "TaskRecorder | None" = None) -> dict[str, Any]:
        """What dataset this is: at least ``dataset_id`` (small, secret-free: it goes to XCom).
        A build that generates files does it here (reusing intact ones) and records that."""

    @abstractmethod
    def validate(self, conn, data: dict[str, Any]):
        """Great Expectations' verdict (``checks.Verdict``) over the built schema."""

    def check_bounds(self) -> None:
        """The workload's own limits, before the server is contacted (e.g. a redo log the
        datadir's disk could not hold). Raise :class:`~mysqlbench.errors.InvalidInput`."""
        return None

    def disk_needs(self) -> list[tuple[str, Path, float]]:
        """(what, where, bytes) the build needs free, checked before it starts."""
        return []

    def verified_facts(self, data: dict[str, Any]) -> dict[str, Any]:
        """Facts recorded in the marker with the verification (read by later runs)."""
        return {}

    def run(self, name: str, data: dict[str, Any]) -> StepOutcome:
        if name not in self.steps:
            raise KeyError(f"{self.what} has no dataset step {name!r}; its steps: {list(self.steps)}")
        return getattr(self, name)(data)


class StudyDatasetBuild(DatasetBuild):
    """A dataset only studies build (no load DAG): the spec's ``dataset`` model is its params, the
    workload says its id (``dataset_id()``) and does the steps' work."""

    def __init__(self, workload, target: "TargetConnection") -> None:
        super().__init__(workload.spec.dataset, target)
        self.workload = workload

    @property
    def schema(self) -> str:
        return self.params.schema_name

    def identify(self, recorder: "TaskRecorder | None" = None) -> dict[str, Any]:
        return {"dataset_id": self.workload.dataset_id()}


# -- generic helpers a build's steps use ------------------------------------------------------------

def analyze_tables(conn, schema: str, tables) -> dict[str, float]:
    """``ANALYZE TABLE`` each table (any error fails the step); seconds per table. With
    ``STATS_AUTO_RECALC=0`` the statistics then stay pinned."""
    from mysqlbench.errors import MysqlbenchError
    from mysqlbench.identifiers import quote

    timings = {}
    with conn.cursor() as cur:
        for table in tables:
            started = time.monotonic()
            cur.execute(f"ANALYZE TABLE {quote(schema)}.{quote(table)}")
            status = cur.fetchall()
            if any(row[2] == "error" for row in status):
                raise MysqlbenchError(f"ANALYZE TABLE {table} failed: {status}")
            timings[table] = round(time.monotonic() - started, 3)
    return timings


def run_sql_file(conn, relative: str, schema: str) -> list[tuple[str, float]]:
    """Each statement of ``include/sql/<relative>`` in ``schema``, timed (head words, seconds)."""
    from mysqlbench import paths
    from mysqlbench.identifiers import quote
    from mysqlbench.sqlfiles import sql_statements

    timings = []
    with conn.cursor() as cur:
        cur.execute(f"USE {quote(schema, 'schema name')}")
        for statement in sql_statements(paths.sql_text(relative)):
            started = time.monotonic()
            cur.execute(statement)
            timings.append((" ".join(statement.split()[:3]), time.monotonic() - started))
    return timings


# -- the lifecycle ----------------------------------------------------------------------------------

def check(build: DatasetBuild) -> None:
    """Before anything is built: the workload's bounds, a running managed instance (it must prove
    what it is), a target ours to change, and the disk. Touches nothing."""
    from mysqlbench.targets.control import ensure_running

    build.check_bounds()
    ensure_running(build.target)  # our own instance, down after a reboot: up, so it can prove what it is
    build.target.require_benchmark_target(f"load {build.what} into schema {build.schema!r}")
    check_disk(build)


def check_params(build_cls: type[DatasetBuild], raw: dict[str, Any]) -> dict[str, Any]:
    """A load DAG's first task: its params validated (shape, allow-listed names, a defined
    connection) and :func:`check` passed; returns them checked, for the later tasks."""
    build = build_cls.from_params(raw)
    check(build)
    checked = build.params.model_dump(by_alias=True)
    log.info("params ok: %s on %s (control %s)", checked, build.target.conn_id, build.target.control)
    return checked


def check_disk(build: DatasetBuild) -> None:
    from mysqlbench.errors import InvalidInput

    for what, where, need in build.disk_needs():
        where.mkdir(parents=True, exist_ok=True)
        free = shutil.disk_usage(where).free
        if free < need:
            raise InvalidInput(f"{build.what} needs about {need / 1e9:.1f} GB for {what} under {where}; "
                               f"{free / 1e9:.1f} GB are free")


def datadir_root(target: "TargetConnection") -> Path | None:
    """Where a managed instance on this host keeps its data (its disk holds the loaded schema);
    None for any other target."""
    if not target.managed_proven:
        return None
    from mysqlbench import paths
    from mysqlbench.targets.managed import ManagedServer, ManagedSpec

    root = ManagedServer(ManagedSpec.load(target.managed_target)).root
    return root if root.exists() else paths.work_dir()


def plan(build: DatasetBuild, data: dict[str, Any]) -> bool:
    """True to reuse: the schema holds ``data``'s dataset, verified, and every table's definition
    and checksum are what was verified (compared under the target's hold: reading every table
    would spoil another study's measured window). A changed dataset is marked so, and rebuilt."""
    from mysqlbench import ownership
    from mysqlbench.fingerprint import changes_since_verified
    from mysqlbench.targets.control import ensure_running
    from mysqlbench.targets.lock import exclusive

    ensure_running(build.target)
    with build.target.session() as conn:
        marker = ownership.read_marker(conn, build.schema)
        if marker.get("state") != "verified" or marker.get("dataset_id") != data["dataset_id"]:
            log.info("schema %s holds %s (state %s): building %s", build.schema, marker.get("dataset_id"),
                     marker.get("state"), data["dataset_id"])
            return False
        with exclusive(build.target, "check the dataset's fingerprint", dataset=build.schema):
            changed = changes_since_verified(conn, build.schema, marker, contents=True)
        if not changed:
            return True
        log.warning("schema %s no longer holds dataset %s as verified at %s (%s): rebuilding it", build.schema,
                    data["dataset_id"], marker.get("verified_at"), "; ".join(changed))
        ownership.require_owned(conn, build.target, build.schema)
        ownership.set_marker(conn, build.schema, state="changed")
    return False


def empty_schema(build: DatasetBuild, data: dict[str, Any]) -> bool:
    """Claim the schema (refusing one we did not create and a target not ours to change), mark it
    loading ``data``'s dataset, and drop every table, view and routine in it but the marker, so the
    build starts from nothing and the fingerprint covers only what it made. True when the schema
    was created now."""
    from mysqlbench import ownership
    from mysqlbench.identifiers import quote

    with build.target.session() as conn:
        created = ownership.claim_schema(conn, build.target, build.schema)
        ownership.set_marker(conn, build.schema, state="loading", dataset_id=data["dataset_id"])
        s = quote(build.schema, "schema name")
        with conn.cursor() as cur:
            cur.execute("SET SESSION foreign_key_checks = 0")
            cur.execute("SELECT ROUTINE_NAME, ROUTINE_TYPE FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = %s",
                        (build.schema,))
            for name, kind in cur.fetchall():  # PROCEDURE or FUNCTION: a word the server gave, not ours
                cur.execute(f"DROP {'FUNCTION' if kind == 'FUNCTION' else 'PROCEDURE'} IF EXISTS {s}.{quote(name)}")
            cur.execute("SELECT TABLE_NAME, TABLE_TYPE FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s "
                        "AND TABLE_NAME <> %s", (build.schema, ownership.MARKER_TABLE))
            for name, kind in cur.fetchall():  # views first would not matter: DROP VIEW does not touch tables
                cur.execute(f"DROP {'VIEW' if kind == 'VIEW' else 'TABLE'} IF EXISTS {s}.{quote(name)}")
    return created


def step(build: DatasetBuild, name: str, data: dict[str, Any]) -> StepOutcome:
    """One step, the caller holding the target: the first starts from an emptied schema; each
    leaves the marker at its own name with its facts."""
    from mysqlbench import ownership

    started = time.monotonic()
    if name == build.steps[0]:
        empty_schema(build, data)
    else:  # a step run on its own (a load DAG's task, a retry): still a marked target, still our schema
        with build.target.session() as conn:
            ownership.require_owned(conn, build.target, build.schema)
    outcome = build.run(name, data)
    with build.target.session() as conn:
        ownership.set_marker(conn, build.schema, state=name, dataset_id=data["dataset_id"], **outcome.facts)
    log.info("%s dataset step %s done in %.1f s", build.what, name, time.monotonic() - started)
    return outcome


def verify(build: DatasetBuild, data: dict[str, Any]):
    """Great Expectations over the schema. Success marks it verified (id, time, fingerprint, the
    workload's facts), unless it was reused: its recorded fingerprint was just compared and stays.
    Failure marks it invalid, so nothing reuses or measures it."""
    from mysqlbench import ownership
    from mysqlbench.fingerprint import mark_verified

    with build.target.session() as conn:
        ownership.require_owned(conn, build.target, build.schema)
        result = build.validate(conn, data)
        marker = ownership.read_marker(conn, build.schema)
        reused = (marker.get("state") == "verified" and marker.get("dataset_id") == data["dataset_id"]
                  and bool(marker.get("fingerprint")))
        if not result.success:
            ownership.set_marker(conn, build.schema, state="invalid")
        elif not reused:
            mark_verified(conn, build.schema, dataset_tables(conn, build.schema), dataset_id=data["dataset_id"],
                          **build.verified_facts(data))
    return result


def dataset_tables(conn, schema: str) -> list[str]:
    """Every base table the build left in the schema (the marker aside): what the fingerprint
    covers, so a table added later is seen as "not part of the verified dataset"."""
    from mysqlbench import ownership

    with conn.cursor() as cur:
        cur.execute("SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s AND "
                    "TABLE_TYPE = 'BASE TABLE' AND TABLE_NAME <> %s ORDER BY TABLE_NAME",
                    (schema, ownership.MARKER_TABLE))
        return [row[0] for row in cur.fetchall()]


def require_verified(target: "TargetConnection", schema: str, dataset_id: str, what: str, *,
                     writes_expected: bool) -> None:
    """Inside a point, before it measures: the schema still holds the verified ``dataset_id`` with
    the verified tables and definitions, and (unless the workload's runs write rows by design and
    put them back: ``writes_expected``) no write the server recorded since. The cheap check: a
    later study's plan compares the contents."""
    from mysqlbench import ownership
    from mysqlbench.errors import MysqlbenchError
    from mysqlbench.fingerprint import changes_since_verified

    with target.session() as conn:
        marker = ownership.read_marker(conn, schema)
        if marker.get("state") != "verified" or marker.get("dataset_id") != dataset_id:
            raise MysqlbenchError(f"schema {schema} no longer holds the verified {what} dataset {dataset_id} this "
                                  f"study planned with (it holds {marker.get('dataset_id')}, {marker.get('state')}): "
                                  "it was rebuilt or changed between points; run the study again")
        changed = changes_since_verified(conn, schema, marker, contents=False)
    if writes_expected:
        changed = [c for c in changed if "written after" not in c]
    if changed:
        raise MysqlbenchError(f"schema {schema} changed after dataset {dataset_id} was verified "
                              f"({'; '.join(changed)}): run the study again, its dataset step rebuilds it")


def rebuild(build: DatasetBuild, data: dict[str, Any]) -> tuple[list["Sample"], Any]:
    """Every step and the verification, the caller holding the target (a study's dataset step, or
    a point putting back a dataset its runs changed). Returns the samples and the verdict."""
    samples: list[Sample] = []
    for name in build.steps:
        samples += step(build, name, data).samples
    return samples, verify(build, data)


def _failed(build: DatasetBuild, result) -> Exception:
    from mysqlbench.errors import MysqlbenchError

    return MysqlbenchError(f"{build.what} dataset in {build.schema} failed validation: {result.failures}")


def ensure(build: DatasetBuild, recorder: "TaskRecorder") -> dict[str, Any]:
    """The whole lifecycle in one task (a study's dataset step): reuse the verified, unchanged
    dataset, or build and verify it under the target's hold. Returns the dataset's summary and
    ``reused``."""
    from mysqlbench.results.store import Sample
    from mysqlbench.targets.lock import exclusive

    check_disk(build)
    data = build.identify(recorder)
    if plan(build, data):
        log.info("%s dataset %s already loaded and verified in %s: not rebuilding", build.what, data["dataset_id"],
                 build.schema)
        recorder.record([Sample("dataset_reused", 1.0, "bool")], target=build.target, dataset_id=data["dataset_id"])
        return {**data, "reused": True}
    with exclusive(build.target, f"build the {build.what} dataset", dataset=build.schema):
        samples, result = rebuild(build, data)
    recorder.record(samples, [result], target=build.target, dataset_id=data["dataset_id"])
    if not result.success:
        raise _failed(build, result)
    return {**data, "reused": False}


# -- a load DAG: one task per step, the dataset held by the build from its first step to its end ------

def build_id(recorder: "TaskRecorder") -> str:
    """The dataset build a load DAG's run is: its steps share one hold on the dataset."""
    ti = recorder.context["ti"]
    return f"{ti.dag_id}/{ti.run_id}"


@contextlib.contextmanager
def _building(build: DatasetBuild, recorder: "TaskRecorder"):
    from mysqlbench.targets.lock import building

    with building(build.target, build.schema, build_id(recorder)) as lock:
        yield lock


def run_step(build: DatasetBuild, name: str, data: dict[str, Any], recorder: "TaskRecorder") -> Any:
    """One step as its own task: the dataset stays held by this build from its first step to its
    verification (nothing measures or rebuilds it in between), the target during the step."""
    with _building(build, recorder):
        outcome = step(build, name, data)
    recorder.record(outcome.samples, target=build.target, dataset_id=data["dataset_id"])
    return outcome.value


def reuse(build: DatasetBuild, data: dict[str, Any], recorder: "TaskRecorder") -> dict[str, Any]:
    from mysqlbench import ownership
    from mysqlbench.results.store import Sample

    with build.target.session() as conn:
        verified_at = ownership.read_marker(conn, build.schema).get("verified_at")
    log.info("SKIPPING the build: schema %s already holds %s dataset %s, verified at %s and unchanged",
             build.schema, build.what, data["dataset_id"], verified_at)
    recorder.record([Sample("dataset_reused", 1.0, "bool", metadata={"verified_at": verified_at})],
                    target=build.target, dataset_id=data["dataset_id"])
    return {"reused": True, "verified_at": verified_at, **data}


def validate(build: DatasetBuild, data: dict[str, Any], recorder: "TaskRecorder") -> dict[str, Any]:
    """The load DAG's last step: verify under the build's hold, then end the build."""
    from mysqlbench.targets.lock import end_build

    try:
        with _building(build, recorder):
            result = verify(build, data)
    finally:
        end_build(build.target, build.schema, build_id(recorder))
    recorder.record([], [result], target=build.target, dataset_id=data["dataset_id"])
    if not result.success:
        raise _failed(build, result)
    log.info("%s dataset %s in %s verified: %d checks passed", build.what, data["dataset_id"], build.schema,
             result.statistics["checks"])
    return {"success": True, "checks": result.statistics["checks"], **data}


def release(build: DatasetBuild, recorder: "TaskRecorder") -> None:
    """A load DAG's teardown: a build that failed half-way gives the dataset back at once instead
    of when its lease runs out."""
    from mysqlbench.targets.lock import end_build

    end_build(build.target, build.schema, build_id(recorder))
