"""The Benchmarks pages on a deployment's API server: its container has no work directory and may
not make one (the compose stack's api-server runs as AIRFLOW_UID in a root-owned /opt/mysqlbench;
its index failed there). Reports come from the results store; the pages only read the disk."""

from __future__ import annotations

from mysqlbench.results.store import ResultsStore


def test_reports_are_read_from_the_store_where_no_work_directory_can_be_made(tmp_path, monkeypatch):
    from mysqlbench.ui import app

    store = ResultsStore(f"sqlite:///{tmp_path / 'results.db'}")
    report = tmp_path / "written" / "manual__2026-12-07T14_50_57.629616_00_00"
    report.mkdir(parents=True)
    (report / "index.html").write_text("<h1>tpch_bka_study</h1>")
    (report / "trend.json").write_text("{}")
    store.keep_report("tpch_bka_study", report)
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("MYSQLBENCH_WORK_DIR", str(blocker / "work"))  # nothing can be made under a file
    assert app.report_bytes(store, "tpch_bka_study", report.name, "index.html") == b"<h1>tpch_bka_study</h1>"
    assert [r["run"] for r in app.other_reports(store)] == [report.name]
    assert app.report_bytes(store, "tpch_bka_study", "no_such_run", "index.html") is None
    assert blocker.is_file()
