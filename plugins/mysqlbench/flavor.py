"""Flavor and version detection from what the server says about itself."""

from __future__ import annotations

import re
from dataclasses import dataclass

MYSQL = "mysql"
MARIADB = "mariadb"
PERCONA = "percona"

_VERSION = re.compile(r"(\d+)\.(\d+)\.(\d+)")


@dataclass(frozen=True)
class ServerInfo:
    """What a server is. ``flavor`` is mysql, mariadb or percona; Percona Server behaves as the
    MySQL version it is built on, so :attr:`mysql_like` is true for it."""

    flavor: str
    version: tuple[int, int, int]
    version_string: str
    version_comment: str = ""

    @property
    def mysql_like(self) -> bool:
        return self.flavor in (MYSQL, PERCONA)

    @property
    def is_mariadb(self) -> bool:
        return self.flavor == MARIADB

    def at_least(self, *version: int) -> bool:
        return self.version >= tuple(version)

    @property
    def label(self) -> str:
        return f"{self.flavor} {'.'.join(map(str, self.version))}"


def parse_server_info(version: str, version_comment: str = "") -> ServerInfo:
    """Build :class:`ServerInfo` from ``@@version`` and ``@@version_comment``.

    MariaDB's handshake may prefix ``5.5.5-`` for old replication clients; ``@@version`` does not,
    but strings copied from client banners do, so the prefix is dropped.
    """
    text = version.strip()
    if text.startswith("5.5.5-") and "mariadb" in text.lower():
        text = text[len("5.5.5-"):]
    match = _VERSION.search(text)
    if not match:
        raise ValueError(f"cannot read a version from {version!r}")
    numbers = tuple(int(part) for part in match.groups())
    lowered = f"{text} {version_comment}".lower()
    if "mariadb" in lowered:
        flavor = MARIADB
    elif "percona" in lowered:
        flavor = PERCONA
    else:
        flavor = MYSQL
    return ServerInfo(flavor, numbers, version.strip(), version_comment.strip())  # type: ignore[arg-type]
