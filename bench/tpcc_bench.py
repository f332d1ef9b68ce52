"""`make bench` (TPC-C): drivers side by side in one run on one managed server (the `bench` target,
2 GB buffer pool), every driver on the same verified dataset (our loader's, snapshotted once and
restored, the server restarted, before every run: every run starts from the same bytes and a cold
buffer pool its rampup warms) and the same mix (the peers' 10/10/1/1/1 deck):

- ours-procedures: our driver, one stored-procedure CALL a transaction (the default);
- ours-statements: our driver, one statement a round trip as tpcc-mysql issues them (text protocol);
- ours-statements-2p: the same, its terminals spread over BENCH_TPCC_PROCESSES (2) processes instead
  of threads of one (1 leaves it out): whether the GIL holds our driver back;
- tpcc-mysql (its statements prepared on the server) and sysbench-tpcc (text protocol, through merge
  views onto our tables), as the study engine runs them (`driver:` in a TPC-C spec).

Two separate questions, each a ratio with its paired 95% interval: driver efficiency (ours in
statement mode against each peer: the same data, mix and round trips) and the architecture's gain
(ours, procedures against statements). Runs alternate their order (a block of every driver a run,
the order reversed every other run), at least BENCH_TPCC_RUNS (6: the fewest pairs a 95% signed-rank
interval exists for) and until every ratio's verdict is decided against a 3% band or
BENCH_TPCC_MAX_RUNS (12) are spent. Every driver is counted the same way, from the database: the
change in sum(d_next_o_id) over the measured window (the rampup outside it), beside the tool's own
figure; per New-Order, the server's client statements (`Questions`: statements inside a stored
procedure are not counted), bytes on the wire (`Bytes_received` + `Bytes_sent`), the server's CPU
and the driver's. The runs use the very code the study engine runs (`workload._ours`,
`workload._peer`), so this measures what a study measures.

Peers come from MYSQLBENCH_PEER_SOURCES (default ../shared/refs beside the repository).
BENCH_TPCC_PEERS names the peers to compare with (default: tpcc-mysql,sysbench-tpcc; empty: ours
alone): one that cannot be built fails the bench with why, before any server starts, never a
comparison that quietly leaves it out. BENCH_TPCC_WAREHOUSES (2), BENCH_TPCC_CONNECTIONS (8),
BENCH_TPCC_RAMPUP_S (10), BENCH_TPCC_MEASURE_S (30), BENCH_TPCC_INTERVAL_S (10). The JSON goes to
work/bench/tpcc_bench.json; `bench/tpcc_bench.py --table FILE` prints the README's table from it.
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
MEASURE_S = int(os.environ.get("BENCH_TPCC_MEASURE_S", "30"))
INTERVAL_S = int(os.environ.get("BENCH_TPCC_INTERVAL_S", "10"))
RUNS = int(os.environ.get("BENCH_TPCC_RUNS", "6"))
MAX_RUNS = max(RUNS, int(os.environ.get("BENCH_TPCC_MAX_RUNS", "12")))
BAND = 0.03  # a ratio within 3% of 1.0 is "no difference"
BUFFER_POOL = {"innodb_buffer_pool_size": "2G"}
SCHEMA = "bench_tpcc"
SNAPSHOT = "tpcc_bench"
PROCESSES = int(os.environ.get("BENCH_TPCC_PROCESSES", "2"))
OURS = {"ours-procedures": ("procedures", 1), "ours-statements": ("statements", 1),
        **({f"ours-statements-{PROCESSES}p": ("statements", PROCESSES)} if PROCESSES > 1 else {})}
PROTOCOL = {"ours-procedures": "stored procedures, one CALL a transaction",
            "ours-statements": "a statement a round trip, text protocol",
            f"ours-statements-{PROCESSES}p": f"as ours-statements, terminals over {PROCESSES} processes",
            peers.TPCC_MYSQL: "a statement a round trip, prepared on the server",
            peers.SYSBENCH_TPCC: "a statement a round trip, text protocol, through views"}
OWN_FIGURE = {**{name: "New-Orders/min" for name in OURS}, peers.TPCC_MYSQL: "tpmC", peers.SYSBENCH_TPCC: "tps"}
STATUS = ("Questions", "Bytes_received", "Bytes_sent")


class Window:
    """The engine's window without the engine: runs the measure phase, and reads the server's
    counters and CPU at its edges (through a connection opened before the run)."""
    aborted = False

    def __init__(self, server: ManagedServer):
        self.server, self.conn, self.edges = server, server.admin_connect(), []

    def _read(self) -> dict[str, float]:
        with self.conn.cursor() as cur:
            cur.execute("SHOW GLOBAL STATUS WHERE Variable_name IN (%s, %s, %s)", STATUS)
            status = {name: float(value) for name, value in cur.fetchall()}
        return {**status, "cpu_s": mysqld_cpu_s(self.server)}

    def run(self, fn, kill, tool_pid=None):  # the engine's signature; the bench reads the tool's CPU itself
        self.edges.append(self._read())
        fn()
        self.edges.append(self._read())
        return SimpleNamespace(error=None)

    def delta(self) -> dict[str, float]:
        before, after = self.edges[0], self.edges[-1]
        return {key: after[key] - before[key] for key in before}

    def close(self) -> None:
        self.conn.close()


def admin(server: ManagedServer, *statements: str) -> None:
    conn = server.admin_connect()
    try:
        with conn.cursor() as cur:
            for statement in statements:
                cur.execute(statement)
    finally:
        conn.close()


def mysqld_cpu_s(server: ManagedServer) -> float:
    return process_cpu_seconds(server.pid())


def load(target) -> float:
    build = TpccBuild(TpccLoadParams(warehouses=WAREHOUSES, schema=SCHEMA, target_conn_id=target.conn_id), target)
    started = time.monotonic()
    _, result = lifecycle.rebuild(build, build.identify())  # every step and the verification, as tpcc_load runs them
    if not result.success:
        raise MysqlbenchError(f"our load failed validation: {result.failures}")
    return time.monotonic() - started


def one_run(server: ManagedServer, target, name: str) -> dict:
    server.restore(SNAPSHOT)
    server.start(BUFFER_POOL)
    conn = target.connect(database=SCHEMA)
    window = Window(server)
    try:
        session = SimpleNamespace(conn=conn, target=target, schema=SCHEMA, window=window)
        # every driver deals the peers' own 10/10/1/1/1 mix: the same mix on every side
        config = tpcc_driver.DriverConfig(warehouses=WAREHOUSES, connections=CONNECTIONS, rampup_s=RAMPUP_S,
                                          measure_s=MEASURE_S, interval_s=INTERVAL_S, mix=tpcc_workload.PEERS_MIX,
                                          protocol=OURS.get(name, ("procedures", 1))[0],
                                          processes=OURS.get(name, ("procedures", 1))[1])
        marker = ownership.read_marker(conn, SCHEMA)
        if name in OURS:
            _, out, counted = tpcc_workload._ours(session, config, marker, name)
            own = out["new_orders_per_min"]
        else:  # on our tables, as a study with `driver: <peer>` runs it
            _, out, counted = tpcc_workload._peer(session, config, marker, name)
            figure = out["tool_figure"]
            own = figure.get("tpmC") if name == peers.TPCC_MYSQL else figure["tps_in_window"]
        delta = window.delta()
    finally:
        window.close()
        conn.close()
    new_orders = counted["new_orders"]

    def per(value: float | None) -> float | None:
        return value / new_orders if value is not None and new_orders else None

    return {"new_orders_per_min": new_orders * 60 / counted["seconds"], "window_s": counted["seconds"],
            "new_orders": new_orders, "own_figure": own,
            "driver_cpu_share": (counted["driver_cpu_s"] / counted["seconds"]
                                 if counted["driver_cpu_s"] is not None else None),
            "server_cpu_share": delta["cpu_s"] / counted["seconds"],
            "statements_per_new_order": per(delta["Questions"]),
            "bytes_per_new_order": per(delta["Bytes_received"] + delta["Bytes_sent"]),
            "server_cpu_ms_per_new_order": per(1000 * delta["cpu_s"]),
            "driver_cpu_ms_per_new_order": per(1000 * counted["driver_cpu_s"])
            if counted["driver_cpu_s"] is not None else None}


def client_cost(target, statements: int = 5000) -> dict[str, float]:
    """What one statement costs our driver's client alone: New-Order's item lookup by primary key,
    issued back to back on one connection (mysqlclient, text protocol), the process's CPU and the
    wall time per statement. The rest of a statement-mode transaction's driver CPU is ours."""
    import random

    from mysqlbench.workloads.tpcc.statements import statements as named

    sql, rng = named()["new_order_item"], random.Random(1)
    with target.session(database=SCHEMA) as conn, conn.cursor() as cur:
        cpu, wall = time.process_time(), time.perf_counter()
        for _ in range(statements):
            cur.execute(sql, (rng.randint(1, 100_000),))
            cur.fetchone()
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    return {"statements": statements, "client_cpu_us": 1e6 * cpu / statements, "wall_us": 1e6 * wall / statements}


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


def comparisons(available: list[str]) -> list[tuple[str, str, str]]:
    """(label, A, B): each ratio B / A the bench states, with what it answers."""
    out = [(f"ours-statements / {peer} (driver efficiency)", peer, "ours-statements") for peer in available]
    out.append(("ours-procedures / ours-statements (stored procedures' gain)", "ours-statements", "ours-procedures"))
    if PROCESSES > 1:
        out.append((f"ours-statements-{PROCESSES}p / ours-statements (terminals in {PROCESSES} processes, not threads "
                    "of one: the GIL)", "ours-statements", f"ours-statements-{PROCESSES}p"))
    return out


def effects(results: dict[str, list[dict]], available: list[str]) -> dict[str, object]:
    # each run measured every driver back to back from the same snapshot, in alternating order: a pair per run
    return {label: compare([r["new_orders_per_min"] for r in results[a]], [r["new_orders_per_min"] for r in results[b]],
                           paired=True, band=BAND) for label, a, b in comparisons(available)}


def spread(values: list[float | None]) -> dict[str, float | None]:
    kept = [v for v in values if v is not None]
    if not kept:
        return {"median": None, "q1": None, "q3": None}
    q = statistics.quantiles(kept, n=4, method="inclusive") if len(kept) > 1 else [kept[0]] * 3
    return {"median": statistics.median(kept), "q1": q[0], "q3": q[2]}


def goal(summary: dict, available: list[str]) -> str:
    """Issue 26's goal, judged from this run: ours in statement mode commits at least as many
    New-Orders as the fastest peer (the paired interval's lower bound at or above 1.0), with less
    driver CPU a New-Order."""
    if not available:
        return "goal (ours-statements at least the fastest peer): no peer measured"
    drivers, ratios = summary["drivers"], summary["ratios"]
    fastest = max(available, key=lambda p: drivers[p]["new_orders_per_min"]["median"])
    ratio = ratios[f"ours-statements / {fastest} (driver efficiency)"]
    ours_cpu = drivers["ours-statements"]["driver_cpu_ms_per_new_order"]["median"]
    peer_cpu = drivers[fastest]["driver_cpu_ms_per_new_order"]["median"]
    throughput = ratio["ci_low"] is not None and 1 + ratio["ci_low"] >= 1.0
    cpu = ours_cpu is not None and peer_cpu is not None and ours_cpu < peer_cpu
    words = (f"ours-statements / {fastest}: {ratio['words']}; driver CPU a New-Order {ours_cpu or float('nan'):.2f} "
             f"ms against {peer_cpu or float('nan'):.2f}")
    verdict = "met" if throughput and cpu else "NOT met"
    return f"goal (ours-statements at least the fastest peer, with less driver CPU): {verdict} ({words})"


def table(summary: dict) -> str:
    """The README's table, from the bench's JSON."""
    lines = ["| driver | protocol | New-Orders/min (median, IQR) | statements / New-Order | bytes / New-Order | "
             "server CPU ms / New-Order | driver CPU ms / New-Order |", "| --- | --- | ---: | ---: | ---: | ---: | ---: |"]
    def cell(s: dict, key: str, digits: int = 1) -> str:
        value = s[key]["median"]
        return "absent" if value is None else f"{value:,.{digits}f}"

    for name, s in summary["drivers"].items():
        rate = s["new_orders_per_min"]

        lines.append(f"| {name} | {s['protocol']} | {rate['median']:,.0f} ({rate['q1']:,.0f} .. {rate['q3']:,.0f}) | "
                     f"{cell(s, 'statements_per_new_order')} | {cell(s, 'bytes_per_new_order', 0)} | "
                     f"{cell(s, 'server_cpu_ms_per_new_order', 2)} | {cell(s, 'driver_cpu_ms_per_new_order', 2)} |")
    lines.append("")
    for label, effect in summary["ratios"].items():
        lines.append(f"- {label}: {effect['words']}; {effect['verdict']}")
    return "\n".join(lines)


def main() -> None:
    import logging

    if sys.argv[1:2] == ["--table"]:
        print(table(json.loads(Path(sys.argv[2]).read_text())))
        return
    logging.getLogger("mysqlbench").setLevel(logging.WARNING)  # the tools' whole output is in the json
    available = asked_peers()
    server = ManagedServer(ManagedSpec.load("bench"))
    server.start(BUFFER_POOL)
    password = server.ensure_benchmark_user()
    target = server.connection(password)
    drivers = [*OURS, *available]
    print(f"TPC-C side by side: loading {WAREHOUSES} warehouse(s) once for {', '.join(drivers)} (untimed)...",
          flush=True)
    load_s = load(target)
    server.snapshot(SNAPSHOT)
    cost = client_cost(target)
    results: dict[str, list[dict]] = {d: [] for d in drivers}
    stop = f"BENCH_TPCC_MAX_RUNS ({MAX_RUNS}) spent with a ratio still inconclusive"
    try:
        for run in range(MAX_RUNS):
            for name in drivers if run % 2 == 0 else drivers[::-1]:  # order alternates: neither always first
                got = one_run(server, target, name)
                results[name].append(got)
                print(f"run {run + 1} {name}: {got['new_orders_per_min']:,.0f} New-Orders/min from the database",
                      flush=True)
            if run + 1 >= RUNS and all(e.verdict.value != "inconclusive" for e in effects(results, available).values()):
                stop = f"every ratio decided after {run + 1} runs (at least {RUNS})"
                break
    finally:
        server.stop()
        shutil.rmtree(server.snapshot_dir(SNAPSHOT), ignore_errors=True)
        server.start()
        admin(server, f"DROP SCHEMA IF EXISTS `{SCHEMA}`", f"DROP SCHEMA IF EXISTS `{peers.views_schema(SCHEMA)}`")
    runs = len(results["ours-procedures"])
    keys = [k for k in results["ours-procedures"][0] if k not in ("own_figure",)]
    summary = {"server": server.health()["version"], "warehouses": WAREHOUSES, "connections": CONNECTIONS,
               "rampup_s": RAMPUP_S, "measure_s": MEASURE_S, "buffer_pool": BUFFER_POOL, "runs": runs, "stop": stop,
               "mix": tpcc_workload.PEERS_MIX, "dataset": f"ours, {WAREHOUSES} warehouse(s), loaded in {load_s:.1f} s",
               "band": BAND, "peers_asked": available, "client_cost_per_statement": cost,
               "drivers": {name: {"protocol": PROTOCOL[name], "own_figure_unit": OWN_FIGURE[name],
                                  "own_figure": spread([r["own_figure"] for r in rs]),
                                  **{k: spread([r[k] for r in rs]) for k in keys}} for name, rs in results.items()},
               "raw": results}
    summary["ratios"] = {label: {**e.as_dict(), "words": e.ratio_words(), "verdict": e.verdict.value}
                         for label, e in effects(results, available).items()}
    out = paths.work_dir() / "bench" / "tpcc_bench.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(summary, indent=2, default=str))
    print(f"\nTPC-C-derived, {summary['server']}, {WAREHOUSES} warehouse(s), {CONNECTIONS} connections, "
          f"{RAMPUP_S} s rampup + {MEASURE_S} s measured, 2G buffer pool, mix {tpcc_workload.PEERS_MIX} on every "
          f"side, every driver on our dataset; {runs} run(s) each ({stop})")
    print("  driver            New-Orders/min (database)   tool's own figure   statements/NO   bytes/NO   "
          "server CPU ms/NO   driver CPU ms/NO")
    def num(d: dict, key: str, fmt: str) -> str:
        value = d[key]["median"]
        return "absent" if value is None else format(value, fmt)

    for name in drivers:
        d = summary["drivers"][name]
        print(f"  {name:<17} {d['new_orders_per_min']['median']:>24,.0f}   {num(d, 'own_figure', ',.1f'):>10} "
              f"{OWN_FIGURE[name]:<6}   {num(d, 'statements_per_new_order', '.1f'):>13}   "
              f"{num(d, 'bytes_per_new_order', ',.0f'):>8}   {num(d, 'server_cpu_ms_per_new_order', '.2f'):>16}   "
              f"{num(d, 'driver_cpu_ms_per_new_order', '.2f'):>16}")
    for name in drivers:
        print(f"  {name}: {PROTOCOL[name]}")
    for label, effect in summary["ratios"].items():
        print(f"  ratio {label}: {effect['words']}; {effect['verdict']}")
    print("  " + goal(summary, available))
    statement_cpu = summary["drivers"]["ours-statements"]["statements_per_new_order"]["median"]
    if statement_cpu is not None:
        share = statement_cpu * cost["client_cpu_us"] / 1000
        print(f"  our client alone: {cost['client_cpu_us']:.0f} us of CPU ({cost['wall_us']:.0f} us wall) a primary-key "
              f"statement, back to back on one connection; at {statement_cpu:.1f} statements a New-Order that is "
              f"{share:.2f} ms of the statement mode's driver CPU per New-Order")
    if not available:
        print("  no peer asked for (BENCH_TPCC_PEERS is empty): ours alone")
    print(f"  (medians over the runs; NO = committed New-Order; written to {out})")


if __name__ == "__main__":
    main()
