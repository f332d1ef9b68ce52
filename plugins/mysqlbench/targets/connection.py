"""A target as an Airflow connection: where the server is, who we log in as, and how far we may
control it. Credentials only ever come from the connection; nothing here prints them."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from mysqlbench.errors import InvalidInput, TargetUnavailable, UnsafeOperation
from mysqlbench.targets.flavor import ServerInfo, parse_server_info

log = logging.getLogger(__name__)

CONTROL_MANAGED = "managed"
CONTROL_EXTERNAL = "external"
CONTROLS = (CONTROL_MANAGED, CONTROL_EXTERNAL)


@dataclass(frozen=True)
class TargetConnection:
    """How to reach one server under test.

    Connection extras (JSON) understood here:

    - ``benchmark_target`` (bool): the owner allows destructive steps (CREATE/DROP SCHEMA,
      SET GLOBAL, restart, cache drop). Managed targets are always marked; external ones only when
      their extras say so.
    - ``control``: ``managed`` (a local instance this project runs) or ``external`` (connection
      only, nothing that needs a restart).
    - ``managed_target``: the managed instance's name, for restart and health.
    - ``unix_socket``: connect through a socket instead of TCP.
    """

    conn_id: str
    host: str
    port: int
    login: str
    password: str = field(repr=False)
    unix_socket: str | None = None
    benchmark_target: bool = False
    control: str = CONTROL_EXTERNAL
    managed_target: str | None = None

    @classmethod
    def from_airflow(cls, conn_id: str) -> "TargetConnection":
        """Resolve ``conn_id`` through Airflow (metadata DB, environment or secrets backend)."""
        from airflow.sdk import BaseHook

        try:
            conn = BaseHook.get_connection(conn_id)
        except Exception as exc:  # AirflowNotFoundException, or the API's not-found error
            raise InvalidInput(f"target connection {conn_id!r} is not defined in Airflow") from exc
        return cls.from_fields(
            conn_id,
            host=conn.host,
            port=conn.port,
            login=conn.login,
            password=conn.password,
            extra=conn.extra_dejson,
        )

    @classmethod
    def from_fields(
        cls,
        conn_id: str,
        *,
        host: str | None,
        port: int | None,
        login: str | None,
        password: str | None,
        extra: dict[str, Any] | None,
    ) -> "TargetConnection":
        extra = dict(extra or {})
        control = extra.get("control", CONTROL_EXTERNAL)
        if control not in CONTROLS:
            raise InvalidInput(f"connection {conn_id!r}: control must be one of {CONTROLS}, not {control!r}")
        marked = extra.get("benchmark_target", False)
        if not isinstance(marked, bool):
            raise InvalidInput(f"connection {conn_id!r}: benchmark_target must be true or false")
        if control == CONTROL_MANAGED and not extra.get("managed_target"):
            raise InvalidInput(f"connection {conn_id!r}: a managed target needs managed_target in its extras")
        if not login:
            raise InvalidInput(f"connection {conn_id!r} has no login")
        return cls(
            conn_id=conn_id,
            host=host or "127.0.0.1",
            port=int(port or 3306),
            login=login,
            password=password or "",
            unix_socket=extra.get("unix_socket"),
            # a managed instance exists only to be benchmarked
            benchmark_target=marked or control == CONTROL_MANAGED,
            control=control,
            managed_target=extra.get("managed_target"),
        )

    def require_benchmark_target(self, action: str) -> None:
        """Refuse ``action`` unless the target's owner marked it as a benchmark target."""
        if not self.benchmark_target:
            raise UnsafeOperation(
                f"refusing to {action} on {self.conn_id!r}: it is not marked as a benchmark target "
                '(set "benchmark_target": true in the connection extras if this server is yours to change)'
            )

    def connect(self, *, database: str | None = None, local_infile: bool = False, read_timeout: int | None = None):
        """Open a mysqlclient connection with autocommit on and utf8mb4."""
        import MySQLdb

        kwargs: dict[str, Any] = dict(
            user=self.login,
            password=self.password,
            charset="utf8mb4",
            autocommit=True,
            connect_timeout=10,
            local_infile=local_infile,
        )
        if self.unix_socket:
            kwargs["unix_socket"] = self.unix_socket
        else:
            kwargs.update(host=self.host, port=self.port)
        if database:
            kwargs["database"] = database
        if read_timeout:
            kwargs["read_timeout"] = read_timeout
        try:
            return MySQLdb.connect(**kwargs)
        except MySQLdb.OperationalError as exc:
            # the driver's message names host and user, never the password
            raise TargetUnavailable(f"cannot connect to target {self.conn_id!r}: {exc.args[-1]}") from exc


def server_info(conn) -> ServerInfo:
    with conn.cursor() as cur:
        cur.execute("SELECT @@version, @@version_comment")
        version, comment = cur.fetchone()
    return parse_server_info(version, comment)
