"""tpch_load: generate TPC-H data, create dbgen's tables, load, add the seeds' constraints, rename
to lower case, analyze, and validate, on a target given by an Airflow connection. A valid dataset
emits the ``mysqlbench_tpch_dataset`` Asset (its extra names the dataset id, scale and schema).

Trigger it from the UI (the form is generated from the params model and validates every field) or
with ``bin/airflow dags test tpch_load --conf '{"scale_factor": 0.1}'``. A second trigger with the
same scale factor on an intact, verified dataset skips the work and says so. The steps are declared
in ``mysqlbench.workloads.tpch.build``; the DAG's shape is ``mysqlbench.studies.load_factory``'s.
"""

from mysqlbench.studies.load_factory import load_dag
from mysqlbench.workloads.tpch.build import TpchBuild

tpch_load = load_dag(TpchBuild, dag_id="tpch_load", workload="tpch", asset_facts=("scale_factor",), doc=__doc__,
                     defaults={"scale_factor": 0.1, "target_conn_id": "mysqlbench_demo"})
