"""Seed 004 behind the workload interface: MyISAM vs InnoDB, one table vs hash partitions vs split
tables, under mariadb-slap at rising concurrency.

The dataset is the seed's user table in every engine x layout (``include/sql/slap/``): one table,
``PARTITION BY HASH (id) PARTITIONS n``, and n split tables reached through routing procedures
(the seed's ``p_hash_select``: ``MOD(id, n)`` picks the table). Each is filled from one
deterministic base table with a timed bulk insert (the seed's "insert 1M rows" figure). A layout a
server cannot build (MyISAM partitions on MySQL 8.0 and later) is not applicable there, with the
server's own reason.

A unit is one operation: ``select``, ``insert``, ``delete``, ``update`` by id (random ids drawn
from a seeded stream), run by mariadb-slap with every client running the same statement file, or
``batch_select``, the seed's 100 point selects by one client. ``engine``, ``layout`` and
``concurrency`` are swept by the matrix (``concurrency_scale`` scales the seed's levels to the
host). The primary figure is mariadb-slap's own: the average seconds for all clients to run all
their statements (lower is better), as in the seed's table. After each run the rows it changed are
put back from the base table (outside the window), so every point measures the same data.
"""

from __future__ import annotations

import hashlib
import json
import logging
import random
import shutil
import string
import time
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from mysqlbench.errors import InvalidInput, NotApplicable
from mysqlbench.params import DatasetBase
from mysqlbench.workloads.base import Better, Metric, NoParams, Session, StudyWorkload, UnitResult
from mysqlbench.workloads.lifecycle import StepOutcome, StudyDatasetBuild, analyze_tables, dataset_tables

log = logging.getLogger(__name__)

ENGINES = ("MyISAM", "InnoDB")
LAYOUTS = ("single", "hash", "split")
OPERATIONS = ("select", "insert", "delete", "update", "batch_select")
BASE_TABLE = "base_rows"
LOAD_BATCH = 5000


class SlapDataset(DatasetBase):
    schema_name: str = Field(default="slap", alias="schema", description="schema for the seed's tables")
    rows: int = Field(default=100_000, ge=100, le=2_000_000_000, description="rows per table (the seed: 1 billion)")
    parts: int = Field(default=10, ge=2, le=64, description="hash partitions, and split tables")
    data_seed: int = Field(default=4, ge=0, le=2**31, description="seed of the generated rows")


class SlapParams(NoParams):
    engine: Literal["MyISAM", "InnoDB"] = Field(default="InnoDB", description="storage engine")
    layout: Literal["single", "hash", "split"] = Field(default="single",
                                                       description="one table, hash partitions, or split tables")
    concurrency: int = Field(default=50, ge=1, le=10_000, description="mariadb-slap clients (before scaling)")
    concurrency_scale: float = Field(default=1.0, gt=0, le=10,
                                     description="multiplies concurrency (the seed's 50..1000 at 0.1 on a small host)")
    queries_per_client: int = Field(default=10, ge=1, le=100_000, description="statements each client runs")
    batch_statements: int = Field(default=100, ge=1, le=100_000, description="batch_select: point selects in the batch")
    iterations: int = Field(default=1, ge=1, le=100, description="mariadb-slap --iterations")

    def clients(self) -> int:
        return max(1, round(self.concurrency * self.concurrency_scale))


def slap_binary() -> str:
    for name in ("mariadb-slap", "mysqlslap"):
        path = shutil.which(name)
        if path:
            return path
    raise InvalidInput("mariadb-slap is not installed on this host (Debian package mariadb-client; `make setup`)")


def table_name(engine: str, layout: str, part: int | None = None) -> str:
    base = f"{engine.lower()}_{layout}"
    return base if part is None else f"{base}{part:02d}"


class SlapWorkload(StudyWorkload):
    name = "slap"
    label = "seed 004 with mariadb-slap: seconds for all clients to run their statements (lower is better)"
    unit_title = "operation"
    primary = Metric("avg_s", "s", Better.LOWER, "time")
    dataset_model = SlapDataset
    params_model = SlapParams
    sweep_params = ("engine", "layout", "concurrency")

    @classmethod
    def check_units(cls, units: list[str], dataset) -> None:
        unknown = [u for u in units if u not in OPERATIONS]
        if unknown:
            raise InvalidInput(f"unknown slap operation(s) {unknown}; known: {list(OPERATIONS)}")

    def check_runnable(self) -> None:
        slap_binary()

    # -- the dataset ------------------------------------------------------------------------------
    def dataset_id(self) -> str:
        d = self.spec.dataset
        return "slap-" + hashlib.sha256(f"{d.rows}/{d.parts}/{d.data_seed}/v1".encode()).hexdigest()[:12]

    def _tables(self, engine: str, layout: str) -> list[str]:
        if layout == "split":
            return [table_name(engine, layout, p) for p in range(1, self.spec.dataset.parts + 1)]
        return [table_name(engine, layout)]

    def _max_clients(self) -> int:
        """The most clients any point of the spec runs (the matrix's concurrency, scaled)."""
        levels = [self.params.concurrency]
        for dimension, options in self.spec.matrix.items():
            for option in options:
                if isinstance(option, dict):
                    levels += [v for k, v in option.items() if k == "concurrency"]
                elif dimension == "concurrency":
                    levels.append(option)
        return max(max(1, round(int(c) * self.params.concurrency_scale)) for c in levels)

    def ensure_dataset(self, target, recorder) -> dict[str, Any]:
        from mysqlbench import knobs
        from mysqlbench.workloads import lifecycle

        with target.session() as conn:
            limit = int(knobs.read_variable(conn, "max_connections", "global"))
        if self._max_clients() + 5 > limit:
            raise InvalidInput(f"{self._max_clients()} mariadb-slap clients (plus 5 for the engine) exceed "
                               f"{target.conn_id}'s max_connections = {limit}: lower concurrency_scale")
        return lifecycle.ensure(SlapBuild(self, target), recorder)

    def _rows(self):
        """The base rows, deterministic from the data seed."""
        rng = random.Random(self.spec.dataset.data_seed)
        letters = string.ascii_lowercase
        for row_id in range(1, self.spec.dataset.rows + 1):
            name = "".join(rng.choices(letters, k=rng.randint(6, 20)))
            yield (row_id, name, rng.randint(0, 1),
                   f"{rng.randint(1950, 2005)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d} 00:00:00",
                   f"{name}@example.com", rng.randint(130_000_000, 189_999_999) % 2_000_000_000,
                   "".join(rng.choices(letters + " ", k=rng.randint(20, 200))))

    def _load(self, conn, schema: str) -> dict[str, Any]:
        """The base rows, then every engine x layout filled from them with a timed bulk insert (the
        seed's figure); a layout the server refuses is not applicable, with its reason. Returns
        the facts the marker keeps."""
        from mysqlbench import paths
        from mysqlbench.identifiers import quote
        from mysqlbench.sqlfiles import sql_statements

        d = self.spec.dataset
        (create,) = sql_statements(paths.sql_text("slap/table.sql"))
        s = quote(schema)
        with conn.cursor() as cur:
            cur.execute(f"USE {s}")
            cur.execute(create.format(table=BASE_TABLE, engine="InnoDB", partitioning=""))
            batch = []
            for row in self._rows():
                batch.append(row)
                if len(batch) == LOAD_BATCH:
                    cur.executemany(f"INSERT INTO {BASE_TABLE} VALUES (%s, %s, %s, %s, %s, %s, %s)", batch)
                    batch = []
            if batch:
                cur.executemany(f"INSERT INTO {BASE_TABLE} VALUES (%s, %s, %s, %s, %s, %s, %s)", batch)
        bulk: dict[str, float] = {}
        not_applicable: dict[str, str] = {}
        with conn.cursor() as cur:
            for engine in ENGINES:
                for layout in LAYOUTS:
                    key = f"{engine} {layout}"
                    partitioning = f" PARTITION BY HASH (id) PARTITIONS {d.parts}" if layout == "hash" else ""
                    names = self._tables(engine, layout)
                    try:
                        for name in names:
                            cur.execute(create.format(table=name, engine=engine, partitioning=partitioning))
                    except Exception as exc:  # the server's own refusal: MySQL 8+ cannot partition MyISAM
                        if layout != "hash":
                            raise
                        not_applicable[key] = f"the server refused the table: {exc.args[-1] if exc.args else exc}"
                        continue
                    started = time.perf_counter()  # the seed's figure: inserting every row into the layout
                    if layout == "split":
                        for part, name in enumerate(names, start=1):
                            cur.execute(f"INSERT INTO {name} SELECT * FROM {BASE_TABLE} WHERE MOD(id, {d.parts}) = "
                                        f"{part % d.parts}")
                    else:
                        cur.execute(f"INSERT INTO {names[0]} SELECT * FROM {BASE_TABLE}")
                    bulk[key] = round(time.perf_counter() - started, 3)
                    if layout == "split":
                        self._install_routing(cur, engine, schema)  # and its id sequence, empty while verified
        log.info("seed 004 tables built in %s: bulk insert seconds %s; not applicable %s", schema, bulk, not_applicable)
        return {"bulk_insert_s": bulk, "not_applicable": not_applicable}

    def _install_routing(self, cur, engine: str, schema: str) -> None:
        """The routing procedures for one engine's split tables, and its id sequence."""
        from mysqlbench import paths
        from mysqlbench.sqlfiles import sql_statements

        d = self.spec.dataset
        sequence = f"{engine.lower()}_split_ids"
        (create,) = sql_statements(paths.sql_text("slap/id_sequence.sql"))
        cur.execute(create.format(table=sequence, first_id=d.rows + 1))
        for operation in ("select", "insert", "delete", "update"):
            text = paths.sql_text(f"slap/route_{operation}.sql")
            body = []
            for line in text.splitlines():
                stripped = line.strip()
                if stripped.startswith("-- branch:"):
                    branch = stripped[len("-- branch:"):].strip()
                    body += [f"  {branch.format(remainder=part % d.parts, table=table_name(engine, 'split', part))}"
                             for part in range(1, d.parts + 1)]
                elif not stripped.startswith("--"):
                    body.append(line)
            cur.execute("\n".join(body).format(procedure=f"{engine.lower()}_split_{operation}", parts=d.parts,
                                               sequence=sequence))

    def observations(self, conn, schema: str, not_applicable: dict[str, str]):
        """One row per engine x layout the server could build: its rows, smallest and largest id,
        and rows in a split table their id does not hash to."""
        import pandas as pd

        from mysqlbench.identifiers import quote

        d = self.spec.dataset
        out = []
        with conn.cursor() as cur:
            for engine in ENGINES:
                for layout in LAYOUTS:
                    if f"{engine} {layout}" in not_applicable:
                        continue
                    rows = misrouted = 0
                    low = high = None
                    for part, name in enumerate(self._tables(engine, layout), start=1):
                        cur.execute(f"SELECT COUNT(*), MIN(id), MAX(id), COALESCE(SUM(MOD(id, %s) <> %s), 0) "
                                    f"FROM {quote(schema)}.{quote(name)}", (d.parts, part % d.parts))
                        count, lo, hi, wrong = cur.fetchone()
                        rows += count
                        low = lo if low is None or (lo is not None and lo < low) else low
                        high = hi if high is None or (hi is not None and hi > high) else high
                        if layout == "split":
                            misrouted += int(wrong)
                    out.append({"table": f"{engine} {layout}", "rows": rows, "min_id": low, "max_id": high,
                                "misrouted": misrouted})
        frame = pd.DataFrame(out)
        for column in ("rows", "min_id", "max_id", "misrouted"):
            frame[column] = frame[column].astype("Int64")
        return frame

    def verify(self, conn, schema: str, not_applicable: dict[str, str]):
        import great_expectations as gx

        from mysqlbench.checks import validate_frames

        n = self.spec.dataset.rows
        E = gx.expectations
        expected_tables = [f"{e} {lay}" for e in ENGINES for lay in LAYOUTS if f"{e} {lay}" not in not_applicable]
        expectations = [
            E.ExpectColumnDistinctValuesToEqualSet(column="table", value_set=expected_tables,
                                                   meta={"check": "every engine x layout the server can build"}),
            E.ExpectColumnValuesToBeBetween(column="rows", min_value=n, max_value=n, meta={"check": f"{n} rows"}),
            E.ExpectColumnValuesToBeBetween(column="min_id", min_value=1, max_value=1, meta={"check": "ids from 1"}),
            E.ExpectColumnValuesToBeBetween(column="max_id", min_value=n, max_value=n, meta={"check": f"ids up to {n}"}),
            E.ExpectColumnValuesToBeBetween(column="misrouted", min_value=0, max_value=0,
                                            meta={"check": "every split row in the table its id hashes to"}),
        ]
        return validate_frames("slap_dataset", [("tables", self.observations(conn, schema, not_applicable),
                                                 expectations)])

    def check_dataset(self, target, dataset_id: str) -> None:
        """Every run puts back what it changed (its UPDATE_TIME says written): definitions count here."""
        from mysqlbench.workloads.lifecycle import require_verified

        require_verified(target, self.spec.dataset.schema_name, dataset_id, "seed 004", writes_expected=True)

    # -- one operation ------------------------------------------------------------------------------
    def prepare(self, unit: str) -> str:
        return unit

    def warm_run(self, session: Session, operation: str) -> int | None:
        """Every table of the point read whole (MyISAM's index loaded into its key cache), then one
        untimed run of the operation (its own statements, the same clients) with the data put back:
        the engine repeats this until the buffer pool reads nothing. The scan reaches every page a
        random id can; the operation warms what a scan does not (the allocation pages an insert
        needs, undo pages)."""
        from mysqlbench.counters import physical_reads
        from mysqlbench.measure import read_status

        if self._not_applicable(session):
            return 0
        from mysqlbench.identifiers import quote

        p = self.params
        lines, ids = self.statements(operation, -1)  # -1: the warm-up's own ids, never a measured run's
        before = read_status(session.conn)
        with session.conn.cursor() as cur:  # every page of the point's tables: random ids reach them all
            sequence = [f"{p.engine.lower()}_split_ids"] if p.layout == "split" else []
            for name in self._tables(p.engine, p.layout):
                if p.engine == "MyISAM":
                    cur.execute(f"LOAD INDEX INTO CACHE {quote(name)}")
                    cur.fetchall()
                cur.execute(f"SELECT COUNT(*), SUM(CRC32(intro)) FROM {quote(name)}")
                cur.fetchall()
            for name in sequence:
                cur.execute(f"SELECT COUNT(*) FROM {quote(name)}")
                cur.fetchall()
        try:
            self._slap(session, operation, lines, window=False)
        finally:
            self._put_back(session, operation, ids)
        return physical_reads(before, read_status(session.conn), session.server.flavor)

    def _not_applicable(self, session: Session) -> str | None:
        p = self.params
        return self._marker(session).get("not_applicable", {}).get(f"{p.engine} {p.layout}")

    def _marker(self, session: Session) -> dict[str, Any]:
        from mysqlbench import ownership

        if "marker" not in session.state:
            session.state["marker"] = ownership.read_marker(session.conn, session.schema)
        return session.state["marker"]

    def statements(self, operation: str, repetition: int) -> tuple[list[str], list[int]]:
        """The statement file's lines, and the ids it touches (for putting them back). Seeded by
        the dataset, the point's engine, layout and concurrency, the operation and the repetition."""
        p, d = self.params, self.spec.dataset
        rng = random.Random(f"{d.data_seed}/{p.engine}/{p.layout}/{p.concurrency}/{operation}/{repetition}")
        count = p.batch_statements if operation == "batch_select" else p.queries_per_client
        split = p.layout == "split"
        table = table_name(p.engine, p.layout)
        prefix = f"{p.engine.lower()}_split"
        ids = [rng.randint(1, d.rows) for _ in range(count)]
        lines = []
        for row_id in ids:
            text = "".join(rng.choices(string.ascii_lowercase, k=40))
            tel = rng.randint(130_000_000, 189_999_999)
            if operation in ("select", "batch_select"):
                lines.append(f"CALL {prefix}_select({row_id})" if split else f"SELECT * FROM {table} WHERE id = {row_id}")
            elif operation == "delete":
                lines.append(f"CALL {prefix}_delete({row_id})" if split else f"DELETE FROM {table} WHERE id = {row_id}")
            elif operation == "update":
                lines.append(f"CALL {prefix}_update({row_id}, {tel}, '{text}')" if split
                             else f"UPDATE {table} SET tel = {tel}, intro = '{text}' WHERE id = {row_id}")
            else:  # insert: new ids from the table's (or the split tables' sequence's) auto-increment
                values = f"'{text[:12]}', {row_id % 2}, '1990-01-01 00:00:00', '{text[:12]}@example.com', {tel}, '{text}'"
                lines.append(f"CALL {prefix}_insert({values})" if split else
                             f"INSERT INTO {table} (username, sex, birthday, email, tel, intro) VALUES ({values})")
        return lines, ids

    def _slap(self, session: Session, operation: str, lines: list[str], *, window: bool):
        """mariadb-slap over ``lines`` (every client runs them all) on the target's benchmark host
        (this machine, or over SSH), inside the engine's window or untimed; returns (the --csv row,
        the window result or None, clients, the tool's name)."""
        import contextlib

        from mysqlbench import slap_output
        from mysqlbench.targets.host import LocalHost, host_of

        p = self.params
        clients = 1 if operation == "batch_select" else p.clients()
        target = session.target
        host = session.state.setdefault("host", host_of(target))
        local = isinstance(host, LocalHost)
        with contextlib.ExitStack() as files:
            statements = files.enter_context(host.private_file("statements.sql", ";\n".join(lines) + ";\n"))
            # the password never on a command line
            defaults = files.enter_context(host.private_file(
                "client.cnf", f"[client]\nuser={target.login}\npassword={target.password}\n"
                              f"host={target.host}\nport={target.port}\n"))
            result_csv = f"{statements.rsplit('/', 1)[0]}/result.csv"
            argv = [slap_binary() if local else "mariadb-slap", f"--defaults-file={defaults}",
                    f"--create-schema={session.schema}", f"--query={statements}", "--delimiter=;",
                    f"--concurrency={clients}", f"--iterations={p.iterations}", f"--csv={result_csv}", "--no-drop"]
            proc = None

            def work() -> int:
                nonlocal proc
                proc = host.start(argv, None, [target.password])
                return proc.wait(self.spec.timeout_s)

            def pid():
                return getattr(proc.proc, "pid", None) if local and proc is not None else None

            try:
                measured = session.window.run(work, kill=lambda: proc and proc.stop(), tool_pid=pid) \
                    if window else None
                code = measured.value if measured is not None else work()
            finally:
                if proc is not None:
                    proc.stop()
            if measured is not None and measured.error is not None:
                raise measured.error
            output = proc.output if proc is not None else ""
            slap_output.check_errors(output)
            if code != 0:
                raise slap_output.SlapOutputError(f"mariadb-slap exited with status {code}: {output[-400:]}")
            try:
                text = host.read_text(result_csv)
            except Exception:  # noqa: BLE001 - no result file: parse_csv says why, with the tool's words
                text = ""
            (row,) = slap_output.parse_csv(text, output)
        return row, measured, clients, "mariadb-slap" if not local else Path(argv[0]).name

    def measure(self, session: Session, operation: str, repetition: int) -> UnitResult:
        p = self.params
        reason = self._not_applicable(session)
        if reason:
            raise NotApplicable(f"{p.engine} {p.layout} on {session.server.flavor} {session.server.version_string}: {reason}")
        lines, ids = self.statements(operation, repetition)
        try:
            row, measured, clients, tool = self._slap(session, operation, lines, window=True)
        finally:
            self._put_back(session, operation, ids)  # outside the window: every point on the same data
        statements = row["clients"] * row["queries_per_client"]
        metrics = {"avg_s": (row["avg_s"], "s"), "min_s": (row["min_s"], "s"), "max_s": (row["max_s"], "s"),
                   "clients": (float(row["clients"]), "count"),
                   "queries_per_client": (float(row["queries_per_client"]), "count"),
                   "statements_per_s": (statements / row["avg_s"] if row["avg_s"] > 0 else None, "1/s"),
                   "window_s": (measured.seconds, "s")}
        bulk = self._marker(session).get("bulk_insert_s", {}).get(f"{p.engine} {p.layout}")
        return UnitResult(status="ok", primary=row["avg_s"], metrics=metrics, counters=measured.counters,
                          os=measured.os, os_samples=measured.os_samples,
                          facts={"slap": {"engine": p.engine, "layout": p.layout, "concurrency": p.concurrency,
                                          "clients": clients, "tool": tool, "statements": len(lines),
                                          "bulk_insert_s": bulk}})

    def _put_back(self, session: Session, operation: str, ids: list[int]) -> None:
        """The rows a run changed, as they were: inserted rows removed, deleted and updated rows
        copied back from the base table."""
        p, d = self.params, self.spec.dataset
        if operation in ("select", "batch_select"):
            return
        id_list = ",".join(str(int(i)) for i in sorted(set(ids)))
        with session.conn.cursor() as cur:
            if operation == "insert" and p.layout == "split":  # the sequence the routing took ids from
                cur.execute(f"DELETE FROM {p.engine.lower()}_split_ids")
            for part, name in enumerate(self._tables(p.engine, p.layout), start=1):
                if operation == "insert":
                    cur.execute(f"DELETE FROM {name} WHERE id > {int(d.rows)}")
                    continue
                where = f"id IN ({id_list})" + (f" AND MOD(id, {d.parts}) = {part % d.parts}" if p.layout == "split"
                                                else "")
                cur.execute(f"REPLACE INTO {name} SELECT * FROM {BASE_TABLE} WHERE {where}")

    # -- the report ---------------------------------------------------------------------------------
    def report_tables(self, rows: list[dict[str, Any]], frame) -> list[tuple[str, Any]]:
        """The seed's table: operation x concurrency rows, engine x layout columns (median seconds),
        and the bulk insert seconds per engine x layout."""
        import pandas as pd

        facts: dict[tuple[str, str], dict[str, Any]] = {}
        why: dict[str, str] = {}
        for row in rows:
            meta = json.loads(row["metadata"]) if isinstance(row["metadata"], str) else (row["metadata"] or {})
            if "slap" in meta:
                facts[(row["point"], row["subject"])] = meta["slap"]
            elif row.get("status") == "not_applicable":
                swept = meta.get("swept", {})
                key = f"{swept.get('engine', self.params.engine)} {swept.get('layout', self.params.layout)}"
                why[key] = meta.get("why", "")
        ok = frame[frame["status"] == "ok"] if not frame.empty else frame
        cells = []
        for (point, subject), group in ok.groupby(["point", "subject"]):
            fact = facts.get((point, subject))
            if fact is None:
                continue
            cells.append({"operation": subject, "concurrency": fact["clients"],
                          "engine x layout": f"{fact['engine']} {fact['layout']}",
                          "seconds": group["primary"].median()})
        tables = []
        if cells:
            # batch_select runs one client at every point: its cell is the median over those points
            table = pd.DataFrame(cells).pivot_table(index=["operation", "concurrency"], columns="engine x layout",
                                                    values="seconds", aggfunc="median")
            order = [f"{e} {lay}" for e in ENGINES for lay in LAYOUTS]
            for key in order:
                if key in why and key not in table.columns:
                    table[key] = float("nan")
            table = table[[c for c in order if c in table.columns]]
            tables.append(("Seed 004's table: median seconds for all clients to run their statements (operation x "
                           "clients; absent: not applicable" + (f" ({'; '.join(f'{k}: {v}' for k, v in why.items())})"
                                                                  if why else "") + ")", table))
            bulk = {f["engine"] + " " + f["layout"]: f["bulk_insert_s"] for f in facts.values()
                    if f.get("bulk_insert_s") is not None}
            if bulk:
                tables.append((f"Bulk insert of {self.spec.dataset.rows} rows per engine x layout (seconds)",
                               pd.DataFrame([bulk], index=["seconds"])[[c for c in order if c in bulk]]))
        return tables


class SlapBuild(StudyDatasetBuild):
    """Seed 004's tables, declared to the dataset lifecycle: the base rows and every engine x
    layout (``load``, whose bulk-insert seconds and not-applicable layouts the marker keeps), then
    ``analyze``; Great Expectations over every table's rows, ids and routing."""

    what = "seed 004 (mysqlslap)"
    steps = ("load", "analyze")

    workload: SlapWorkload

    def load(self, data: dict[str, Any]) -> StepOutcome:
        with self.target.session(database=None) as conn:
            facts = self.workload._load(conn, self.schema)
        return StepOutcome(facts["bulk_insert_s"], facts=facts)

    def analyze(self, data: dict[str, Any]) -> StepOutcome:
        with self.target.session() as conn:
            return StepOutcome(analyze_tables(conn, self.schema, dataset_tables(conn, self.schema)))

    def validate(self, conn, data: dict[str, Any]):
        from mysqlbench import ownership

        not_applicable = ownership.read_marker(conn, self.schema).get("not_applicable", {})
        return self.workload.verify(conn, self.schema, not_applicable)
