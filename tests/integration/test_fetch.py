"""Fetching from Debian's real archive: what is cached and what is served, said plainly."""

import dataclasses

import pytest

from mysqlbench import servers


def test_check_says_the_cached_version_is_still_served(mysql_managed):
    checked = servers.fetch("mysql-9.7", check=True)
    assert checked["fetched"] is False and "is what the archive serves" in checked["note"]


def test_a_version_the_archive_no_longer_serves_is_named_with_what_is_cached(mysql_managed, monkeypatch):
    """sid moved on (here: an entry that stands for MySQL 8 while sid serves 9.x): the fetch says
    what the archive serves and what is cached, and fetches nothing."""
    real = servers.get("mysql-9.7")
    moved = dataclasses.replace(real, id="mysql-9.7", accept="8.*")
    monkeypatch.setattr(servers, "get", lambda server_id: moved)
    with pytest.raises(servers.FetchError, match=r"no longer serves mysql-server-core 8\.\* .* it serves 9\.[0-9.]+-\S+; "
                                                 r"cached: 9\.\S+ at .* \(still usable\)"):
        servers.fetch("mysql-9.7", check=True)
