"""Every study spec under include/configs/studies/ (and MYSQLBENCH_STUDY_DIRS) as a DAG, whatever
its workload, built by mysqlbench.studies.factory. Trigger one from the UI and override any
dimension in the form, or e.g.
``bin/airflow dags test tpch_bka_study --conf '{"scale_factor": 0.1, "repetitions": 1}'``.
A broken spec is left out here and reported by study_spec_errors.py.
"""

from mysqlbench.studies.factory import build_all

_dags, _errors = build_all()
globals().update(_dags)
