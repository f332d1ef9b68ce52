"""TPC-C-derived: tpcc-mysql's table names, a loader of our own following the specification's data
rules (clause 4.3.3.1), and the specification's consistency conditions 1-4 (clause 3.3.2)."""

# load order: parents first (the foreign keys are added after the load, but a reader of the
# schema expects this order), item once for the whole dataset
TABLES = ("warehouse", "district", "customer", "history", "new_orders", "orders", "order_line", "item", "stock")
