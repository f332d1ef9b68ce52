"""The cost of reading the counters, subtracted from every measured window, is the least delta
over several empty windows: a background burst caught in one of them must not be subtracted from
every measured query (a small query's delta would go below zero; seen on MySQL 9.7 at SF 0.01)."""

from __future__ import annotations

from mysqlbench.measure import reading_cost


class Statuses:
    """A connection whose SHOW GLOBAL STATUS answers the given readings in turn."""

    def __init__(self, readings):
        self.readings = list(readings)

    def cursor(self):
        return self

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def execute(self, sql):
        assert sql == "SHOW GLOBAL STATUS"

    def fetchall(self):
        return list(self.readings.pop(0).items())


def test_a_burst_in_one_empty_window_is_not_the_reading_cost():
    reads = [1000, 1330, 1342, 1354]  # the server's purge read 318 pages in the first empty window
    conn = Statuses({"Innodb_buffer_pool_read_requests": str(r), "Uptime": "5", "Version": "x"} for r in reads)
    cost = reading_cost(conn, samples=3)
    assert cost["Innodb_buffer_pool_read_requests"] == 12
    assert cost["Uptime"] == 0 and "Version" not in cost  # not a number: not a counter


def test_a_counter_missing_from_a_reading_has_no_cost():
    readings = [{"A": "1", "B": "1"}, {"A": "2"}, {"A": "3", "B": "4"}, {"A": "4", "B": "5"}]
    assert reading_cost(Statuses(readings), samples=3) == {"A": 1}
