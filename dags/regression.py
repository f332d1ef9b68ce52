"""Regression DAGs (Airflow), one per spec under include/configs/regression/ (and
MYSQLBENCH_REGRESSION_DIRS), built by mysqlbench.regression.factory: the nightly sweep (cron: its
suite of study runs, then the change-point analysis and the alert) and the analysis run whenever a
study publishes its Asset. A broken spec is left out here and reported by study_spec_errors.py.
Try one with ``bin/airflow dags test regression_on_publish --conf '{"studies": ["tpch_power"]}'``.
"""

from mysqlbench.regression.factory import build_all

_dags, _errors = build_all()
globals().update(_dags)
