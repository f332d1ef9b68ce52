"""Comparing query answers: normalised values, a stated decimal tolerance, and tie-aware order
(rows whose ORDER BY keys are equal may come in any order, including across a LIMIT cut-off)."""

from __future__ import annotations

import datetime as dt
import hashlib
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Sequence

# Money columns are DECIMAL(15,2); averages and ratios differ between engines in far digits.
ABS_TOLERANCE = 0.01
REL_TOLERANCE = 1e-9


def normalise(value: Any) -> Any:
    if isinstance(value, (Decimal, float, int)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    if isinstance(value, bytes):
        value = value.decode()
    if isinstance(value, str):
        return value.rstrip()  # CHAR(n) padding differs between engines
    return value


def _close(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return abs(a - b) <= ABS_TOLERANCE + REL_TOLERANCE * abs(b)
    return a == b


def _rows_close(a: Sequence[Any], b: Sequence[Any]) -> bool:
    return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b, strict=True))


def checksum(rows: Sequence[Sequence[Any]]) -> str:
    """Order-insensitive checksum of a result, numbers rounded to the tolerance's two decimals."""
    digest = hashlib.sha256()
    for line in sorted(repr(tuple(round(v, 2) if isinstance(v, float) else v for v in map(normalise, row)))
                       for row in rows):
        digest.update(line.encode())
    return digest.hexdigest()[:16]


@dataclass(frozen=True)
class Comparison:
    ok: bool
    reason: str


def compare(actual: Sequence[Sequence[Any]], expected: Sequence[Sequence[Any]], *,
            order_by: Sequence[int] = (), limit: int | None = None) -> Comparison:
    """Does ``actual`` equal ``expected``? ``order_by`` holds the 1-based sort columns."""
    got = [tuple(map(normalise, r)) for r in actual]
    want = [tuple(map(normalise, r)) for r in expected]
    if len(got) != len(want):
        return Comparison(False, f"{len(got)} rows, expected {len(want)}")
    keys = [c - 1 for c in order_by]
    # 1. order: the sequence of sort keys must match row by row
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        if not _rows_close([g[k] for k in keys], [w[k] for k in keys]):
            return Comparison(False, f"row {i + 1} sort key {[g[k] for k in keys]} != {[w[k] for k in keys]}")
    # 2. content: rows match as multisets; with a LIMIT, rows tied with the last kept key may differ
    cut = [w[k] for k in keys] if (limit is not None and len(want) == limit and keys) else None
    remaining = list(want)
    unmatched = []
    for g in got:
        for j, w in enumerate(remaining):
            if _rows_close(g, w):
                del remaining[j]
                break
        else:
            unmatched.append(g)
    if cut is not None:
        unmatched = [g for g in unmatched if not _rows_close([g[k] for k in keys], cut)]
        remaining = [w for w in remaining if not _rows_close([w[k] for k in keys], cut)]
    if unmatched or remaining:
        return Comparison(False, f"rows differ: unexpected {unmatched[:3]}, missing {remaining[:3]}")
    return Comparison(True, "match")

