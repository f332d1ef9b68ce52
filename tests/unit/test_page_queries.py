"""Issue 28 item 2: what the Benchmarks pages read stays bounded as the nightly history grows. The
history is bench/history_bench.py's generator (the shipped nightly suite's series, with noise and
steps) written into a SQLite results store: the index, a run's tab and the compare page each run a
fixed number of statements, the same at 4 nights as at 8 (no statement per run or per row), and
every read of the samples table goes through an index (SQLite's EXPLAIN QUERY PLAN). `make bench`
times the same reads at a year's size (BENCH_HISTORY_NIGHTS=365)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    sys.path.insert(0, str(REPO / "bench"))
    import history_bench

    from mysqlbench.results.store import ResultsStore

    out = {}
    for nights in (4, 8):
        store = ResultsStore(f"sqlite:///{tmp_path_factory.mktemp('history') / 'results.db'}")
        history_bench.write_history(store, history_bench.suite_series(), nights)
        out[nights] = store
    return out


def _reads(store) -> dict[str, list[tuple[str, tuple]]]:
    """Each page's statements, as the pages call the store (app.py's handlers)."""
    import sqlalchemy as sa

    from mysqlbench.ui.app import compare_runs, report_location, runs_of

    seen: list[tuple[str, tuple]] = []

    def listen(conn, cursor, statement, parameters, context, executemany):
        seen.append((statement, parameters))

    sa.event.listen(store.engine, "before_cursor_execute", listen)
    pages = {}
    try:
        power = runs_of(store)["tpch_power"]
        pages["index"], seen[:] = list(seen), []
        runs_of(store)
        report_location(store, "tpch_power", power[0]["run_id"])
        pages["run tab"], seen[:] = list(seen), []
        compare_runs(store, "tpch_power", power[-1]["run_id"], power[0]["run_id"])
        pages["compare"] = list(seen)
    finally:
        sa.event.remove(store.engine, "before_cursor_execute", listen)
    return pages


def test_each_page_runs_the_same_few_statements_however_long_the_history(stores):
    small, large = (_reads(stores[n]) for n in (4, 8))
    assert {page: len(s) for page, s in large.items()} == {page: len(s) for page, s in small.items()}
    assert all(1 <= len(statements) <= 4 for statements in large.values()), {p: len(s) for p, s in large.items()}


def test_every_read_of_the_samples_uses_an_index(stores):
    """A run's rows are found by ix_samples_task; the index lists every run, so it walks an index,
    never the table (the validations table, one row per validated run, it reads whole)."""
    store = stores[8]
    samples_reads = {}
    with store.engine.connect() as conn:
        for page, statements in _reads(store).items():
            for statement, parameters in statements:
                if not statement.lstrip().upper().startswith("SELECT"):
                    continue
                plan = [row[-1] for row in conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {statement}", parameters)]
                reads = [step for step in plan if step.split()[:2] in (["SCAN", "samples"], ["SEARCH", "samples"])]
                samples_reads.setdefault(page, []).extend(reads)
                assert all("USING" in step and "INDEX" in step for step in reads), (page, plan, statement)
                if page == "compare":  # two runs' rows: found, never walked
                    assert all(step.startswith("SEARCH") for step in plan if step.split()[0] in ("SCAN", "SEARCH")), \
                        (page, plan, statement)
    assert samples_reads["index"] and samples_reads["compare"], samples_reads
