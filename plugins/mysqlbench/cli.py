"""Command line for what lives outside a DAG run: bringing managed targets up and down (with the
benchmark user's password kept only in the Airflow connection) and summarising recorded results.

    bin/mysqlbench target up demo | down demo | status demo
    bin/mysqlbench target up NAME --server mysql-9.7 [--port 3347]
    bin/mysqlbench server list | fetch mysql-9.7 [--check]
    bin/mysqlbench results [--dag-id tpch_load] [--run-id RUN]
    bin/mysqlbench history tpch_power [sysbench_cpu ...] [--since 2026-12-01]
    bin/mysqlbench versions prepare [tpch_power_across_versions ...]
    bin/mysqlbench lint [SPEC.yaml ...]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys

from mysqlbench.errors import MysqlbenchError


def _airflow_connection(conn_id: str):
    from airflow.models import Connection
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        conn = session.scalar(select(Connection).where(Connection.conn_id == conn_id))
        if conn is not None:
            session.expunge(conn)
        return conn


def _save_airflow_connection(conn_id: str, *, host: str, port: int, login: str, password: str, extra: dict) -> None:
    from airflow.models import Connection
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        conn = session.scalar(select(Connection).where(Connection.conn_id == conn_id))
        if conn is None:
            conn = Connection(conn_id=conn_id, conn_type="mysql")
            session.add(conn)
        conn.host, conn.port, conn.login = host, port, login
        conn.set_password(password)
        conn.set_extra(json.dumps(extra))


def _ensure_pool(conn_id: str) -> str:
    from airflow.models.pool import Pool

    from mysqlbench.studies.factory import target_pool

    name = target_pool(conn_id)
    # a deferred task keeps its slot (a pool that does not count deferred tasks would hand it to
    # the next point while the first still measures); the hold in the results store is what keeps
    # the target and its host exclusive across pools, workers and hosts
    Pool.create_or_update_pool(name, slots=1, description=f"mysqlbench: one point at a time on {conn_id}",
                               include_deferred=True)
    return name


def _new_target_spec(name: str, server_id: str, port: int | None):
    """A managed target made on the command line: its spec is written beside its datadir."""
    from mysqlbench import servers
    from mysqlbench.errors import InvalidInput
    from mysqlbench.identifiers import check_name
    from mysqlbench.targets.managed import ManagedSpec

    check_name(name, "managed target name")
    servers.get(server_id)
    path = ManagedSpec.path_of(name)
    if path.exists():
        spec = ManagedSpec.load(name)
        if spec.server != server_id and not (spec.server is None and server_id == "mariadb-10.11"):
            raise InvalidInput(f"managed target {name!r} runs {spec.server or 'the system MariaDB'} ({path}); "
                               f"use another name for {server_id}")
        if port is not None and port != spec.port:
            raise InvalidInput(f"managed target {name!r} listens on {spec.port} ({path})")
        return spec
    if port is None:
        raise InvalidInput("a new managed target needs --port (one no other server uses), e.g. --port 3347")
    if not 1024 < port < 65536:
        raise InvalidInput(f"--port {port} is not a port a managed server may use (1025-65535)")
    spec = ManagedSpec(name=name, conn_id=f"mysqlbench_{name}", port=port, server=server_id)
    return spec


def target_up(name: str, server_id: str | None = None, port: int | None = None) -> dict:
    from mysqlbench.targets.managed import BENCH_USER, ManagedServer, ManagedSpec

    if server_id is not None:
        spec = _new_target_spec(name, server_id, port)
    else:
        if port is not None:
            parser_error = "--port goes with --server (a configured target's port is in its YAML)"
            raise MysqlbenchError(parser_error)
        spec = ManagedSpec.load(name)
    server = ManagedServer(spec)
    server.start()
    if server_id is not None and not ManagedSpec.path_of(name).exists():
        spec.save()  # only once it runs: a failed first start leaves nothing behind
    existing = _airflow_connection(spec.conn_id)
    password = server.ensure_benchmark_user(existing.password if existing else None)
    _save_airflow_connection(spec.conn_id, host="127.0.0.1", port=spec.port, login=BENCH_USER,
                             password=password, extra=server.connection_extra())
    return {**server.health(), "server": server.binaries.server_id, "conn_id": spec.conn_id, "login": BENCH_USER,
            "pool": _ensure_pool(spec.conn_id)}


def server_list() -> dict:
    from mysqlbench import servers

    out = []
    for entry in servers.catalog().values():
        record = servers.installed(entry.id) if entry.source == "debian" else None
        out.append({"server": entry.id, "flavor": entry.flavor, "line": entry.line, "released": entry.released,
                    "source": entry.source, "fetched": record["package_version"] if record else None})
    return {"servers": out}


def target_down(name: str) -> dict:
    from mysqlbench.targets.managed import ManagedServer, ManagedSpec

    server = ManagedServer(ManagedSpec.load(name))
    server.stop()
    return {"name": name, "running": False}


def target_restart(name: str) -> dict:
    """Stop and start a managed instance with its base config (refused while a task holds it): what
    a benchmark host's ``restart_command`` runs when a study controls it over SSH."""
    from mysqlbench.targets.managed import ManagedServer, ManagedSpec

    server = ManagedServer(ManagedSpec.load(name))
    # a study's point restarting it over SSH passes its own hold (MYSQLBENCH_HOLDER): not refused under itself
    server.restart(holder=os.environ.get("MYSQLBENCH_HOLDER") or None)
    return {"name": name, "running": server.is_running(), "pid": server.pid()}


def target_down_all() -> dict:
    """Stop every managed instance that has a directory under the work directory, configured or
    not (a target's YAML may be gone while its server still runs): `make clean` deletes their
    datadirs only after this."""
    from mysqlbench import paths
    from mysqlbench.errors import InvalidInput
    from mysqlbench.targets.managed import ManagedServer, ManagedSpec

    stopped = []
    for directory in sorted(p for p in (paths.work_dir() / "targets").glob("*") if p.is_dir()):
        try:
            spec = ManagedSpec.load(directory.name)
        except InvalidInput:
            spec = ManagedSpec(name=directory.name, conn_id="", port=0)
        server = ManagedServer(spec, root=directory)
        if server.pid() is not None:
            server.stop()
            stopped.append(directory.name)
    return {"stopped": stopped}


def target_status(name: str) -> dict:
    from mysqlbench.targets.managed import ManagedServer, ManagedSpec

    server = ManagedServer(ManagedSpec.load(name))
    return server.health() if server.is_running() else {"name": name, "running": False}


def results_summary(dag_id: str | None, run_id: str | None) -> dict:
    import sqlalchemy as sa

    from mysqlbench.results.store import ResultsStore, last_try, samples, validations

    store = ResultsStore.from_airflow()
    with store.engine.connect() as conn:
        if run_id is None:
            query = sa.select(samples.c.run_id).order_by(samples.c.recorded_at.desc()).limit(1)
            if dag_id:
                query = query.where(samples.c.dag_id == dag_id)
            run_id = conn.execute(query).scalar()
        rows = conn.execute(sa.select(samples.c.task_id, samples.c.metric, samples.c.value, samples.c.unit,
                                      samples.c.status, samples.c.dataset_id, samples.c.server_version)
                            .where(samples.c.run_id == run_id, last_try(samples)).order_by(samples.c.id)).all()
        checks = conn.execute(sa.select(validations.c.suite, validations.c.success, validations.c.statistics)
                              .where(validations.c.run_id == run_id, last_try(validations))).all()
    return {
        "results_store": store.describe(),
        "run_id": run_id,
        "samples": [dict(r._mapping) for r in rows],
        "validations": [{"suite": c.suite, "success": c.success, **json.loads(c.statistics)} for c in checks],
    }


def rerun(run_id: str, dag_id: str | None, allow_differences: bool, conf_only: bool) -> dict:
    """Reproduce a past study run (``mysqlbench.studies.rerun``): its conf rebuilt from what it
    recorded, checked here as the DAG's check_spec will (the same spec, server version and host, or
    refused with the reason), then run with ``airflow dags test``; answers with each point's verdict."""
    import subprocess
    import time

    from mysqlbench import paths
    from mysqlbench.results.store import ResultsStore
    from mysqlbench.studies import rerun as reruns
    from mysqlbench.studies import steps
    from mysqlbench.studies.spec import load_spec, spec_path

    store = ResultsStore.from_airflow()
    dag_id = dag_id or reruns.find_dag(store, run_id)
    original = reruns.load_original(store, dag_id, run_id)
    conf = reruns.conf_of(original, load_spec(spec_path(dag_id)))
    if allow_differences:
        conf[reruns.ALLOW_DIFFERENCES] = True
    steps.check_spec(dag_id, conf)  # everything the DAG's first task checks, before it is started
    if conf_only:
        return {"dag_id": dag_id, "conf": conf}
    started = time.time()
    log_path = paths.work_dir() / "logs" / f"rerun-{paths.run_dir_name(run_id)}-{int(started)}.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "w") as log_file:
        done = subprocess.run([str(paths.REPO_ROOT / "bin" / "airflow"), "dags", "test", dag_id, "--conf",
                               json.dumps(conf)], stdout=log_file, stderr=subprocess.STDOUT)
    found = _rerun_summary(store, dag_id, run_id, started)
    if done.returncode != 0 or found is None:
        raise MysqlbenchError(f"the rerun of {run_id!r} did not finish (airflow dags test exit {done.returncode}"
                              f"{'' if found else ', no report'}): its log is {log_path}")
    rerun_dir, summary = found
    reproduction = summary["reproduction"]
    return {"dag_id": dag_id, "original": run_id, "rerun": summary["run_id"], "valid": summary["valid"],
            "reproduced": reproduction["reproduced"], "differences": reproduction["differences"],
            "verdicts": [_verdict_words(v) for v in reproduction["verdicts"]],
            "report": str(paths.work_dir() / "reports" / dag_id / rerun_dir / "index.html"), "log": str(log_path)}


def _rerun_summary(store, dag_id: str, original: str, since: float):
    """The newest kept report of ``dag_id`` written after ``since`` that reproduces ``original``."""
    import datetime as dt

    for kept in store.reports_with("summary.json"):
        written = kept["written_at"]
        if written.tzinfo is None:  # SQLite hands back the stored UTC time without its zone
            written = written.replace(tzinfo=dt.timezone.utc)
        if kept["dag_id"] != dag_id or written.timestamp() < since - 1:
            continue
        summary = json.loads(store.report_file(dag_id, kept["run"], "summary.json"))
        if (summary.get("reproduction") or {}).get("original") == original:
            return kept["run"], summary
    return None


def _verdict_words(verdict: dict) -> dict:
    keep = ("subject", "point", "metric", "estimate", "ci_low", "ci_high", "confidence", "n_a", "n_b", "verdict",
            "reproduced", "configuration_differs", "said")
    return {k: verdict.get(k) for k in keep}


def history_export(studies: list[str], since: str | None) -> dict:
    """Each series of the studies' recorded history: its key, the outline of each plan it ran
    with, and per run (oldest first) the run, its time, value, spread and lineage events: what the
    regression analysis reads, as data."""
    import pandas as pd

    from mysqlbench.regression.history import KEY, history, host_changes, primary_metric, series_labels
    from mysqlbench.results.store import ResultsStore

    store = ResultsStore.from_airflow()
    runs, left_out = history(store, studies)
    units = {study: primary_metric(study).unit for study in studies}

    def said(event: dict) -> dict:
        """An event with what changed by name: the server variables, or the host facts."""
        if event["field"] == "variables_hash":
            return {**event, "changed": store.variable_changes(event["before"], event["after"])}
        if event["field"] == "host_hash":
            return {**event, "changed": host_changes(store, event["before"], event["after"])}
        return event
    if since:
        start = pd.Timestamp(since)
        start = start.tz_localize("UTC") if start.tzinfo is None else start
        runs = runs[runs["run_time"] >= start] if not runs.empty else runs
        left_out = [r for r in left_out if pd.Timestamp(r["run_time"]) >= start]
    series = []
    firsts = runs.drop_duplicates("series_id") if not runs.empty else runs
    labels = dict(zip(firsts["series_id"], series_labels(firsts[KEY].to_dict(orient="records")), strict=True)) \
        if not runs.empty else {}

    def number(value):
        return None if pd.isna(value) else float(value)

    for series_id, group in (runs.groupby("series_id", sort=False) if not runs.empty else []):
        first = group.iloc[0]
        # each plan the series ran with, once: its hash -> one line per table access in join order
        plans = {r.plan_hash: list(r.plan_outline) for r in group.itertuples()
                 if isinstance(r.plan_hash, str) and isinstance(r.plan_outline, (list, tuple))}
        series.append({
            "series_id": series_id, "label": labels[series_id],
            "metric": first["metric"], "unit": units[first["study"]], "key": {k: first[k] for k in KEY},
            "values": [number(v) for v in group["value"]], "plans": plans,
            # per run: its median, the spread of its ok executions (interquartile range) and how many
            "runs": [{"run_id": r.run_id, "run_time": r.run_time.isoformat(), "value": number(r.value),
                      "iqr": number(r.iqr), "n_ok": int(r.n_ok), "n": int(r.n), "noisy": bool(r.noisy),
                      "package_version": r.package_version, "server_version": r.server_version,
                      "plan_hash": r.plan_hash if isinstance(r.plan_hash, str) else None,
                      "events": [said(e) for e in r.events]} for r in group.itertuples()]})
    return {"results_store": store.describe(), "studies": studies, "series": series, "left_out": left_out}


def versions_prepare(names: list[str]) -> dict:
    """Define the managed targets (and their Airflow connections) every ``releases``
    regression DAG measures server versions on; nothing starts until a run picks a server. A task
    cannot do this itself: Airflow 3 gives tasks no write access to its connections."""
    from mysqlbench.errors import InvalidInput
    from mysqlbench.regression import versions
    from mysqlbench.regression.spec import RELEASES, load_regression, regression_files
    from mysqlbench.targets.managed import BENCH_USER, ManagedServer, ManagedSpec

    specs = [s for s in (load_regression(p) for p in regression_files()) if s.schedule == RELEASES]
    unknown = sorted(set(names) - {s.regression for s in specs})
    if unknown:
        raise InvalidInput(f"no releases regression spec {unknown}; there are: {[s.regression for s in specs]}")
    out = []
    for spec in specs:
        if names and spec.regression not in names:
            continue
        for target in versions.prepare(spec):
            existing = _airflow_connection(target["conn_id"])
            server = ManagedServer(ManagedSpec.load(target["name"]))
            _save_airflow_connection(target["conn_id"], host="127.0.0.1", port=target["port"], login=BENCH_USER,
                                     password=existing.password if existing else target["password"],
                                     extra=server.connection_extra())
            out.append({"regression": spec.regression, "server": target["server"], "target": target["name"],
                        "port": target["port"], "conn_id": target["conn_id"]})
    return {"targets": out}


def spool(action: str) -> dict:
    """Samples points measured while the results store could not be written, kept on this worker
    (``results/spool.py``): list them, or store them now under the tries that measured them."""
    from mysqlbench.results.spool import spooled, store_spooled
    from mysqlbench.results.store import ResultsStore

    if action == "list":
        return {"spooled": [s.describe() for s in spooled()]}
    store = ResultsStore.from_airflow()
    return {"results_store": store.describe(), "stored": store_spooled(store)}


def lint(files: list[str]) -> int:
    """Validate study specs (default: every one the DAG factory reads); print each problem with its
    file, line and field, as the DAG import error shows it. Exit 1 if any spec is broken."""
    from pathlib import Path

    from mysqlbench.regression.factory import regression_errors
    from mysqlbench.studies.factory import spec_errors
    from mysqlbench.studies.spec import study_files

    paths = [Path(f) for f in files] or study_files()
    broken = 0
    for path in paths:
        problems = spec_errors(path)
        broken += bool(problems)
        for problem in problems:
            print(problem)
    print(f"{len(paths) - broken} of {len(paths)} study spec(s) valid", file=sys.stderr)
    if not files:
        for problem in regression_errors():
            broken += 1
            print(problem)
    return 1 if broken else 0


def build_parser() -> argparse.ArgumentParser:
    """The command line (docs/reference/cli.md is generated from it)."""
    parser = argparse.ArgumentParser(prog="mysqlbench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    target = sub.add_parser("target", help="managed targets (include/configs/targets/NAME.yaml)")
    target.add_argument("action", choices=("up", "down", "restart", "status"))
    target.add_argument("name", nargs="?")
    target.add_argument("--all", action="store_true", help="with down: every managed instance in the work directory")
    target.add_argument("--server", help="with up: a catalog server id (include/configs/servers.yaml)")
    target.add_argument("--port", type=int, help="with up --server: the new target's port")
    server = sub.add_parser("server", help="the server catalog (include/configs/servers.yaml)")
    server.add_argument("action", choices=("list", "fetch"))
    server.add_argument("id", nargs="?")
    server.add_argument("--check", action="store_true", help="with fetch: ask the archive whether the cached "
                        "version is still the one it serves")
    peer = sub.add_parser("peer", help="TPC-C peers as drivers (tpcc-mysql, sysbench-tpcc): build from a checkout")
    peer.add_argument("action", choices=("build",))
    peer.add_argument("name", choices=("tpcc-mysql", "sysbench-tpcc"))
    peer.add_argument("--source", help="the checkout, or a folder holding NAME/ (default: MYSQLBENCH_PEER_SOURCES, "
                      "else ../shared/refs beside the repository)")
    results = sub.add_parser("results", help="samples and validations of one DAG run (default: the latest)")
    results.add_argument("--dag-id")
    results.add_argument("--run-id")
    hist = sub.add_parser("history", help="each series of studies' recorded history (what the regression "
                          "analysis reads)")
    hist.add_argument("studies", nargs="+")
    hist.add_argument("--since", help="only runs measured at or after this ISO date/time (UTC)")
    versions = sub.add_parser("versions", help="releases regression DAGs (one study across server versions)")
    versions.add_argument("action", choices=("prepare",))
    versions.add_argument("regressions", nargs="*", help="default: every releases spec")
    again = sub.add_parser("rerun", help="reproduce a past study run from its lineage; a verdict per point")
    again.add_argument("run_id")
    again.add_argument("--dag-id", help="the study's DAG (default: the one whose kept reports have the run)")
    again.add_argument("--allow-differences", action="store_true", help="run even where the spec, server "
                       "version or host differ from the original's, and say so with every verdict")
    again.add_argument("--conf-only", action="store_true", help="check, and print the conf a rerun triggers "
                       "with (for the REST API or the trigger form), without running it")
    spooled = sub.add_parser("spool", help="samples measured while the results store could not be written "
                             "(kept on this worker): list them, or store them now")
    spooled.add_argument("action", choices=("list", "store"))
    linted = sub.add_parser("lint", help="validate study specs with file, line and field")
    linted.add_argument("files", nargs="*")
    documented = sub.add_parser("docs", help="write the generated reference (docs/reference/: spec fields, knobs, "
                                "connection extras, this CLI) from the code and data it describes")
    documented.add_argument("--check", action="store_true", help="only say whether the committed pages are current")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "docs":
        from mysqlbench import reference

        return reference.main(parser, check=args.check)
    if args.command == "lint":
        return lint(args.files)
    stdout = sys.stdout
    try:
        # stdout carries the JSON answer only; logs (Airflow's, Alembic's on a first migration) go to stderr
        with contextlib.redirect_stdout(sys.stderr):
            if args.command == "target" and args.all:
                if args.action != "down":
                    parser.error("--all goes with down")
                out = target_down_all()
            elif args.command == "target":
                if not args.name:
                    parser.error("a target name is needed")
                if (args.server or args.port) and args.action != "up":
                    parser.error("--server and --port go with up")
                if args.action == "up":
                    out = target_up(args.name, args.server, args.port)
                else:
                    out = {"down": target_down, "restart": target_restart,
                           "status": target_status}[args.action](args.name)
            elif args.command == "server":
                from mysqlbench import servers

                if args.action == "list":
                    out = server_list()
                elif not args.id:
                    parser.error("server fetch needs a catalog id (bin/mysqlbench server list)")
                else:
                    out = servers.fetch(args.id, check=args.check)
            elif args.command == "peer":
                from pathlib import Path

                from mysqlbench.workloads.tpcc import peers

                out = peers.build(args.name, Path(args.source) if args.source else None)
            elif args.command == "history":
                out = history_export(args.studies, args.since)
            elif args.command == "versions":
                out = versions_prepare(args.regressions)
            elif args.command == "rerun":
                out = rerun(args.run_id, args.dag_id, args.allow_differences, args.conf_only)
            elif args.command == "spool":
                out = spool(args.action)
            else:
                out = results_summary(args.dag_id, args.run_id)
    except MysqlbenchError as exc:
        print(f"mysqlbench: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(out, indent=2, default=str), file=stdout)
    if args.command == "spool" and any("error" in s for s in out.get("stored", [])):
        return 1  # some spooled samples are still not stored
    return 0


if __name__ == "__main__":
    sys.exit(main())
