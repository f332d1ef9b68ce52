"""The MySQL path of describe_variable, which this machine cannot run (Debian ships no MySQL
server): replayed against MySQL 8.0's documented error codes and messages for these statements
(ER_UNKNOWN_SYSTEM_VARIABLE 1193, ER_INCORRECT_GLOBAL_LOCAL_VAR 1238, ER_SPECIFIC_ACCESS_DENIED
1227). Not captured from a live MySQL server; check against one when a MySQL target is available."""

import MySQLdb
import pytest

from mysqlbench.errors import NotApplicable
from mysqlbench.flavor import parse_server_info
from mysqlbench.knobs import describe_variable

MYSQL_80 = parse_server_info("8.0.36", "MySQL Community Server - GPL")

# statement -> the error MySQL 8.0 raises for it (code, message)
CAPTURED = {
    "SELECT @@SESSION.innodb_buffer_pool_size": (1238, "Variable 'innodb_buffer_pool_size' is a GLOBAL variable"),
    "SELECT @@SESSION.innodb_page_size": (1238, "Variable 'innodb_page_size' is a GLOBAL variable"),
    "SET GLOBAL innodb_page_size = @@GLOBAL.innodb_page_size":
        (1238, "Variable 'innodb_page_size' is a read only variable"),
    "SELECT @@SESSION.no_such_variable": (1193, "Unknown system variable 'no_such_variable'"),
    "SET GLOBAL innodb_redo_log_capacity = @@GLOBAL.innodb_redo_log_capacity":
        (1227, "Access denied; you need (at least one of) the SUPER or SYSTEM_VARIABLES_ADMIN privilege(s) "
               "for this operation"),
}


class ReplayCursor:
    def __init__(self, log):
        self.log = log

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def execute(self, sql, args=None):
        self.log.append(sql)
        if sql in CAPTURED:
            raise MySQLdb.OperationalError(*CAPTURED[sql])

    def fetchall(self):
        return [(0,)]


class ReplayConn:
    def __init__(self):
        self.log = []

    def cursor(self):
        return ReplayCursor(self.log)


def test_global_dynamic_variable():
    info = describe_variable(ReplayConn(), MYSQL_80, "innodb_buffer_pool_size", may_probe_global=True)
    assert (info.has_session, info.dynamic, info.source) == (False, True, "SET GLOBAL probe")


def test_read_only_variable_needs_restart():
    info = describe_variable(ReplayConn(), MYSQL_80, "innodb_page_size", may_probe_global=True)
    assert info.dynamic is False and "read-only" in info.source


def test_no_privilege_is_not_mistaken_for_read_only():
    info = describe_variable(ReplayConn(), MYSQL_80, "innodb_redo_log_capacity", may_probe_global=True)
    assert info.dynamic is None and "no privilege" in info.source


def test_session_variable():
    info = describe_variable(ReplayConn(), MYSQL_80, "join_buffer_size", may_probe_global=True)
    assert info.has_session and info.dynamic is True


def test_probe_is_not_sent_to_unmarked_targets():
    conn = ReplayConn()
    info = describe_variable(conn, MYSQL_80, "innodb_page_size", may_probe_global=False)
    assert info.dynamic is None
    assert not any(sql.startswith("SET GLOBAL") for sql in conn.log)


def test_unknown_variable():
    with pytest.raises(NotApplicable, match="no_such_variable does not exist on mysql 8.0.36"):
        describe_variable(ReplayConn(), MYSQL_80, "no_such_variable", may_probe_global=True)
