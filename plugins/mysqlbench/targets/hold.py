"""Exclusive holds with a lease, kept in the results store: one holder at a time for a target, and
one for a benchmark host, whatever process, worker or host asks.

A server-side named lock is dropped by every restart of the server it lives in, and a local lock
file is invisible to workers on other hosts; the results store is what every worker of a
deployment shares. A hold is a row per resource with a random holder token and a lease the holder
renews from a heartbeat thread; a holder that dies (SIGKILL, a lost worker) stops renewing, and
its lease expires after ``LEASE_S`` for the next taker. A holder on the taker's own host whose
process is gone (its pid no longer runs, or runs another process, told by the process start time)
is stale at once: a retry on the same worker need not wait out the lease. Taking a hold is a
transaction over all its rows: all of them or none.

Resources: ``target:...`` names the server as it reports itself (host name, port and datadir:
``server_identity``), whichever connection reaches it; ``host:...`` names the machine it runs
on, so two targets on one host never measure at once (on 2 cores each would spoil the other's
numbers).
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import socket
import threading
import time
from typing import Any

import sqlalchemy as sa

from mysqlbench.errors import MysqlbenchError
from mysqlbench.targets.instance import server_key

log = logging.getLogger(__name__)

LEASE_S = 60.0
_LOCAL = ("127.0.0.1", "localhost", "::1")


def process_started(pid: int) -> str | None:
    """When process ``pid`` started (clock ticks since boot, from /proc), or None if it is not
    running: with the pid it names one process, whatever pid reuse happens later."""
    try:
        stat = open(f"/proc/{int(pid)}/stat").read()
    except (OSError, ValueError):
        return None
    return stat.rsplit(")", 1)[1].split()[19]  # field 22, after the command name in parentheses


def _gone(owner: dict[str, Any]) -> bool:
    """Is ``owner`` a process on this host that no longer runs? (Unknowable for another host, or
    for a detached hold, whose owner is a build rather than a process.)"""
    if owner.get("host") != socket.gethostname() or not owner.get("pid") or not owner.get("started"):
        return False
    return process_started(owner["pid"]) != owner["started"]


class HoldTimeout(MysqlbenchError):
    """The resources stayed held by someone else for longer than the caller would wait."""


def server_host(target) -> str:
    """The machine the target's server runs on (this host for a socket or loopback address)."""
    if target.unix_socket or target.host in _LOCAL:
        return socket.gethostname()
    return target.host.lower()


def reported_self(target) -> tuple[str, int, str]:
    """The server a target reaches, as it names itself: ``@@hostname``, ``@@port``, ``@@datadir``."""
    with target.session() as conn:
        with conn.cursor() as cur:
            cur.execute("SELECT @@hostname, @@port, @@datadir")
            hostname, port, datadir = cur.fetchone()
    return hostname, int(port), datadir


def server_identity(target) -> str:
    """The server ``target`` reaches, by what the server reports (``@@hostname``, ``@@port``,
    ``@@datadir``), so every way of reaching one server (connection ids, 127.0.0.1 or a host name,
    TCP or its socket) shares its holds and its restore journal. A managed instance is named from
    its spec without connecting (it may be down: the holds still cover it), which is what it reports
    once up (``TargetConnection.managed_proven`` checks exactly that). A server that does not answer
    is named by the address the connection gives; nothing can change or measure it meanwhile."""
    if target.control == "managed":
        from mysqlbench.targets.instance import Instance, ManagedSpec

        return Instance(ManagedSpec.load(target.managed_target)).identity()
    from mysqlbench.errors import TargetUnavailable

    try:
        return server_key(*reported_self(target))
    except TargetUnavailable as exc:
        log.info("naming %s by its address: %s", target.conn_id, exc)
        return address_identity(target)


def address_identity(target) -> str:
    """The server by the address the connection gives (what releases before issue 27 keyed by)."""
    if target.control == "managed":
        from mysqlbench.targets.instance import Instance, ManagedSpec

        return f"managed:{socket.gethostname()}:{Instance(ManagedSpec.load(target.managed_target)).datadir}"
    return f"server:{server_host(target)}:{target.unix_socket or target.port}"


def target_resources(target) -> list[str]:
    """What ``target`` occupies: its server (``server_identity``), the machine it runs on, and the
    benchmark host its tools run on."""
    host = server_host(target)
    resources = [f"target:{server_identity(target)}", f"host:{host}"]
    if getattr(target, "ssh_conn_id", None):  # the benchmark host its tools run on: one measurement there at a time
        resources.append(f"host:{ssh_host(target.ssh_conn_id)}")
    return resources


def ssh_host(ssh_conn_id: str) -> str:
    """The machine an SSH connection reaches (this host for a loopback address)."""
    from airflow.sdk import BaseHook

    host = (BaseHook.get_connection(ssh_conn_id).host or "").lower()
    return socket.gethostname() if host in _LOCAL else host


def dataset_resource(target, schema: str) -> str:
    """The dataset a schema on a target holds: built under one hold, measured only when no build holds it."""
    return f"dataset:{target_resources(target)[0].removeprefix('target:')}:{schema}"


class Hold:
    def __init__(self, store, resources: list[str], purpose: str, lease_s: float = LEASE_S, token: str | None = None):
        from mysqlbench.results.store import holds

        self.store, self.table, self.resources = store, holds, sorted(set(resources))
        self.lease_s = lease_s
        # a hold that spans several tasks (a dataset build) passes the same token in each
        self.token = token or secrets.token_hex(16)
        self.owner = {"pid": os.getpid(), "started": process_started(os.getpid()), "host": socket.gethostname(),
                      "purpose": purpose}
        self._stop = threading.Event()
        self._heartbeat: threading.Thread | None = None
        self.lost = False

    # -- taking and giving back -----------------------------------------------------------------
    def acquire(self, wait_s: float = 3600) -> "Hold":
        deadline = time.monotonic() + wait_s
        said = None
        while True:
            blocker = self._try()
            if blocker is None:
                break
            if said != blocker.get("holder"):
                log.info("waiting for %s, held by %s", ", ".join(self.resources), blocker)
                said = blocker.get("holder")
            if time.monotonic() > deadline:
                raise HoldTimeout(f"{', '.join(self.resources)} still held after {wait_s:g} s by {blocker}")
            time.sleep(0.5)
        self._stop.clear()
        self._heartbeat = threading.Thread(target=self._renew_forever, name="hold-heartbeat", daemon=True)
        self._heartbeat.start()
        return self

    def _try(self) -> dict[str, Any] | None:
        """Take every resource in one transaction, or none; returns who blocks (None: taken)."""
        t = self.table
        now = time.time()
        row = {"holder": self.token, "owner": json.dumps(self.owner), "acquired_at": now,
               "lease_until": now + self.lease_s}
        try:
            with self.store.engine.begin() as conn:
                for resource in self.resources:
                    current = conn.execute(sa.select(t).where(t.c.resource == resource)).first()
                    if current is None:
                        conn.execute(t.insert().values(resource=resource, **row))
                    elif current.holder == self.token or current.lease_until < now or _gone(json.loads(current.owner)):
                        if current.holder != self.token and current.lease_until >= now:
                            log.warning("taking %s from %s: its process is gone", resource, current.owner)
                        taken = conn.execute(t.update().where(t.c.resource == resource, t.c.holder == current.holder)
                                             .values(**row)).rowcount
                        if taken != 1:
                            raise _Busy({"resource": resource})
                    else:
                        raise _Busy({"resource": resource, "holder": current.holder, **json.loads(current.owner),
                                     "lease_left_s": round(current.lease_until - now, 1)})
        except _Busy as busy:
            return busy.args[0]
        except sa.exc.IntegrityError:  # another taker inserted the same resource first
            return {"resource": "?", "holder": "racing taker"}
        return None

    def _renew_forever(self) -> None:
        while not self._stop.wait(self.lease_s / 3):
            try:
                with self.store.engine.begin() as conn:
                    renewed = conn.execute(self.table.update().where(self.table.c.holder == self.token)
                                           .values(lease_until=time.time() + self.lease_s)).rowcount
                if renewed < len(self.resources):
                    self.lost = True
                    log.error("hold on %s lost (its lease ran out and another holder took it)", self.resources)
            except Exception:  # noqa: BLE001 - a store hiccup; the next beat tries again within the lease
                log.exception("could not renew the hold on %s", self.resources)

    def detach(self) -> None:
        """Stop renewing but keep the rows: the next task of the same holder takes them up again
        with the same token before the lease runs out. The rows no longer name this process, which
        is about to end, so only the lease tells when the holder is gone."""
        self._stop_heartbeat()
        detached = {**self.owner, "pid": None, "started": None}
        with self.store.engine.begin() as conn:
            conn.execute(self.table.update().where(self.table.c.holder == self.token,
                                                   self.table.c.resource.in_(self.resources))
                         .values(owner=json.dumps(detached)))

    def _stop_heartbeat(self) -> None:
        self._stop.set()
        if self._heartbeat is not None:
            self._heartbeat.join(5)

    def release(self) -> None:
        self._stop_heartbeat()
        with self.store.engine.begin() as conn:
            conn.execute(self.table.delete().where(self.table.c.holder == self.token,
                                                   self.table.c.resource.in_(self.resources)))

    def __enter__(self) -> "Hold":
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


class _Busy(Exception):
    pass


def holder_of(store, resource: str) -> dict[str, Any] | None:
    """Who holds ``resource`` now (a live lease), or None."""
    from mysqlbench.results.store import holds

    with store.engine.connect() as conn:
        row = conn.execute(sa.select(holds).where(holds.c.resource == resource)).first()
    if row is None or row.lease_until < time.time():
        return None
    return {"holder": row.holder, **json.loads(row.owner)}
