"""`make bench` (studies): orchestration overhead and client vs server query time, measured on the
default tpch_mrr_study spec at SF 1 (BENCH_STUDY_SF), warm, 3 repetitions (BENCH_STUDY_REPETITIONS), dataset
already loaded.

overhead = (DAG run wall time - time the tasks record for restarting, warming, measuring, explaining
and validating) / DAG run wall time. Run through `bin/airflow dags test` on the demo target.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SF = float(os.environ.get("BENCH_STUDY_SF", "1"))
REPETITIONS = int(os.environ.get("BENCH_STUDY_REPETITIONS", "3"))
CONF = {"scale_factor": SF, "cache": ["warm"], "repetitions": REPETITIONS}


def airflow(*args: str) -> None:
    subprocess.run([str(REPO / "bin" / "airflow"), *args], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)


def main() -> None:
    sys.path.insert(0, str(REPO / "plugins"))
    subprocess.run([str(REPO / "bin" / "mysqlbench"), "target", "up", "demo"], check=True, stdout=subprocess.DEVNULL)
    print(f"tpch_mrr_study at SF {SF:g}: loading the dataset if needed (untimed)...", flush=True)
    airflow("dags", "test", "tpch_load", "--conf", json.dumps({"scale_factor": SF}))
    print("timed run...", flush=True)
    airflow("dags", "test", "tpch_mrr_study", "--conf", json.dumps(CONF))

    import sqlalchemy as sa
    from airflow.models import DagRun
    from airflow.utils.session import create_session

    from mysqlbench.results.store import ResultsStore, samples
    from mysqlbench.studies.analysis import execution_frame
    from mysqlbench.workloads.tpch.workload import TpchWorkload

    with create_session() as session:
        run = session.scalars(sa.select(DagRun).where(DagRun.dag_id == "tpch_mrr_study")
                              .order_by(DagRun.start_date.desc()).limit(1)).one()
        wall = (run.end_date - run.start_date).total_seconds()
        run_id, state = run.run_id, str(run.state)
    rows = ResultsStore().rows(samples, dag_id="tpch_mrr_study", run_id=run_id)
    phases: dict[str, float] = {}
    for row in rows:
        if row["metric"] == "phase_seconds":
            phase = json.loads(row["metadata"])["phase"]
            phases[phase] = phases.get(phase, 0.0) + row["value"]
    recorded = sum(phases.values())
    frame = execution_frame([r for r in rows if r["task_id"] == "measure_point"], TpchWorkload.primary)
    timed = frame[(frame["primary"] > 0.1) & frame["server_seconds"].notna()] if not frame.empty else frame
    gaps = list((timed["primary"] - timed["server_seconds"]).abs() / timed["server_seconds"]) if len(timed) else []
    summary = {
        "run_id": run_id, "state": state, "scale_factor": SF, "dag_run_wall_s": round(wall, 2),
        "recorded_phase_s": {k: round(v, 2) for k, v in phases.items()},
        "overhead_share": round((wall - recorded) / wall, 4),
        "executions_over_100ms": len(gaps),
        "client_vs_server_gap_median": round(statistics.median(gaps), 5) if gaps else None,
        "client_vs_server_gap_max": round(max(gaps), 5) if gaps else None,
    }
    out = REPO / "work" / "bench" / "study_bench.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(summary, indent=2))
    print(f"\ntpch_mrr_study, SF {SF:g}, warm, {REPETITIONS} repetitions ({state}), run {run_id}")
    print(f"  DAG run wall time:                                 {wall:8.2f} s")
    print(f"  recorded restart/warm-up/measure/explain/validate: {recorded:8.2f} s  {summary['recorded_phase_s']}")
    print(f"  orchestration overhead share:                      {summary['overhead_share']:8.2%}")
    if gaps:
        print(f"  client vs server time, {len(gaps)} executions > 100 ms: "
              f"median gap {summary['client_vs_server_gap_median']:.3%}, max {summary['client_vs_server_gap_max']:.3%}")
    print(f"  written to {out}")
    if os.environ.get("BENCH_POWER", "1") != "0":
        power()


def power() -> None:
    """tpch_power exactly as shipped (its spec's SF 1, 4G buffer pool): valid, and every one of the
    22 whole answers equal to DuckDB's (compared in the tasks)."""
    import sqlalchemy as sa
    from airflow.models import DagRun
    from airflow.utils.session import create_session

    from mysqlbench.results.store import ResultsStore, samples

    print("\ntpch_power as shipped (SF 1; loads SF 1 if needed)...", flush=True)
    started = time.monotonic()
    subprocess.run([str(REPO / "bin" / "airflow"), "dags", "test", "tpch_power"], stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    wall = time.monotonic() - started
    with create_session() as session:
        run = session.scalars(sa.select(DagRun).where(DagRun.dag_id == "tpch_power")
                              .order_by(DagRun.start_date.desc()).limit(1)).one()
        run_id, state = run.run_id, str(run.state)
    rows = ResultsStore().rows(samples, dag_id="tpch_power", run_id=run_id, task_id="measure_point")
    verdicts = {r["subject"]: json.loads(r["metadata"]).get("oracle") for r in rows if r["kind"] == "answer"}
    matches = sorted(q for q, v in verdicts.items() if v == "match")
    print(f"  run {run_id}: {state} in {wall:.0f} s; {len(matches)} of 22 answers equal to DuckDB's")
    for query, verdict in sorted(verdicts.items()):
        if verdict != "match":
            print(f"  {query}: {verdict}")
    if state != "success" or len(matches) != 22:
        sys.exit("tpch_power as shipped is not valid with 22 of 22 answers")


if __name__ == "__main__":
    main()
