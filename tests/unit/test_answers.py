"""Answer comparison: tolerance, tie-aware order, LIMIT cut-offs, and what must fail."""

import datetime as dt
from decimal import Decimal

from mysqlbench.answers import checksum, compare

# Q3-shaped rows: (l_orderkey, revenue, o_orderdate, o_shippriority), ordered by revenue desc, date
MYSQL_ROWS = [(2456423, Decimal("406181.0111"), dt.date(1995, 3, 5), 0),
              (3459808, Decimal("405838.6989"), dt.date(1995, 3, 4), 0),
              (492164, Decimal("390324.0610"), dt.date(1995, 2, 19), 0)]
DUCKDB_ROWS = [(2456423, 406181.01110000006, dt.date(1995, 3, 5), 0),
               (3459808, 405838.6989, dt.date(1995, 3, 4), 0),
               (492164, 390324.061, dt.date(1995, 2, 19), 0)]


def test_decimal_vs_double_within_tolerance():
    assert compare(MYSQL_ROWS, DUCKDB_ROWS, order_by=(2, 3)).ok


def test_a_changed_value_fails():
    altered = list(MYSQL_ROWS)
    altered[1] = (3459808, Decimal("405838.7100"), dt.date(1995, 3, 4), 0)
    result = compare(altered, DUCKDB_ROWS, order_by=(2, 3))
    assert not result.ok and "sort key" in result.reason


def test_a_changed_non_key_value_fails():
    altered = list(MYSQL_ROWS)
    altered[2] = (492165, Decimal("390324.0610"), dt.date(1995, 2, 19), 0)
    assert not compare(altered, DUCKDB_ROWS, order_by=(2, 3)).ok


def test_wrong_order_fails():
    assert not compare(list(reversed(MYSQL_ROWS)), DUCKDB_ROWS, order_by=(2, 3)).ok


def test_ties_may_come_in_any_order():
    a = [("x", 1.0), ("y", 1.0), ("z", 2.0)]
    b = [("y", 1.0), ("x", 1.0), ("z", 2.0)]
    assert compare(a, b, order_by=(2,)).ok
    assert not compare(a, b, order_by=(1,)).ok


def test_rows_tied_at_a_limit_cut_off_may_differ():
    got = [("a", 3.0), ("b", 2.0), ("c", 1.0)]
    want = [("a", 3.0), ("b", 2.0), ("d", 1.0)]  # c and d tie on the key at the cut-off
    assert compare(got, want, order_by=(2,), limit=3).ok
    assert not compare(got, want, order_by=(2,)).ok


def test_row_count_and_char_padding():
    assert not compare([(1,)], [(1,), (2,)]).ok
    assert compare([("BRAZIL   ",)], [("BRAZIL",)]).ok


def test_checksum_is_order_insensitive_and_value_sensitive():
    assert checksum(MYSQL_ROWS) == checksum(list(reversed(MYSQL_ROWS))) == checksum(DUCKDB_ROWS)
    assert checksum(MYSQL_ROWS[:2]) != checksum(MYSQL_ROWS)
