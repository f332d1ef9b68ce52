"""The results store (SQLAlchemy): samples with units, validations, and the snapshots lineage
points at (server variables, host facts, datasets), each kept once. A task's writes replace its
own earlier rows (same DAG, run, task and map index) and nothing else, so retries never duplicate."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Iterable

import sqlalchemy as sa

from mysqlbench import paths
from mysqlbench.results.lineage import Lineage, stable_hash, stable_variables, variables_hash

log = logging.getLogger(__name__)

SCHEMA_VERSION = 1
RESULTS_CONN_ID = "mysqlbench_results"

metadata = sa.MetaData()

schema_version = sa.Table(
    "schema_version", metadata,
    sa.Column("version", sa.Integer, primary_key=True),
    sa.Column("applied_at", sa.DateTime(timezone=True), nullable=False),
)


def _lineage_columns() -> list[sa.Column]:
    return [
        sa.Column("study", sa.String(128), nullable=False),
        sa.Column("dag_id", sa.String(250), nullable=False),
        sa.Column("run_id", sa.String(250), nullable=False),
        sa.Column("task_id", sa.String(250), nullable=False),
        sa.Column("map_index", sa.Integer, nullable=False),
        sa.Column("try_number", sa.Integer, nullable=False),
        sa.Column("spec_hash", sa.String(64), nullable=False),
        sa.Column("package_version", sa.String(64), nullable=False),
        sa.Column("server_flavor", sa.String(32)),
        sa.Column("server_version", sa.String(128)),
        sa.Column("variables_hash", sa.String(64)),
        sa.Column("host_hash", sa.String(64)),
        sa.Column("dataset_id", sa.String(64)),
        sa.Column("recorded_at", sa.DateTime(timezone=True), nullable=False),
    ]


samples = sa.Table(
    "samples", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    *_lineage_columns(),
    sa.Column("metric", sa.String(128), nullable=False),
    sa.Column("value", sa.Float),  # NULL when status is not "ok"
    sa.Column("unit", sa.String(32), nullable=False),
    # ok | absent (the server lacks the counter) | timeout | not_applicable | skipped
    sa.Column("status", sa.String(32), nullable=False),
    sa.Column("metadata", sa.Text, nullable=False),
    sa.Index("ix_samples_task", "dag_id", "run_id", "task_id", "map_index"),
)

validations = sa.Table(
    "validations", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    *_lineage_columns(),
    sa.Column("suite", sa.String(128), nullable=False),
    sa.Column("success", sa.Boolean, nullable=False),
    sa.Column("statistics", sa.Text, nullable=False),
    sa.Column("failures", sa.Text, nullable=False),
    sa.Index("ix_validations_task", "dag_id", "run_id", "task_id", "map_index"),
)

server_snapshots = sa.Table(
    "server_snapshots", metadata,
    sa.Column("variables_hash", sa.String(64), primary_key=True),
    sa.Column("server_flavor", sa.String(32), nullable=False),
    sa.Column("server_version", sa.String(128), nullable=False),
    sa.Column("variables", sa.Text, nullable=False),
    sa.Column("first_seen", sa.DateTime(timezone=True), nullable=False),
)

host_snapshots = sa.Table(
    "host_snapshots", metadata,
    sa.Column("host_hash", sa.String(64), primary_key=True),
    sa.Column("facts", sa.Text, nullable=False),
    sa.Column("first_seen", sa.DateTime(timezone=True), nullable=False),
)

datasets = sa.Table(
    "datasets", metadata,
    sa.Column("dataset_id", sa.String(64), primary_key=True),
    sa.Column("generator", sa.String(64), nullable=False),
    sa.Column("generator_version", sa.String(64), nullable=False),
    sa.Column("scale_factor", sa.Float, nullable=False),
    sa.Column("manifest", sa.Text, nullable=False),
    sa.Column("first_seen", sa.DateTime(timezone=True), nullable=False),
)

_TASK_TABLES = (samples, validations)


@dataclass
class Sample:
    """One measurement with its unit, PerfKitBenchmarker-style: metadata says what to compare."""

    metric: str
    value: float | None
    unit: str
    status: str = "ok"
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class Validation:
    suite: str
    success: bool
    statistics: dict[str, Any]
    failures: list[dict[str, Any]]


def default_url() -> str:
    return f"sqlite:///{paths.work_dir() / 'results.db'}"


def url_from_airflow(conn_id: str = RESULTS_CONN_ID) -> str | sa.engine.URL:
    """The store's URL from the Airflow connection ``mysqlbench_results`` (extra ``url``, or the
    connection's fields), else the embedded SQLite file in the work directory."""
    try:
        from airflow.sdk import BaseHook

        conn = BaseHook.get_connection(conn_id)
    except Exception:
        return default_url()
    extra = conn.extra_dejson
    if extra.get("url"):
        return sa.engine.make_url(extra["url"]).set(password=conn.password or None)
    drivers = {"postgres": "postgresql+psycopg2", "mysql": "mysql+mysqldb", "sqlite": "sqlite"}
    return sa.engine.URL.create(drivers.get(conn.conn_type, conn.conn_type), username=conn.login,
                                password=conn.password, host=conn.host, port=conn.port, database=conn.schema)


class ResultsStore:
    def __init__(self, url: str | sa.engine.URL | None = None):
        self.engine = sa.create_engine(url or default_url(), future=True)
        metadata.create_all(self.engine)
        with self.engine.begin() as conn:
            if conn.execute(sa.select(schema_version.c.version)).first() is None:
                conn.execute(schema_version.insert().values(version=SCHEMA_VERSION, applied_at=_now()))

    @classmethod
    def from_airflow(cls) -> "ResultsStore":
        return cls(url_from_airflow())

    def describe(self) -> str:
        return self.engine.url.render_as_string(hide_password=True)

    # -- snapshots, each kept once ------------------------------------------------------------
    def keep_server_snapshot(self, flavor: str, version: str, variables: dict[str, Any]) -> str:
        kept = stable_variables(variables)
        key = variables_hash(variables)
        self._insert_once(server_snapshots, "variables_hash", key, server_flavor=flavor,
                          server_version=version, variables=json.dumps(kept, sort_keys=True))
        return key

    def keep_host_facts(self, facts: dict[str, Any]) -> str:
        key = stable_hash(facts)
        self._insert_once(host_snapshots, "host_hash", key, facts=json.dumps(facts, sort_keys=True))
        return key

    def keep_dataset(self, manifest: dict[str, Any]) -> str:
        key = manifest["dataset_id"]
        self._insert_once(datasets, "dataset_id", key, generator=manifest["generator"],
                          generator_version=manifest["generator_version"],
                          scale_factor=manifest["scale_factor"], manifest=json.dumps(manifest, sort_keys=True))
        return key

    def _insert_once(self, table: sa.Table, key_column: str, key: str, **values: Any) -> None:
        with self.engine.begin() as conn:
            exists = conn.execute(sa.select(table.c[key_column]).where(table.c[key_column] == key)).first()
            if exists is None:
                conn.execute(table.insert().values({key_column: key, "first_seen": _now(), **values}))

    # -- task rows: idempotent per (dag, run, task, map index) -----------------------------------
    def record(self, lineage: Lineage, samples_: Iterable[Sample] = (), validations_: Iterable[Validation] = ()) -> None:
        """Replace this task instance's rows with these, in one transaction."""
        base = {**lineage.as_row(), "recorded_at": _now()}
        sample_rows = [{**base, "metric": s.metric, "value": s.value, "unit": s.unit, "status": s.status,
                        "metadata": json.dumps(s.metadata, sort_keys=True, default=str)} for s in samples_]
        validation_rows = [{**base, "suite": v.suite, "success": v.success,
                            "statistics": json.dumps(v.statistics, sort_keys=True, default=str),
                            "failures": json.dumps(v.failures, sort_keys=True, default=str)} for v in validations_]
        with self.engine.begin() as conn:
            for table in _TASK_TABLES:
                conn.execute(table.delete().where(
                    table.c.dag_id == lineage.dag_id, table.c.run_id == lineage.run_id,
                    table.c.task_id == lineage.task_id, table.c.map_index == lineage.map_index))
            if sample_rows:
                conn.execute(samples.insert(), sample_rows)
            if validation_rows:
                conn.execute(validations.insert(), validation_rows)

    def rows(self, table: sa.Table, **where: Any) -> list[dict[str, Any]]:
        query = sa.select(table)
        for column, value in where.items():
            query = query.where(table.c[column] == value)
        with self.engine.connect() as conn:
            return [dict(row._mapping) for row in conn.execute(query.order_by(table.c[table.primary_key.columns.keys()[0]]))]


def _now() -> datetime:
    return datetime.now(timezone.utc)
