"""The Benchmarks pages inside the Airflow UI: a FastAPI app the plugin (``plugins/mysqlbench_ui.py``)
mounts under ``/mysqlbench``, shown through ``external_views`` (a "Benchmarks" navigation entry and a
"Benchmark report" tab on every DAG run).

From the results store and the reports the study, regression and version DAGs wrote: the studies
and their runs with their validity, a run's report (charts, tables, findings, validation), two
runs of a study side by side (``studies.compare``, as the study report compares servers), and the
cross-version and regression reports. The one action, a run's Rerun (``studies.rerun``), is a
trigger through Airflow's own REST API with the user's own token: Airflow decides whether that
user may trigger the DAG. Every route requires Airflow's own
authentication (a plugin's FastAPI app gets none by itself): the ``PLUGINS`` view permission,
checked by Airflow's auth manager from the UI's token cookie or a bearer token. Nothing here reads
a connection's password or renders a connection: the store URL is printed with its password hidden.
"""

from __future__ import annotations

import base64
import html
import re
from pathlib import Path
from typing import Any
from urllib.parse import quote

from fastapi import Depends, FastAPI, HTTPException, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from mysqlbench import paths
from mysqlbench.theme import page_head

NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,249}$")
# Airflow's own run ids (manual__2026-12-04T16:49:28.045205+00:00, scheduled__, backfill__,
# asset_triggered__) and its default allowed_run_id_pattern; a deployment's wider pattern is read
# from its configuration. A run id is only ever a bound value, escaped HTML or a quoted URL here.
RUN_ID = re.compile(r"^[A-Za-z0-9_.~:+-]{1,250}$")
RUN_DIR = re.compile(r"^[A-Za-z0-9_~-][A-Za-z0-9_.~-]{0,249}$")  # paths.run_dir_name's alphabet
FILE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,200}\.(html|png|svg|json)$")
INDEX_RUNS = 50  # runs per study on the index page; /studies/{dag_id} lists them all
MEDIA = {"html": "text/html; charset=utf-8", "png": "image/png", "svg": "image/svg+xml", "json": "application/json"}
STYLE = page_head("body{margin:1em 2em}iframe{width:100%;height:85vh;border:1px solid #ccc}")


def _store():
    """The results store the DAGs write to: the ``mysqlbench_results`` connection through the API
    server's own secrets (a task's SDK hook is not available here), else the embedded SQLite."""
    from airflow.models.connection import Connection

    from mysqlbench.results.store import RESULTS_CONN_ID, ResultsStore, default_url, url_from_connection

    try:
        conn = Connection.get_connection_from_secrets(RESULTS_CONN_ID)
    except Exception:  # noqa: BLE001 - not defined: the embedded store
        return ResultsStore(default_url())
    return ResultsStore(url_from_connection(conn))


def _name(value: str, what: str, pattern: re.Pattern = NAME) -> str:
    if not pattern.fullmatch(value or ""):
        raise HTTPException(status_code=400, detail=f"not a {what}")
    return value


def _airflow_run_id_pattern() -> re.Pattern | None:
    from airflow.configuration import conf

    pattern = conf.get("scheduler", "allowed_run_id_pattern", fallback="").strip()
    return re.compile(pattern) if pattern else None


def run_id_ok(value: str) -> bool:
    """Every run id Airflow makes, or accepts under this deployment's ``allowed_run_id_pattern``;
    never one with a control character or a slash, or longer than Airflow's 250."""
    if not value or len(value) > 250 or re.search(r"[\x00-\x1f\x7f/\\]", value):
        return False
    if RUN_ID.fullmatch(value):
        return True
    configured = _airflow_run_id_pattern()
    return bool(configured and configured.match(value))


def _run_id(value: str) -> str:
    if not run_id_ok(value):
        raise HTTPException(status_code=400, detail="not a run id")
    return value


def run_href(base: str, dag_id: str, run_id: str) -> str:
    """A run's page, its ids quoted as one path segment each (``+`` and ``:`` included)."""
    return html.escape(f"{base}/runs/{quote(dag_id, safe='')}/{quote(run_id, safe='')}")


def _base(request: Request) -> str:
    """Where the app is mounted (``/mysqlbench`` in the API server), for absolute links."""
    return html.escape(request.scope.get("root_path", "").rstrip("/"))


def _options(runs: list[dict[str, Any]], chosen: int) -> str:
    """A run picker; ``chosen`` is selected (A: the run before the newest, B: the newest)."""
    return "".join(f"<option value='{html.escape(r['run_id'])}'{' selected' if i == chosen else ''}>"
                   f"{html.escape(r['run_id'])}</option>" for i, r in enumerate(runs))


def _page(title: str, *body: str) -> HTMLResponse:
    return HTMLResponse(f"<!doctype html><meta charset='utf-8'><title>{html.escape(title)}</title>{STYLE}"
                        + "\n".join(body))


def _reports_root() -> Path:
    """This machine's reports folder, which may not exist: the pages only read (on a deployment's
    API server, reports come from the results store; its container has no work directory and may not
    make one)."""
    return (paths.work_dir_path() / "reports").resolve()


def runs_of(store) -> dict[str, list[dict[str, Any]]]:
    """Every study run in the store, per study DAG, newest first: when it measured, the servers, its
    validity (valid, INVALID, or not validated yet), and its numbers: the dataset, how many points
    and units, and its primary metric's range over its executions (one statement, however many runs)."""
    import sqlalchemy as sa

    from mysqlbench.results.store import last_try, measured_by, samples, validations

    primaries = _primary_metrics()
    primary = sa.case(*[((samples.c.study == study) & (samples.c.metric == metric.name) & (samples.c.status == "ok"),
                         samples.c.value) for study, metric in primaries.items()], else_=sa.null()) \
        if primaries else sa.null()
    with store.engine.connect() as conn:
        measured = conn.execute(
            sa.select(samples.c.study, samples.c.dag_id, samples.c.run_id, sa.func.min(samples.c.recorded_at),
                      sa.func.group_concat(sa.distinct(samples.c.server_version))
                      if store.engine.dialect.name in ("sqlite", "mysql", "mariadb")
                      else sa.func.string_agg(sa.distinct(samples.c.server_version), ","),
                      sa.func.max(samples.c.dataset_id), sa.func.count(sa.distinct(samples.c.point)),
                      sa.func.count(sa.distinct(samples.c.subject)), sa.func.count(primary),
                      sa.func.min(primary), sa.func.max(primary))
            .where(measured_by(samples.c.task_id))
            .group_by(samples.c.study, samples.c.dag_id, samples.c.run_id)).all()
        verdicts: dict[tuple[str, str], bool] = {}
        for dag_id, run_id, success in conn.execute(sa.select(validations.c.dag_id, validations.c.run_id,
                                                              validations.c.success)
                                                    .where(validations.c.task_id == "validate",
                                                           last_try(validations))):
            verdicts[(dag_id, run_id)] = verdicts.get((dag_id, run_id), True) and bool(success)
    out: dict[str, list[dict[str, Any]]] = {}
    for study, dag_id, run_id, when, versions, dataset, points, units, n, low, high in measured:
        verdict = verdicts.get((dag_id, run_id))
        out.setdefault(dag_id, []).append({
            "study": study, "run_id": run_id, "measured_at": str(when)[:19],
            "servers": sorted(set((versions or "").split(","))),
            "validity": "valid" if verdict else "INVALID" if verdict is False else "not validated",
            "numbers": _numbers(dataset, points, units, n, low, high, primaries.get(study))})
    for runs in out.values():
        runs.sort(key=lambda r: r["measured_at"], reverse=True)
    return dict(sorted(out.items()))


def _numbers(dataset: str | None, points: int, units: int, n: int, low: float | None, high: float | None,
             metric) -> str:
    """A run's size and primary metric in a few words: "tpch-sf0.01; 2 points x 2 units;
    client_seconds 0.014 .. 0.021 s over 10 executions"."""
    words = [re.sub(r"-[0-9a-f]{12,}$", "", dataset)] if dataset else []  # its size, less the fingerprint
    words.append(f"{points} point{'s' * (points != 1)} x {units} unit{'s' * (units != 1)}")
    if metric is not None and n:
        words.append(f"{metric.name} {low:.4g} .. {high:.4g} {metric.unit} over {n} execution{'s' * (n != 1)}")
    return "; ".join(words)


def _primary_metrics() -> dict[str, Any]:
    """Each study's primary metric (its workload's), by study name; a spec that does not load is
    left out (lint reports it)."""
    from mysqlbench.studies.spec import load_spec, study_files
    from mysqlbench.workloads.base import workload_class

    out = {}
    for path in study_files():
        try:
            out[path.stem] = workload_class(load_spec(path.stem).workload).primary
        except Exception:  # noqa: BLE001 - a broken spec is lint's to report, not the index's
            continue
    return out


def listed_runs(measured: dict[str, list[dict[str, Any]]],
                airflow: dict[str, list[dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    """The runs the pages list per study DAG, newest first: every measured run (``runs_of``) with
    its state in Airflow where Airflow has it, and every run Airflow has of a study DAG that
    measured nothing (queued, running, refused by its check_spec, failed before measuring), said
    in words in place of a validity. ``airflow``: per DAG, its runs as ``_airflow_study_runs``
    reads them (run_id, state, started, refused)."""
    out = {dag_id: [dict(r) for r in runs] for dag_id, runs in measured.items()}
    for dag_id, runs in airflow.items():
        known = {r["run_id"]: r for r in out.get(dag_id, [])}
        for run in runs:
            if run["run_id"] in known:
                known[run["run_id"]]["state"] = run["state"]
                continue
            if run["refused"]:
                said = f"refused: {run['refused']}"
            elif run["state"] in ("queued", "running"):
                said = f"{run['state']}: nothing measured yet"
            elif run["state"] == "failed":
                said = "failed before measuring anything"
            else:
                said = f"ended {run['state']} with nothing measured"
            out.setdefault(dag_id, []).append({"study": dag_id, "run_id": run["run_id"], "measured_at": run["started"],
                                               "servers": [], "state": run["state"], "validity": said})
    for runs in out.values():
        runs.sort(key=lambda r: r["measured_at"], reverse=True)
    return dict(sorted(out.items()))


def _airflow_study_runs() -> dict[str, list[dict[str, Any]]]:
    """Every run Airflow has of a study DAG: its id, state, when it started (or was queued) and, for a
    run its check_spec refused, why. Read from Airflow's metadata database (these pages run in the
    api-server)."""
    import sqlalchemy as sa
    from airflow.models.dagrun import DagRun
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    from mysqlbench.studies.spec import study_files

    studies = sorted(path.stem for path in study_files())
    with create_session() as session:
        runs = session.execute(sa.select(DagRun.dag_id, DagRun.run_id, DagRun.state, DagRun.start_date,
                                         DagRun.queued_at).where(DagRun.dag_id.in_(studies))).all()
        refusals = _airflow_refusals(session, XComModel.dag_id.in_(studies))
    out: dict[str, list[dict[str, Any]]] = {}
    for dag_id, run_id, state, started, queued in runs:
        when = started or queued
        out.setdefault(dag_id, []).append({
            "run_id": run_id, "state": str(getattr(state, "value", state)),
            "started": when.strftime("%Y-%m-%d %H:%M:%S") if when else "",
            "refused": refusals.get((dag_id, run_id))})
    return out


def _study_runs(base: str, dag_id: str, runs: list[dict[str, Any]], limit: int | None) -> list[str]:
    """A study DAG's runs, newest first (the first ``limit`` of them, with a link to all), and a
    form to compare two of its measured runs."""
    shown = runs if limit is None else runs[:limit]
    out = [f"<h2>{html.escape(dag_id)}</h2>"]
    measured = [r for r in runs if r["servers"]]
    if len(measured) > 1:
        out.append(f"<form action='{base}/compare' method='get'><input type='hidden' name='dag_id' "
                   f"value='{html.escape(dag_id)}'>Compare <select name='a'>{_options(measured, 1)}</select> with "
                   f"<select name='b'>{_options(measured, 0)}</select> <button type='submit'>side by side</button>"
                   "</form>")
    out.append("<table><tr><th>run</th><th>measured (or started)</th><th>servers</th><th>size and primary metric"
               "</th><th>state</th><th>validity</th></tr>" + "".join(
        f"<tr><td><a href='{run_href(base, dag_id, r['run_id'])}'>{html.escape(r['run_id'])}"
        f"</a></td><td>{html.escape(r['measured_at'])}</td><td>{html.escape(', '.join(r['servers']))}</td>"
        f"<td>{html.escape(r.get('numbers') or '')}</td><td>{html.escape(r.get('state') or '')}</td>"
        f"<td class='{_validity_class(r['validity'])}'>{html.escape(r['validity'])}</td></tr>"
        for r in shown) + "</table>")
    if len(shown) < len(runs):
        out.append(f"<p><a href='{base}/studies/{html.escape(dag_id)}'>all {len(runs)} runs of "
                   f"{html.escape(dag_id)}</a></p>")
    return out


def _validity_class(validity: str) -> str:
    """valid in green, INVALID in red, a run not validated yet (running, or stopped before its
    validation) in grey: never the red of INVALID."""
    return {"valid": "ok", "INVALID": "bad"}.get(validity, "pending")


def other_reports(store) -> list[dict[str, Any]]:
    """The cross-version trend and regression reports, newest first: those kept in the results
    store (written by a worker anywhere), then any only on this machine's disk."""
    root = _reports_root()
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for kind, marker in (("across versions", "trend.json"), ("regression", "regression.json")):
        for row in store.reports_with(marker):
            found[(row["dag_id"], row["run"])] = {"kind": kind, "dag_id": row["dag_id"], "run": row["run"],
                                                  "when": _epoch(row["written_at"])}
        for path in root.glob(f"*/*/{marker}"):
            key = (path.parent.parent.name, path.parent.name)
            found.setdefault(key, {"kind": kind, "dag_id": key[0], "run": key[1], "when": path.stat().st_mtime})
    return sorted(found.values(), key=lambda r: r["when"], reverse=True)


def _epoch(when) -> float:
    """A stored timestamp in seconds (SQLite hands it back without a time zone; it was UTC)."""
    import datetime as dt

    return (when if when.tzinfo else when.replace(tzinfo=dt.timezone.utc)).timestamp()


def report_location(store, dag_id: str, run_id: str) -> str | None:
    """The folder name a run's report was written under (``paths.run_dir_name``; a report written
    before that naming is found under its older name), or None when it has no report."""
    for run_dir in dict.fromkeys((paths.run_dir_name(run_id), paths.legacy_run_dir_name(run_id))):
        if report_bytes(store, dag_id, run_dir, "index.html") is not None:
            return run_dir
    return None


def report_bytes(store, dag_id: str, run_dir: str, name: str) -> bytes | None:
    """One report file: from the results store, else from this machine's reports folder."""
    content = store.report_file(dag_id, run_dir, name)
    if content is not None:
        return content
    root = _reports_root()
    path = (root / dag_id / run_dir / name).resolve()
    return path.read_bytes() if root in path.parents and path.is_file() else None


def compare_runs(store, dag_id: str, run_a: str, run_b: str) -> dict[str, Any]:
    """Two runs of one study DAG side by side: primary metric per unit and setting (ratio B / A),
    counters (absent stays absent), plan structure, and each run's lineage."""
    import sqlalchemy as sa

    from mysqlbench.counters import with_derived
    from mysqlbench.results.store import last_try, measured_by, samples
    from mysqlbench.studies.compare import compare, frame_of_runs
    from mysqlbench.studies.spec import load_spec, spec_path
    from mysqlbench.studies.steps import workload_of

    rows = {}
    with store.engine.connect() as conn:
        for run_id in (run_a, run_b):
            rows[run_id] = [dict(r._mapping) for r in conn.execute(sa.select(samples).where(
                samples.c.dag_id == dag_id, samples.c.run_id == run_id, measured_by(samples.c.task_id),
                last_try(samples)))]
    missing = [r for r, found in rows.items() if not found]
    if missing:
        raise HTTPException(status_code=404, detail=f"no measured points for run(s) {missing} of {dag_id}")
    studies = {r["study"] for found in rows.values() for r in found}
    if len(studies) != 1:
        raise HTTPException(status_code=400, detail="the two runs are not runs of one study")
    study = studies.pop()
    spec = load_spec(spec_path(study))
    workload = workload_of(spec)
    lineage = []
    labelled = []
    for letter, run_id in (("A", run_a), ("B", run_b)):
        first = rows[run_id][0]
        labelled.append((f"run {letter}", rows[run_id]))  # by run (issue 24): both may be one server
        lineage.append({"run": f"run {letter}", "run_id": run_id, "server": f"{first['server_flavor']} {first['server_version']}",
                        "spec_hash": first["spec_hash"][:12], "dataset_id": first["dataset_id"],
                        "host_hash": (first["host_hash"] or "")[:12], "package_version": first["package_version"]})
    frame, plans = frame_of_runs(labelled, workload.primary)
    counters = with_derived(spec.counters)
    return {"study": study, "primary": workload.primary, "lineage": lineage,
            "comparison": compare(frame, workload.primary, counters, plans, band=spec.min_effect)}


def rerun_conf(store, dag_id: str, run_id: str, allow: bool) -> dict[str, Any]:
    """The conf that reproduces a run (``studies.rerun``), or a 400 with the reason it cannot be
    rebuilt (no such run, a spec that no longer merges). Whether the server version and host match
    is checked by the rerun's own first task, which refuses with the reason."""
    from mysqlbench.errors import MysqlbenchError
    from mysqlbench.studies import rerun
    from mysqlbench.studies.spec import load_spec, spec_path
    from mysqlbench.studies.steps import merged_spec

    try:
        original = rerun.load_original(store, dag_id, run_id)
        conf = rerun.conf_of(original, load_spec(spec_path(dag_id)))
        merged_spec(dag_id, conf)
    except MysqlbenchError as exc:
        raise HTTPException(status_code=400, detail=f"cannot rerun {run_id}: {exc}") from exc
    if allow:
        conf[rerun.ALLOW_DIFFERENCES] = True
    return conf


def reporting_dags() -> set[str]:
    """The DAGs that write a Benchmark report: every study, regression and releases DAG."""
    from mysqlbench.regression.spec import load_regression, regression_files
    from mysqlbench.studies.spec import study_files

    out = {path.stem for path in study_files()}
    for path in regression_files():
        try:
            out.update(load_regression(path).dag_ids().values())
        except Exception:  # noqa: BLE001 - a broken spec is lint's to report
            continue
    return out


def no_report(dag_id: str, run_id: str, recorded: bool, state: str | None,
              refused: str | None = None) -> tuple[int, str]:
    """What a run's Benchmark tab says when there is no report: 404 for a DAG that writes none or a
    run nobody knows, the reason its check_spec gave where it refused the run, else the run's
    state in words."""
    if dag_id not in reporting_dags():
        return 404, f"{dag_id} writes no Benchmark report (only study, regression and releases DAGs do)"
    if state is None and not recorded:
        return 404, f"no run {run_id} of {dag_id}"
    if refused:
        return 200, (f"This run was refused before anything was measured, so it has no report: {refused}. "
                     "Trigger it again with that corrected.")
    if state in ("queued", "running", None):
        return 200, (f"This run is {state or 'under way'}: its report is written by its report task, once "
                     "its points are measured and validated.")
    return 200, (f"This run ended {state} without a report: it stopped before its report task (a refused "
                 "spec or a failed step; its task logs in Airflow say which).")


def _airflow_run_state(dag_id: str, run_id: str) -> str | None:
    """The run's state in Airflow's metadata database (this page runs in the api-server), or None
    when Airflow has no such run."""
    import sqlalchemy as sa
    from airflow.models.dagrun import DagRun
    from airflow.utils.session import create_session

    with create_session() as session:
        state = session.scalar(sa.select(DagRun.state).where(DagRun.dag_id == dag_id, DagRun.run_id == run_id))
    return None if state is None else str(state.value if hasattr(state, "value") else state)


def _airflow_refusals(session, *where) -> dict[tuple[str, str], str]:
    """Why each refused run was refused, by (DAG id, run id): the XCom check_spec leaves (or
    ensure_dataset, when the dataset cannot fit) as ``steps.REFUSAL_KEY``, read from Airflow's
    metadata database; ``where``: more conditions."""
    import sqlalchemy as sa
    from airflow.models.xcom import XComModel

    from mysqlbench.studies.steps import REFUSAL_KEY

    rows = session.execute(sa.select(XComModel.dag_id, XComModel.run_id, XComModel.value).where(
        XComModel.task_id.in_(("check_spec", "ensure_dataset")), XComModel.key == REFUSAL_KEY, *where))
    found = {(row.dag_id, row.run_id): XComModel.deserialize_value(row) for row in rows}
    return {key: value for key, value in found.items() if isinstance(value, str)}


def _airflow_refusal(dag_id: str, run_id: str) -> str | None:
    """Why the run was refused (by check_spec, or ensure_dataset when the dataset cannot fit), or None."""
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    with create_session() as session:
        return _airflow_refusals(session, XComModel.dag_id == dag_id, XComModel.run_id == run_id).get((dag_id, run_id))


def _same_origin(request: Request) -> None:
    """A state-changing form post must come from this server's own pages (no cross-site post
    riding on the UI's token cookie)."""
    origin = request.headers.get("origin") or request.headers.get("referer")
    if origin is None:
        return  # a client that is not a browser (curl, a script): its bearer token is its own
    from urllib.parse import urlsplit

    if urlsplit(origin).netloc != request.url.netloc:
        raise HTTPException(status_code=403, detail="a rerun is only accepted from this server's own pages")


def _airflow_root(request: Request) -> str:
    """The API server's own path prefix: where this app is mounted, less its ``/mysqlbench``."""
    root = request.scope.get("root_path", "").rstrip("/")
    return root.rsplit("/", 1)[0] if root.endswith("/mysqlbench") else ""


def _user_token(request: Request) -> str:
    """The token this request was authenticated with: the bearer header, else the UI's cookie."""
    header = request.headers.get("authorization", "")
    if header.lower().startswith("bearer "):
        return header[7:]
    token = request.cookies.get("_token")
    if not token:
        raise HTTPException(status_code=401, detail="no Airflow token to trigger the rerun with")
    return token


async def _trigger(base: str, token: str, dag_id: str, conf: dict[str, Any]) -> tuple[int, Any]:
    """POST /api/v2/dags/{dag_id}/dagRuns as the user (Airflow names the run)."""
    import httpx

    async with httpx.AsyncClient(base_url=base, timeout=60) as client:
        response = await client.post(f"/api/v2/dags/{quote(dag_id, safe='')}/dagRuns",
                                     json={"logical_date": None, "conf": conf},
                                     headers={"Authorization": f"Bearer {token}"})
    try:
        answer = response.json()
    except ValueError:
        answer = response.text[:500]
    return response.status_code, answer.get("detail", answer) if response.status_code >= 300 and isinstance(
        answer, dict) else answer


def create_app() -> FastAPI:
    from airflow.api_fastapi.auth.managers.models.resource_details import AccessView
    from airflow.api_fastapi.core_api.security import requires_access_view

    # no /docs, /redoc or /openapi.json: FastAPI serves those outside the app's dependencies, so
    # without a login (issue 24); every page here is behind Airflow's authentication
    app = FastAPI(title="mysqlbench", description="Benchmark results (read-only)", docs_url=None, redoc_url=None,
                  openapi_url=None, dependencies=[Depends(requires_access_view(AccessView.PLUGINS))])

    @app.get("/", response_class=HTMLResponse)
    def index(request: Request) -> HTMLResponse:
        base = _base(request)
        store = _store()
        body = ["<h1>Benchmarks</h1>", f"<p>Results store: {html.escape(store.describe())}</p>"]
        reports = other_reports(store)
        if reports:
            body.append("<h2>Across versions and regression reports</h2><table><tr><th>report</th><th>DAG</th>"
                        "<th>run</th></tr>" + "".join(
                            f"<tr><td>{html.escape(r['kind'])}</td><td>{html.escape(r['dag_id'])}</td><td><a href="
                            f"'{base}/reports/{html.escape(r['dag_id'])}/{html.escape(r['run'])}/index.html'>"
                            f"{html.escape(paths.run_id_of_dir(r['run']))}</a></td></tr>" for r in reports[:30]) + "</table>")
        for dag_id, runs in listed_runs(runs_of(store), _airflow_study_runs()).items():
            body.extend(_study_runs(base, dag_id, runs, limit=INDEX_RUNS))
        return _page("Benchmarks", *body)

    @app.get("/studies/{dag_id}", response_class=HTMLResponse)
    def study_page(dag_id: str, request: Request) -> HTMLResponse:
        _name(dag_id, "DAG id")
        runs = listed_runs(runs_of(_store()), _airflow_study_runs()).get(dag_id)
        if not runs:
            raise HTTPException(status_code=404, detail="no run of this DAG")
        return _page(dag_id, *_study_runs(_base(request), dag_id, runs, limit=None))

    @app.get("/runs/{dag_id}/{run_id}", response_class=HTMLResponse)
    def run_page(dag_id: str, run_id: str, request: Request) -> HTMLResponse:
        _name(dag_id, "DAG id")
        _run_id(run_id)
        store = _store()
        runs = runs_of(store).get(dag_id, [])
        validity = next((r for r in runs if r["run_id"] == run_id), None)
        head = [f"<h1>{html.escape(dag_id)} / {html.escape(run_id)}</h1>"]
        if validity:
            head.append(f"<p class='{_validity_class(validity['validity'])}'>"
                        f"{html.escape(validity['validity'])}; servers: {html.escape(', '.join(validity['servers']))}"
                        "</p>")
        others = [r for r in runs if r["run_id"] != run_id]
        if others and validity:  # a run that measured nothing has nothing to compare
            head.append(f"<form action='{_base(request)}/compare' method='get'><input type='hidden' name='dag_id' "
                        f"value='{html.escape(dag_id)}'><input type='hidden' name='a' value='{html.escape(run_id)}'>"
                        f"Compare this run with <select name='b'>{_options(others, 0)}</select> "
                        "<button type='submit'>side by side</button></form>")
        run_dir = report_location(store, dag_id, run_id)
        if run_dir is None:
            state = _airflow_run_state(dag_id, run_id)
            status, words = no_report(dag_id, run_id, validity is not None, state,
                                      _airflow_refusal(dag_id, run_id) if state == "failed" else None)
            if status == 404:
                raise HTTPException(status_code=404, detail=words)
            return _page(run_id, *head, f"<p>{html.escape(words)}</p>")
        src = f"{_base(request)}/reports/{dag_id}/{run_dir}/index.html"
        if validity:  # a study run: it can be reproduced
            head.append(f"<form action='{run_href(_base(request), dag_id, run_id)}/rerun' method='post'>"
                        "<button type='submit'>Rerun</button> this run from its lineage (same spec, seed, "
                        "server version and host; refused with the reason where one differs) <label><input "
                        "type='checkbox' name='allow_differences' value='1'> or run with the differences "
                        "stated</label></form>")
        return _page(run_id, *head, f"<p><a href='{html.escape(src)}'>open the report alone</a></p>",
                     f"<iframe title='report' src='{html.escape(src)}'></iframe>")

    @app.post("/runs/{dag_id}/{run_id}/rerun")
    async def rerun_action(dag_id: str, run_id: str, request: Request):
        """Trigger a rerun through Airflow's own REST API with the user's own token, so Airflow
        decides whether this user may trigger this DAG; then open the new run in Airflow's UI."""
        _name(dag_id, "DAG id")
        _run_id(run_id)
        _same_origin(request)
        form = (await request.body()).decode("latin-1")
        allow = "allow_differences=1" in form.split("&")
        from starlette.concurrency import run_in_threadpool

        conf = await run_in_threadpool(rerun_conf, _store(), dag_id, run_id, allow)
        token = _user_token(request)
        airflow = f"{request.url.scheme}://{request.url.netloc}{_airflow_root(request)}"
        status, answer = await _trigger(airflow, token, dag_id, conf)
        if status in (401, 403):
            raise HTTPException(status_code=403, detail=f"Airflow does not let you trigger {dag_id}: {answer}")
        if status >= 300:
            raise HTTPException(status_code=502, detail=f"Airflow refused the rerun ({status}): {answer}")
        new_run = answer["dag_run_id"]
        # shown where the form was (Airflow frames this page without top navigation): the new run's
        # Benchmark page, which lists it once its report is written, and its place in Airflow's UI
        airflow_page = f"{_airflow_root(request)}/dags/{quote(dag_id, safe='')}/runs/{quote(new_run, safe='')}"
        return _page(f"rerun of {run_id}", "<h1>Rerun triggered</h1>",
                     f"<p>Airflow started run <a href='{run_href(_base(request), dag_id, new_run)}'>"
                     f"{html.escape(new_run)}</a> of {html.escape(dag_id)} as you, with the settings, seed and "
                     f"checks of {html.escape(run_id)}. Its report ends with the reproduction verdicts, one per "
                     f"point; in Airflow: <code>{html.escape(airflow_page)}</code>.</p>")

    @app.get("/reports/{dag_id}/{run_dir}/{name}")
    def report_file(dag_id: str, run_dir: str, name: str):
        _name(dag_id, "DAG id")
        _name(run_dir, "run directory", RUN_DIR)
        if not FILE.fullmatch(name):
            raise HTTPException(status_code=400, detail="not a report file")
        content = report_bytes(_store(), dag_id, run_dir, name)
        if content is None:
            raise HTTPException(status_code=404, detail="no such report file")
        return Response(content, media_type=MEDIA[name.rsplit(".", 1)[1]])

    @app.get("/compare", response_class=HTMLResponse)
    def compare_page(request: Request, dag_id: str = Query(...), a: str = Query(...),
                     b: str = Query(...)) -> HTMLResponse:
        _name(dag_id, "DAG id")
        _run_id(a)
        _run_id(b)
        if a == b:
            return RedirectResponse(html.unescape(run_href(_base(request), dag_id, a)))
        from mysqlbench.studies.report import ratio_chart

        result = compare_runs(_store(), dag_id, a, b)
        comparison, primary = result["comparison"], result["primary"]
        body = [f"<h1>{html.escape(result['study'])}: two runs side by side</h1>",
                "<table><tr>" + "".join(f"<th>{k}</th>" for k in result["lineage"][0]) + "</tr>" + "".join(
                    "<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in row.values()) + "</tr>"
                    for row in result["lineage"]) + "</table>"]
        if comparison["primary"] is not None:
            servers = comparison["servers"]
            ratio = f"{servers[1]} / {servers[0]}"
            body.append(f"<h2>Median {html.escape(primary.name)} ({html.escape(primary.unit)}; "
                        f"{html.escape(primary.better.value)} is better; ratio {html.escape(ratio)})</h2>"
                        + comparison["primary"].to_html(float_format="%.4f", na_rep="-"))
            png = ratio_chart(comparison["effects"][ratio], f"{result['study']}: {ratio}, {primary.name}",
                              band=comparison["band"])
            body.append(f"<img alt='ratio chart' src='data:image/png;base64,{base64.b64encode(png).decode()}'>")
            if comparison["plans"] is not None:
                body.append("<h2>Plan structure</h2><p>Each plan's hash comparable across servers and flavors "
                            "(join order and each table's access), not the exact plan hash the report lists "
                            "per point.</p>" + comparison["plans"].to_html(na_rep="-"))
            for counter, table in comparison["counters"].items():
                body.append(f"<h2>{html.escape(counter)} (median delta; absent: the server has no such counter)</h2>"
                            + table.to_html(float_format="%.0f", na_rep="absent"))
        else:
            body.append("<p>Nothing to compare: the runs have no measured unit in common.</p>")
        return _page(f"{result['study']}: compare", *body)

    @app.get("/api/runs")
    def runs_json() -> dict[str, Any]:
        return {"runs": runs_of(_store())}

    return app

