"""One study across server versions (a ``releases`` regression spec): the plain steps its DAG wires.

A spec makes one DAG per flavor line (``<regression>_mariadb``, ``<regression>_mysql``), scheduled
on that line's release dates (``include/configs/servers.yaml``), so ``airflow backfill create
--from-date 2015-01-01 --to-date 2026-12-01`` makes one run per release of the line in the range,
not one per day, and a backfill of one line never finds its dates taken by the other's (Airflow
decides "already exists" by DAG and logical date). A run's logical date picks the server of the
line that was current then (``servers.current_at``). Each server runs as its own
managed target (``<prefix>_<server id>`` on ``port_base`` + its catalog position, its own datadir);
``prepare`` defines those targets and their Airflow connections up front from the command line,
because a task may not write Airflow's metadata database (Airflow 3 blocks it). The measurement is
the study's own DAG run, triggered with the target in its conf, so it is validated, reported and
published as any other run and joins the regression history. ``trend`` reads the valid runs this
DAG triggered (so one flavor line) and compares them per server version with ``studies.compare``.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import re
from typing import Any

from mysqlbench import servers
from mysqlbench.errors import MysqlbenchError
from mysqlbench.theme import page_head

log = logging.getLogger(__name__)

RUNNABLE_STATES = ("queued", "running", "success")


class NotMeasured(MysqlbenchError):
    """This run measures nothing, for the reason given (no server then, not runnable here, or
    already measured): the task is skipped with it."""


# -- which server, on which target -------------------------------------------------------------------
def release_events(flavor: str) -> list[dt.datetime]:
    """The catalog release dates of one flavor line, midnight UTC: its DAG's schedule."""
    return [dt.datetime.combine(day, dt.time(), tzinfo=dt.timezone.utc) for day in servers.release_dates(flavor)]


def target_of(server_id: str, versions) -> dict[str, Any]:
    """The managed target a releases DAG runs ``server_id`` on: name, port and connection id."""
    ids = list(servers.catalog())
    name = f"{versions.target_prefix}_{re.sub(r'[^a-z0-9]+', '_', server_id)}"
    return {"name": name, "port": versions.port_base + ids.index(server_id), "conn_id": f"mysqlbench_{name}"}


def unavailable_here(entry: servers.CatalogServer) -> str | None:
    """Why this host cannot run ``entry`` (None: it can)."""
    if entry.source == "basedir" and not entry.basedir:
        return (f"{entry.id} needs a basedir with its binaries (servers.yaml has none; no Debian suite "
                "packages it)")
    return None


def pick(flavor: str, when: dt.datetime) -> servers.CatalogServer:
    """The catalog server of ``flavor`` current at ``when``, or NotMeasured saying why none is."""
    entry = servers.current_at(flavor, when.date())
    if entry is None:
        first = min((s.released for s in servers.catalog().values() if s.flavor == flavor), default=None)
        raise NotMeasured(f"no {flavor} server in the catalog was released by {when.date()} (its first: {first})")
    why = unavailable_here(entry)
    if why:
        raise NotMeasured(f"{entry.id} was current at {when.date()} but is not applicable here: {why}")
    return entry


def prepare(spec) -> list[dict[str, Any]]:
    """Define every runnable catalog server's managed target (its spec beside its datadir) for a
    releases spec, without starting it; the caller saves each one's Airflow connection with the
    password returned (the task that starts the server gives the benchmark user that password)."""
    import secrets

    from mysqlbench.targets.managed import ManagedSpec

    out = []
    for entry in servers.catalog().values():
        if unavailable_here(entry):
            continue
        where = target_of(entry.id, spec.versions)
        path = ManagedSpec.path_of(where["name"])
        if path.exists():
            existing = ManagedSpec.load(where["name"])
            if existing.server != entry.id or existing.port != where["port"]:
                raise MysqlbenchError(f"managed target {where['name']} ({path}) runs {existing.server} on "
                                      f"{existing.port}, not {entry.id} on {where['port']}")
        else:
            ManagedSpec(name=where["name"], conn_id=where["conn_id"], port=where["port"], server=entry.id).save()
        out.append({**where, "server": entry.id, "password": secrets.token_urlsafe(24)})
    return out


def provision(entry: servers.CatalogServer, versions, store=None) -> dict[str, Any]:
    """Fetch the server's packages if needed, start its managed target (initialising the datadir
    the first time) and give the benchmark user the connection's password, all under a hold of the
    target and its host: a point measuring on the host is never disturbed by a start."""
    from mysqlbench.results.store import ResultsStore
    from mysqlbench.targets.connection import TargetConnection
    from mysqlbench.targets.hold import Hold, target_resources
    from mysqlbench.targets.managed import ManagedServer, ManagedSpec

    where = target_of(entry.id, versions)
    try:
        target = TargetConnection.from_airflow(where["conn_id"])
    except Exception as exc:  # noqa: BLE001 - Airflow's not-found error
        raise MysqlbenchError(f"no connection {where['conn_id']} for {entry.id}: define the releases targets first "
                              f"with `bin/mysqlbench versions prepare` ({exc})") from None
    if entry.source == "debian":
        servers.fetch(entry.id)
    server = ManagedServer(ManagedSpec.load(where["name"]))
    hold = Hold(store or ResultsStore.from_airflow(), target_resources(target), f"provision {entry.id}").acquire(3600)
    try:
        started = not server.is_running()
        server.start(holder=hold.token)
        if not server.login_works(target.password):
            server.set_benchmark_password(target.password)
    finally:
        hold.release()
    with target.session() as conn:
        from mysqlbench.results.lineage import server_variables
        from mysqlbench.targets.connection import server_info

        info, variables = server_info(conn), server_variables(conn)
    return {**where, "server": entry.id, "flavor": info.flavor, "version": info.version_string, "started": started,
            "datadir": variables.get("datadir", ""), "tmpdir": variables.get("tmpdir", "")}


def stand_down(name: str, conn_id: str, store=None) -> None:
    """Stop a version's managed target that ``provision`` started, once its study run is over (or
    it was not needed): an idle server of one version must not share the host with the next
    version's measurement. Under the target and host hold, so no point is cut short."""
    from mysqlbench.results.store import ResultsStore
    from mysqlbench.targets.connection import TargetConnection
    from mysqlbench.targets.hold import Hold, target_resources
    from mysqlbench.targets.managed import ManagedServer, ManagedSpec

    resources = target_resources(TargetConnection.from_airflow(conn_id))
    with Hold(store or ResultsStore.from_airflow(), resources, f"stop {name} after its measurement"):
        ManagedServer(ManagedSpec.load(name)).stop()
    log.info("stopped %s: its measurement is over", name)


# -- already measured? -------------------------------------------------------------------------------
# the study settings a releases DAG run may change from its trigger form or conf (a cheaper or a
# bigger run than the spec's), each defaulting to the suite's own conf
STUDY_PARAMS = {
    "scale_factor": {"type": ["number", "null"], "exclusiveMinimum": 0, "maximum": 1000,
                     "description": "the study's TPC-H scale factor (empty: the spec's)"},
    "queries": {"type": ["array", "null"], "items": {"type": "string", "pattern": "^q[0-9]{2}$"}, "minItems": 1,
                "description": "the study's queries, e.g. [\"q03\", \"q08\"] (empty: the spec's)"},
}


def study_params(spec) -> dict[str, Any]:
    """The releases DAG's params for the study's own settings (``STUDY_PARAMS``), for a TPC-H
    study (the only workload with a scale factor and queries)."""
    from airflow.sdk import Param

    from mysqlbench.studies.form import NOT_FINITE
    from mysqlbench.studies.spec import load_spec

    if load_spec(spec.suite[0].study).workload != "tpch":
        return {}
    conf = spec.suite[0].conf
    return {name: Param(conf.get(name), title=name.replace("_", " ").capitalize(),
                        **(schema | (NOT_FINITE if "number" in schema["type"] else {})))
            for name, schema in STUDY_PARAMS.items()}


def study_conf(spec, params: dict[str, Any], target_conn_id: str) -> dict[str, Any]:
    """The study run's conf: the suite's, with the run's own ``STUDY_PARAMS`` values over it."""
    given = {name: params[name] for name in STUDY_PARAMS if params.get(name) is not None}
    return {**spec.suite[0].conf, **given, "target_conn_id": target_conn_id}


def study_spec_data(study: str, conf: dict[str, Any]) -> dict[str, Any]:
    """The spec a study run triggered with ``conf`` records its samples with: the trigger form's
    defaults overridden by the conf, merged into the spec file (as the run's check_spec does)."""
    from mysqlbench.studies.form import form_params
    from mysqlbench.studies.spec import load_spec, spec_path
    from mysqlbench.studies.steps import merged_spec

    params = {name: param.value for name, param in form_params(load_spec(spec_path(study))).items()}
    params.update(conf)
    return merged_spec(study, params).model_dump(by_alias=True, mode="json")


def measured_key(study: str, conf: dict[str, Any], provisioned: dict[str, Any]) -> dict[str, Any]:
    """What makes a measurement the same one: the spec (its hash; the spec fixes the dataset's
    definition), the exact server version, and the host (the hash of its facts, as recorded)."""
    from pathlib import Path

    from mysqlbench.results.lineage import host_facts, stable_hash

    facts = host_facts(Path(provisioned["datadir"]), Path(provisioned["tmpdir"]))
    return {"study": study, "spec_hash": stable_hash(study_spec_data(study, conf)),
            "server_version": provisioned["version"], "host_hash": stable_hash(facts)}


def already_measured(store, key: dict[str, Any]) -> dict[str, Any] | None:
    """A valid run of the study with the same spec hash, server version and host, if any (the
    newest), with its dataset."""
    import sqlalchemy as sa

    from mysqlbench.regression.history import STUDY_SUITE_TASK
    from mysqlbench.results.store import last_try, measured_by, samples, validations

    with store.engine.connect() as conn:
        runs = conn.execute(
            sa.select(samples.c.dag_id, samples.c.run_id, samples.c.dataset_id, sa.func.min(samples.c.recorded_at))
            .where(samples.c.study == key["study"], samples.c.spec_hash == key["spec_hash"],
                   samples.c.server_version == key["server_version"], samples.c.host_hash == key["host_hash"],
                   measured_by(samples.c.task_id))
            .group_by(samples.c.dag_id, samples.c.run_id, samples.c.dataset_id)
            .order_by(sa.func.min(samples.c.recorded_at).desc())).all()
        for dag_id, run_id, dataset_id, when in runs:
            verdicts = conn.execute(sa.select(validations.c.success).where(
                validations.c.dag_id == dag_id, validations.c.run_id == run_id,
                validations.c.task_id == STUDY_SUITE_TASK, last_try(validations))).scalars().all()
            if verdicts and all(verdicts):
                return {"dag_id": dag_id, "run_id": run_id, "dataset_id": dataset_id, "measured_at": str(when)}
    return None


def study_run_id(dag_id: str, server_id: str, key: dict[str, Any], attempt: int = 1) -> str:
    """The study run that measures this key: the same id from every run of the DAG that picks the
    same server, so Airflow itself refuses a second one (a run id is unique per DAG)."""
    from mysqlbench.results.lineage import stable_hash

    digest = stable_hash({k: key[k] for k in ("spec_hash", "server_version", "host_hash")})[:12]
    return f"{dag_id}__{server_id}__{digest}" + (f"__{attempt}" if attempt > 1 else "")


# -- the trend across versions -----------------------------------------------------------------------
def trend(store, study: str, dag_id: str) -> dict[str, Any]:
    """Per server version (oldest release first), from the newest valid study run this DAG
    triggered for it (one flavor line: a releases DAG follows one): the primary metric's median
    per unit and setting with its spread (quartiles, n executions) and the ratio to the oldest with
    its interval,
    each counter's median (absent where a server lacks it), the plan structure per version and the
    versions where it changed. Built on ``studies.compare``, as the study and UI comparisons are."""
    import sqlalchemy as sa

    from mysqlbench.counters import with_derived
    from mysqlbench.regression.history import STUDY_SUITE_TASK
    from mysqlbench.results.store import last_try, measured_by, samples, validations
    from mysqlbench.studies.compare import as_records, compare, frame_of_runs, server_of, setting_of
    from mysqlbench.studies.spec import load_spec, spec_path
    from mysqlbench.studies.steps import workload_of

    spec = load_spec(spec_path(study))
    workload = workload_of(spec)
    prefix = f"{dag_id}__"
    with store.engine.connect() as conn:
        verdict: dict[str, bool] = {}
        for run_id, success in conn.execute(sa.select(validations.c.run_id, validations.c.success).where(
                validations.c.dag_id == study, validations.c.task_id == STUDY_SUITE_TASK,
                validations.c.run_id.startswith(prefix, autoescape=True), last_try(validations))):
            verdict[run_id] = verdict.get(run_id, True) and bool(success)
        valid = sorted(r for r, ok in verdict.items() if ok)
        rows = [dict(r._mapping) for r in conn.execute(sa.select(samples).where(
            samples.c.dag_id == study, samples.c.run_id.in_(valid), measured_by(samples.c.task_id),
            last_try(samples)))] \
            if valid else []
    per_run: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        per_run.setdefault(row["run_id"], []).append(row)
    newest: dict[str, tuple[str, Any]] = {}  # server id -> (run id, when it measured)
    for run_id, run_rows in per_run.items():
        server_id = run_id[len(prefix):].split("__")[0]
        started = min(r["recorded_at"] for r in run_rows)
        if server_id not in newest or started > newest[server_id][1]:
            newest[server_id] = (run_id, started)

    def released(server_id: str) -> dt.date:
        return servers.catalog()[server_id].released if server_id in servers.catalog() else dt.date.max

    order = sorted(newest, key=lambda sid: (released(sid), sid))
    labelled, versions = [], []
    for position, server_id in enumerate(order, start=1):
        run_id = newest[server_id][0]
        first = per_run[run_id][0]
        label = f"{position:02d} {server_of(first)}"
        labelled.append((label, per_run[run_id]))
        versions.append({"label": label, "server_id": server_id, "released": str(released(server_id)),
                         "flavor": first["server_flavor"], "version": first["server_version"], "run_id": run_id,
                         "dataset_id": first["dataset_id"], "spec_hash": first["spec_hash"],
                         "host_hash": first["host_hash"], "measured_at": str(newest[server_id][1])})
    out: dict[str, Any] = {"study": study, "dag_id": dag_id, "primary_metric": workload.primary.name,
                           "unit": workload.primary.unit, "better": workload.primary.better.value,
                           "versions": versions, "medians": [], "plan_changes": [], "comparison": None}
    if not labelled:
        return out
    frame, plans = frame_of_runs(labelled, workload.primary)
    ok = frame[frame["status"] == "ok"].assign(setting=lambda f: f["point"].map(setting_of))
    spread = ok.groupby(["subject", "setting", "server"])["primary"].agg(
        median="median", q1=lambda x: x.quantile(0.25), q3=lambda x: x.quantile(0.75), n="count")
    out["medians"] = [{"subject": s, "setting": st, "version": v, "median": float(row["median"]),
                       "q1": float(row["q1"]), "q3": float(row["q3"]), "n": int(row["n"])}
                      for (s, st, v), row in spread.iterrows()]
    if len(versions) > 1:
        comparison = compare(frame, workload.primary, with_derived(spec.counters), plans, band=spec.min_effect)
        out["comparison"] = as_records(comparison)
        out["plan_changes"] = plan_changes(comparison.get("plans"), [v["label"] for v in versions])
        out["_tables"] = comparison
    return out


def plan_changes(table, labels: list[str]) -> list[dict[str, Any]]:
    """Where a unit's plan structure differs from the version before it (versions in order)."""
    if table is None:
        return []
    changes = []
    for (subject, setting), row in table.iterrows():
        previous = None
        for label in labels:
            value = row.get(label)
            if not isinstance(value, str):
                continue
            if previous is not None and value != previous[1]:
                changes.append({"subject": subject, "setting": setting, "version": label, "since": previous[0],
                                "plan_before": previous[1], "plan_after": value})
            previous = (label, value)
    return changes


def write_trend(result: dict[str, Any], *, dag_id: str, run_id: str, note: str = "") -> dict[str, Any]:
    """``trend.json`` and ``index.html`` (a chart per unit: the median per version in release order,
    plan changes marked with the SVG id ``plan-change-<unit>-<version position>``; the comparison
    tables) under the run's report directory."""
    import html

    from mysqlbench.studies.report import report_dir

    directory = report_dir(dag_id, run_id)
    tables = result.pop("_tables", None)
    data = {**result, "note": note}
    (directory / "trend.json").write_text(json.dumps(data, indent=2, default=str))
    esc = html.escape
    body = [f"<h1>{esc(result['study'])} across server versions</h1>",
            f"<p>{esc(note)}</p>" if note else "",
            "<h2>Versions (oldest release first)</h2>",
            "<table><tr><th>#</th><th>server</th><th>released</th><th>version</th><th>study run</th><th>dataset</th>"
            "</tr>" + "".join(f"<tr><td>{esc(v['label'][:2])}</td><td>{esc(v['server_id'])}</td><td>{esc(v['released'])}"
                              f"</td><td>{esc(str(v['version']))}</td><td>{esc(v['run_id'])}</td>"
                              f"<td>{esc(str(v['dataset_id']))}</td></tr>" for v in result["versions"]) + "</table>"]
    if len(result["versions"]) < 2:
        body.append("<p>Fewer than two versions measured yet: nothing to compare.</p>")
    else:
        for subject in sorted({m["subject"] for m in result["medians"]}):
            body.append(_trend_svg(result, subject))
        if result["plan_changes"]:
            body.append("<h2>Plan changes</h2><ul>" + "".join(
                f"<li>{esc(c['subject'])} ({esc(c['setting'])}): plan {esc(c['plan_before'])} up to "
                f"{esc(c['since'])}, {esc(c['plan_after'])} from {esc(c['version'])}</li>"
                for c in result["plan_changes"]) + "</ul>")
        if tables is not None and tables.get("primary") is not None:
            body.append(f"<h2>Median {esc(result['primary_metric'])} ({esc(result['unit'])}; {esc(result['better'])} "
                        f"is better; ratios to the oldest)</h2>" + tables["primary"].to_html(float_format="%.4f",
                                                                                            na_rep="-"))
            if tables.get("plans") is not None:
                body.append("<h2>Plan structure hash per version</h2>" + tables["plans"].to_html(na_rep="-"))
            for counter, table in tables.get("counters", {}).items():
                body.append(f"<h2>{esc(counter)} (median delta per execution; absent: the server has no such "
                            "counter)</h2>" + table.to_html(float_format="%.0f", na_rep="absent"))
    (directory / "index.html").write_text(
        "<!doctype html><meta charset='utf-8'><title>" + esc(result["study"]) + " across versions</title>"
        + page_head("body{max-width:1200px;margin:2em auto}") + "\n".join(body))
    return {"html": str(directory / "index.html"), "json": str(directory / "trend.json"),
            "versions": [v["label"] for v in result["versions"]], "plan_changes": len(result["plan_changes"])}


def _trend_svg(result: dict[str, Any], subject: str) -> str:
    from mysqlbench.regression.report import inline_svg
    from mysqlbench.studies.report import _pyplot

    plt = _pyplot()
    labels = [v["label"] for v in result["versions"]]
    fig, ax = plt.subplots(figsize=(9, 3.4))
    settings = sorted({m["setting"] for m in result["medians"] if m["subject"] == subject})
    for setting in settings:
        values = {m["version"]: m for m in result["medians"] if m["subject"] == subject and m["setting"] == setting}
        nan = {"median": float("nan"), "q1": float("nan"), "q3": float("nan")}
        got = [values.get(label, nan) for label in labels]
        medians = [m["median"] for m in got]
        # the whiskers are the quartiles of the version's executions: a step inside them is noise
        ax.errorbar(range(len(labels)), medians, yerr=[[m["median"] - m["q1"] for m in got],
                                                       [m["q3"] - m["median"] for m in got]],
                    fmt="o-", capsize=3, label=setting)
    for change in result["plan_changes"]:
        if change["subject"] == subject:
            position = labels.index(change["version"])
            ax.axvline(position - 0.5, color="#dd8452", linestyle=":", linewidth=1.5,
                       gid=f"plan-change-{subject}-{position}")
            ax.annotate("plan change", (position - 0.5, ax.get_ylim()[1]), fontsize=7, color="#dd8452",
                        textcoords="offset points", xytext=(2, -10))
    ax.set_xticks(range(len(labels)), labels, fontsize=7)
    ax.set_ylabel(f"{result['primary_metric']}, {result['unit']} ({result['better']} is better)")
    ax.set_title(f"{result['study']} {subject}: median per server version (whiskers: quartiles)", fontsize=9)
    ax.legend(fontsize=7, loc="best")
    return inline_svg(fig)
