"""The server catalog: entries validated with their id and field named, versions parsed."""

import datetime as dt

import pytest

from mysqlbench import servers
from mysqlbench.errors import InvalidInput


def test_the_catalog_has_the_checked_servers_with_release_dates():
    catalog = servers.catalog()
    assert {"mariadb-10.5", "mariadb-10.11", "mariadb-11.8", "mysql-9.7", "mysql-8.4", "mysql-8.0"} <= set(catalog)
    for entry in catalog.values():
        assert isinstance(entry.released, dt.date) and entry.flavor in ("mariadb", "mysql")
        if entry.source == "debian":
            assert entry.archives and entry.packages
    assert catalog["mysql-9.7"].runtime == "suite" and catalog["mysql-9.7"].accept == "9.*"
    assert catalog["mariadb-10.5"].runtime == "listed"  # beside Debian 12's own C runtime


def test_an_unknown_server_names_the_catalog():
    with pytest.raises(InvalidInput, match="unknown server 'mysql-5.5'; the catalog .* has: mariadb-10.5"):
        servers.get("mysql-5.5")


@pytest.mark.parametrize(("entry", "message"), [
    ({"flavor": "oracle"}, "flavor must be one of"),
    ({"source": "ftp"}, "source must be one of"),
    ({"released": "last year"}, "released must be a date"),
    ({"archives": [{"uri": "http://x.org/debian; rm -rf /", "suite": "sid"}]}, "not a plain http"),
    ({"packages": ["mysql-server-core --allow-unauthenticated"]}, "not a Debian package name"),
    ({"archives": []}, "needs archives and packages"),
    ({"runtime": "static"}, "runtime must be listed or suite"),
])
def test_a_broken_entry_names_its_id_and_field(entry, message):
    good = {"flavor": "mysql", "line": "9.7", "released": dt.date(2026, 4, 21), "source": "debian",
            "archives": [{"uri": "http://deb.debian.org/debian", "suite": "sid"}], "packages": ["mysql-server-core"],
            "runtime": "suite", "accept": "9.*"}
    with pytest.raises(InvalidInput, match=f"servers.yaml: mysql-x: .*{message}"):
        servers._entry("mysql-x", {**good, **entry})


@pytest.mark.parametrize(("package_version", "upstream"), [
    ("9.7.4-2", "9.7.4"), ("1:10.11.14-0+deb12u2", "10.11.14"), ("1:10.5.29-0+deb11u1", "10.5.29"),
    ("1:11.8.3-1", "11.8.3")])
def test_upstream_versions_from_debian_versions(package_version, upstream):
    assert servers._upstream(package_version) == upstream


@pytest.mark.parametrize("flavor,when,expected", [
    ("mariadb", "2020-06-23", None),              # before the catalog's first MariaDB line
    ("mariadb", "2020-06-24", "mariadb-10.5"),    # its release day
    ("mariadb", "2024-04-30", "mariadb-10.11"),   # a MySQL release day: MariaDB's current line
    ("mariadb", "2026-12-01", "mariadb-11.8"),
    ("mysql", "2019-01-01", "mysql-8.0"),
    ("mysql", "2026-04-20", "mysql-8.4"),
    ("mysql", "2026-04-21", "mysql-9.7"),
])
def test_the_server_current_at_a_date_is_the_newest_line_released_by_then(flavor, when, expected):
    found = servers.current_at(flavor, dt.date.fromisoformat(when))
    assert (found.id if found else None) == expected


def test_release_dates_and_a_bad_flavor():
    assert servers.release_dates("mariadb") == [dt.date(2020, 6, 24), dt.date(2023, 2, 16), dt.date(2025, 6, 4)]
    assert dt.date(2026, 4, 21) in servers.release_dates() and servers.release_dates() == sorted(servers.release_dates())
    with pytest.raises(InvalidInput, match="flavor must be one of"):
        servers.current_at("postgres", dt.date(2024, 1, 1))
