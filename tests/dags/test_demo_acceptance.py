"""Issue 22's acceptance on the demo study (tpch_bka_study as `make demo` runs it: 4 repetitions a
point, cold and warm) on the session's managed MariaDB: three runs at SF 0.01 with the same inputs
never make opposite supported claims, and at SF 0.1, cold, BKA on vs off reads fewer pages from
disk as a supported finding while its time is never a supported "more" (seed 000's direction).
The first does not hold yet (marked xfail with what was seen, and run by `make acceptance`, not
`make test`: an expected failure cannot fail the suite); the second does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mysqlbench.studies.report import report_dir

from conftest import TEST_CONN

pytestmark = pytest.mark.serial  # judges measured effects: verdicts on time from runs minutes apart

DEMO = {"target_conn_id": TEST_CONN, "repetitions": 4, "seed": 21}  # make demo's repetitions


@pytest.fixture(scope="module")
def bag(airflow_db, target):
    from airflow.dag_processing.dagbag import DagBag
    from airflow.models.pool import Pool

    Pool.create_or_update_pool(f"target_{TEST_CONN}", slots=1, description="tests", include_deferred=False)
    return DagBag(dag_folder=str(Path(__file__).resolve().parents[2] / "dags"))


def _summary(bag, **conf) -> dict:
    from airflow.dag_processing.dagbag import DagBag

    result = DagBag(dag_folder=bag.dag_folder).get_dag("tpch_bka_study").test(run_conf={**DEMO, **conf})
    assert str(result.state) == "success"
    summary = json.loads((report_dir(result.dag_id, result.run_id) / "summary.json").read_text())
    assert summary["valid"]
    return {**summary, "run_id": result.run_id}


def _executions(run_id: str, points: set[str]) -> list[str]:
    """Each measured execution of ``points`` in ``run_id``, in time order, with what the host did
    during its window: what a contradiction's cause is read from (a CI log keeps nothing else)."""
    from mysqlbench.results.store import ResultsStore, samples

    rows = ResultsStore().measured_rows(samples, dag_id="tpch_bka_study", run_id=run_id)
    host = {(r["point"], r["repetition"], r["metric"]): r["value"] for r in rows if r["metric"].startswith("os_")}
    out = []
    for r in rows:
        if r["metric"] == "client_seconds" and r["point"] in points and r["status"] == "ok":
            meta = json.loads(r["metadata"])
            facts = {m: host.get((r["point"], r["repetition"], m)) for m in
                     ("os_steal_pct", "os_cpu_iowait_pct", "os_disk_read_ops", "os_other_cpu_pct")}
            out.append((meta["window"]["start"], f"{r['point']} rep {r['repetition']} ({r['task_id']}): "
                                                 f"{1000 * r['value']:.1f} ms {facts}"))
    return [line for _, line in sorted(out)]


def _claims(summary: dict) -> dict[tuple, str]:
    """Each comparison's supported verdict ("more" or "less"), by what it compares."""
    return {(c["title"], c["cache"], c["subject"], c["on"], c["off"], c["metric"]): c["verdict"]
            for c in summary["comparisons"] if c["verdict"] in ("more", "less")}


@pytest.mark.open_acceptance  # make acceptance: an expected failure cannot fail make test, so it is not spent there
@pytest.mark.xfail(strict=False, reason=(
    "issue 22, open: at SF 0.01, cold, three identical demo runs still made opposite supported time claims "
    "(bka on vs off at 256K: 'less' and 'more' on 2026-12-06) after the fixed count was spread one repetition "
    "a task; what varies between runs at that size is not found yet"))
def test_the_demo_never_contradicts_itself(bag):
    runs = [_summary(bag, scale_factor=0.01, schema="tpch_accept") for _ in range(3)]
    claims = [_claims(s) for s in runs]
    for i, a in enumerate(claims):
        for j in range(i + 1, len(claims)):
            b = claims[j]
            opposite = {k: (a[k], b[k]) for k in a.keys() & b.keys() if a[k] != b[k]}
            points = {p for k in opposite for p in (k[3], k[4])}
            assert not opposite, "\n".join([str(opposite), *(line for run in (runs[i], runs[j]) for line in
                                                              [run["run_id"], *_executions(run["run_id"], points)])])


def test_the_demo_finds_the_seeds_direction(bag):
    big = _summary(bag, scale_factor=0.1, schema="tpch_accept_sf01")
    cold = [c for c in big["comparisons"] if c["knob"] == "bka" and c["cache"] == "cold"]
    reads = [c for c in cold if c["metric"] == "physical_reads"]
    times = [c for c in cold if c["metric"] == "client_seconds"]
    assert reads and times and all(c["n"] == 4 for c in reads + times), cold
    assert any(c["verdict"] == "less" for c in reads), reads  # fewer pages read from disk, supported
    assert not any(c["verdict"] == "more" for c in reads + times), cold
    finding = next(f for f in big["findings"] if f.startswith("bka on vs off, cold cache"))
    assert "fewer physical reads" in finding, finding
