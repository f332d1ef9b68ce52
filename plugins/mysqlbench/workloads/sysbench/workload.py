"""sysbench 1.0.20 behind the workload interface (seed 003): ``sysbench_cpu`` (the host's CPU),
``sysbench_fileio`` (the file system the target's data lives on) and ``sysbench_oltp`` (the
server, on sysbench's own tables, prepared once and reused while unchanged).

A unit is one sysbench test: ``cpu``, a file test mode (seqrd, rndrw, ...) or an OLTP script
(oltp_read_write, ...). Thread counts, block sizes and direct I/O are swept by the spec's matrix
like knobs (``sweep_params``). Each point holds the target exclusively, so nothing else measures on
that host meanwhile, even when the server itself is idle (cpu, fileio).

What sysbench reports is parsed into results: the final report (rates, latency min/avg/max and the
percentile, errors, reconnects, threads fairness, fileio throughput) and the interval lines (time
series). Figures a test does not print are absent.
"""

from __future__ import annotations

import hashlib
import logging
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from mysqlbench.errors import InvalidInput, MysqlbenchError
from mysqlbench.params import DatasetBase
from mysqlbench.workloads.base import Better, Metric, Session, StudyWorkload, UnitResult
from mysqlbench.workloads.lifecycle import StepOutcome, StudyDatasetBuild, analyze_tables
from mysqlbench.workloads.sysbench import tool

log = logging.getLogger(__name__)

# a directory for the file test: absolute, plain characters only (it reaches a shell on a remote host)
_PATH = re.compile(r"^/[A-Za-z0-9_./-]{0,4000}$")
FILEIO_MARKER = ".mysqlbench-fileio"


class _RunParams(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    threads: int = Field(default=1, ge=1, le=4096, description="sysbench --threads")
    time_s: int = Field(default=10, ge=1, le=86_400, description="measured seconds (sysbench --time)")
    interval_s: int = Field(default=1, ge=1, le=3600, description="interval line every N seconds (--report-interval)")
    percentile: int = Field(default=95, ge=1, le=100, description="latency percentile sysbench reports")

    def common_options(self) -> dict[str, Any]:
        return {"threads": self.threads, "time": self.time_s, "events": 0, "report-interval": self.interval_s,
                "percentile": self.percentile}


class NoDataset(DatasetBase):
    """A test that needs no data in the server (cpu): no schema."""

    schema_name: None = Field(default=None, alias="schema", description="no schema: this test uses no server data")

    @field_validator("schema_name")
    @classmethod
    def _schema(cls, value: None) -> None:
        return value


def _size(value: Any, what: str) -> int:
    from mysqlbench.knobs import parse_size

    return parse_size(value, what)


class _SysbenchWorkload(StudyWorkload):
    """What the three tests share: run, parse, metrics and series."""

    unit_title = "test"
    sweep_params = ("threads",)
    test: str  # the report kind (cpu, fileio, oltp)

    def check_runnable(self) -> None:
        tool.sysbench_binary()

    def _measure_run(self, session: Session, run: tool.SysbenchRun, primary: float | None = None,
                     series_keys: tuple[str, ...] = ()) -> UnitResult:
        from mysqlbench.results.store import TimeSeries
        from mysqlbench.targets.host import LocalHost, host_of

        host = session.state.setdefault("host", host_of(session.target))
        run.remote = not isinstance(host, LocalHost)
        out = tool.run_measured(session, run, self.test, timeout_s=self.spec.timeout_s, host=host)
        report = out.report
        latency = report["latency_ms"]
        metrics: dict[str, tuple[float | None, str]] = {
            "latency_min_ms": (latency["min"], "ms"), "latency_avg_ms": (latency["avg"], "ms"),
            "latency_max_ms": (latency["max"], "ms"),
            f"latency_p{self.params.percentile}_ms": (latency.get(f"p{self.params.percentile}"), "ms"),
            "events": (float(report["events"]), "count"), "total_time_s": (report["total_time_s"], "s"),
            "fairness_events_stddev": (report["fairness"]["events_stddev"], "count"),
            "fairness_execution_stddev_s": (report["fairness"]["execution_stddev_s"], "s"),
            "window_s": (out.window.seconds, "s"),
        }
        metrics.update(self._own_metrics(report))
        offsets = [row["t_s"] for row in out.intervals]
        series = {}
        for key in (*series_keys, "latency_pct_ms"):
            if offsets and all(key in row for row in out.intervals):
                name = f"latency_p{self.params.percentile}_ms" if key == "latency_pct_ms" else key
                series[name] = (TimeSeries(offsets, [row[key] for row in out.intervals], float(self.params.interval_s)),
                                "ms" if key == "latency_pct_ms" else _rate_unit(key))
        value = metrics[self.primary.name][0] if primary is None else primary
        return UnitResult(status="ok", primary=value, metrics=metrics, counters=out.window.counters,
                          os=out.window.os, os_samples=out.window.os_samples, series=series,
                          facts={"sysbench": {"test": run.test, "options": run.options, "host": host.name,
                                              "threads_started_after_s": round(out.started_s, 3)}})

    def _own_metrics(self, report: dict[str, Any]) -> dict[str, tuple[float | None, str]]:
        return {}


def _rate_unit(key: str) -> str:
    return "MiB/s" if key.endswith("mib_per_s") else "1/s"


# -- cpu ------------------------------------------------------------------------------------------
class CpuParams(_RunParams):
    max_prime: int = Field(default=20000, ge=3, le=100_000_000, description="sysbench --cpu-max-prime")


class SysbenchCpuWorkload(_SysbenchWorkload):
    name = "sysbench_cpu"
    label = "sysbench 1.0.20 cpu: events (prime searches up to max_prime) per second"
    primary = Metric("events_per_s", "1/s", Better.HIGHER, "throughput")
    dataset_model = NoDataset
    params_model = CpuParams
    test = "cpu"
    buffer_pool_cache = False  # a CPU test reads no pages

    @classmethod
    def check_units(cls, units: list[str], dataset) -> None:
        if units != ["cpu"]:
            raise InvalidInput(f"a sysbench cpu study measures the unit 'cpu', not {units}")

    @classmethod
    def check_spec(cls, spec) -> None:
        if "cold" in spec.cache:
            raise ValueError("cache: cold means nothing to sysbench cpu (it reads no data); use cache: [warm]")

    def ensure_dataset(self, target, recorder) -> dict[str, Any]:
        return {"dataset_id": "none"}

    def prepare(self, unit: str) -> tool.SysbenchRun:
        return tool.SysbenchRun("cpu", {**self.params.common_options(), "cpu-max-prime": self.params.max_prime})

    def warm(self, session: Session, prepared) -> dict[str, Any]:
        return {"warm": None, "why": "sysbench cpu computes primes: it reads no data, there is no cache to warm"}

    def measure(self, session: Session, prepared: tool.SysbenchRun, repetition: int) -> UnitResult:
        return self._measure_run(session, prepared, series_keys=("eps",))

    def _own_metrics(self, report: dict[str, Any]) -> dict[str, tuple[float | None, str]]:
        return {"events_per_s": (report["events_per_s"], "1/s")}


# -- fileio ---------------------------------------------------------------------------------------
class FileioDataset(DatasetBase):
    """The test files: their total size and number, and where they live (default: beside the
    managed target's datadir, on its file system)."""

    schema_name: None = Field(default=None, alias="schema", description="no schema: the test uses files")
    file_total_size: str = Field(default="1G", description="total size of the test files (sysbench --file-total-size)")
    file_num: int = Field(default=128, ge=1, le=4096, description="number of test files (--file-num)")
    directory: str | None = Field(default=None, description="absolute directory for the files on the target's host; "
                                                            "empty: <managed target>/sysbench-fileio")
    keep_files: bool = Field(default=False, description="keep the files after the study (reused while unchanged)")

    @field_validator("schema_name")
    @classmethod
    def _schema(cls, value: None) -> None:
        return value

    @field_validator("file_total_size")
    @classmethod
    def _total(cls, value: Any) -> str:
        size = _size(value, "file_total_size")
        if size < 1024 * 1024:
            raise ValueError("file_total_size must be at least 1M")
        return str(value)

    @field_validator("directory")
    @classmethod
    def _directory(cls, value: str | None) -> str | None:
        if value is not None and (not _PATH.fullmatch(value) or "/../" in f"{value}/" or "//" in value):
            raise ValueError(f"directory {value!r}: an absolute path of letters, digits and _ . - / only")
        return value

    def total_bytes(self) -> int:
        return _size(self.file_total_size, "file_total_size")


class FileioParams(_RunParams):
    block_size: int = Field(default=16384, ge=512, le=64 * 1024 * 1024, description="bytes per request "
                            "(--file-block-size)")
    direct: bool = Field(default=False, description="O_DIRECT: bypass the page cache (--file-extra-flags=direct)")
    fsync_freq: int = Field(default=100, ge=0, le=1_000_000, description="fsync every N requests (0: never)")
    rw_ratio: float = Field(default=1.5, gt=0, le=1000, description="reads per write in rndrw")


class SysbenchFileioWorkload(_SysbenchWorkload):
    name = "sysbench_fileio"
    label = "sysbench 1.0.20 fileio: MiB/s read plus written on the target's file system"
    primary = Metric("io_mib_per_s", "MiB/s", Better.HIGHER, "throughput")
    dataset_model = FileioDataset
    params_model = FileioParams
    buffer_pool_cache = False  # its cache is the OS page cache of its own files
    sweep_params = ("threads", "block_size", "direct")
    test = "fileio"

    @classmethod
    def check_units(cls, units: list[str], dataset) -> None:
        unknown = [u for u in units if u not in tool.FILEIO_MODES]
        if unknown:
            raise InvalidInput(f"unknown sysbench file test mode(s) {unknown}; known: {list(tool.FILEIO_MODES)}")

    def directory(self, target) -> Path:
        if self.spec.dataset.directory:
            return Path(self.spec.dataset.directory)
        if target.ssh_conn_id:
            raise InvalidInput(f"{target.conn_id} runs its tools on {target.ssh_conn_id} over SSH: give the file test "
                               "a dataset.directory on that host's file system under test")
        if target.control != "managed" or not target.managed_target:
            raise InvalidInput(f"{target.conn_id} is not a managed target: give the file test a dataset.directory "
                               "on its file system")
        from mysqlbench.targets.managed import ManagedServer, ManagedSpec

        return ManagedServer(ManagedSpec.load(target.managed_target)).root / "sysbench-fileio"

    def dataset_id(self) -> str:
        d = self.spec.dataset
        return f"fileio-{d.total_bytes()}-{d.file_num}"

    def _names(self) -> list[str]:
        return [f"test_file.{i}" for i in range(self.spec.dataset.file_num)]

    # The files live on the benchmark host (this machine, or over SSH): every step is one shell
    # command there, with the directory passed as an argument, never spliced into the script.
    def _host(self, target, session: Session | None = None):
        from mysqlbench.targets.host import host_of

        if session is not None:
            return session.state.setdefault("host", host_of(target))
        return host_of(target)

    @staticmethod
    def _sh(host, script: str, directory: Path, timeout: float = 120) -> str:
        return host.run(["sh", "-c", script, "fileio", str(directory)], timeout=timeout)

    def _claim(self, host, target, directory: Path) -> None:
        """Only a directory we created (it holds our marker file) is ever written or cleaned."""
        target.require_benchmark_target(f"write sysbench test files in {directory}")
        self._outside_datadir(target, directory)
        verdict = self._sh(host, f'if [ -e "$1" ] && [ ! -e "$1/{FILEIO_MARKER}" ] && [ -n "$(ls -A "$1")" ]; '
                                 f'then echo foreign; else mkdir -p "$1" && echo mysqlbench > "$1/{FILEIO_MARKER}" '
                                 '&& echo ours; fi', directory).strip()
        if verdict != "ours":
            raise MysqlbenchError(f"{directory} on {host.name} exists and was not created by mysqlbench (no "
                                  f"{FILEIO_MARKER}); refusing to write test files there: choose an empty or new "
                                  "directory")

    @staticmethod
    def _outside_datadir(target, directory: Path) -> None:
        """The server's datadir is the server's: test files there show up as a schema (a
        directory under the datadir is a database to MariaDB) and are left behind in it."""
        with target.session() as conn:
            with conn.cursor() as cur:
                cur.execute("SELECT @@datadir")
                datadir = Path(cur.fetchone()[0])
        if directory == datadir or datadir in directory.parents:
            raise InvalidInput(f"dataset.directory {directory} is inside the server's datadir {datadir}: the server "
                               "would take it for a schema; choose a directory outside it")

    def _sizes(self, host, directory: Path) -> dict[str, int]:
        out = self._sh(host, 'cd "$1" 2>/dev/null || exit 0; for f in test_file.*; do '
                             '[ -f "$f" ] && echo "$f $(stat -c %s "$f")"; done; true', directory)
        return {name: int(size) for name, size in (line.split() for line in out.splitlines() if line.strip())}

    def ensure_dataset(self, target, recorder) -> dict[str, Any]:
        """The test files (sysbench fileio prepare, on the benchmark host), reused while every file
        has its size."""
        from mysqlbench.targets.lock import exclusive

        directory = self.directory(target)
        host = self._host(target)
        dataset = self.spec.dataset
        per_file = dataset.total_bytes() // dataset.file_num
        with exclusive(target, "prepare sysbench test files"):
            self._claim(host, target, directory)
            sizes = self._sizes(host, directory)
            if all(sizes.get(name) == per_file for name in self._names()):
                return {"dataset_id": self.dataset_id(), "reused": True, "directory": str(directory),
                        "host": host.name}
            free = int(self._sh(host, 'df -B1 --output=avail "$1" | tail -1', directory).strip())
            need = per_file * dataset.file_num - sum(sizes.values())
            if need > free * 0.95:
                raise InvalidInput(f"the test files need {need / 2**30:.2f} GiB more on {directory} ({host.name}); "
                                   f"{free / 2**30:.2f} GiB are free")
            self._cleanup(host, directory)
            run = tool.SysbenchRun("fileio", self._file_options(), command="prepare", cwd=directory,
                                   remote=host.name != "local")
            output = tool.run_untimed(run, timeout_s=self.spec.point_timeout_s, host=host)
            log.info("prepared on %s: %s", host.name, output.strip().splitlines()[-1] if output.strip() else "")
        return {"dataset_id": self.dataset_id(), "reused": False, "directory": str(directory), "host": host.name}

    def _file_options(self) -> dict[str, Any]:
        return {"file-total-size": self.spec.dataset.total_bytes(), "file-num": self.spec.dataset.file_num}

    def _cleanup(self, host, directory: Path) -> int:
        """The test files removed, in a directory that carries our marker only."""
        out = self._sh(host, f'[ -e "$1/{FILEIO_MARKER}" ] || {{ echo 0; exit 0; }}; '
                             'find "$1" -maxdepth 1 -name "test_file.*" -type f -delete -print | wc -l', directory)
        return int(out.strip() or 0)

    def check_dataset(self, target, dataset_id: str) -> None:
        directory = self.directory(target)
        per_file = self.spec.dataset.total_bytes() // self.spec.dataset.file_num
        sizes = self._sizes(self._host(target), directory)
        changed = [name for name in self._names() if sizes.get(name) != per_file]
        if changed:
            raise MysqlbenchError(f"sysbench test files changed in {directory}: {changed[:5]}; run the study again")

    def release_dataset(self, target) -> dict[str, Any] | None:
        if self.spec.dataset.keep_files:
            return None
        directory = self.directory(target)
        return {"removed_test_files": self._cleanup(self._host(target), directory), "directory": str(directory)}

    def evict_cold(self, target) -> dict[str, int]:
        """The test files out of the benchmark host's page cache (GNU dd's nocache drop, per file)."""
        from mysqlbench.targets.control import EVICT

        directory = self.directory(target)
        count = self._host(target).run([*EVICT, str(directory)], timeout=300)
        return {str(directory): int(count.strip() or 0)}

    def prepare(self, unit: str) -> tool.SysbenchRun:
        p = self.params
        options = {**p.common_options(), **self._file_options(), "file-test-mode": unit,
                   "file-block-size": p.block_size, "file-fsync-freq": p.fsync_freq, "file-rw-ratio": p.rw_ratio}
        if p.direct:
            options["file-extra-flags"] = "direct"
        return tool.SysbenchRun("fileio", options)

    def warm(self, session: Session, prepared: tool.SysbenchRun) -> dict[str, Any]:
        """Warm: every test file read once on the benchmark host, so its page cache holds as much
        of them as it can (with O_DIRECT the page cache is not used at all)."""
        from mysqlbench.ossampler import parse_meminfo

        if self.params.direct:
            return {"warm": None, "why": "O_DIRECT: the file test bypasses the page cache"}
        host = self._host(session.target, session)
        directory = self.directory(session.target)
        out = self._sh(host, 'cd "$1" && cat -- test_file.* | wc -c && cat /proc/meminfo', directory, timeout=3600)
        total_text, _, memory = out.partition("\n")
        total = int(total_text.strip())
        available = parse_meminfo(memory).get("MemAvailable")
        fits = available is None or total <= available
        return {"warm": fits, "bytes_read": total, "how": "read every test file once", "host": host.name,
                **({} if fits else {"why": f"the files ({total} bytes) exceed available memory ({available})"})}

    def measure(self, session: Session, prepared: tool.SysbenchRun, repetition: int) -> UnitResult:
        prepared.cwd = self.directory(session.target)  # sysbench finds its files in its working directory
        return self._measure_run(session, prepared, series_keys=("read_mib_per_s", "written_mib_per_s"))

    def _own_metrics(self, report: dict[str, Any]) -> dict[str, tuple[float | None, str]]:
        return {"io_mib_per_s": (report["read_mib_per_s"] + report["written_mib_per_s"], "MiB/s"),
                "read_mib_per_s": (report["read_mib_per_s"], "MiB/s"),
                "written_mib_per_s": (report["written_mib_per_s"], "MiB/s"),
                "reads_per_s": (report["reads_per_s"], "1/s"), "writes_per_s": (report["writes_per_s"], "1/s"),
                "fsyncs_per_s": (report["fsyncs_per_s"], "1/s")}


# -- oltp -----------------------------------------------------------------------------------------
class OltpDataset(DatasetBase):
    """sysbench's tables ``sbtest1..N`` in a schema we own."""

    schema_name: str = Field(default="sbtest", alias="schema", description="schema for sysbench's tables")
    tables: int = Field(default=4, ge=1, le=1024, description="number of tables (--tables)")
    table_size: int = Field(default=10_000, ge=1, le=2_000_000_000, description="rows per table (--table-size)")


class OltpParams(_RunParams):
    warmup_s: int = Field(default=10, ge=0, le=86_400,
                          description="untimed warm-up run before the measured one, repeated until the buffer pool "
                                      "reads nothing (sysbench 1.0.20 has no --warmup-time); 0: none")
    skip_trx: bool = Field(default=False, description="no BEGIN/COMMIT around a script's statements (--skip-trx)")


class SysbenchOltpWorkload(_SysbenchWorkload):
    name = "sysbench_oltp"
    label = "sysbench 1.0.20 OLTP scripts: transactions per second"
    primary = Metric("tps", "1/s", Better.HIGHER, "throughput")
    dataset_model = OltpDataset
    params_model = OltpParams
    test = "oltp"

    @classmethod
    def check_units(cls, units: list[str], dataset) -> None:
        unknown = [u for u in units if u not in tool.OLTP_SCRIPTS]
        if unknown:
            raise InvalidInput(f"unknown sysbench script(s) {unknown}; known: {list(tool.OLTP_SCRIPTS)}")

    def dataset_id(self) -> str:
        d = self.spec.dataset
        return "sbtest-" + hashlib.sha256(f"{d.tables}/{d.table_size}/sysbench-1.0.20".encode()).hexdigest()[:12]

    def _table_names(self) -> list[str]:
        return [f"sbtest{i}" for i in range(1, self.spec.dataset.tables + 1)]

    def _connection_options(self, target, schema: str) -> dict[str, Any]:
        from mysqlbench.identifiers import check_schema

        return {"db-driver": "mysql", "mysql-host": target.host, "mysql-port": target.port,
                "mysql-user": target.login, "mysql-db": check_schema(schema)}

    def ensure_dataset(self, target, recorder) -> dict[str, Any]:
        """sysbench's tables, prepared by sysbench itself into a schema we own, verified by Great
        Expectations (every table, its row count and id range), fingerprinted; reused while the
        definitions and checksums are what was verified (the dataset lifecycle)."""
        from mysqlbench.workloads import lifecycle

        return lifecycle.ensure(SysbenchOltpBuild(self, target), recorder)

    def prepare_tables(self, target, schema: str) -> None:
        """``sysbench oltp_read_write prepare`` where sysbench runs (the benchmark host), the
        password in a private file, never in argv."""
        from mysqlbench.targets.host import LocalHost, host_of

        host = host_of(target)
        with host.private_file("sysbench.cfg", f"mysql-password={target.password}\n") as secret:
            run = tool.SysbenchRun("oltp_read_write", {**self._connection_options(target, schema),
                                                       "tables": self.spec.dataset.tables,
                                                       "table-size": self.spec.dataset.table_size,
                                                       "threads": min(self.spec.dataset.tables, 4)},
                                   command="prepare", secrets=[target.password], config_file=secret,
                                   remote=not isinstance(host, LocalHost))
            tool.run_untimed(run, timeout_s=self.spec.point_timeout_s, host=host)

    def observations(self, conn, schema: str):
        """One row per table sysbench should have made: rows, smallest and largest id (NULL for a
        missing table, which GX then reports)."""
        import pandas as pd

        from mysqlbench.identifiers import quote

        with conn.cursor() as cur:
            cur.execute("SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s", (schema,))
            present = {r[0] for r in cur.fetchall()}
            rows = []
            for table in self._table_names():
                if table not in present:
                    rows.append({"table": table, "rows": None, "min_id": None, "max_id": None})
                    continue
                cur.execute(f"SELECT COUNT(*), MIN(id), MAX(id) FROM {quote(schema)}.{quote(table)}")
                count, low, high = cur.fetchone()
                rows.append({"table": table, "rows": count, "min_id": low, "max_id": high})
        frame = pd.DataFrame(rows)
        for column in ("rows", "min_id", "max_id"):
            frame[column] = frame[column].astype("Int64")
        return frame

    def verify(self, conn, schema: str):
        import great_expectations as gx

        from mysqlbench.checks import validate_frames

        size = self.spec.dataset.table_size
        E = gx.expectations
        expectations = [
            E.ExpectColumnValuesToNotBeNull(column="rows", meta={"check": "every table exists"}),
            E.ExpectColumnValuesToBeBetween(column="rows", min_value=size, max_value=size,
                                            meta={"check": f"{size} rows per table"}),
            E.ExpectColumnValuesToBeBetween(column="min_id", min_value=1, max_value=1, meta={"check": "ids from 1"}),
            E.ExpectColumnValuesToBeBetween(column="max_id", min_value=size, max_value=size,
                                            meta={"check": f"ids up to {size}"}),
        ]
        return validate_frames("sysbench_oltp_dataset", [("tables", self.observations(conn, schema), expectations)])

    def check_dataset(self, target, dataset_id: str) -> None:
        """Inside a point: the same tables and definitions (write scripts change rows by design,
        keeping their number; contents are compared when a later study decides to reuse them)."""
        from mysqlbench.workloads.lifecycle import require_verified

        require_verified(target, self.spec.dataset.schema_name, dataset_id, "sysbench", writes_expected=True)

    def prepare(self, unit: str) -> str:
        return unit

    def _secret(self, session: Session):
        """sysbench's password file, on the host sysbench runs on."""
        from mysqlbench.targets.host import host_of

        host = session.state.setdefault("host", host_of(session.target))
        return host.private_file("sysbench.cfg", f"mysql-password={session.target.password}\n")

    def _run(self, session: Session, script: str, time_s: int, secret) -> tool.SysbenchRun:
        p = self.params
        options = {**self._connection_options(session.target, session.schema), "tables": self.spec.dataset.tables,
                   "table-size": self.spec.dataset.table_size, **p.common_options(), "time": time_s}
        if p.skip_trx:
            options["skip_trx"] = True
        return tool.SysbenchRun(script, options, secrets=[session.target.password], config_file=secret)

    def warm_run(self, session: Session, script: str) -> int | None:
        """One untimed run of the script for ``warmup_s``: the pages it read from disk
        (``counters.physical_reads``)."""
        from mysqlbench.counters import physical_reads
        from mysqlbench.measure import read_status
        from mysqlbench.targets.host import LocalHost

        if self.params.warmup_s == 0:
            return 0
        before = read_status(session.conn)
        with self._secret(session) as secret:
            host = session.state["host"]
            run = self._run(session, script, self.params.warmup_s, secret)
            run.remote = not isinstance(host, LocalHost)
            tool.run_untimed(run, timeout_s=self.params.warmup_s + 120, host=host)
        return physical_reads(before, read_status(session.conn), session.server.flavor)

    def warm(self, session: Session, prepared: str) -> dict[str, Any] | None:
        if self.params.warmup_s == 0:
            return {"warm": None, "why": "warmup_s is 0: no warm-up run"}
        return None  # the engine repeats warm_run until the buffer pool reads nothing

    def measure(self, session: Session, script: str, repetition: int) -> UnitResult:
        with self._secret(session) as secret:
            result = self._measure_run(session, self._run(session, script, self.params.time_s, secret),
                                       series_keys=("tps", "qps", "errors_per_s"))
        result.facts["writes"] = script in tool.WRITE_SCRIPTS
        return result

    def _own_metrics(self, report: dict[str, Any]) -> dict[str, tuple[float | None, str]]:
        return {"tps": (report["tps"], "1/s"), "qps": (report["qps"], "1/s"),
                "ignored_errors": (float(report["ignored_errors"]), "count"),
                "reconnects": (float(report["reconnects"]), "count"),
                "errors_per_s": (report["ignored_errors"] / report["total_time_s"], "1/s")}


class SysbenchOltpBuild(StudyDatasetBuild):
    """sysbench's OLTP tables, declared to the dataset lifecycle: ``prepare`` (by sysbench itself),
    ``analyze``; Great Expectations over every table's rows and ids."""

    what = "sysbench OLTP"
    steps = ("prepare", "analyze")

    workload: SysbenchOltpWorkload

    def prepare(self, data: dict[str, Any]) -> StepOutcome:
        self.workload.prepare_tables(self.target, self.schema)
        return StepOutcome()

    def analyze(self, data: dict[str, Any]) -> StepOutcome:
        with self.target.session() as conn:
            return StepOutcome(analyze_tables(conn, self.schema, self.workload._table_names()))

    def validate(self, conn, data: dict[str, Any]):
        return self.workload.verify(conn, self.schema)
