"""Regression DAGs from the specs in ``include/configs/regression/``: ordinary Airflow throughout.

A scheduled spec (cron) becomes a nightly sweep: ``check_suite`` validates every entry's conf against
its study's spec, then each entry triggers its study's own DAG (``TriggerDagRunOperator``, deferred
while it waits, one after another: studies take their target exclusively anyway) and records as
every study run does; ``analyse`` reads the history of the analysed studies from the results store
and writes the regression report; ``alert`` fails on a confirmed regression, and its
``on_failure_callback`` is the spec's notifiers. A failed study run does not stop the sweep: its
task is red and the analysis lists the run as left out.

An ``on_publish`` spec is scheduled on the studies' Assets: every published study run, manual or
backfilled, runs the same analysis for the studies whose Assets fired (or the ``studies`` param of
a manual run).

A ``releases`` spec is one study across server versions, one DAG per flavor line
(``<regression>_<flavor>``): its schedule is an ``EventsTimetable`` of that line's release dates in
the catalog (so ``airflow backfill create`` over years makes a run per release),
``measure_version`` picks the server current at the run's logical date and triggers the study on it
(or is skipped, saying why), and ``trend_report`` compares every version measured so far
(``regression.versions``).
"""

from __future__ import annotations

import datetime as dt
import logging
from pathlib import Path
from typing import Any

import pendulum
from airflow.sdk import DAG, AssetAny, Param, get_current_context, task

from mysqlbench.errors import InvalidInput
from mysqlbench.regression.spec import ON_PUBLISH, RELEASES, RegressionSpec, load_regression, regression_files

log = logging.getLogger(__name__)
ASSET_PREFIX = "mysqlbench_"


def _studies_from_context(spec_data: dict[str, Any]) -> list[str]:
    context = get_current_context()
    requested = context["params"].get("studies") or []
    fired = []
    for asset, events in (context.get("triggering_asset_events") or {}).items():
        name = getattr(asset, "name", "") or ""
        if events and name.startswith(ASSET_PREFIX):
            fired.append(name.removeprefix(ASSET_PREFIX))
    spec = RegressionSpec.model_validate(spec_data)
    studies = list(dict.fromkeys(fired or requested or spec.analysed_studies()))
    unknown = sorted(set(studies) - set(spec.analysed_studies()))
    if unknown:
        raise InvalidInput(f"not analysed by {spec.regression}: {unknown}; it analyses {spec.analysed_studies()}")
    return studies


def build_regression_dag(spec: RegressionSpec, path: Path) -> DAG:
    from airflow.providers.standard.operators.trigger_dagrun import TriggerDagRunOperator

    from mysqlbench.studies.factory import study_asset

    on_publish = spec.schedule == ON_PUBLISH
    schedule: Any = AssetAny(*[study_asset(s) for s in spec.analysed_studies()]) if on_publish else spec.schedule
    spec_data = spec.model_dump(mode="json", by_alias=True)
    notifiers = [n.load() for n in spec.notifiers]
    with DAG(
        dag_id=spec.regression,
        description=spec.description or None,
        schedule=schedule,
        start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
        catchup=False,
        max_active_runs=1,
        tags=["mysqlbench", "regression"],
        params={"studies": Param([], type="array", items={"type": "string"},
                                 description="studies to analyse (empty: the spec's, or those whose Assets fired)")},
        doc_md=f"**{spec.regression}**: {spec.description}\n\nSpec: `{path}`.",
    ) as dag:

        @task(retries=0)
        def check_suite() -> dict:
            from mysqlbench.regression.spec import check_suite as check

            check(RegressionSpec.model_validate(spec_data))
            return {"suite": [e["study"] for e in spec_data["suite"]]}

        @task(retries=0, trigger_rule="all_done_min_one_success")
        def analyse() -> dict:
            from mysqlbench.regression import report
            from mysqlbench.regression.analyse import analyse as run_analysis
            from mysqlbench.results.store import ResultsStore

            context = get_current_context()
            studies = _studies_from_context(spec_data)
            thresholds = RegressionSpec.model_validate(spec_data).thresholds
            store = ResultsStore.from_airflow()
            result = report.write(run_analysis(store, studies, thresholds),
                                  dag_id=context["dag"].dag_id, run_id=context["run_id"])
            store.keep_report(context["dag"].dag_id, Path(result["html"]).parent)  # for the UI, wherever it runs
            log.info("regression report: %s (json: %s)\n%s", result["html"], result["json"], result["summary"])
            return result

        @task(retries=0, on_failure_callback=notifiers or None)
        def alert(result: dict) -> str:
            from airflow.sdk.exceptions import AirflowFailException

            if result["alerts"]:
                raise AirflowFailException(result["summary"] + f"\nreport: {result['html']}")
            return result["summary"]

        checked = check_suite()
        previous = checked
        for i, entry in enumerate(spec.suite):
            run = TriggerDagRunOperator(
                task_id=f"run_{i:02d}_{entry.study}", trigger_dag_id=entry.study, conf=entry.conf,
                trigger_run_id="{{ run_id }}__" + f"{i:02d}", wait_for_completion=True,
                poke_interval=spec.wait_poke_s, deferrable=True, allowed_states=["success"], failed_states=["failed"],
                retries=0, execution_timeout=dt.timedelta(seconds=spec.study_timeout_s),
                trigger_rule="all_success" if i == 0 else "all_done_min_one_success")
            if i > 0:
                checked >> run
            previous >> run
            previous = run
        analysed = analyse()
        if previous is not checked:
            checked >> analysed
        previous >> analysed
        alert(analysed)
    return dag


def build_releases_dag(spec: RegressionSpec, path: Path, flavor: str) -> DAG:
    from airflow.timetables.events import EventsTimetable

    from mysqlbench.regression import versions
    from mysqlbench.regression.operators import MeasureVersionOperator
    from mysqlbench.studies.factory import bench_queue

    spec_data = spec.model_dump(mode="json", by_alias=True)
    events = [pendulum.instance(d) for d in versions.release_events(flavor)]
    study = spec.suite[0].study
    dag_id = spec.dag_ids()[flavor]
    with DAG(
        dag_id=dag_id,
        description=f"{spec.description or spec.regression} ({flavor} line)",
        schedule=EventsTimetable(event_dates=events, description=f"{flavor} release dates in the server catalog"),
        start_date=events[0],
        catchup=False,
        max_active_runs=1,
        tags=["mysqlbench", "regression", "versions", flavor],
        params=versions.study_params(spec),
        doc_md=f"**{dag_id}**: {spec.description}, {flavor} line\n\nOne `{study}` run per {flavor} release: "
               f"`airflow backfill create --dag-id {dag_id} --from-date 2015-01-01 --to-date 2026-12-01`. "
               f"Spec: `{path}`.",
    ) as dag:

        @task(retries=0)
        def check_suite() -> dict:
            from mysqlbench.regression.spec import check_suite as check

            check(RegressionSpec.model_validate(spec_data))
            return {"study": study}

        @task(retries=0, trigger_rule="none_failed")
        def trend_report() -> dict:
            from mysqlbench.results.store import ResultsStore

            context = get_current_context()
            outcome = context["ti"].xcom_pull(task_ids="measure_version", key="outcome") or {}
            note = (f"This run measured {outcome['server']} ({outcome['version']}) as {study} run "
                    f"{outcome['study_run_id']}." if outcome.get("measured") else
                    f"This run measured nothing: {outcome.get('why', 'no outcome recorded')}.")
            store = ResultsStore.from_airflow()
            result = versions.write_trend(versions.trend(store, study, context["dag"].dag_id),
                                          dag_id=context["dag"].dag_id, run_id=context["run_id"], note=note)
            store.keep_report(context["dag"].dag_id, Path(result["html"]).parent)
            log.info("%s\ntrend report: %s (json: %s); versions: %s; plan changes: %d", note, result["html"],
                     result["json"], ", ".join(result["versions"]) or "none yet", result["plan_changes"])
            return result

        measured = MeasureVersionOperator(
            task_id="measure_version", spec_data=spec_data, flavor=flavor, poke_interval=spec.wait_poke_s, retries=0,
            execution_timeout=dt.timedelta(seconds=spec.study_timeout_s), **bench_queue())  # it starts servers
        check_suite() >> measured >> trend_report()
    return dag


def build_all() -> tuple[dict[str, DAG], dict[str, list[str]]]:
    dags: dict[str, DAG] = {}
    errors: dict[str, list[str]] = {}
    for path in regression_files():
        try:
            spec = load_regression(path)
            taken = sorted(set(spec.dag_ids().values()) & set(dags))
            if taken:
                raise InvalidInput(f"{path}: DAG {taken[0]!r} is defined twice")
            if spec.schedule == RELEASES:
                for flavor, dag_id in spec.dag_ids().items():
                    dags[dag_id] = build_releases_dag(spec, path, flavor)
            else:
                dags[spec.regression] = build_regression_dag(spec, path)
        except Exception as exc:  # noqa: BLE001 - one broken spec must not hide the others
            log.error("regression spec %s is broken: %s", path, exc)
            errors[str(path)] = [str(exc)]
    return dags, errors


def regression_errors() -> list[str]:
    """Every broken regression spec's problems ("file: message"), for the import error and lint.
    Validates without building DAGs: a DAG built in another file would be registered there too
    (Airflow auto-registers every DAG made in a ``with DAG`` block) and collide with its own."""
    from mysqlbench.regression.spec import check_suite

    problems, seen = [], {}
    for path in regression_files():
        try:
            spec = load_regression(path)
            check_suite(spec)
            for dag_id in spec.dag_ids().values():
                if dag_id in seen:
                    raise InvalidInput(f"{path}: DAG {dag_id!r} is also defined in {seen[dag_id]}")
                seen[dag_id] = path
        except Exception as exc:  # noqa: BLE001 - report every broken spec, whatever broke it
            problems.append(str(exc) if str(path) in str(exc) else f"{path}: {exc}")
    return problems
