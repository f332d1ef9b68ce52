"""TPC-H: data from tpchgen-cli, dbgen's schema, the seeds' constraints and renames."""

TABLES = ("region", "nation", "part", "supplier", "partsupp", "customer", "orders", "lineitem")
