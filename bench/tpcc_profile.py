"""Where our TPC-C driver's CPU goes in statement mode: one terminal, in this process's main thread,
runs BENCH_PROFILE_TRANSACTIONS (3000) transactions of the peers' 10/10/1/1/1 deck against one
warehouse on the `bench` target (loaded and verified first, as tpcc_load does): once plain, for the
client's CPU a transaction, then again under cProfile timing CPU (not wall: a statement's wait for
the server costs the client nothing), which prints the functions by their own CPU and how it splits
between mysqlclient (its C calls and its Python: quoting, building the statement, reading rows),
our transaction code and the rest. The profiler's own cost inflates the profiled total; the shares
are what to read.
Every transaction ends committed or rolled back as the driver's would; the dataset is dropped after.

    source bin/env.sh && .venv/bin/python bench/tpcc_profile.py
"""

from __future__ import annotations

import cProfile
import io
import os
import pstats
import random
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "plugins"))

from mysqlbench import ownership  # noqa: E402
from mysqlbench.errors import MysqlbenchError  # noqa: E402
from mysqlbench.targets.managed import ManagedServer, ManagedSpec  # noqa: E402
from mysqlbench.workloads import lifecycle  # noqa: E402
from mysqlbench.workloads.tpcc import driver  # noqa: E402
from mysqlbench.workloads.tpcc.build import TpccBuild  # noqa: E402
from mysqlbench.workloads.tpcc.models import TpccLoadParams  # noqa: E402
from mysqlbench.workloads.tpcc.statements import Statements  # noqa: E402

TRANSACTIONS = int(os.environ.get("BENCH_PROFILE_TRANSACTIONS", "3000"))
SCHEMA = "bench_tpcc_profile"


def where(filename: str, name: str) -> str:
    if any(part in text for part in ("MySQLdb", "_mysql", "Connection.") for text in (filename, name)):
        return "mysqlclient"
    if "mysqlbench/workloads/tpcc" in filename:
        return "ours"
    return "other"


def main() -> None:
    import logging

    logging.getLogger("mysqlbench").setLevel(logging.WARNING)
    server = ManagedServer(ManagedSpec.load("bench"))
    server.start({"innodb_buffer_pool_size": "1G"})
    target = server.connection(server.ensure_benchmark_user())
    build = TpccBuild(TpccLoadParams(warehouses=1, schema=SCHEMA, target_conn_id=target.conn_id), target)
    try:
        _, verdict = lifecycle.rebuild(build, build.identify())
        if not verdict.success:
            raise MysqlbenchError(f"the load failed validation: {verdict.failures}")
        with target.session(database=SCHEMA) as conn:
            c_load = ownership.read_marker(conn, SCHEMA)["c_load"]
            rng = random.Random(7)
            inputs = driver.Inputs(1, 1, driver.Constants.for_run(c_load, 7), rng, district=1)
            dealer = driver.Dealer("tpcc-mysql", rng)
            executor = Statements(conn)

            def transactions() -> None:
                for _ in range(TRANSACTIONS):
                    kind = dealer.next()
                    executor.run(kind, getattr(inputs, kind)())

            cpu, wall = time.process_time(), time.perf_counter()
            transactions()
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
            profile = cProfile.Profile(time.process_time)
            profile.runcall(transactions)
            executor.close()
    finally:
        conn = server.admin_connect()
        try:
            with conn.cursor() as cur:
                cur.execute(f"DROP SCHEMA IF EXISTS `{SCHEMA}`")
        finally:
            conn.close()
    stats = pstats.Stats(profile)
    shares: dict[str, float] = {}
    for (filename, _, name), (_, _, tottime, _, _) in stats.stats.items():
        group = where(filename, name)
        shares[group] = shares.get(group, 0.0) + tottime
    total = sum(shares.values())
    print(f"{TRANSACTIONS} transactions (10/10/1/1/1) by statements on one connection: {cpu:.2f} s of CPU, "
          f"{wall:.2f} s wall; {1000 * cpu / TRANSACTIONS:.3f} ms of client CPU a transaction")
    print("profiled CPU by where it is spent: " + ", ".join(
        f"{group} {100 * value / total:.0f}%" for group, value in sorted(shares.items(), key=lambda kv: -kv[1])))
    out = io.StringIO()
    pstats.Stats(profile, stream=out).sort_stats("tottime").print_stats(15)
    print(out.getvalue())


if __name__ == "__main__":
    main()
