"""How a terminal issues a transaction: ``procedures`` (one ``CALL`` a transaction, the default) or
``statements`` (one statement a round trip, ``include/sql/tpcc/statements.sql``, as tpcc-mysql
issues them, the terminal output read back to the client). Both do the same row work: the same
rows read, locked, changed and inserted for the same inputs
(``tests/dags/test_tpcc_load.py::test_both_protocols_make_the_same_changes_for_the_same_inputs``).

The statements go over mysqlclient's text protocol: the client quotes the parameters into each
statement (mysqlclient has no server-side prepared statements). tpcc-mysql prepares its statements
on the server (the binary protocol); sysbench-tpcc sends text. So ``statements`` against
sysbench-tpcc is protocol for protocol; against tpcc-mysql it still parses each statement on the
server, which tpcc-mysql does once a connection. The bench says so beside its figures.

An executor's ``run(kind, args)`` returns 0 (committed) or 1 (the intended rollback of clause
2.4.2.3) and raises the client's error for anything else, with the transaction rolled back.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from functools import cache
from typing import Any

from mysqlbench import paths

PROTOCOLS = ("procedures", "statements")
DEFAULT_PROTOCOL = "procedures"
ROLLBACK_ERRNO = 1644  # SIGNAL from tpcc_new_order: the intended rollback
CALLS = {
    "new_order": "CALL tpcc_new_order(%s, %s, %s, %s, %s, %s, %s, %s)",
    "payment": "CALL tpcc_payment(%s, %s, %s, %s, %s, %s, %s)",
    "order_status": "CALL tpcc_order_status(%s, %s, %s, %s)",
    "delivery": "CALL tpcc_delivery(%s, %s)",
    "stock_level": "CALL tpcc_stock_level(%s, %s, %s)",
}
_NAME = re.compile(r"^-- name: (\w+)\s*$", re.MULTILINE)


@cache
def statements() -> dict[str, str]:
    """The named statements of ``include/sql/tpcc/statements.sql``."""
    text = paths.sql_text("tpcc/statements.sql")
    parts = _NAME.split(text)
    named = {}
    for name, body in zip(parts[1::2], parts[2::2], strict=True):
        sql = "\n".join(line for line in body.splitlines() if not line.lstrip().startswith("--")).strip()
        named[name] = sql.removesuffix(";").strip()
    return named


class Rollback(Exception):
    """The New-Order of clause 2.4.2.3 whose last item is unused: rolled back by design."""


class Procedures:
    """One ``CALL`` a transaction; the connection stays in autocommit (each procedure starts and
    ends its own transaction)."""

    name = "procedures"

    def __init__(self, conn):
        self.conn = conn
        self.cur = conn.cursor()

    def run(self, kind: str, args: tuple[Any, ...]) -> int:
        import MySQLdb

        if kind == "new_order":
            w_id, d_id, c_id, lines, all_local = args
            args = (w_id, d_id, c_id, len(lines), ",".join(str(i) for _, i, _ in lines),
                    ",".join(str(s) for s, _, _ in lines), ",".join(str(q) for _, _, q in lines), all_local)
        try:
            self.cur.execute(CALLS[kind], args)
            while self.cur.nextset():
                pass
        except MySQLdb.OperationalError as exc:
            if kind == "new_order" and exc.args and exc.args[0] == ROLLBACK_ERRNO:
                return 1
            raise
        return 0

    def close(self) -> None:
        self.cur.close()


class Statements:
    """One statement a round trip, autocommit off, COMMIT (or ROLLBACK) ending each transaction.
    Each transaction returns its terminal output (clauses 2.4.3.3, 2.5.3.3, 2.6.3.3, 2.7.4.2,
    2.8.3.3), which ``last_output`` keeps."""

    name = "statements"

    def __init__(self, conn):
        self.conn = conn
        conn.autocommit(False)
        self.cur = conn.cursor()
        self.sql = statements()
        self.last_output: dict[str, Any] | None = None

    def _one(self, name: str, *args: Any) -> tuple[Any, ...] | None:
        self.cur.execute(self.sql[name], args)
        return self.cur.fetchone()

    def _all(self, name: str, *args: Any) -> tuple[tuple[Any, ...], ...]:
        self.cur.execute(self.sql[name], args)
        return self.cur.fetchall()

    def _do(self, name: str, *args: Any) -> None:
        self.cur.execute(self.sql[name], args)

    def run(self, kind: str, args: tuple[Any, ...]) -> int:
        try:
            self.last_output = getattr(self, kind)(*args)
            self.conn.commit()
            return 0
        except Rollback:
            self.conn.rollback()
            return 1
        except BaseException:
            try:
                self.conn.rollback()
            except Exception:  # noqa: BLE001 - the connection may be gone; the first error is the one to raise
                pass
            raise

    def close(self) -> None:
        self.cur.close()

    # -- the five transactions ------------------------------------------------------------------
    def _by_name(self, w_id: int, d_id: int, c_last: str) -> int:
        """Clause 2.5.2.2: of the customers with that last name ordered by first name, the one at
        position ceil(n / 2) (the procedures' ``LIMIT ceil(n/2) - 1, 1``)."""
        (count,) = self._one("customers_by_name_count", w_id, d_id, c_last)
        rows = self._all("customers_by_name", w_id, d_id, c_last)
        if not rows:
            raise LookupError(f"no customer named {c_last!r} in warehouse {w_id} district {d_id}")
        return rows[max(math.ceil(count / 2) - 1, 0)][0]

    def new_order(self, w_id: int, d_id: int, c_id: int, lines, all_local: int) -> dict[str, Any]:
        c_discount, c_last, c_credit, w_tax = self._one("new_order_customer", w_id, d_id, c_id)
        o_id, d_tax = self._one("new_order_district", w_id, d_id)
        self._do("new_order_next_id", o_id, w_id, d_id)
        self._do("new_order_order", o_id, d_id, w_id, c_id, len(lines), all_local)
        self._do("new_order_new_order", o_id, d_id, w_id)
        total, out_lines = Decimal(0), []
        for number, (supply, item, qty) in enumerate(lines, start=1):
            found = self._one("new_order_item", item)
            if found is None:
                raise Rollback
            price, name, i_data = found
            s_qty, s_data, dist = self._one("new_order_stock", d_id, item, supply)
            new_qty = s_qty - qty if s_qty >= qty + 10 else s_qty - qty + 91
            self._do("new_order_stock_update", new_qty, qty, int(supply != w_id), item, supply)
            amount = qty * price
            self._do("new_order_line", o_id, d_id, w_id, number, item, supply, qty, amount, dist)
            total += amount
            brand = "B" if "ORIGINAL" in (i_data or "") and "ORIGINAL" in (s_data or "") else "G"
            out_lines.append((supply, item, name, qty, new_qty, brand, price, amount))
        return {"w_id": w_id, "d_id": d_id, "c_id": c_id, "c_last": c_last, "c_credit": c_credit,
                "c_discount": c_discount, "w_tax": w_tax, "d_tax": d_tax, "o_id": o_id, "lines": out_lines,
                "total": total * (1 - c_discount) * (1 + w_tax + d_tax)}

    def payment(self, w_id: int, d_id: int, c_w_id: int, c_d_id: int, c_id: int, c_last: str,
                amount: float) -> dict[str, Any]:
        amount = Decimal(f"{amount:.2f}")
        self._do("payment_warehouse_ytd", amount, w_id)
        warehouse = self._one("payment_warehouse", w_id)
        self._do("payment_district_ytd", amount, w_id, d_id)
        district = self._one("payment_district", w_id, d_id)
        if c_id == 0:
            c_id = self._by_name(c_w_id, c_d_id, c_last)
        customer = self._one("payment_customer", c_w_id, c_d_id, c_id)
        if customer[9] == "BC":
            (c_data,) = self._one("payment_customer_data", c_w_id, c_d_id, c_id)
            data = " ".join(str(v) for v in (c_id, c_d_id, c_w_id, d_id, w_id, amount, c_data) if v is not None)[:500]
            self._do("payment_bad_credit", amount, amount, data, c_w_id, c_d_id, c_id)
        else:
            self._do("payment_good_credit", amount, amount, c_w_id, c_d_id, c_id)
        self._do("payment_history", c_id, c_d_id, c_w_id, d_id, w_id, amount, f"{warehouse[5]}    {district[5]}")
        return {"warehouse": warehouse, "district": district, "c_id": c_id, "customer": customer, "amount": amount}

    def order_status(self, w_id: int, d_id: int, c_id: int, c_last: str) -> dict[str, Any]:
        if c_id == 0:
            c_id = self._by_name(w_id, d_id, c_last)
        customer = self._one("order_status_customer", w_id, d_id, c_id)
        order = self._one("order_status_order", w_id, d_id, c_id)
        lines = self._all("order_status_lines", w_id, d_id, order[0]) if order else ()
        return {"c_id": c_id, "customer": customer, "order": order, "lines": lines}

    def delivery(self, w_id: int, carrier: int) -> dict[str, Any]:
        delivered = {}
        for d_id in range(1, 11):
            oldest = self._one("delivery_oldest", w_id, d_id)
            if oldest is None:  # no undelivered order in this district: skipped (clause 2.7.4.2)
                continue
            (o_id,) = oldest
            self._do("delivery_delete", w_id, d_id, o_id)
            (c_id,) = self._one("delivery_order_customer", w_id, d_id, o_id)
            self._do("delivery_carrier", carrier, w_id, d_id, o_id)
            self._do("delivery_lines", w_id, d_id, o_id)
            (amount,) = self._one("delivery_amount", w_id, d_id, o_id)
            self._do("delivery_customer", amount, w_id, d_id, c_id)
            delivered[d_id] = o_id
        return {"w_id": w_id, "carrier": carrier, "delivered": delivered}

    def stock_level(self, w_id: int, d_id: int, threshold: int) -> dict[str, Any]:
        (next_o_id,) = self._one("stock_level_next_id", w_id, d_id)
        (low,) = self._one("stock_level_low", w_id, d_id, next_o_id, next_o_id, threshold)
        return {"w_id": w_id, "d_id": d_id, "threshold": threshold, "low_stock": low}


EXECUTORS = {"procedures": Procedures, "statements": Statements}


def check_protocol(protocol: str) -> str:
    from mysqlbench.errors import InvalidInput

    if protocol not in PROTOCOLS:
        raise InvalidInput(f"unknown protocol {protocol!r}: {' or '.join(PROTOCOLS)}")
    return protocol
