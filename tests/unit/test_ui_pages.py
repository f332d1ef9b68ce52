"""The Benchmarks pages' run lists (plugins/mysqlbench/ui/app.py): the index shows a study's newest
runs and links to a page with all of them; both offer the compare form. The pages themselves run in
a real Airflow in tests/test_readme_commands.py (browser) and tests/test_celery_executor.py."""

import re

from mysqlbench.ui.app import INDEX_RUNS, _study_runs


def _runs(n):
    return [{"run_id": f"run_{i:03d}", "measured_at": f"2026-12-{1 + i // 24:02d} {i % 24:02d}:00:00",
             "servers": ["mariadb 10.11"], "validity": "valid" if i % 2 else "INVALID"} for i in range(n, 0, -1)]


def _linked_runs(page: str) -> list[str]:
    return re.findall(r"href='/mysqlbench/runs/tpch_power/(run_\d+)'", page)


def test_the_index_caps_a_study_and_links_to_all_of_its_runs():
    runs = _runs(INDEX_RUNS + 12)
    index = "".join(_study_runs("/mysqlbench", "tpch_power", runs, limit=INDEX_RUNS))
    assert _linked_runs(index) == [r["run_id"] for r in runs[:INDEX_RUNS]]  # the newest, newest first
    assert f"href='/mysqlbench/studies/tpch_power'>all {INDEX_RUNS + 12} runs" in index
    every = "".join(_study_runs("/mysqlbench", "tpch_power", runs, limit=None))
    assert _linked_runs(every) == [r["run_id"] for r in runs]
    assert "/mysqlbench/studies/" not in every
    # the compare form offers every run, not only the shown ones; A the one before the newest
    assert index.count("<option") == 2 * len(runs)
    assert "<option value='run_061' selected>" in index and "<option value='run_062' selected>" in index


def test_one_run_has_nothing_to_compare_and_names_are_escaped():
    page = "".join(_study_runs("/mb", "s<x>", [{"run_id": "manual__<b>", "measured_at": "", "servers": [],
                                                 "validity": "not validated"}], limit=INDEX_RUNS))
    assert "<form" not in page and "<b>" not in page and "s&lt;x&gt;" in page
