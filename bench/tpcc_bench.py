"""`make bench` (TPC-C): our driver against tpcc-mysql and sysbench-tpcc, side by side in one run on
the same managed server (the `bench` target, 2 GB buffer pool), each driver on its own loaded data
(ours from our loader, tpcc-mysql from its tpcc_load, sysbench-tpcc from its prepare), the three
loaded once and snapshotted together, the snapshot restored (and the server restarted) before
every run: every run starts from the same bytes and a cold buffer pool that its rampup warms.

Every driver is counted the same way, from the database: the change in sum(d_next_o_id) over the
measured window (the rampup outside it), beside the tool's own figure; the CPU share is the
driver's process CPU over the window. The runs use the very code the study engine runs
(`workload._ours`, `workload._peer`), so this measures what a study measures.

Peers come from MYSQLBENCH_PEER_SOURCES (default ../shared/refs beside the repository).
BENCH_TPCC_PEERS names the peers to compare with (default: tpcc-mysql,sysbench-tpcc; empty: ours
alone): one that cannot be built fails the bench with why, before any server starts, never a
comparison that quietly leaves it out. BENCH_TPCC_WAREHOUSES (2), BENCH_TPCC_CONNECTIONS
(8), BENCH_TPCC_RAMPUP_S (10), BENCH_TPCC_MEASURE_S (60), BENCH_TPCC_RUNS (1, alternating).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import sys
import time
from pathlib import Path
from types import SimpleNamespace

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "plugins"))

from mysqlbench import ownership, paths  # noqa: E402
from mysqlbench.errors import MysqlbenchError  # noqa: E402
from mysqlbench.identifiers import check_name  # noqa: E402
from mysqlbench.ossampler import process_cpu_seconds  # noqa: E402
from mysqlbench.statistics import compare  # noqa: E402
from mysqlbench.targets.managed import ManagedServer, ManagedSpec  # noqa: E402
from mysqlbench.workloads import lifecycle  # noqa: E402
from mysqlbench.workloads.tpcc import driver as tpcc_driver  # noqa: E402
from mysqlbench.workloads.tpcc import peers  # noqa: E402
from mysqlbench.workloads.tpcc import workload as tpcc_workload  # noqa: E402
from mysqlbench.workloads.tpcc.build import TpccBuild  # noqa: E402
from mysqlbench.workloads.tpcc.models import TpccLoadParams  # noqa: E402

WAREHOUSES = int(os.environ.get("BENCH_TPCC_WAREHOUSES", "2"))
CONNECTIONS = int(os.environ.get("BENCH_TPCC_CONNECTIONS", "8"))
RAMPUP_S = int(os.environ.get("BENCH_TPCC_RAMPUP_S", "10"))
MEASURE_S = int(os.environ.get("BENCH_TPCC_MEASURE_S", "60"))
INTERVAL_S = int(os.environ.get("BENCH_TPCC_INTERVAL_S", "10"))
RUNS = int(os.environ.get("BENCH_TPCC_RUNS", "1"))
BUFFER_POOL = {"innodb_buffer_pool_size": "2G"}
SCHEMAS = {"ours": "bench_tpcc_ours", peers.TPCC_MYSQL: "bench_tpcc_mysql", peers.SYSBENCH_TPCC: "bench_tpcc_sb"}
SNAPSHOT = "tpcc_bench"


class Window:
    """The engine's window without the engine: runs the measure phase, nothing else."""
    aborted = False

    def run(self, fn, kill, tool_pid=None):  # the engine's signature; the bench reads the tool's CPU itself
        fn()
        return SimpleNamespace(error=None)


def admin(server: ManagedServer, *statements: str, database: str | None = None) -> None:
    conn = server.admin_connect()
    try:
        with conn.cursor() as cur:
            if database:
                cur.execute(f"USE `{database}`")
            for statement in statements:
                cur.execute(statement)
    finally:
        conn.close()


def mysqld_cpu_s(server: ManagedServer) -> float:
    return process_cpu_seconds(server.pid())


def load_all(server: ManagedServer, target, available: list[str]) -> dict[str, float]:
    seconds = {}
    build = TpccBuild(TpccLoadParams(warehouses=WAREHOUSES, schema=SCHEMAS["ours"], target_conn_id=target.conn_id),
                      target)
    started = time.monotonic()
    _, result = lifecycle.rebuild(build, build.identify())  # every step and the verification, as tpcc_load runs them
    if not result.success:
        raise MysqlbenchError(f"our load failed validation: {result.failures}")
    seconds["ours"] = time.monotonic() - started
    if peers.TPCC_MYSQL in available:
        schema = SCHEMAS[peers.TPCC_MYSQL]
        admin(server, f"DROP SCHEMA IF EXISTS `{schema}`", f"CREATE SCHEMA `{schema}`")
        endpoint = peers.Endpoint.of(target, schema)
        seconds[peers.TPCC_MYSQL] = peers.load_tpcc_mysql(
            peers.locate(peers.TPCC_MYSQL), endpoint, WAREHOUSES, lambda script: admin(server, *script, database=schema))
    if peers.SYSBENCH_TPCC in available:
        schema = SCHEMAS[peers.SYSBENCH_TPCC]
        admin(server, f"DROP SCHEMA IF EXISTS `{schema}`", f"CREATE SCHEMA `{schema}`")
        home = peers.locate(peers.SYSBENCH_TPCC)
        config = peers.PeerRunConfig(WAREHOUSES, 2, 0, INTERVAL_S, INTERVAL_S)  # 2 loader threads: 2 cores
        started = time.monotonic()
        with peers.SysbenchSecret(target.password) as secret:
            proc = peers.PeerProcess(peers.sysbench_argv(home, peers.Endpoint.of(target, schema), config, secret,
                                                         "prepare"), home, [target.password]).start()
            if proc.wait(3600) != 0:
                raise MysqlbenchError(f"sysbench-tpcc prepare failed: {proc.output[-800:]}")
        seconds[peers.SYSBENCH_TPCC] = time.monotonic() - started
    # every dataset gets fresh statistics before the snapshot, as our loader's analyze step does:
    # InnoDB's background recalculation may not have caught up with a bulk load before the clean
    # shutdown, and a driver measured on stale statistics measures the optimizer's guesses
    for name in available:
        schema = SCHEMAS[name]
        conn = server.admin_connect()
        try:
            with conn.cursor() as cur:
                cur.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = %s "
                            "AND table_type = 'BASE TABLE'", (schema,))
                tables = [row[0] for row in cur.fetchall()]
                cur.execute("ANALYZE TABLE " + ", ".join(f"`{schema}`.`{check_name(t, 'table')}`" for t in tables))
                cur.fetchall()
        finally:
            conn.close()
    return seconds


def one_run(server: ManagedServer, target, name: str) -> dict:
    server.restore(SNAPSHOT)
    server.start(BUFFER_POOL)
    schema = SCHEMAS[name]
    conn = target.connect(database=schema)
    try:
        session = SimpleNamespace(conn=conn, target=target, schema=schema, window=Window())
        # ours deals the peers' own 10/10/1/1/1 mix: the same mix on every side
        config = tpcc_driver.DriverConfig(warehouses=WAREHOUSES, connections=CONNECTIONS, rampup_s=RAMPUP_S,
                                          measure_s=MEASURE_S, interval_s=INTERVAL_S, mix=tpcc_workload.PEERS_MIX)
        server_cpu = mysqld_cpu_s(server)
        if name == "ours":
            marker = ownership.read_marker(conn, schema)
            _, out, counted = tpcc_workload._ours(session, config, marker, name)
            own = out["new_orders_per_min"]
        else:
            _, out, counted = tpcc_workload._peer(session, config, {}, name, own_tables=True)
            figure = out["tool_figure"]
            own = figure.get("tpmC") if name == peers.TPCC_MYSQL else figure["tps_in_window"]
        # the server's CPU over the whole run (rampup + window), for the share the driver left it
        server_cpu = mysqld_cpu_s(server) - server_cpu
    finally:
        conn.close()
    return {"new_orders_per_min": counted["new_orders"] * 60 / counted["seconds"], "window_s": counted["seconds"],
            "driver_cpu_share": (counted["driver_cpu_s"] / counted["seconds"]
                                 if counted["driver_cpu_s"] is not None else None),
            "server_cpu_share": server_cpu / (RAMPUP_S + counted["seconds"]), "own_figure": own}


def asked_peers() -> list[str]:
    """BENCH_TPCC_PEERS: the peers to compare with, each built (or found built) here."""
    raw = os.environ.get("BENCH_TPCC_PEERS", ",".join(peers.PEERS))
    names = [n.strip() for n in raw.split(",") if n.strip()]
    unknown = sorted(set(names) - set(peers.PEERS))
    if unknown:
        raise SystemExit(f"BENCH_TPCC_PEERS: unknown peer(s) {unknown}; known: {', '.join(peers.PEERS)}")
    missing = {}
    for name in names:
        try:
            peers.build(name)
        except MysqlbenchError as exc:
            missing[name] = str(exc)
    if missing:
        raise SystemExit("TPC-C bench: asked for " + ", ".join(names) + " but cannot run " +
                         "; ".join(f"{k}: {v}" for k, v in missing.items()) +
                         " (set MYSQLBENCH_PEER_SOURCES, or BENCH_TPCC_PEERS to the peers wanted, empty for ours alone)")
    return names


def main() -> None:
    import logging

    logging.getLogger("mysqlbench").setLevel(logging.WARNING)  # the tools' whole output is in the json
    available = asked_peers()
    server = ManagedServer(ManagedSpec.load("bench"))
    server.start(BUFFER_POOL)
    password = server.ensure_benchmark_user()
    target = server.connection(password)
    drivers = ["ours", *available]
    print(f"TPC-C side by side: loading {WAREHOUSES} warehouse(s) for {', '.join(drivers)} (untimed)...", flush=True)
    loads = load_all(server, target, available)
    server.snapshot(SNAPSHOT)
    results: dict[str, list[dict]] = {d: [] for d in drivers}
    try:
        for run in range(RUNS):
            for name in drivers if run % 2 == 0 else drivers[::-1]:  # order alternates: neither always first
                got = one_run(server, target, name)
                results[name].append(got)
                print(f"run {run + 1}/{RUNS} {name}: {got['new_orders_per_min']:,.0f} New-Orders/min from the "
                      f"database, driver CPU {got['driver_cpu_share'] or float('nan'):.2f} of a core", flush=True)
    finally:
        server.stop()
        shutil.rmtree(server.snapshot_dir(SNAPSHOT), ignore_errors=True)
        server.start()
        admin(server, *(f"DROP SCHEMA IF EXISTS `{s}`" for s in SCHEMAS.values()))
    median = {name: {key: statistics.median(r[key] for r in runs) if all(r[key] is not None for r in runs) else None
                     for key in runs[0]} for name, runs in results.items()}
    summary = {"server": server.health()["version"], "warehouses": WAREHOUSES, "connections": CONNECTIONS,
               "rampup_s": RAMPUP_S, "measure_s": MEASURE_S, "buffer_pool": BUFFER_POOL, "runs": RUNS,
               "load_s": {k: round(v, 1) for k, v in loads.items()}, "median": median, "raw": results,
               "peers_asked": available}
    intervals = {}
    for peer in available:
        summary[f"ratio_ours_to_{peer}"] = median["ours"]["new_orders_per_min"] / median[peer]["new_orders_per_min"]
        # each run measured every driver back to back from the same snapshot, in alternating order: a pair per run
        intervals[peer] = compare([r["new_orders_per_min"] for r in results[peer]],
                                  [r["new_orders_per_min"] for r in results["ours"]], paired=True)
        summary[f"ratio_ours_to_{peer}_interval"] = intervals[peer].as_dict()
    out = paths.work_dir() / "bench" / "tpcc_bench.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(summary, indent=2))
    print(f"\nTPC-C-derived, {summary['server']}, {WAREHOUSES} warehouse(s), {CONNECTIONS} connections, "
          f"{RAMPUP_S} s rampup + {MEASURE_S} s measured, 2G buffer pool, median of {RUNS} run(s)")
    print("  driver          New-Orders/min (database)   tool's own figure     driver CPU   server CPU   load")
    for name in drivers:
        m = median[name]
        own = {"ours": "New-Orders/min", peers.TPCC_MYSQL: "tpmC", peers.SYSBENCH_TPCC: "tps"}[name]
        share = f"{m['driver_cpu_share']:.2f}" if m["driver_cpu_share"] is not None else "absent"
        print(f"  {name:<15} {m['new_orders_per_min']:>24,.0f}   {m['own_figure']:>12,.1f} {own:<6}"
              f"   {share:>10}   {m['server_cpu_share']:>10.2f}   {loads[name]:6.1f} s")
    for peer in available:
        print(f"  ratio ours / {peer}: {summary[f'ratio_ours_to_{peer}']:.2f} (medians); paired: "
              f"{intervals[peer].ratio_words()}")
    if not available:
        print("  no peer asked for (BENCH_TPCC_PEERS is empty): ours alone")
    print(f"  (CPU in cores: 1.00 is one core busy; written to {out})")


if __name__ == "__main__":
    main()
