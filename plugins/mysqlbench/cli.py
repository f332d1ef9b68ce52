"""Command line for what lives outside a DAG run: bringing managed targets up and down (with the
benchmark user's password kept only in the Airflow connection) and summarising recorded results.

    bin/mysqlbench target up demo | down demo | status demo
    bin/mysqlbench results [--dag-id tpch_load] [--run-id RUN]
    bin/mysqlbench lint [SPEC.yaml ...]
"""

from __future__ import annotations

import argparse
import contextlib
import json
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
    Pool.create_or_update_pool(name, slots=1, description=f"mysqlbench: one point at a time on {conn_id}",
                               include_deferred=False)
    return name


def target_up(name: str) -> dict:
    from mysqlbench.targets.managed import BENCH_USER, ManagedServer, ManagedSpec

    spec = ManagedSpec.load(name)
    server = ManagedServer(spec)
    server.start()
    existing = _airflow_connection(spec.conn_id)
    password = server.ensure_benchmark_user(existing.password if existing else None)
    _save_airflow_connection(spec.conn_id, host="127.0.0.1", port=spec.port, login=BENCH_USER,
                             password=password, extra=server.connection_extra())
    return {**server.health(), "conn_id": spec.conn_id, "login": BENCH_USER, "pool": _ensure_pool(spec.conn_id)}


def target_down(name: str) -> dict:
    from mysqlbench.targets.managed import ManagedServer, ManagedSpec

    server = ManagedServer(ManagedSpec.load(name))
    server.stop()
    return {"name": name, "running": False}


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

    from mysqlbench.results.store import ResultsStore, samples, validations

    store = ResultsStore.from_airflow()
    with store.engine.connect() as conn:
        if run_id is None:
            query = sa.select(samples.c.run_id).order_by(samples.c.recorded_at.desc()).limit(1)
            if dag_id:
                query = query.where(samples.c.dag_id == dag_id)
            run_id = conn.execute(query).scalar()
        rows = conn.execute(sa.select(samples.c.task_id, samples.c.metric, samples.c.value, samples.c.unit,
                                      samples.c.status, samples.c.dataset_id, samples.c.server_version)
                            .where(samples.c.run_id == run_id).order_by(samples.c.id)).all()
        checks = conn.execute(sa.select(validations.c.suite, validations.c.success, validations.c.statistics)
                              .where(validations.c.run_id == run_id)).all()
    return {
        "results_store": store.describe(),
        "run_id": run_id,
        "samples": [dict(r._mapping) for r in rows],
        "validations": [{"suite": c.suite, "success": c.success, **json.loads(c.statistics)} for c in checks],
    }


def lint(files: list[str]) -> int:
    """Validate study specs (default: every one the DAG factory reads); print each problem with its
    file, line and field, as the DAG import error shows it. Exit 1 if any spec is broken."""
    from pathlib import Path

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
    return 1 if broken else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mysqlbench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    target = sub.add_parser("target", help="managed targets (include/configs/targets/NAME.yaml)")
    target.add_argument("action", choices=("up", "down", "status"))
    target.add_argument("name", nargs="?")
    target.add_argument("--all", action="store_true", help="with down: every managed instance in the work directory")
    results = sub.add_parser("results", help="samples and validations of one DAG run (default: the latest)")
    results.add_argument("--dag-id")
    results.add_argument("--run-id")
    linted = sub.add_parser("lint", help="validate study specs with file, line and field")
    linted.add_argument("files", nargs="*")
    args = parser.parse_args(argv)
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
                out = {"up": target_up, "down": target_down, "status": target_status}[args.action](args.name)
            else:
                out = results_summary(args.dag_id, args.run_id)
    except MysqlbenchError as exc:
        print(f"mysqlbench: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(out, indent=2, default=str), file=stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
