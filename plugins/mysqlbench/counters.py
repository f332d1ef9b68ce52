"""Counters that mean the same on every server (``include/configs/counters.yaml``): each a sum of
the server's own status counters, defined per flavor, so a finding or a comparison across
MariaDB and MySQL never sets two different quantities side by side under one name."""

from __future__ import annotations

import functools
from typing import Any

import yaml

from mysqlbench import paths
from mysqlbench.errors import MysqlbenchError

PHYSICAL_READS = "physical_reads"
FLAVOR_OF = {"percona": "mysql"}  # Percona Server counts as the MySQL it is built on


@functools.lru_cache(maxsize=1)
def definitions() -> dict[str, dict[str, Any]]:
    data = yaml.safe_load((paths.CONFIG_DIR / "counters.yaml").read_text())
    for name, definition in data.items():
        for flavor in ("mariadb", "mysql"):
            parts = definition.get(flavor)
            if not (isinstance(parts, list) and parts and all(isinstance(p, str) for p in parts)):
                raise MysqlbenchError(f"counters.yaml: {name} has no {flavor} definition (a list of status counters)")
    return data


def parts(name: str, flavor: str) -> tuple[str, ...]:
    """The status counters ``name`` sums on ``flavor``."""
    return tuple(definitions()[name][FLAVOR_OF.get(flavor, flavor)])


def needed(flavor: str) -> tuple[str, ...]:
    """Every status counter the derived counters read on ``flavor``."""
    return tuple(dict.fromkeys(p for name in definitions() for p in parts(name, flavor)))


def derive(values: dict[str, int | None], flavor: str) -> dict[str, int | None]:
    """Each derived counter from ``values`` (status deltas): absent (None) when a part is."""
    out: dict[str, int | None] = {}
    for name in definitions():
        got = [values.get(p) for p in parts(name, flavor)]
        out[name] = None if any(v is None for v in got) else sum(got)
    return out


def physical_reads(before: dict[str, int], after: dict[str, int], flavor: str) -> int | None:
    """Pages read from disk between two ``SHOW GLOBAL STATUS`` readings (None: not counted here)."""
    names = parts(PHYSICAL_READS, flavor)
    if any(n not in before or n not in after for n in names):
        return None
    return sum(after[n] - before[n] for n in names)


def with_derived(names) -> tuple[str, ...]:
    """The derived counters, then ``names``: what a report or comparison sets side by side (the
    derived ones are recorded for every execution, whatever a spec lists)."""
    return tuple(dict.fromkeys((*definitions(), *names)))
