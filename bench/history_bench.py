"""`make bench`: a year of nightly history, and what the regression analysis costs at that size.

Writes BENCH_HISTORY_NIGHTS (365) nights of the shipped nightly suite
(include/configs/regression/nightly_regression.yaml) into a fresh SQLite results store, the way the
study tasks record them: every point and unit of every suite study, three executions a night with
log-normal noise (a CV of 3, 8 or 20% per series), the OS figures of each execution (now and then a
busy night), one plan per unit a night, each run's validation, the server's variables and the host's
facts. A few steps are injected: optimizer_search_depth changed at night 200 with q08 3x slower from
then on and a new plan, a throughput drop of 20% on TPC-C at night 250, one bad night for q03 at 100
(no step), and q18 2.5x slower for the last 5 nights. The recording time of each night is the
night's own (``mysqlbench.results.store._now`` patched while writing; nothing else is).

Then, on that store: the whole regression analysis (every series of the suite's studies), `bin/
mysqlbench history`'s export, and the store's size. Goal (issue 28): the analysis within 60 s here.
The Benchmarks index's and the compare page's data are timed as functions (no HTTP, no
rendering); the run page is not measured yet. The same again on PostgreSQL, a private cluster
started as the tests start one (tests/support/services.py; BENCH_HISTORY_POSTGRES=0 leaves it out).
Writes work/bench/history_bench.json.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import random
import sys
import tempfile
import time
from pathlib import Path
from unittest import mock

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "plugins"))

from mysqlbench import paths  # noqa: E402
from mysqlbench.regression.detect import Thresholds  # noqa: E402
from mysqlbench.regression.spec import load_regression  # noqa: E402
from mysqlbench.results import store as store_module  # noqa: E402
from mysqlbench.results.lineage import Lineage, stable_hash  # noqa: E402
from mysqlbench.results.store import ResultsStore, Sample, Validation  # noqa: E402
from mysqlbench.studies.steps import merged_spec  # noqa: E402
from mysqlbench.workloads.base import Better, workload_class  # noqa: E402

NIGHTS = int(os.environ.get("BENCH_HISTORY_NIGHTS", "365"))
SUITE = REPO / "include" / "configs" / "regression" / "nightly_regression.yaml"
FACTS = {"hostname": "bench1", "cpu_model": "Xeon", "machine": "x86_64", "kernel": "Linux 6.1.0",
         "mem_total_bytes": 24 << 30, "cpu_governor": "performance",
         "disks": [{"name": "sda", "scheduler": "mq-deadline", "rotational": False}]}
BASE_VARIABLES = {"optimizer_search_depth": "62", "innodb_buffer_pool_size": "1073741824"}


def _plan(subject: str, access: str) -> dict:
    return {"query_block": {"select_id": 1, "table": {"table_name": f"t_{subject}", "access_type": access}}}


def suite_series() -> list[dict]:
    """Every (study, point, unit) the nightly suite measures, with its primary metric."""
    out = []
    for entry in load_regression(SUITE).suite:
        spec = merged_spec(entry.study, dict(entry.conf))
        metric = workload_class(spec.workload).primary
        for point in spec.points():
            for unit in spec.units:
                out.append({"study": spec.study, "point": point, "unit": unit, "metric": metric,
                            "target": spec.target, "dataset": f"{spec.workload}-{stable_hash(spec.dataset.model_dump())[:8]}"})
    return out


def factor(series: dict, night: int) -> tuple[float, bool]:
    """The injected change at this night: (factor on the time-like value, new plan)."""
    study, unit = series["study"], series["unit"]
    if study == "tpch_power" and unit == "q08" and night >= 200:
        return 3.0, True
    if study == "tpch_power" and unit == "q03" and night == 100:
        return 4.0, False
    if study == "tpch_power" and unit == "q18" and night >= NIGHTS - 5:
        return 2.5, False
    if study == "tpcc_bp_sweep_study" and night >= 250:
        return 1 / 0.8, False
    return 1.0, False


def write_history(store: ResultsStore, series: list[dict], nights: int, seed: int = 7) -> int:
    rng = random.Random(seed)
    levels = {id(s): (rng.uniform(0.01, 2.0), rng.choice((0.03, 0.08, 0.2))) for s in series}
    host = store.keep_host_facts(FACTS)
    start = dt.datetime(2026, 1, 1, 2, 0, tzinfo=dt.timezone.utc)
    rows = 0
    studies = sorted({s["study"] for s in series})
    for night in range(nights):
        when = start + dt.timedelta(days=night)
        busy = rng.random() < 0.05  # a night a neighbour was busy
        variables = {**BASE_VARIABLES, **({"optimizer_search_depth": "2"} if night >= 200 else {})}
        config = store.keep_server_snapshot("mariadb", "10.11.19", variables)
        for study in studies:
            run_id = f"scheduled__{when.isoformat()}"
            base = dict(study=study, dag_id=study, run_id=run_id, try_number=1, spec_hash="spec",
                        package_version="abc", server_flavor="mariadb", server_version="10.11.19",
                        variables_hash=config, host_hash=host)
            mine = [s for s in series if s["study"] == study]
            with mock.patch.object(store_module, "_now", lambda when=when: when):
                for index, s in enumerate(mine):
                    level, cv = levels[id(s)]
                    step, new_plan = factor(s, night)
                    higher = s["metric"].better is Better.HIGHER
                    meta = {"target": s["target"], "cache": s["point"]["cache"], "knobs": s["point"]["knobs"],
                            "swept": s["point"]["swept"]}
                    samples = []
                    for repetition in range(3):
                        noise = math.exp(rng.gauss(0, cv))
                        value = level * noise * (1 / step if higher else step)
                        samples.append(Sample(s["metric"].name, value, s["metric"].unit, kind="metric",
                                              point=s["point"]["label"], subject=s["unit"], repetition=repetition,
                                              metadata=meta))
                        samples.append(Sample("os_other_cpu_pct", rng.uniform(30, 60) if busy else rng.uniform(0, 4),
                                              "pct", kind="os", point=s["point"]["label"], subject=s["unit"],
                                              repetition=repetition, metadata=meta))
                    plan = _plan(s["unit"], "ALL" if new_plan else "ref")
                    samples.append(Sample("plan", None, "json", kind="plan", point=s["point"]["label"],
                                          subject=s["unit"], metadata={**meta, "plan_hash": stable_hash(plan)[:16],
                                                                       "plan": plan}))
                    store.record(Lineage(task_id="measure_point", map_index=index, dataset_id=s["dataset"], **base),
                                 samples)
                    rows += len(samples)
                store.record(Lineage(task_id="validate", map_index=-1, dataset_id=mine[0]["dataset"], **base), [],
                             [Validation("study", True, {}, [])])
    return rows


def measure(store: ResultsStore, series: list[dict], size) -> dict:
    """Write the history into ``store``, then time what reads it; ``size()`` is the store's bytes."""
    from mysqlbench.cli import history_export
    from mysqlbench.regression.analyse import analyse
    from mysqlbench.ui.app import compare_runs, runs_of

    studies = sorted({s["study"] for s in series})
    started = time.perf_counter()
    rows = write_history(store, series, NIGHTS)
    written_s = time.perf_counter() - started
    thresholds = load_regression(SUITE).thresholds or Thresholds()
    started = time.perf_counter()
    analysis = analyse(store, studies, thresholds)
    analyse_s = time.perf_counter() - started
    with mock.patch.object(store_module.ResultsStore, "from_airflow", classmethod(lambda cls: store)):
        started = time.perf_counter()
        exported = history_export(studies, None)
        history_s = time.perf_counter() - started
    # what the Benchmarks index and the compare page read (their data, without HTTP)
    started = time.perf_counter()
    listed = runs_of(store)
    index_s = time.perf_counter() - started
    power = listed["tpch_power"]
    started = time.perf_counter()
    compare_runs(store, "tpch_power", power[-1]["run_id"], power[0]["run_id"])
    compare_s = time.perf_counter() - started
    alerts = sorted({f"{a['label']} ({a['kind']})" for a in analysis["alerts"]})
    known = sorted({f"{s['label']} at {c['run_id'][11:21]} ({c['effect_pct']:+.0f}%)"
                    for s in analysis["series"] for c in s["changes"] if c["regression"] and c["confirmed"]})
    return {"nights": NIGHTS, "series": len(exported["series"]), "studies": studies, "samples": rows,
            "store_bytes": size(), "write_s": round(written_s, 1), "analysis_s": round(analyse_s, 2),
            "history_export_s": round(history_s, 2), "index_data_s": round(index_s, 2),
            "compare_data_s": round(compare_s, 2), "runs_listed": sum(len(v) for v in listed.values()),
            "alerts": alerts, "confirmed_regressions": known}


def _print(name: str, m: dict) -> None:
    print(f"A year of nightly history ({m['nights']} nights of the nightly suite, {m['series']} series, "
          f"{m['samples']:,} samples), {name}:")
    print(f"  store size:                       {m['store_bytes'] / 1e6:8.1f} MB (written in {m['write_s']:.0f} s, "
          "untimed)")
    print(f"  regression analysis, all series:  {m['analysis_s']:8.2f} s (goal: 60 s)")
    print(f"  bin/mysqlbench history export:    {m['history_export_s']:8.2f} s")
    print(f"  Benchmarks index, its data:       {m['index_data_s']:8.2f} s ({m['runs_listed']} runs listed; goal: 1 s "
          "a page)")
    print(f"  compare page, its data:           {m['compare_data_s']:8.2f} s (the first night's tpch_power run against "
          "the last's)")
    print(f"  alerts: {', '.join(m['alerts']) or 'none'}")
    print(f"  confirmed regressions found: {'; '.join(m['confirmed_regressions']) or 'none'}", flush=True)


def main() -> None:
    import sqlalchemy as sa

    sys.path.insert(0, str(REPO / "tests" / "support"))
    from services import start_postgres

    series = suite_series()
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "results.db"
        results["sqlite"] = measure(ResultsStore(f"sqlite:///{db}"), series, lambda: db.stat().st_size)
        _print("SQLite", results["sqlite"])
        if os.environ.get("BENCH_HISTORY_POSTGRES", "1") != "0":
            os.chmod(tmp, 0o755)  # the cluster runs as the postgres user, who must reach its folder
            server = start_postgres(Path(tmp) / "postgres")  # a private cluster, as the tests start one
            try:
                server.create_database("results", "bench", "bench")
                store = ResultsStore(server.url("results", "bench", "bench"))

                def size() -> int:
                    with store.engine.connect() as conn:
                        return int(conn.execute(sa.text("SELECT pg_database_size(current_database())")).scalar())
                results["postgresql"] = measure(store, series, size)
                store.engine.dispose()
            finally:
                server.stop()
            _print("PostgreSQL", results["postgresql"])
    out = paths.work_dir() / "bench" / "history_bench.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2))
    print(f"  written to {out}")


if __name__ == "__main__":
    main()
