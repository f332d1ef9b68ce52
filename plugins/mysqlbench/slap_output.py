"""Parsing mariadb-slap's (and mysqlslap's) ``--csv`` results and its error output.

A ``--csv`` line per concurrency level: ``<engine>,<load type>,<avg s>,<min s>,<max s>,<clients>,
<queries per client>``. A run that failed (no connection, a statement error) writes no line, or
exits non-zero: :class:`SlapOutputError` with the tool's own message, never zeros.
"""

from __future__ import annotations

import csv
import io
from typing import Any

from mysqlbench.errors import MysqlbenchError


class SlapOutputError(MysqlbenchError):
    """mariadb-slap's output does not hold a result (a failed or killed run)."""


def parse_csv(text: str, output: str = "") -> list[dict[str, Any]]:
    """Every result line of a ``--csv`` file; ``output`` (its stdout and stderr) names the
    failure when there is none."""
    rows = []
    for record in csv.reader(io.StringIO(text)):
        if not record:
            continue
        if len(record) != 7:
            raise SlapOutputError(f"mariadb-slap --csv line {record!r} does not have 7 fields")
        engine, load_type, avg, low, high, clients, per_client = record
        try:
            rows.append({"engine": engine or None, "load_type": load_type, "avg_s": float(avg), "min_s": float(low),
                         "max_s": float(high), "clients": int(clients), "queries_per_client": int(per_client)})
        except ValueError:
            raise SlapOutputError(f"mariadb-slap --csv line {record!r} is not numbers") from None
    if not rows:
        errors = [line.strip() for line in output.splitlines() if "error" in line.lower() or "can't" in line.lower()]
        raise SlapOutputError("mariadb-slap wrote no result (a failed or killed run)"
                              + (f": {errors[0]}" if errors else ""))
    return rows


def check_errors(output: str) -> None:
    """mariadb-slap goes on (and may exit 0) after a statement fails in a client: any such line
    makes the run an error."""
    for line in output.splitlines():
        if "Cannot run query" in line or "Error when connecting" in line or "ERROR" in line:
            raise SlapOutputError(f"mariadb-slap reported an error: {line.strip()}")
