"""The TPC-H optimizer studies (MRR, BKA, ICP) and the 22-query power run: one DAG per spec under
include/configs/studies/, built by mysqlbench.studies.factory. Trigger one from the UI and
override any dimension in the form, or e.g.
``bin/airflow dags test tpch_bka_study --conf '{"scale_factor": 0.1, "repetitions": 1}'``.
"""

from mysqlbench.studies.factory import build_all

globals().update(build_all())
