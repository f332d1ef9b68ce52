"""TPC-C peers as drivers: Percona-Lab's tpcc-mysql (C) and sysbench-tpcc (Lua on Debian's
sysbench 1.0), run as they are, their output parsed into the same results our driver gives.

Their sources are not part of the project: ``build`` copies a checkout (``MYSQLBENCH_PEER_SOURCES``
names a folder holding ``tpcc-mysql/`` and ``sysbench-tpcc/``; ``bin/mysqlbench peer build``) into
``work/peers/NAME`` and builds it there, so the checkout is never touched.

Both run against our dataset in a study: tpcc-mysql uses the table names we use; sysbench-tpcc
suffixes its tables with a number, so it reaches our tables through a schema of plain views
(``<schema>_sbtpcc.warehouse1`` is ``SELECT * FROM <schema>.warehouse``; merge views, so the
statements run on the base tables). Each tool's own loader is used by ``make bench``.

What a tool does not print is absent (None), never zero: tpcc-mysql prints no overall latency
percentiles (only New-Order's p95/p99 per interval, and each type's maximum) and no rollback count;
sysbench-tpcc prints one figure for all transaction types together.

Passwords: sysbench reads its password from a private config file; tpcc-mysql only takes it as a
command-line argument (visible in the driver host's process list while it runs), and echoes it in
its output: every line kept is redacted.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from mysqlbench import paths
from mysqlbench.errors import InvalidInput, MysqlbenchError
from mysqlbench.identifiers import check_schema
from mysqlbench.tools import SysbenchSecret, ToolProcess
from mysqlbench.workloads.tpcc import TABLES

# the tool runner is shared with the sysbench workloads; the names the TPC-C code knows stay
PeerProcess = ToolProcess
__all__ = ["PeerProcess", "SysbenchSecret"]

TPCC_MYSQL, SYSBENCH_TPCC = "tpcc-mysql", "sysbench-tpcc"
PEERS = (TPCC_MYSQL, SYSBENCH_TPCC)
DRIVERS = ("ours", *PEERS)
# tpcc-mysql's transaction index -> our name (main.c prints them in this order)
TPCC_MYSQL_TYPES = ("new_order", "payment", "order_status", "delivery", "stock_level")
UPSTREAM = {TPCC_MYSQL: "https://github.com/Percona-Lab/tpcc-mysql",
            SYSBENCH_TPCC: "https://github.com/Percona-Lab/sysbench-tpcc"}


class PeerUnavailable(MysqlbenchError):
    """The peer is not built here (or its tool is missing)."""


class PeerOutputError(MysqlbenchError):
    """The peer's output does not hold the results (a failed or killed run)."""


def peers_dir() -> Path:
    return paths.work_dir() / "peers"


def default_sources() -> Path | None:
    """``MYSQLBENCH_PEER_SOURCES``, else ``../shared/refs`` beside the repository when present."""
    named = os.environ.get("MYSQLBENCH_PEER_SOURCES")
    if named:
        return Path(named)
    beside = paths.REPO_ROOT.parent / "shared" / "refs"
    return beside if beside.is_dir() else None


def _tree_digest(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file() and ".git" not in p.parts):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def build(name: str, source: Path | None = None) -> dict[str, Any]:
    """Copy the peer's source into work/peers/NAME and build it (again only when the source
    changed). Returns the build record."""
    if name not in PEERS:
        raise InvalidInput(f"unknown TPC-C peer {name!r}; known: {list(PEERS)}")
    base = source or default_sources()
    if base is None:
        raise PeerUnavailable(f"no source for {name}: set MYSQLBENCH_PEER_SOURCES to a folder holding {name}/ "
                              f"(a checkout of {UPSTREAM[name]})")
    src = Path(base) / name if (Path(base) / name).is_dir() else Path(base)
    marker = "src/main.c" if name == TPCC_MYSQL else "tpcc.lua"
    if not (src / marker).is_file():
        raise PeerUnavailable(f"{src} is not a {name} checkout (no {marker}; upstream {UPSTREAM[name]})")
    home = peers_dir() / name
    record_path = home / "BUILD.json"
    digest = _tree_digest(src)
    if record_path.is_file():
        record = json.loads(record_path.read_text())
        if record.get("source_digest") == digest and _built(name, home):
            return {**record, "built": False}
    if home.exists():
        shutil.rmtree(home)
    shutil.copytree(src, home, ignore=shutil.ignore_patterns(".git"))
    started = time.monotonic()
    if name == TPCC_MYSQL:
        # the upstream Makefile wants mysql_config and forgets -lm: give it Connector/C's flags
        libs = subprocess.run(["mariadb_config", "--libs"], check=True, capture_output=True, text=True).stdout.strip()
        inc = subprocess.run(["mariadb_config", "--include"], check=True, capture_output=True, text=True).stdout.strip()
        done = subprocess.run(["make", "-C", str(home / "src"), f"LIBS={libs} -lrt -lm", f"INC=-I. {inc}"],
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise PeerUnavailable(f"building {name} failed:\n{done.stderr[-2000:]}")
    elif shutil.which("sysbench") is None:
        raise PeerUnavailable("sysbench-tpcc needs sysbench (Debian package sysbench; make setup installs it)")
    record = {"peer": name, "source": str(src), "source_digest": digest, "upstream": UPSTREAM[name],
              "build_s": round(time.monotonic() - started, 1)}
    record_path.write_text(json.dumps(record, indent=2))
    return {**record, "built": True}


def _built(name: str, home: Path) -> bool:
    if name == TPCC_MYSQL:
        return all(os.access(home / b, os.X_OK) for b in ("tpcc_start", "tpcc_load"))
    return (home / "tpcc.lua").is_file() and shutil.which("sysbench") is not None


def locate(name: str) -> Path:
    """The built peer's folder, or a clear error saying how to build it."""
    if name not in PEERS:
        raise InvalidInput(f"unknown TPC-C driver {name!r}; known: {list(DRIVERS)}")
    home = peers_dir() / name
    if not _built(name, home):
        raise PeerUnavailable(f"driver {name} is not built here: run `bin/mysqlbench peer build {name} --source DIR` "
                              f"with DIR a checkout of {UPSTREAM[name]} (or a folder holding {name}/)")
    return home


# -- running ------------------------------------------------------------------------------------
@dataclass
class Endpoint:
    """Where the peer connects: host, port, user, password, schema."""
    host: str
    port: int
    user: str
    password: str = field(repr=False)
    schema: str

    @classmethod
    def of(cls, target, schema: str) -> "Endpoint":
        return cls(target.host, target.port, target.login, target.password, check_schema(schema))


@dataclass
class PeerRunConfig:
    warehouses: int
    connections: int
    rampup_s: int
    measure_s: int
    interval_s: int

    def __post_init__(self) -> None:
        for name in ("warehouses", "connections", "measure_s", "interval_s"):
            if int(getattr(self, name)) < 1:
                raise InvalidInput(f"{name} must be at least 1 for a peer driver")
        if self.rampup_s < 0:
            raise InvalidInput("rampup_s must not be negative")
        if self.measure_s % self.interval_s:
            raise InvalidInput(f"a peer driver reports whole intervals: measure_s ({self.measure_s}) must be a "
                               f"multiple of interval_s ({self.interval_s})")


def check_whole_seconds(rampup_s: float, measure_s: float, interval_s: float) -> None:
    """The peers take whole seconds and whole intervals; say so before anything runs."""
    values = {"rampup_s": rampup_s, "measure_s": measure_s, "interval_s": interval_s}
    broken = [f"{k}={v:g}" for k, v in values.items() if float(v) != int(v)]
    if broken:
        raise InvalidInput(f"the peer drivers take whole seconds: {', '.join(broken)}")


# -- tpcc-mysql ---------------------------------------------------------------------------------
def tpcc_mysql_start_argv(home: Path, endpoint: Endpoint, config: PeerRunConfig) -> list[str]:
    return [str(home / "tpcc_start"), "-h", endpoint.host, "-P", str(endpoint.port), "-d", endpoint.schema,
            "-u", endpoint.user, "-p", endpoint.password, "-w", str(config.warehouses),
            "-c", str(config.connections), "-r", str(int(config.rampup_s)), "-l", str(int(config.measure_s)),
            "-i", str(int(config.interval_s))]


_TM_INTERVAL = re.compile(r"^\s*(\d+), trx: (\d+), 95%: ([\d.]+), 99%: ([\d.]+), max_rt: ([\d.]+)"
                          r"((?:, \d+\|[\d.]+){4})\s*$")
_TM_RAW = re.compile(r"^\s*\[(\d)\] sc:(\d+) lt:(\d+)\s+rt:(\d+)\s+fl:(\d+) avg_rt: ([\d.na-]+)")
_TM_ERROR = re.compile(r"^\s*\d+, [0-9A-Z]{5}, ")
_TM_TPMC = re.compile(r"^\s*([\d.]+) TpmC\s*$")
TPCC_MYSQL_MEASURE_START = "MEASURING START."


def is_tpcc_mysql_interval(line: str) -> int | None:
    """The interval line's time (seconds into the measure window), else None."""
    match = _TM_INTERVAL.match(line)
    return int(match.group(1)) if match else None


def parse_tpcc_mysql(text: str, config: PeerRunConfig) -> dict[str, Any]:
    """tpcc_start's output -> our results shape. Raises PeerOutputError without the final report."""
    lines = text.splitlines()
    # "2002, HY000, Can't connect ..." then "error at thread_main": a terminal that never ran (the
    # tool still prints a report of zeros and exits 0)
    said = [line.strip() for line in lines if _TM_ERROR.match(line)]
    if any(line.strip() == "error at thread_main" for line in lines):
        raise PeerOutputError(f"a tpcc-mysql terminal failed: {said[0] if said else 'error at thread_main'}")
    raw, tpmc, intervals = {}, None, []
    section = None
    for line in lines:
        if line.startswith("<Raw Results>"):
            section = "raw"
            continue
        if line.startswith("<"):
            section = None
        interval = _TM_INTERVAL.match(line)
        if interval:
            t, trx, p95, p99, max0, rest = interval.groups()
            others = [part.split("|") for part in rest.strip(", ").split(", ")]
            intervals.append({"end_s": float(config.rampup_s + int(t)),
                              "new_orders_per_min": int(trx) * 60 / config.interval_s,
                              "transactions_per_s": (int(trx) + sum(int(n) for n, _ in others)) / config.interval_s,
                              "p95_ms": float(p95), "p99_ms": float(p99),
                              "max_ms": [float(max0), *(float(m) for _, m in others)]})
        m = _TM_RAW.match(line)
        if m and section == "raw":
            raw[int(m.group(1))] = tuple(int(v) for v in m.groups()[1:5])
        m = _TM_TPMC.match(line)
        if m:
            tpmc = float(m.group(1))
    if len(raw) != 5 or tpmc is None:
        hint = f" (it said: {said[-1]})" if said else ""
        raise PeerOutputError(f"tpcc-mysql's output has no final report: the run failed or was killed{hint}; "
                              f"last lines: {lines[-3:]}")
    per_type = {}
    for index, name in enumerate(TPCC_MYSQL_TYPES):
        success, late, retry, failure = raw[index]
        maxima = [i["max_ms"][index] for i in intervals]
        per_type[name] = {
            "count": success + late + failure, "ok": success + late, "rollbacks": None, "errors": failure,
            "retries": retry, "late": late, "p50_ms": None, "p90_ms": None,
            # tpcc-mysql prints New-Order's p95/p99 per interval only: no percentile over the window
            "p95_ms": None, "p99_ms": None, "max_ms": max(maxima) if maxima else None,
        }
    measured_s = (config.measure_s // config.interval_s) * config.interval_s
    new_orders = per_type["new_order"]["ok"]
    if not any(t["ok"] for t in per_type.values()):
        raise PeerOutputError("tpcc-mysql completed no transaction in the measure window")
    return {"new_orders_per_min": new_orders * 60 / measured_s, "new_orders": new_orders,
            "transactions": sum(t["ok"] for t in per_type.values()), "per_type": per_type,
            "intervals": [{k: v for k, v in i.items() if k != "max_ms"} for i in intervals],
            "errors": {}, "tool_figure": {"tpmC": tpmc}, "measure_s": measured_s, "rampup_s": config.rampup_s}


def load_tpcc_mysql(home: Path, endpoint: Endpoint, warehouses: int,
                    run_script: Callable[[list[str]], None]) -> float:
    """tpcc-mysql's own load (its create_table.sql, tpcc_load's four parts in parallel as its
    load.sh does, then add_fkey_idx.sql); ``run_script`` runs a script's statements in one session
    of the schema. Returns seconds."""
    started = time.monotonic()
    run_script(_statements((home / "create_table.sql").read_text()))
    procs = []
    for part in (1, 2, 3, 4):
        argv = [str(home / "tpcc_load"), "-h", endpoint.host, "-P", str(endpoint.port), "-d", endpoint.schema,
                "-u", endpoint.user, "-p", endpoint.password, "-w", str(warehouses), "-l", str(part),
                "-m", "1", "-n", str(warehouses)]
        procs.append(PeerProcess(argv, home, [endpoint.password]).start())
    for proc in procs:
        if proc.wait(3600) != 0:
            raise MysqlbenchError(f"tpcc_load failed: {proc.output[-500:]}")
    run_script(_statements((home / "add_fkey_idx.sql").read_text()))
    return time.monotonic() - started


def _statements(sql: str) -> list[str]:
    body = "\n".join(line for line in sql.splitlines() if not line.strip().startswith("--"))
    return [s.strip() for s in body.split(";") if s.strip()]


# -- sysbench-tpcc ------------------------------------------------------------------------------
def views_schema(schema: str) -> str:
    return check_schema(f"{schema}_sbtpcc")


def sysbench_views(schema: str) -> list[str]:
    """DDL of the schema through which sysbench-tpcc (tables suffixed 1) reaches our tables."""
    views = views_schema(check_schema(schema))
    out = [f"CREATE SCHEMA IF NOT EXISTS `{views}`"]
    for table in TABLES:
        out.append(f"CREATE OR REPLACE ALGORITHM=MERGE VIEW `{views}`.`{table}1` AS SELECT * FROM `{schema}`.`{table}`")
    return out


def sysbench_argv(home: Path, endpoint: Endpoint, config: PeerRunConfig, config_file: Path, command: str,
                  time_s: int | None = None) -> list[str]:
    argv = ["sysbench", f"--config-file={config_file}", "tpcc.lua", "--db-driver=mysql",
            f"--mysql-host={endpoint.host}", f"--mysql-port={endpoint.port}", f"--mysql-user={endpoint.user}",
            f"--mysql-db={endpoint.schema}", "--tables=1", f"--scale={config.warehouses}",
            f"--threads={config.connections}"]
    if command == "run":
        argv += [f"--time={time_s}", f"--report-interval={config.interval_s}", "--percentile=95"]
    return [*argv, command]


def parse_sysbench_tpcc(text: str, config: PeerRunConfig) -> dict[str, Any]:
    """sysbench-tpcc's run output -> our results shape: intervals after the rampup are the window;
    sysbench reports all transaction types together, so per-type figures are absent."""
    from mysqlbench import sysbench_output

    report = sysbench_output.parse_report(text)
    intervals = sysbench_output.parse_intervals(text)
    window = [i for i in intervals if i["t_s"] - config.interval_s >= config.rampup_s - 1e-9]
    tps = sum(i["tps"] for i in window) / len(window) if window else None
    return {
        "new_orders_per_min": None, "new_orders": None, "transactions": None,
        "per_type": {}, "errors": {"ignored_errors": report["ignored_errors"]},
        "intervals": [{"end_s": i["t_s"], "new_orders_per_min": None, "transactions_per_s": i["tps"],
                       "p95_ms": i.get("latency_pct_ms")} for i in intervals],
        "tool_figure": {"tps_in_window": tps, "tps_whole_run": report["tps"],
                        "latency_ms": report["latency_ms"]},
        "measure_s": config.measure_s, "rampup_s": config.rampup_s,
    }
