"""Flavor and version detection on @@version and @@version_comment. The MariaDB 10.11.19 pair was
read from the server this project runs; the others follow the formats the vendors' servers report
(no MySQL or Percona server can be installed here)."""

import pytest

from mysqlbench.flavor import MARIADB, MYSQL, PERCONA, parse_server_info

CAPTURED = [
    # (version, version_comment, flavor, version tuple)
    ("10.11.19-MariaDB-0+deb12u1", "Debian 12", MARIADB, (10, 11, 19)),
    ("5.5.5-10.6.12-MariaDB-log", "MariaDB Server", MARIADB, (10, 6, 12)),
    ("11.4.2-MariaDB", "mariadb.org binary distribution", MARIADB, (11, 4, 2)),
    ("8.0.36", "MySQL Community Server - GPL", MYSQL, (8, 0, 36)),
    ("5.7.44-log", "MySQL Community Server (GPL)", MYSQL, (5, 7, 44)),
    ("8.4.0-commercial", "MySQL Enterprise Server - Commercial", MYSQL, (8, 4, 0)),
    ("8.0.35-27", "Percona Server (GPL), Release 27, Revision 2f8eeab2", PERCONA, (8, 0, 35)),
    ("5.5.23-55-log", "Percona Server (GPL), Release rel25.3, Revision 240", PERCONA, (5, 5, 23)),
]


@pytest.mark.parametrize("version,comment,flavor,numbers", CAPTURED)
def test_detects_flavor_and_version(version, comment, flavor, numbers):
    info = parse_server_info(version, comment)
    assert (info.flavor, info.version) == (flavor, numbers)
    assert info.mysql_like == (flavor != MARIADB)


def test_unreadable_version_is_an_error():
    with pytest.raises(ValueError, match="cannot read a version"):
        parse_server_info("unknown", "")
