"""Running one statement as a measurement: client wall time, server time from the slow log at
0 s in this session only, counter deltas with the cost of reading them subtracted, row count and
answer checksum, OS samples during the window, a server-side timeout, and EXPLAIN FORMAT=JSON with
a hash of the plan's structure. The measured window holds only the statement and its fetch."""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from mysqlbench import counters as derived_counters
from mysqlbench.answers import checksum
from mysqlbench.errors import MysqlbenchError
from mysqlbench.flavor import ServerInfo
from mysqlbench.ossampler import OsSampler

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


def _repeated_keys_as_nested_loop(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose keys repeat, read whole: MariaDB 10.5's EXPLAIN FORMAT=JSON writes a
    join's tables as repeated ``"table"`` keys of one object (10.6+ writes a ``nested_loop`` list),
    and a plain ``json.loads`` keeps only the last one, so different joins looked alike. Every
    occurrence of a repeated key goes, in its order, into a ``nested_loop`` list of one-key objects,
    the shape later versions write."""
    counts: dict[str, int] = {}
    for key, _ in pairs:
        counts[key] = counts.get(key, 0) + 1
    if all(n == 1 for n in counts.values()):
        return dict(pairs)
    out: dict[str, Any] = {}
    loop = []
    for key, value in pairs:
        if counts[key] > 1:
            loop.append({key: value})
        else:
            out[key] = value
    existing = out.get("nested_loop")
    out["nested_loop"] = (existing if isinstance(existing, list) else []) + loop
    return out


def parse_plan(text: str) -> Any:
    """EXPLAIN FORMAT=JSON output as an object, with repeated keys kept (see above)."""
    return json.loads(text, object_pairs_hook=_repeated_keys_as_nested_loop)


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


# Access methods and join strategies in one vocabulary, from MariaDB's and MySQL's EXPLAIN
# FORMAT=JSON (MySQL 8.0's version 1 and 8.3+'s version 2, the default on 9.x).
_ACCESS = {"ALL": "scan", "index": "index_scan", "range": "range", "ref": "ref", "ref_or_null": "ref",
           "eq_ref": "eq_ref", "const": "const", "system": "const", "index_merge": "index_merge",
           "fulltext": "fulltext", "hash": "hash",
           "table": "scan", "full_index_scan": "index_scan", "index_range_scan": "range", "index_lookup": "ref",
           "single_row_index_lookup": "eq_ref", "multi_range_read": "ref", "constant_row": "const",
           "index_merge_scan": "index_merge", "full_text_search": "fulltext"}
_JOIN = {"BKA": "bka", "BKAH": "bka", "BNL": "bnl", "BNLH": "hash", "Batched Key Access": "bka",
         "Batched Key Access (unique)": "bka", "Block Nested Loop": "bnl", "hash join": "hash",
         "batch_key_access": "bka", "hash": "hash", "nested_loop": None}


def plan_accesses(plan: Any) -> list[dict[str, Any]]:
    """Each table access of a plan, in join order, whatever the server's JSON format: table,
    access (one vocabulary), key, MRR (outside BKA, which implies it), join strategy."""
    out: list[dict[str, Any]] = []

    def add(table: str, access: str | None, key: str | None, mrr: bool, join: str | None) -> None:
        if not table or table.startswith("<"):
            return  # temporary and derived tables are the plan's own, not an access to data
        out.append({"table": table.lower(), "access": _ACCESS.get(str(access), str(access)),
                    "key": key.lower() if key else None, "mrr": bool(mrr) and join != "bka", "join": join})

    def v1(node: Any) -> None:  # MariaDB, and MySQL's version 1
        if isinstance(node, dict):
            table = node.get("table")
            if isinstance(table, dict) and "table_name" in table:
                join = _JOIN.get(node.get("join_type")) or _JOIN.get(table.get("using_join_buffer"))
                add(table["table_name"], table.get("access_type"), table.get("key"),
                    bool(table.get("mrr_type") or table.get("using_MRR")), join)
            for value in node.values():
                v1(value)
        elif isinstance(node, list):
            for value in node:
                v1(value)

    def v2(node: dict[str, Any], join: str | None) -> None:  # MySQL 8.3+: an iterator tree
        if "table_name" in node:
            access = node.get("index_access_type") if node.get("access_type") == "index" else node.get("access_type")
            add(node["table_name"], access, node.get("index_name"),
                node.get("index_access_type") == "multi_range_read", join)
        inputs = node.get("inputs") or []
        if node.get("access_type") == "join":
            algorithm = _JOIN.get(node.get("join_algorithm"))
            for i, child in enumerate(inputs):
                v2(child, None if i == 0 else algorithm)  # the inner inputs are what the join strategy reads
        else:
            for child in inputs:
                v2(child, join)

    if isinstance(plan, dict) and isinstance(plan.get("query_plan"), dict):
        v2(plan["query_plan"], None)
    else:
        v1(plan)
    return out


def comparable_plan_hash(plan: Any) -> str:
    """Hash of the join order and each access (table, method, key, MRR, join strategy) in one
    vocabulary: the same plan on MariaDB and MySQL hashes the same, whatever their JSON looks like."""
    lines = [f"{a['table']} {a['access']} {a['key']} {a['mrr']} {a['join']}" for a in plan_accesses(plan)]
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()[:16]


def plan_outline(plan: Any) -> list[str]:
    """One line per table access: table, access type, key, and the MRR/join-buffer strategy."""
    if isinstance(plan, dict) and isinstance(plan.get("query_plan"), dict):  # MySQL's version 2
        return [" ".join([a["table"], a["access"]] + ([f"key={a['key']}"] if a["key"] else [])
                         + (["mrr"] if a["mrr"] else []) + ([f"join={a['join']}"] if a["join"] else []))
                for a in plan_accesses(plan)]
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


class Aborted(MysqlbenchError):
    """The measured work was stopped from outside (task terminated, execution_timeout)."""


class MeasuredWindow:
    """What every measured unit shares, whether a statement or an external tool run: counter deltas
    with the cost of reading them subtracted (absent counters as None, never 0), OS samples every
    second, the server's own timeout counters, and a way to stop the work from outside.

    Only the measured work goes inside ``run``: the window reads the counters before and after it,
    the work itself runs in a helper thread so the main thread stays free for Airflow's signal
    handling (a blocked C call would hold Python's handlers until the statement ended), and
    ``abort`` (called from ``on_kill`` or on an execution timeout) runs ``kill`` and makes ``run``
    raise :class:`Aborted` once the work has stopped.
    """

    def __init__(self, conn, *, flavor: str, counters=SEED_COUNTERS, server_pid: int | None = None,
                 page_size: int = 16384, baseline: dict[str, int] | None = None, os_source=None,
                 server_unknown: bool = False):
        self.conn = conn
        self.os_source = os_source  # whose /proc the OS samples read: this machine, or a benchmark host's
        self.flavor = flavor  # which definition of the derived counters (include/configs/counters.yaml)
        self.counters = tuple(counters)
        self.server_pid = server_pid
        self.server_unknown = server_unknown  # on this machine, its process not known (ossampler.OsSampler)
        self.page_size = int(page_size)
        self.baseline = baseline if baseline is not None else reading_cost(conn)
        self._kill = None
        self._aborted = threading.Event()
        self.abort_reason: str | None = None
        self.last_span: tuple[float, float] | None = None  # wall-clock start and end of the last window

    def abort(self, reason: str) -> None:
        """Stop the running work now (any thread): kill it, and let ``run`` raise."""
        self.abort_reason = reason
        self._aborted.set()
        kill = self._kill
        if kill is not None:
            with contextlib.suppress(Exception):
                kill()

    @property
    def aborted(self) -> bool:
        return self._aborted.is_set()

    def run(self, work, *, kill=None, before_work=None, after_work=None, tool_pid=None) -> "WindowResult":
        """Run ``work()`` (returns anything) inside the window. ``before_work`` and ``after_work``
        run just inside the counter reads but outside the timed work and OS samples (the
        statement's own timeout and slow-log switches). ``tool_pid``: the benchmark tool's process (or
        a callable giving it once started), whose CPU the OS samples do not count as noise."""
        if self.aborted:
            raise Aborted(self.abort_reason or "aborted")
        before = read_status(self.conn)
        if before_work:
            before_work()
        outcome: dict[str, Any] = {}

        def timed() -> None:
            outcome["wall_start"] = time.time()
            started = time.perf_counter()
            try:
                outcome["value"] = work()
            except BaseException as exc:  # noqa: BLE001 - handed to the main thread
                outcome["error"] = exc
            outcome["elapsed"] = time.perf_counter() - started
            outcome["wall_end"] = time.time()

        self._kill = kill
        worker = threading.Thread(target=timed, daemon=True)
        try:
            with OsSampler(server_pid=self.server_pid, tool_pid=tool_pid, source=self.os_source,
                           server_unknown=self.server_unknown) as sampler:
                worker.start()
                while worker.is_alive():
                    worker.join(0.2)
        except BaseException as exc:  # an execution timeout, or anything raised in this thread
            self.abort(f"{type(exc).__name__}: {exc}".rstrip(": "))
            worker.join(30)
            raise
        finally:
            self._kill = None
        self.last_span = (outcome["wall_start"], outcome["wall_end"])
        if self.aborted:  # before the connection is used again: a late KILL QUERY would hit that statement
            raise Aborted(self.abort_reason or "aborted")
        if after_work:
            after_work()
        after = read_status(self.conn)
        counters: dict[str, int | None] = {}
        parts = derived_counters.needed(self.flavor)
        for name in dict.fromkeys((*self.counters, *parts, PAGES_DATA)):
            counters[name] = None if name not in after else after[name] - before[name] - self.baseline.get(name, 0)
        counters.update(derived_counters.derive(counters, self.flavor))
        for name in set(parts) - {*self.counters, PAGES_DATA}:
            del counters[name]  # read only for a derived counter: the spec did not ask for it
        if counters.get(PAGES_DATA) is not None:
            counters["pages_data_bytes"] = counters[PAGES_DATA] * self.page_size
        server_timeout = any(after.get(n, 0) > before.get(n, 0) for n in TIMEOUT_COUNTERS)
        return WindowResult(value=outcome.get("value"), error=outcome.get("error"), seconds=outcome["elapsed"],
                            counters=counters, os=sampler.summary(), os_samples=sampler.samples,
                            server_timeout=server_timeout)


@dataclass
class WindowResult:
    value: Any
    error: BaseException | None
    seconds: float
    counters: dict[str, int | None]
    os: dict[str, Any]
    os_samples: list[dict[str, Any]]
    server_timeout: bool  # the server's own timeout counter moved inside the window


def reading_cost(conn, samples: int = 3) -> dict[str, int]:
    """What reading the counters itself adds to them: the least delta over ``samples`` empty
    windows. Global counters also move with the server's background work (purge, statistics),
    and a burst caught in a single empty window would be subtracted from every measured one,
    driving a small query's delta below zero; the reading's own cost is in every sample."""
    readings = [read_status(conn) for _ in range(samples + 1)]
    out: dict[str, int] = {}
    for name in readings[-1]:
        if all(name in r for r in readings):
            out[name] = min(b[name] - a[name] for a, b in zip(readings[:-1], readings[1:], strict=True))
    return out


class StatementRunner:
    """Measures statements on one connection (the session whose settings were applied)."""

    def __init__(self, conn, server: ServerInfo, *, timeout_s: float, counters=SEED_COUNTERS,
                 server_pid: int | None = None, slow_log: bool = False, kill_query=None,
                 window: MeasuredWindow | None = None):
        self.conn = conn
        self.kill_query = kill_query
        self.server = server
        self.slow_log = slow_log
        self.timeout_s = float(timeout_s)
        with conn.cursor() as cur:
            cur.execute("SELECT CONNECTION_ID(), @@innodb_page_size")
            self.connection_id, page_size = cur.fetchone()
        self.window = window or MeasuredWindow(conn, flavor=server.flavor, counters=counters, server_pid=server_pid,
                                               page_size=page_size)

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

    def _before(self) -> None:
        self._statement_timeout(self.timeout_s)
        if self.slow_log:
            self._session_long_query_time(0)

    def _after(self) -> None:
        if self.slow_log:
            self._session_long_query_time(10)
        self._statement_timeout(0)

    def run(self, query_id: str, statement: str, *, keep_answer: bool = False) -> Execution:
        def statement_and_fetch() -> list[tuple]:
            with self.conn.cursor() as cur:  # timed: execute and fetch only
                cur.execute(statement)
                return list(cur.fetchall())

        kill = (lambda: self.kill_query(self.connection_id)) if self.kill_query else None
        result = self.window.run(statement_and_fetch, kill=kill, before_work=self._before, after_work=self._after)
        rows: list[tuple] | None = result.value
        status = "ok"
        if result.error is not None:
            if getattr(result.error, "args", (None,))[0] not in (ER_QUERY_INTERRUPTED, ER_STATEMENT_TIMEOUT,
                                                                 ER_QUERY_TIMEOUT):
                raise result.error
            status = "timeout"  # the server killed it at the timeout
        # Some interrupted statements (SLEEP, BENCHMARK on MariaDB) return a row instead of an
        # error; the server's own timeout counter tells, so a cut-short run is never a time.
        if status == "ok" and result.server_timeout:
            status = "timeout"
        if status != "ok":
            rows = None
        server_s = self._server_seconds(statement) if self.slow_log and status == "ok" else None
        return Execution(
            query_id=query_id, status=status,
            client_s=round(result.seconds, 6) if status == "ok" else None,
            server_s=server_s,
            server_time_source=SLOW_LOG_SOURCE if self.slow_log else "not available on this target",
            rows=len(rows) if rows is not None else None,
            checksum=checksum(rows) if rows is not None else None,
            counters=result.counters, os=result.os, os_samples=result.os_samples,
            answer=rows if keep_answer else None,
        )

    def explain(self, statement: str) -> tuple[dict[str, Any], str]:
        with self.conn.cursor() as cur:
            cur.execute(f"EXPLAIN FORMAT=JSON {statement}")
            plan = parse_plan(cur.fetchone()[0])
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


SERVER_COMMANDS = ("mariadbd", "mysqld")


def local_server_process(conn) -> tuple[int | None, bool]:
    """The process of the server ``conn`` reaches when nothing controls it (a connection-only
    target), for the OS sampler to tell its CPU from other processes': ``(pid, False)`` when it
    runs on this machine (it reports this host name) and its ``@@pid_file`` names a live server
    process; ``(None, False)`` when it runs elsewhere (its CPU is not on this machine's counters);
    ``(None, True)`` when it runs here but its process is not known (the pid file unreadable):
    then the noise share is absent, not the server's own CPU counted as noise."""
    import os
    import socket
    from pathlib import Path

    with conn.cursor() as cur:
        cur.execute("SELECT @@hostname, @@pid_file, @@datadir")
        hostname, pid_file, datadir = cur.fetchone()
    if hostname != socket.gethostname():
        return None, False
    try:
        path = Path(pid_file) if os.path.isabs(pid_file) else Path(datadir) / pid_file
        pid = int(path.read_text().strip())
        command = Path(f"/proc/{pid}/comm").read_text().strip()
    except (OSError, TypeError, ValueError):
        return None, True
    return (pid, False) if command in SERVER_COMMANDS else (None, True)


def enable_slow_log_table(conn, target, journal) -> bool:
    """Make the slow log a table the measuring session can write at 0 s while every other session
    keeps the global threshold. Needs a benchmark target if it is not already so configured; the
    change goes through the restore journal like every other global."""
    with conn.cursor() as cur:
        cur.execute("SELECT @@GLOBAL.slow_query_log, @@GLOBAL.log_output")
        enabled, output = cur.fetchone()
        if int(enabled) == 1 and "TABLE" in str(output).upper():
            return True
        if not target.benchmark_target:
            return False
        target.require_benchmark_target("enable the slow log table")
        journal.record_global("log_output", output.decode() if isinstance(output, bytes) else output)
        journal.record_global("slow_query_log", "ON" if int(enabled) else "OFF")
        cur.execute("SET GLOBAL log_output = 'TABLE'")
        cur.execute("SET GLOBAL slow_query_log = 1")
    return True
