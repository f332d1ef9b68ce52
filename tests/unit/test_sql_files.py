"""The SQL under include/sql/: statements split as intended, and every index a query hints at
is created by the constraints step."""

import re

from mysqlbench import paths
from mysqlbench.sqlfiles import index_hints, sql_statements
from mysqlbench.workloads.tpch.validate import NAMED_INDEXES


def test_schema_has_the_eight_tables_with_primary_keys():
    statements = sql_statements(paths.sql_text("tpch/schema.sql"))
    assert len(statements) == 8
    assert all(s.startswith("CREATE TABLE") and "PRIMARY KEY" in s for s in statements)


def test_constraints_create_every_index_the_queries_hint_at():
    created = set(re.findall(r"ADD INDEX (\w+)", paths.sql_text("tpch/constraints.sql")))
    hints = index_hints()
    assert {"L_ORDERKEY", "i_l_partkey"} <= hints, "the seeds' forced indexes are in the study SQL"
    assert hints <= created
    assert created == set(NAMED_INDEXES)
