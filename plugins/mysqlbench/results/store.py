"""The results store (SQLAlchemy): samples with units, validations, and the snapshots lineage
points at (server variables, host facts, datasets), each kept once. A task's writes replace its
own earlier rows (same DAG, run, task and map index) and nothing else, so retries never duplicate.
Its schema is versioned with Alembic (``results/migrations/``), so history written by any earlier
release upgrades in place when a newer one opens it."""

from __future__ import annotations

import contextlib
import enum
import fcntl
import json
import logging
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable

import sqlalchemy as sa

from mysqlbench import paths
from mysqlbench.results.lineage import Lineage, stable_hash, stable_variables, variables_hash

log = logging.getLogger(__name__)

RESULTS_CONN_ID = "mysqlbench_results"
MIGRATIONS = Path(__file__).with_name("migrations")
BASELINE_REVISION = "0001"  # the schema the first release created without Alembic
SQLITE_BUSY_TIMEOUT_MS = 60_000
# the tasks whose rows are a study's measurements: every point of a fixed-repetition run, and the
# first round of a ``repetitions: auto`` run (later rounds: measure_round_2, measure_round_3, ...)
MEASURE_TASK = "measure_point"
_ROUND_PREFIX = "measure_round_"


def round_task_id(number: int) -> str:
    """The measuring task of round ``number`` (1-based)."""
    return MEASURE_TASK if number == 1 else f"{_ROUND_PREFIX}{number}"


def measured_by(column: sa.Column) -> sa.ColumnElement[bool]:
    """A ``task_id`` column's rows that are measurements (any round)."""
    return sa.or_(column == MEASURE_TASK, column.startswith(_ROUND_PREFIX, autoescape=True))


def last_try(table: sa.Table) -> sa.ColumnElement[bool]:
    """A task table's rows of each task instance's last try. Every try's rows are kept (a retry
    does not erase what the try before it measured, or that it was killed); what a run's
    analysis, validation, report and history read is its last try."""
    earlier = table.alias("tries")
    return table.c.try_number == (
        sa.select(sa.func.max(earlier.c.try_number))
        .where(earlier.c.dag_id == table.c.dag_id, earlier.c.run_id == table.c.run_id,
               earlier.c.task_id == table.c.task_id, earlier.c.map_index == table.c.map_index)
        .scalar_subquery())


metadata = sa.MetaData()


class SampleKind(str, enum.Enum):
    """What a sample is. Execution-level kinds carry point, subject and repetition."""

    METRIC = "metric"    # a timing or rate of one execution (client_seconds, server_seconds, ...)
    COUNTER = "counter"  # a server status counter's delta over the measured window
    GAUGE = "gauge"      # a level's change (may legitimately be negative)
    OS = "os"            # an OS figure over the measured window
    SERIES = "series"    # a time series over the measured window (``series`` holds it)
    ANSWER = "answer"    # an execution's answer: rows, checksum, oracle verdict
    PLAN = "plan"        # point-level: a plan and its structure hash
    PHASE = "phase"      # point-level: seconds spent in restart, warm-up, measuring, ...
    RUN = "run"          # run- or task-level facts (load timings, validation flags)


EXECUTION_KINDS = frozenset({SampleKind.METRIC, SampleKind.COUNTER, SampleKind.GAUGE, SampleKind.OS,
                             SampleKind.SERIES, SampleKind.ANSWER})


class Status(str, enum.Enum):
    OK = "ok"
    ABSENT = "absent"                  # the server lacks the counter: never 0
    TIMEOUT = "timeout"                # the server's own statement timeout stopped it
    KILLED = "killed"                  # the task was terminated (SIGTERM, execution_timeout)
    NOT_APPLICABLE = "not_applicable"  # the server cannot take a setting; metadata says why
    SKIPPED = "skipped"


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
    sa.Column("kind", sa.String(16), nullable=False, server_default="run"),
    sa.Column("point", sa.String(512)),
    sa.Column("subject", sa.String(128)),
    sa.Column("repetition", sa.Integer),
    sa.Column("series", sa.Text),
    sa.Index("ix_samples_task", "dag_id", "run_id", "task_id", "map_index"),
    sa.Index("ix_samples_series_key", "study", "metric", "subject"),
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

holds = sa.Table(
    "holds", metadata,
    sa.Column("resource", sa.String(255), primary_key=True),  # "target:..." or "host:..."
    sa.Column("holder", sa.String(64), nullable=False),       # one holder's random token
    sa.Column("owner", sa.Text, nullable=False),              # JSON: pid, host, task, purpose
    sa.Column("acquired_at", sa.Float, nullable=False),   # seconds since the epoch
    sa.Column("lease_until", sa.Float, nullable=False),
)

# a report's files (HTML, charts, JSON), so a UI on another machine than the worker can show it
report_files = sa.Table(
    "report_files", metadata,
    sa.Column("dag_id", sa.String(250), primary_key=True),
    sa.Column("run_dir", sa.String(250), primary_key=True),   # the report folder's name: the run id, made safe
    sa.Column("name", sa.String(128), primary_key=True),
    sa.Column("content", sa.LargeBinary, nullable=False),
    sa.Column("written_at", sa.DateTime(timezone=True), nullable=False),
)

# what a run changed on a server and has not undone yet (``targets/journal.py``), one row per server
restore_journals = sa.Table(
    "restore_journals", metadata,
    sa.Column("server", sa.String(255), primary_key=True),  # the server's identity (``targets.hold``)
    sa.Column("target", sa.String(250), nullable=False),    # the connection id that wrote it last
    sa.Column("owner", sa.Text, nullable=False),            # JSON: pid, host, since
    sa.Column("entries", sa.Text, nullable=False),          # JSON list, oldest first
    sa.Column("updated_at", sa.Float, nullable=False),
)

_TASK_TABLES = (samples, validations)


@dataclass
class TimeSeries:
    """Values at offsets (seconds from the window's start), PerfKitBenchmarker-style: one sample
    holds the whole series, its interval and where rampup ends (values before it are excluded
    from the sample's summary value)."""

    offsets_s: list[float]
    values: list[float | None]
    interval_s: float
    rampup_end_s: float = 0.0

    def as_json(self) -> str:
        return json.dumps({"offsets_s": self.offsets_s, "values": self.values, "interval_s": self.interval_s,
                           "rampup_end_s": self.rampup_end_s})

    @classmethod
    def from_json(cls, text: str | None) -> "TimeSeries | None":
        return cls(**json.loads(text)) if text else None

    def measured(self) -> list[float]:
        """The values of intervals wholly after rampup (an offset is where its interval ends and the
        previous offset where it starts; a last interval may be short; None, an interval with no
        reading, left out)."""
        starts = [max(0.0, self.offsets_s[0] - self.interval_s)] + list(self.offsets_s[:-1]) if self.offsets_s else []
        return [v for start, v in zip(starts, self.values, strict=True)
                if start >= self.rampup_end_s - 1e-9 and v is not None]


@dataclass
class Sample:
    """One measurement with its unit, PerfKitBenchmarker-style: metadata says what to compare.

    The execution it belongs to is explicit (``point``, ``subject``, ``repetition``), and so is
    what it is (``kind``); nothing is inferred from a metric's name.
    """

    metric: str
    value: float | None
    unit: str
    status: str = Status.OK.value
    metadata: dict[str, Any] = field(default_factory=dict)
    kind: str = SampleKind.RUN.value
    point: str | None = None
    subject: str | None = None
    repetition: int | None = None
    series: TimeSeries | None = None

    def __post_init__(self) -> None:
        self.kind = SampleKind(self.kind).value
        self.status = Status(self.status).value
        if SampleKind(self.kind) in EXECUTION_KINDS and (self.point is None or self.subject is None):
            raise ValueError(f"{self.kind} sample {self.metric!r} needs its execution (point and subject)")
        if (self.kind == SampleKind.SERIES.value) != (self.series is not None):
            raise ValueError(f"sample {self.metric!r}: a series sample, and only one, carries a series")


@dataclass
class Validation:
    suite: str
    success: bool
    statistics: dict[str, Any]
    failures: list[dict[str, Any]]


PG_MIGRATION_LOCK = 0x6d7973716c62  # pg_advisory_xact_lock key of the store's migrations ("mysqlb")


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
    return url_from_connection(conn)


def url_from_connection(conn) -> str | sa.engine.URL:
    """The store's URL from an Airflow connection object (extra ``url``, or its fields)."""
    extra = conn.extra_dejson
    if extra.get("url"):
        return sa.engine.make_url(extra["url"]).set(password=conn.password or None)
    drivers = {"postgres": "postgresql+psycopg2", "mysql": "mysql+mysqldb", "sqlite": "sqlite"}
    return sa.engine.URL.create(drivers.get(conn.conn_type, conn.conn_type), username=conn.login,
                                password=conn.password, host=conn.host, port=conn.port, database=conn.schema)


def _sqlite_pragmas(dbapi_conn, _record) -> None:
    """WAL lets readers and one writer work at once; the busy timeout makes concurrent tasks wait
    for each other's short write transactions instead of failing with "database is locked"."""
    cursor = dbapi_conn.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    cursor.close()


@contextlib.contextmanager
def _migration_lock(engine: sa.engine.Engine):
    """Processes that open a new SQLite store at once must not both create its tables: a lock file
    beside the database serialises them. PostgreSQL's are serialised by an advisory lock taken in
    the migrating transaction (``migrate``)."""
    if engine.url.get_backend_name() != "sqlite" or not engine.url.database or engine.url.database == ":memory:":
        yield
        return
    with open(f"{engine.url.database}.migrate.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def migrate(engine: sa.engine.Engine) -> str:
    """Bring the store's schema to the newest revision; returns it. A store the first release
    wrote (tables but no ``alembic_version``) is stamped as the baseline first, then upgraded."""
    from alembic import command
    from alembic.config import Config
    from alembic.runtime.migration import MigrationContext
    from alembic.script import ScriptDirectory

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    head = ScriptDirectory.from_config(config).get_current_head()
    with _migration_lock(engine), engine.begin() as conn:
        if conn.dialect.name == "postgresql":  # two workers opening a new store at once: one creates it
            conn.execute(sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": PG_MIGRATION_LOCK})
        current = MigrationContext.configure(conn).get_current_revision()
        if current == head:
            return head
        config.attributes["connection"] = conn
        if current is None and sa.inspect(conn).has_table("samples"):
            command.stamp(config, BASELINE_REVISION)
        command.upgrade(config, "head")
    log.info("results store %s: schema upgraded from %s to %s", engine.url.render_as_string(hide_password=True),
             current, head)
    return head


class ResultsStore:
    def __init__(self, url: str | sa.engine.URL | None = None):
        self.engine = sa.create_engine(url or default_url(), future=True)
        if self.engine.url.get_backend_name() == "sqlite":
            sa.event.listen(self.engine, "connect", _sqlite_pragmas)
        migrate(self.engine)

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

    def server_snapshot(self, key: str) -> dict[str, str] | None:
        """The stable server variables kept under a variables hash."""
        with self.engine.connect() as conn:
            text = conn.execute(sa.select(server_snapshots.c.variables)
                                .where(server_snapshots.c.variables_hash == key)).scalar()
        return None if text is None else json.loads(text)

    def variable_changes(self, before_hash: str | None, after_hash: str | None) -> dict[str, Any]:
        """Which server variables differ between two configuration snapshots (name: [before, after]);
        a snapshot the store does not hold is said so rather than guessed."""
        if not before_hash or not after_hash or before_hash == after_hash:
            return {}
        old, new = self.server_snapshot(before_hash), self.server_snapshot(after_hash)
        if old is None or new is None:
            return {"(unknown)": "a configuration snapshot is not in the store"}
        return {name: [old.get(name), new.get(name)] for name in sorted(set(old) | set(new))
                if old.get(name) != new.get(name)}

    def host_facts(self, key: str) -> dict[str, Any] | None:
        """The host facts kept under a host hash."""
        with self.engine.connect() as conn:
            text = conn.execute(sa.select(host_snapshots.c.facts).where(host_snapshots.c.host_hash == key)).scalar()
        return None if text is None else json.loads(text)

    def keep_dataset(self, manifest: dict[str, Any]) -> str:
        key = manifest["dataset_id"]
        self._insert_once(datasets, "dataset_id", key, generator=manifest["generator"],
                          generator_version=manifest["generator_version"],
                          scale_factor=manifest["scale_factor"], manifest=json.dumps(manifest, sort_keys=True))
        return key

    def _insert_once(self, table: sa.Table, key_column: str, key: str, **values: Any) -> None:
        try:
            with self.engine.begin() as conn:
                exists = conn.execute(sa.select(table.c[key_column]).where(table.c[key_column] == key)).first()
                if exists is None:
                    conn.execute(table.insert().values({key_column: key, "first_seen": _now(), **values}))
        except sa.exc.IntegrityError:
            pass  # another task kept the same snapshot between our look and our insert: kept once

    # -- task rows: idempotent per (dag, run, task, map index) -----------------------------------
    def record(self, lineage: Lineage, samples_: Iterable[Sample] = (), validations_: Iterable[Validation] = ()) -> None:
        """Replace this try's rows with these, in one transaction (idempotent per try; the rows
        of earlier tries of the task stay, readers take the last: ``last_try``)."""
        base = {**lineage.as_row(), "recorded_at": _now()}
        sample_rows = [{**base, "metric": s.metric, "value": _finite(s.value), "unit": s.unit, "status": s.status,
                        "metadata": json.dumps(s.metadata, sort_keys=True, default=str), "kind": s.kind,
                        "point": s.point, "subject": s.subject, "repetition": s.repetition,
                        "series": s.series.as_json() if s.series is not None else None} for s in samples_]
        validation_rows = [{**base, "suite": v.suite, "success": v.success,
                            "statistics": json.dumps(v.statistics, sort_keys=True, default=str),
                            "failures": json.dumps(v.failures, sort_keys=True, default=str)} for v in validations_]
        with self.engine.begin() as conn:
            for table in _TASK_TABLES:
                conn.execute(table.delete().where(
                    table.c.dag_id == lineage.dag_id, table.c.run_id == lineage.run_id,
                    table.c.task_id == lineage.task_id, table.c.map_index == lineage.map_index,
                    table.c.try_number == lineage.try_number))
            if sample_rows:
                conn.execute(samples.insert(), sample_rows)
            if validation_rows:
                conn.execute(validations.insert(), validation_rows)

    # -- report files: a report folder, replaced whole -----------------------------------------
    def keep_report(self, dag_id: str, directory: Path) -> int:
        """Store a report folder's files (its name is the run's), replacing what an earlier try of
        the same run stored; returns how many."""
        files = sorted(p for p in directory.iterdir() if p.is_file())
        now = _now()
        with self.engine.begin() as conn:
            conn.execute(report_files.delete().where(report_files.c.dag_id == dag_id,
                                                     report_files.c.run_dir == directory.name))
            if files:
                conn.execute(report_files.insert(), [{"dag_id": dag_id, "run_dir": directory.name, "name": p.name,
                                                      "content": p.read_bytes(), "written_at": now} for p in files])
        return len(files)

    def report_file(self, dag_id: str, run_dir: str, name: str) -> bytes | None:
        with self.engine.connect() as conn:
            return conn.execute(sa.select(report_files.c.content).where(
                report_files.c.dag_id == dag_id, report_files.c.run_dir == run_dir,
                report_files.c.name == name)).scalar()

    def reports_with(self, name: str) -> list[dict[str, Any]]:
        """Every stored report folder holding a file ``name`` (say trend.json), newest first."""
        with self.engine.connect() as conn:
            found = conn.execute(sa.select(report_files.c.dag_id, report_files.c.run_dir, report_files.c.written_at)
                                 .where(report_files.c.name == name)
                                 .order_by(report_files.c.written_at.desc())).all()
        return [{"dag_id": d, "run": r, "written_at": w} for d, r, w in found]

    def measured_rows(self, table: sa.Table, **where: Any) -> list[dict[str, Any]]:
        """``rows`` of the measuring tasks (every round's) that match ``where``."""
        return self.rows(table, _measured=True, **where)

    def rows(self, table: sa.Table, _measured: bool = False, every_try: bool = False, **where: Any) -> list[dict[str, Any]]:
        """A table's rows matching ``where``; of a task table, each task's last try unless ``every_try``."""
        query = sa.select(table)
        if "try_number" in table.c and not every_try:
            query = query.where(last_try(table))
        if _measured:
            query = query.where(measured_by(table.c.task_id))
        for column, value in where.items():
            query = query.where(table.c[column] == value)
        with self.engine.connect() as conn:
            return [dict(row._mapping) for row in conn.execute(query.order_by(table.c[table.primary_key.columns.keys()[0]]))]


def _finite(value: float | None) -> float | None:
    """NaN and infinity are not measurements: refuse them rather than store what no reader expects."""
    if value is not None and (value != value or value in (float("inf"), float("-inf"))):
        raise ValueError(f"refusing to store a non-finite value {value!r}")
    return value


def _now() -> datetime:
    return datetime.now(timezone.utc)
