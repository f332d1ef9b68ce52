"""Exclusive use of a server: every mysqlbench task that changes or measures a server (study
points, dataset steps, starting a managed instance that was down) takes it through ``exclusive``.

Two locks, for two reaches: a hold with a lease in the results store (``targets.hold``), which
every worker of a deployment sees on any host and which survives the server's restarts, on the
target and on its host (two targets on one host never measure at once); and a server-side named
lock, which also excludes a deployment with another results store, taken again after a restart."""

from __future__ import annotations

import contextlib

from mysqlbench.errors import MysqlbenchError, TargetUnavailable
from mysqlbench.targets.connection import CONTROL_MANAGED, TargetConnection

LOCK_NAME = "mysqlbench:exclusive"


BUILD_LEASE_S = 1800.0  # a dataset build's hold between its tasks; each step renews it


@contextlib.contextmanager
def building(target: TargetConnection, schema: str, build_id: str, wait_s: int = 3600, store=None):
    """One step of a dataset build that spans several tasks (tpch_load): the dataset stays held
    from the first step to the verification under one token derived from ``build_id`` (the DAG
    run), renewed during each step; then the target for the step itself."""
    import hashlib

    from mysqlbench.results.store import ResultsStore
    from mysqlbench.targets.hold import Hold, dataset_resource

    store = store or ResultsStore.from_airflow()
    token = hashlib.sha256(build_id.encode()).hexdigest()[:32]
    claim = Hold(store, [dataset_resource(target, schema)], f"dataset build {build_id}", lease_s=BUILD_LEASE_S,
                 token=token).acquire(wait_s)
    try:
        with exclusive(target, f"dataset build {build_id}", wait_s, store) as lock:
            yield lock
    finally:
        claim.detach()


def end_build(target: TargetConnection, schema: str, build_id: str, store=None) -> None:
    """The build is verified (or gave up): the dataset is free for measuring and other builds."""
    import hashlib

    from mysqlbench.results.store import ResultsStore
    from mysqlbench.targets.hold import Hold, dataset_resource

    Hold(store or ResultsStore.from_airflow(), [dataset_resource(target, schema)], "end of build",
         token=hashlib.sha256(build_id.encode()).hexdigest()[:32]).release()


@contextlib.contextmanager
def exclusive(target: TargetConnection, purpose: str = "", wait_s: int = 3600, store=None,
              dataset: str | None = None):
    """Hold the target (and its host, and with ``dataset`` that schema's dataset) for the block.
    Taking it replays a restore journal a killed holder left behind; the yielded holder's
    ``renew()`` re-takes the server lock after a restart and its ``token`` lets a managed restart
    through the hold."""
    from mysqlbench.results.store import ResultsStore
    from mysqlbench.targets.hold import Hold, dataset_resource, target_resources
    from mysqlbench.targets.journal import RestoreJournal

    resources = target_resources(target) + ([dataset_resource(target, dataset)] if dataset else [])
    hold = Hold(store or ResultsStore.from_airflow(), resources, purpose or "exclusive use")
    hold.acquire(wait_s)
    holder = _Exclusive(target, wait_s, hold)
    try:
        holder.renew()
        # whoever takes the target first undoes what a killed holder left (its restore journal)
        if any(entry["kind"] == "restart" for entry in RestoreJournal.of(target, hold.store).replay(target, holder=hold.token)):
            holder.renew()  # the restart dropped the server lock's connection
        yield holder
    finally:
        holder.release()
        hold.release()


class _Exclusive:
    def __init__(self, target: TargetConnection, wait_s: int, hold):
        self.target, self.wait_s, self.conn, self.hold = target, wait_s, None, hold

    @property
    def token(self) -> str:
        return self.hold.token

    def renew(self) -> None:
        self.release()
        try:
            self.conn = self.target.connect()
        except TargetUnavailable:
            if self.target.control == CONTROL_MANAGED:
                return  # our instance is down: the store hold alone covers it until it is started
            raise
        with self.conn.cursor() as cur:
            cur.execute("SELECT GET_LOCK(%s, %s)", (LOCK_NAME, self.wait_s))
            if cur.fetchone()[0] != 1:
                raise MysqlbenchError(f"another mysqlbench task holds {LOCK_NAME} on {self.target.conn_id}")

    def release(self) -> None:
        if self.conn is not None:
            with contextlib.suppress(Exception):
                self.conn.close()  # closing releases the lock
            self.conn = None
