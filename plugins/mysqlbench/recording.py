"""Writing a task's samples and validations to the results store with full lineage: the server's
flavor, version and variables (snapshot kept once), the host's facts and the dataset."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

from mysqlbench.results.lineage import Lineage, host_facts, server_variables
from mysqlbench.results.store import ResultsStore, Sample, Validation
from mysqlbench.targets.connection import TargetConnection, server_info

_LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")


def server_facts(target: TargetConnection | None = None, snapshot: tuple[Any, dict[str, str]] | None = None
                 ) -> tuple[Any, dict[str, str] | None, dict[str, Any]]:
    """What a lineage's server and host part is made of: the server's info and variables (from
    ``snapshot`` when given, else the target asked now; both None without either) and the host's
    facts. Read when measuring, so samples stored later still carry the moment they were measured."""
    info = variables = None
    datadir = tmpdir = None
    if snapshot is not None:
        info, variables = snapshot
    elif target is not None:
        with target.session() as conn:
            info = server_info(conn)
            variables = server_variables(conn)
    # the datadir's file system is only knowable when the server runs on this host
    if variables is not None and (target is None or target.unix_socket or target.host in _LOCAL_HOSTS):
        datadir = Path(variables.get("datadir", ""))
        tmpdir = Path(variables.get("tmpdir", ""))
    if target is not None and getattr(target, "ssh_conn_id", None):  # the benchmark host, read over SSH
        from mysqlbench.results.lineage import remote_host_facts
        from mysqlbench.targets.host import SshHost

        facts = remote_host_facts(SshHost(target.ssh_conn_id), target.datadir or variables.get("datadir"))
    else:
        facts = host_facts(datadir, tmpdir)
    return info, variables, facts


def keep_server_facts(store: ResultsStore, info: Any, variables: dict[str, str] | None,
                      facts: dict[str, Any]) -> dict[str, Any]:
    """Keep the snapshots in ``store`` (each once); the lineage's server and host fields."""
    server: dict[str, Any] = {}
    if info is not None:
        server.update(server_flavor=info.flavor, server_version=info.version_string,
                      variables_hash=store.keep_server_snapshot(info.flavor, info.version_string, variables))
    server["host_hash"] = store.keep_host_facts(facts)
    return server


def server_lineage(store: ResultsStore, target: TargetConnection | None = None,
                   snapshot: tuple[Any, dict[str, str]] | None = None) -> dict[str, Any]:
    """The server and host part of a lineage (flavor, exact version, variables hash, host hash),
    their snapshots kept in ``store``: from ``snapshot`` (server info, variables) when given, else
    the target asked now; without either, the host only."""
    return keep_server_facts(store, *server_facts(target, snapshot))


class TaskRecorder:
    """One task instance's view of the results store."""

    def __init__(self, context, *, study: str, spec: dict[str, Any], store: ResultsStore | None = None):
        self.context = context
        self.study = study
        self.spec = spec
        self.store = store or ResultsStore.from_airflow()

    def lineage(self, target: TargetConnection | None = None, dataset_id: str | None = None,
                snapshot: tuple[Any, dict[str, str]] | None = None) -> Lineage:
        """Lineage for this task's rows. ``snapshot`` (server info, variables) is what a measuring
        session saw while its settings were in force; without one the target is asked now."""
        server = server_lineage(self.store, target, snapshot)
        return self.task_lineage(dataset_id, **server)

    def task_lineage(self, dataset_id: str | None = None, **server: Any) -> Lineage:
        """This task instance's lineage, with ``server`` (``keep_server_facts``'s fields) if given."""
        return Lineage.from_context(self.context, study=self.study, spec=self.spec, dataset_id=dataset_id, **server)

    def record(self, samples: Iterable[Sample] = (), validations: Iterable[Validation] = (), *,
               target: TargetConnection | None = None, dataset_id: str | None = None,
               snapshot: tuple[Any, dict[str, str]] | None = None) -> Lineage:
        lineage = self.lineage(target, dataset_id, snapshot)
        self.store.record(lineage, list(samples), list(validations))
        return lineage
