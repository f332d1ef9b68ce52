"""`make bench`: our TPC-H load against the plain `mariadb` client, side by side on one managed
server with the base configuration, plus the constraints step and the DAG files' parse time.

Prints medians of 3 alternating runs at scale factor 1 (override with BENCH_SF) and writes them to
work/bench/load_bench.json. Ratios, not absolute seconds, are what carry over between machines.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "plugins"))

from mysqlbench import paths  # noqa: E402
from mysqlbench.statistics import compare  # noqa: E402
from mysqlbench.targets.managed import ManagedServer, ManagedSpec  # noqa: E402
from mysqlbench.workloads import lifecycle  # noqa: E402
from mysqlbench.workloads.tpch import TABLES, generate  # noqa: E402
from mysqlbench.workloads.tpch.build import TpchBuild  # noqa: E402
from mysqlbench.workloads.tpch.models import TpchLoadParams  # noqa: E402

SF = float(os.environ.get("BENCH_SF", "1"))
RUNS = int(os.environ.get("BENCH_RUNS", "3"))
OURS, PLAIN = "bench_ours", "bench_plain"


def drop(server: ManagedServer, schema: str) -> None:
    conn = server.admin_connect()
    with conn.cursor() as cur:
        cur.execute(f"DROP SCHEMA IF EXISTS `{schema}`")
    conn.close()


def quiesce(server: ManagedServer, timeout_s: float = 300) -> None:
    """Flush the dirty pages an earlier run left, so no loader pays for another's writes."""
    conn = server.admin_connect()
    with conn.cursor() as cur:
        cur.execute("SELECT @@GLOBAL.innodb_max_dirty_pages_pct")
        saved = cur.fetchone()[0]
        cur.execute("SET GLOBAL innodb_max_dirty_pages_pct = 0")
        try:
            deadline = time.monotonic() + timeout_s
            while time.monotonic() < deadline:
                cur.execute("SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_pages_dirty'")
                if int(cur.fetchone()[1]) < 100:
                    break
                time.sleep(0.5)
        finally:
            cur.execute("SET GLOBAL innodb_max_dirty_pages_pct = %s", (saved,))
    conn.close()


def ours(server, target, manifest, redo_log_size: str = "keep") -> tuple[float, float]:
    """The steps as tpch_load runs them (the dataset lifecycle's): create, load; then constraints."""
    drop(server, OURS)
    quiesce(server)
    build = TpchBuild(TpchLoadParams(scale_factor=manifest["scale_factor"], schema=OURS, load_streams=2,
                                     target_conn_id=target.conn_id, load_redo_log_size=redo_log_size), target)
    data = {"dataset_id": manifest["dataset_id"]}
    started = time.monotonic()
    lifecycle.step(build, "create_tables", data)
    lifecycle.step(build, "load", data)
    load_s = time.monotonic() - started
    started = time.monotonic()
    lifecycle.step(build, "add_constraints", data)
    return load_s, time.monotonic() - started


def plain(server, target, manifest, defaults_file: Path) -> float:
    """The reference: the plain client, one LOAD DATA LOCAL INFILE per table, serially, into the
    same DDL, with the server as configured (no load profile)."""
    drop(server, PLAIN)
    quiesce(server)
    directory = generate.dataset_dir(manifest["scale_factor"])
    client = ["mariadb", f"--defaults-extra-file={defaults_file}", "--local-infile=1", "-h", "127.0.0.1",
              "-P", str(server.spec.port), "-u", target.login]
    started = time.monotonic()
    subprocess.run(client + ["-e", f"CREATE SCHEMA {PLAIN}"], check=True)
    subprocess.run(client + [PLAIN], input=paths.sql_text("tpch/schema.sql"), text=True, check=True)
    for table in TABLES:
        path = directory / manifest["tables"][table]["file"]
        assert "'" not in str(path)
        subprocess.run(client + [PLAIN, "-e", f"LOAD DATA LOCAL INFILE '{path}' INTO TABLE {table.upper()} "
                                 "FIELDS TERMINATED BY '|' LINES TERMINATED BY '|\\n'"], check=True)
    return time.monotonic() - started


def dag_parse_seconds() -> float:
    code = ("from airflow.dag_processing.dagbag import DagBag\n"
            f"bag = DagBag(dag_folder={str(REPO / 'dags')!r})\n"
            "assert not bag.import_errors, bag.import_errors\n"
            "print(sum(s.duration.total_seconds() for s in bag.dagbag_stats))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "AIRFLOW__CORE__LOAD_EXAMPLES": "False"})
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    server = ManagedServer(ManagedSpec.load("bench"))
    server.start()
    password = server.ensure_benchmark_user()
    target = server.connection(password)
    manifest = generate.ensure_generated(SF)
    results = {"ours": [], "plain": [], "constraints": [], "ours_redo_2g": []}
    with tempfile.TemporaryDirectory() as secret_dir:  # outside the work directory, removed at exit
        defaults = Path(secret_dir) / "client.cnf"
        defaults.touch(mode=0o600)
        defaults.write_text(f"[client]\npassword={password}\n")
        for run in range(RUNS):
            if run % 2:  # order alternates within the pair: neither side always runs first
                results["plain"].append(plain(server, target, manifest, defaults))
            load_s, constraints_s = ours(server, target, manifest)
            results["ours"].append(load_s)
            results["constraints"].append(constraints_s)
            if not run % 2:
                results["plain"].append(plain(server, target, manifest, defaults))
            results["ours_redo_2g"].append(ours(server, target, manifest, redo_log_size="2G")[0])
            print(f"run {run + 1}/{RUNS}: ours {load_s:.1f} s, plain client {results['plain'][-1]:.1f} s, "
                  f"constraints {constraints_s:.1f} s, ours with a 2G redo log {results['ours_redo_2g'][-1]:.1f} s",
                  flush=True)
    drop(server, OURS)
    drop(server, PLAIN)
    median = {k: statistics.median(v) for k, v in results.items()}
    # each run measured ours and plain back to back, in alternating order: a pair (what drifts between
    # runs cancels)
    ours_ratio = compare(results["plain"], results["ours"], paired=True)
    redo_ratio = compare(results["plain"], results["ours_redo_2g"], paired=True)
    summary = {
        "scale_factor": SF, "runs": RUNS, "server": server.health()["version"],
        "ours_load_s": round(median["ours"], 2), "plain_client_load_s": round(median["plain"], 2),
        "ratio_ours_to_plain": round(median["ours"] / median["plain"], 3),
        "constraints_s": round(median["constraints"], 2),
        "ours_redo_2g_load_s": round(median["ours_redo_2g"], 2),
        "ratio_redo_2g_to_plain": round(median["ours_redo_2g"] / median["plain"], 3),
        "ratio_ours_to_plain_interval": ours_ratio.as_dict(), "ratio_redo_2g_to_plain_interval": redo_ratio.as_dict(),
        "dag_parse_s": round(dag_parse_seconds(), 3), "raw": results,
    }
    out = paths.work_dir() / "bench" / "load_bench.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(summary, indent=2))
    print(f"\nTPC-H SF {SF:g} on {summary['server']}, median of {RUNS} alternating runs")
    print(f"  ours (empty schema -> tables loaded with primary keys): {summary['ours_load_s']:7.2f} s")
    print(f"  plain mariadb client, serial, same DDL:                 {summary['plain_client_load_s']:7.2f} s")
    print(f"  ratio ours / plain:                                     {summary['ratio_ours_to_plain']:7.3f}"
          f"  paired: {ours_ratio.ratio_words()}")
    print(f"  constraints step (FKs and named indexes):               {summary['constraints_s']:7.2f} s")
    print(f"  ours with load_redo_log_size=2G (opt-in), incl. restore: {summary['ours_redo_2g_load_s']:7.2f} s"
          f"  (ratio {summary['ratio_redo_2g_to_plain']:.3f}; paired: {redo_ratio.ratio_words()})")
    print(f"  parse time of all DAG files:                            {summary['dag_parse_s']:7.3f} s")
    print(f"  written to {out}")


if __name__ == "__main__":
    main()
