"""Running one statement as a measurement: client wall time, server time from the slow log at
0 s in this session only, counter deltas with the cost of reading them subtracted, row count and
answer checksum, OS samples during the window, a server-side timeout, and EXPLAIN FORMAT=JSON with
a hash of the plan's structure. The measured window holds only the statement and its fetch."""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import signal
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from mysqlbench.answers import checksum
from mysqlbench.ossampler import OsSampler
from mysqlbench.targets.flavor import ServerInfo

log = logging.getLogger(__name__)

# The seed's counters (mysqladmin extended-status before and after each query).
SEED_COUNTERS = (
    "Created_tmp_disk_tables", "Created_tmp_tables", "Handler_mrr_init", "Handler_mrr_rowid_refills",
    "Handler_read_key", "Handler_read_next", "Handler_read_rnd_next", "Innodb_buffer_pool_read_ahead",
    "Innodb_buffer_pool_read_requests", "Innodb_buffer_pool_reads", "Innodb_data_read", "Innodb_data_reads",
    "Innodb_pages_read", "Innodb_rows_read", "Select_scan", "Sort_scan",
)
PAGES_DATA = "Innodb_buffer_pool_pages_data"
# levels, not counters: their delta is legitimately negative when pages are evicted
GAUGES = frozenset({PAGES_DATA, "pages_data_bytes"})
SLOW_LOG_SOURCE = "mysql.slow_log, long_query_time=0 in the measuring session"

ER_QUERY_INTERRUPTED = 1317
ER_STATEMENT_TIMEOUT = 1969  # MariaDB max_statement_time
ER_QUERY_TIMEOUT = 3024      # MySQL max_execution_time
TIMEOUT_COUNTERS = ("Max_statement_time_exceeded", "Max_execution_time_exceeded")  # MariaDB, MySQL


@dataclass
class Execution:
    query_id: str
    status: str                      # ok | timeout
    client_s: float | None
    server_s: float | None
    server_time_source: str
    rows: int | None = None
    checksum: str | None = None
    counters: dict[str, int | None] = field(default_factory=dict)  # None: the server lacks it
    os: dict[str, Any] = field(default_factory=dict)
    os_samples: list[dict[str, Any]] = field(default_factory=list)  # one per second of the window
    answer: list[tuple] | None = None


def read_status(conn) -> dict[str, int]:
    with conn.cursor() as cur:
        cur.execute("SHOW GLOBAL STATUS")
        out = {}
        for name, value in cur.fetchall():
            try:
                out[name] = int(value)
            except (TypeError, ValueError):
                continue
        return out


def plan_structure_hash(plan: Any) -> str:
    """Hash of a plan's shape: access types, tables, keys, join, MRR and sort strategies. Numbers
    (row estimates, filtered, costs), cost blocks and ANALYZE's r_* fields are left out, so the
    same plan hashes the same across runs and data sizes."""

    def shape(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: shape(v) for k, v in sorted(node.items())
                    if not k.startswith("r_") and "cost" not in k and not isinstance(v, (int, float))}
        if isinstance(node, list):
            return [shape(v) for v in node]
        return node

    return hashlib.sha256(json.dumps(shape(plan), sort_keys=True).encode()).hexdigest()[:16]


def plan_outline(plan: Any) -> list[str]:
    """One line per table access: table, access type, key, and the MRR/join-buffer strategy."""
    lines: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            table = node.get("table")
            if isinstance(table, dict) and "table_name" in table:
                parts = [table["table_name"], table.get("access_type", "?")]
                if table.get("key"):
                    parts.append(f"key={table['key']}")
                if table.get("mrr_type"):
                    parts.append(f"mrr={table['mrr_type']}")
                join = node.get("join_type")  # set on MariaDB's block-nl-join (e.g. "BKA")
                if join:
                    parts.append(f"join={join}")
                lines.append(" ".join(str(p) for p in parts))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(plan)
    return lines


@contextlib.contextmanager
def kill_on_terminate(kill_query):
    """While the statement runs, SIGTERM (how Airflow stops a task) first kills the query on the
    server, then goes on to the handler that was there before; the server's own timeout covers a
    hard kill of this process."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGTERM)

    def handler(signum, frame):
        with contextlib.suppress(Exception):
            kill_query()
        if callable(previous):
            previous(signum, frame)
        else:
            raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


class StatementRunner:
    """Measures statements on one connection (the session whose settings were applied)."""

    def __init__(self, conn, server: ServerInfo, *, timeout_s: float, counters=SEED_COUNTERS,
                 server_pid: int | None = None, slow_log: bool = False, kill_query=None):
        self.conn = conn
        self.kill_query = kill_query
        self.server = server
        self.counters = tuple(counters)
        self.server_pid = server_pid
        self.slow_log = slow_log
        self.timeout_s = float(timeout_s)
        with conn.cursor() as cur:
            cur.execute("SELECT CONNECTION_ID(), @@innodb_page_size")
            self.connection_id, self.page_size = cur.fetchone()
        self.baseline = self._baseline()

    def _baseline(self) -> dict[str, int]:
        """What reading the counters itself adds to them: the delta over an empty window."""
        first = read_status(self.conn)
        second = read_status(self.conn)
        return {name: second[name] - first[name] for name in second if name in first}

    def _statement_timeout(self, seconds: float) -> None:
        """The server kills the measured statement at the timeout (0: none). Set just around it,
        so counter reads and the slow-log lookup are never cut short."""
        with self.conn.cursor() as cur:
            if self.server.is_mariadb:
                cur.execute("SET SESSION max_statement_time = %s", (seconds,))
            else:  # milliseconds, SELECT only
                cur.execute("SET SESSION max_execution_time = %s", (int(seconds * 1000),))

    def execute(self, statements) -> None:
        with self.conn.cursor() as cur:
            for statement in statements:
                cur.execute(statement)

    def run(self, query_id: str, statement: str, *, keep_answer: bool = False) -> Execution:
        before = read_status(self.conn)
        self._statement_timeout(self.timeout_s)
        if self.slow_log:
            self._session_long_query_time(0)
        rows: list[tuple] | None = None
        status = "ok"
        outcome: dict[str, Any] = {}

        def statement_and_fetch() -> None:
            # timed here, around execute and fetch only
            cur = self.conn.cursor()
            started = time.perf_counter()
            try:
                cur.execute(statement)
                outcome["rows"] = list(cur.fetchall())
            except Exception as exc:  # noqa: BLE001 - handed to the main thread
                outcome["error"] = exc
            outcome["elapsed"] = time.perf_counter() - started
            cur.close()

        # The statement runs in a helper thread so the main thread stays free to handle SIGTERM
        # (a blocked C call would delay Python's signal handler until the query ends).
        with kill_on_terminate(lambda: self.kill_query(self.connection_id) if self.kill_query else None), \
                OsSampler(server_pid=self.server_pid) as sampler:
            worker = threading.Thread(target=statement_and_fetch, daemon=True)
            worker.start()
            while worker.is_alive():
                worker.join(0.2)
        elapsed = outcome["elapsed"]
        if "error" in outcome:
            exc = outcome["error"]
            if getattr(exc, "args", (None,))[0] not in (ER_QUERY_INTERRUPTED, ER_STATEMENT_TIMEOUT, ER_QUERY_TIMEOUT):
                raise exc
            status = "timeout"  # the server killed it at the timeout
        else:
            rows = outcome["rows"]
        if self.slow_log:
            self._session_long_query_time(10)
        self._statement_timeout(0)
        after = read_status(self.conn)
        # Some interrupted statements (SLEEP, BENCHMARK on MariaDB) return a row instead of an
        # error; the server's own timeout counter tells, so a cut-short run is never a time.
        if status == "ok" and any(after.get(name, 0) > before.get(name, 0) for name in TIMEOUT_COUNTERS):
            status, rows = "timeout", None
        server_s = self._server_seconds(statement) if self.slow_log and status == "ok" else None
        counters: dict[str, int | None] = {}
        for name in (*self.counters, PAGES_DATA):
            if name not in after:
                counters[name] = None  # absent on this server, never 0
            else:
                counters[name] = after[name] - before[name] - self.baseline.get(name, 0)
        if counters.get(PAGES_DATA) is not None:
            counters["pages_data_bytes"] = counters[PAGES_DATA] * int(self.page_size)
        return Execution(
            query_id=query_id, status=status,
            client_s=round(elapsed, 6) if status == "ok" else None,
            server_s=server_s,
            server_time_source=SLOW_LOG_SOURCE if self.slow_log else "not available on this target",
            rows=len(rows) if rows is not None else None,
            checksum=checksum(rows) if rows is not None else None,
            counters=counters, os=sampler.summary(), os_samples=sampler.samples, answer=rows if keep_answer else None,
        )

    def explain(self, statement: str) -> tuple[dict[str, Any], str]:
        with self.conn.cursor() as cur:
            cur.execute(f"EXPLAIN FORMAT=JSON {statement}")
            plan = json.loads(cur.fetchone()[0])
        return plan, plan_structure_hash(plan)

    def _session_long_query_time(self, seconds: float) -> None:
        with self.conn.cursor() as cur:
            cur.execute("SET SESSION long_query_time = %s", (seconds,))

    def _server_seconds(self, statement: str) -> float | None:
        with self.conn.cursor() as cur:
            cur.execute("SELECT query_time, sql_text FROM mysql.slow_log WHERE thread_id = %s "
                        "ORDER BY start_time DESC LIMIT 5", (self.connection_id,))
            for query_time, sql_text in cur.fetchall():
                text = sql_text.decode() if isinstance(sql_text, bytes) else sql_text
                if text.strip() == statement.strip():
                    return query_time.total_seconds() if hasattr(query_time, "total_seconds") else float(query_time)
        return None


def enable_slow_log_table(conn, target) -> bool:
    """Make the slow log a table the measuring session can write at 0 s while every other session
    keeps the global threshold. Needs a benchmark target if it is not already so configured."""
    with conn.cursor() as cur:
        cur.execute("SELECT @@GLOBAL.slow_query_log, @@GLOBAL.log_output")
        enabled, output = cur.fetchone()
        if int(enabled) == 1 and "TABLE" in str(output).upper():
            return True
        if not target.benchmark_target:
            return False
        target.require_benchmark_target("enable the slow log table")
        cur.execute("SET GLOBAL log_output = 'TABLE'")
        cur.execute("SET GLOBAL slow_query_log = 1")
    return True
