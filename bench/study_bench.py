"""`make bench` (studies): orchestration overhead and client vs server query time, measured on the
default tpch_mrr_study spec at SF 1 (BENCH_STUDY_SF), warm, 3 repetitions, dataset already loaded.

overhead = (DAG run wall time - time the tasks record for restarting, warming, measuring, explaining
and validating) / DAG run wall time. Run through `bin/airflow dags test` on the demo target.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SF = float(os.environ.get("BENCH_STUDY_SF", "1"))
CONF = {"scale_factor": SF, "cache": ["warm"], "repetitions": 3}


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
    from mysqlbench.studies.analysis import executions

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
    execs = [e for e in executions([r for r in rows if r["task_id"] == "measure_point"])
             if e.get("client_s") and e.get("server_s") and e["client_s"] > 0.1]
    gaps = [abs(e["client_s"] - e["server_s"]) / e["server_s"] for e in execs]
    summary = {
        "run_id": run_id, "state": state, "scale_factor": SF, "dag_run_wall_s": round(wall, 2),
        "recorded_phase_s": {k: round(v, 2) for k, v in phases.items()},
        "overhead_share": round((wall - recorded) / wall, 4),
        "executions_over_100ms": len(execs),
        "client_vs_server_gap_median": round(statistics.median(gaps), 5) if gaps else None,
        "client_vs_server_gap_max": round(max(gaps), 5) if gaps else None,
    }
    out = REPO / "work" / "bench" / "study_bench.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(summary, indent=2))
    print(f"\ntpch_mrr_study, SF {SF:g}, warm, 3 repetitions ({state}), run {run_id}")
    print(f"  DAG run wall time:                                 {wall:8.2f} s")
    print(f"  recorded restart/warm-up/measure/explain/validate: {recorded:8.2f} s  {summary['recorded_phase_s']}")
    print(f"  orchestration overhead share:                      {summary['overhead_share']:8.2%}")
    if gaps:
        print(f"  client vs server time, {len(gaps)} executions > 100 ms: median gap {summary['client_vs_server_gap_median']:.3%},"
              f" max {summary['client_vs_server_gap_max']:.3%}")
    print(f"  written to {out}")


if __name__ == "__main__":
    main()
