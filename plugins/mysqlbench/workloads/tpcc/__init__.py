"""TPC-C-derived: tpcc-mysql's table names, a loader of our own following the specification's data
rules (clause 4.3.3.1), and the specification's consistency conditions 1-4 (clause 3.3.2)."""

# load order: parents first (the foreign keys are added after the load, but a reader of the
# schema expects this order), item once for the whole dataset
TABLES = ("warehouse", "district", "customer", "history", "new_orders", "orders", "order_line", "item", "stock")

# the specification's fixed sizes (clause 4.3.3.1), shared by the generator and the driver
ITEMS = 100_000
DISTRICTS = 10
CUSTOMERS = 3_000            # per district
ORDERS = 3_000               # per district
FIRST_NEW_ORDER = 2_101      # orders 2101..3000 of each district are undelivered (new_orders)
SYLLABLES = ("BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING")


def last_name(number: int) -> str:
    """The last name of a number 0..999 from three syllables (clause 4.3.2.3)."""
    return SYLLABLES[number // 100] + SYLLABLES[(number // 10) % 10] + SYLLABLES[number % 10]
