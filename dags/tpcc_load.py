"""tpcc_load: TPC-C's initial population for W warehouses (the specification's data rules), in
tpcc-mysql's nine tables, on a target given by an Airflow connection: create the tables, generate
and load warehouse by warehouse over parallel connections, add tpcc-mysql's indexes and foreign
keys, analyze, install the driver's stored procedures, and validate with Great Expectations (row
counts, data rules, consistency conditions 1-4). A valid dataset emits the
``mysqlbench_tpcc_dataset`` Asset.

``bin/airflow dags test tpcc_load --conf '{"warehouses": 2}'``. A second trigger with the same
warehouses and seed on an intact, verified dataset skips the work and says so. The steps are
declared in ``mysqlbench.workloads.tpcc.build``; the DAG's shape is ``mysqlbench.studies.load_factory``'s.
"""

from mysqlbench.studies.load_factory import load_dag
from mysqlbench.workloads.tpcc.build import TpccBuild

tpcc_load = load_dag(TpccBuild, dag_id="tpcc_load", workload="tpcc", asset_facts=("warehouses",), doc=__doc__,
                     defaults={"warehouses": 1, "target_conn_id": "mysqlbench_demo"})
