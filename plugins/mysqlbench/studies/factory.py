"""The one DAG factory, for every study spec whatever its workload: each spec file becomes a DAG
whose trigger form is generated from the spec model. Each spec is built on its own, so a broken
one never hides the others (``spec_errors`` says which file, line and field, for the import error
and for ``bin/mysqlbench lint``). The only module here that knows Airflow."""

from __future__ import annotations

import datetime as dt
import logging
import os
import re
from pathlib import Path
from typing import Any

import pendulum
from airflow.sdk import DAG, Asset, BaseOperator, get_current_context, task, teardown

from mysqlbench.errors import InvalidInput
from mysqlbench.results.store import round_task_id
from mysqlbench.studies.spec import StudySpec, load_spec, study_files

log = logging.getLogger(__name__)


def target_pool(conn_id: str) -> str:
    """One Airflow pool per configured target, one slot: points on a target never overlap within
    this deployment (the server-side lock covers other deployments and overridden targets)."""
    return f"target_{conn_id}"


def bench_queue() -> dict[str, str]:
    """Operator arguments for the tasks that touch a target or its host (check, dataset, points,
    restore): ``MYSQLBENCH_BENCH_QUEUE`` names the executor queue of the worker on, or reaching, the
    benchmark host (a Celery deployment routes them there; the dataset files, restore journal and
    managed servers live in that worker's work directory). Unset: Airflow's default queue. Read
    when the DAG is parsed, so the dag-processor's environment decides."""
    queue = os.environ.get("MYSQLBENCH_BENCH_QUEUE", "").strip()
    if not queue:
        return {}
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}", queue):
        raise InvalidInput(f"MYSQLBENCH_BENCH_QUEUE={queue!r}: a queue name is letters, digits, '_', '.', '-'")
    return {"queue": queue}


def study_asset(study: str) -> Asset:
    return Asset(name=f"mysqlbench_{study}", uri=f"mysqlbench://studies/{study}")


def _recorder(study: str, spec_data: dict[str, Any]):
    from mysqlbench.recording import TaskRecorder

    return TaskRecorder(get_current_context(), study=study, spec=spec_data)


class MeasurePointOperator(BaseOperator):
    """One sweep point. ``on_kill`` (Airflow calls it on SIGTERM, and after an execution timeout)
    cancels the running statement on the server and stops the point, whose interrupted execution is
    recorded as killed; Airflow's retries then run the point again (every try's rows are kept; the
    last is the run's). A task marked failed through the UI or the REST API is not retried."""

    def __init__(self, *, study: str, spec_data: dict[str, Any], point: dict[str, Any], dataset_id: str,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.study, self.spec_data, self.point, self.dataset_id = study, spec_data, point, dataset_id
        self._run = None

    def execute(self, context) -> dict[str, Any]:
        from mysqlbench.studies import steps

        context["point_label"] = self.point["label"]
        return steps.measure_point(self.spec_data, self.point, _recorder(self.study, self.spec_data), self.dataset_id,
                                   on_start=self._started)

    def _started(self, run) -> None:
        self._run = run

    def on_kill(self) -> None:
        if self._run is not None:
            self._run.abort("task terminated (on_kill)")


def _rejected(skip: bool) -> None:
    """A task that runs whatever happened upstream (the teardown, validate, report) when
    ``check_spec`` refused the run's input: no task touched a server and nothing was measured. The
    teardown and the report skip; validate fails without a retry, so the run ends failed and
    ``publish`` never runs."""
    from airflow.sdk.exceptions import AirflowFailException, AirflowSkipException

    why = "check_spec refused this run's input (its log says why): no server was touched, nothing was measured"
    raise AirflowSkipException(why) if skip else AirflowFailException(why)


def build_study_dag(spec: StudySpec, path: Path) -> DAG:
    from mysqlbench.studies.form import form_params
    from mysqlbench.workloads.base import workload_class

    study = spec.study
    workload = workload_class(spec.workload)
    asset = study_asset(study)
    on_host = bench_queue()
    defaults = {"retries": spec.retries, "retry_delay": dt.timedelta(seconds=spec.retry_delay_s)}
    with DAG(
        dag_id=study,
        description=spec.description,
        schedule=spec.schedule,
        start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
        catchup=False,
        max_active_runs=1,
        default_args=defaults,
        tags=["mysqlbench", spec.workload, "study"],
        doc_md=f"**{study}** ({workload.label}): {spec.description}\n\nSpec: `{path}`.",
    ) as dag:

        @task(retries=0, **on_host)
        def check_spec() -> dict:
            from mysqlbench.errors import MysqlbenchError
            from mysqlbench.studies import steps

            context = get_current_context()
            try:
                return steps.check_spec(study, context["params"])
            except MysqlbenchError as exc:
                # the reason, for the run's Benchmark report tab: Airflow's trigger form shows none
                context["ti"].xcom_push(key=steps.REFUSAL_KEY, value=str(exc))
                raise

        @task(**on_host)
        def ensure_dataset(spec_data: dict) -> dict:
            from airflow.sdk.exceptions import AirflowFailException

            from mysqlbench.errors import InvalidInput
            from mysqlbench.studies import steps

            try:
                return steps.ensure_dataset(spec_data, _recorder(study, spec_data))
            except InvalidInput as exc:
                # a refusal before the build (the datadir's disk cannot hold the dataset): a retry
                # would meet the same refusal after its delay, so the task fails at once, and the
                # reason is the run's, as check_spec's is
                get_current_context()["ti"].xcom_push(key=steps.REFUSAL_KEY, value=str(exc))
                raise AirflowFailException(str(exc)) from exc

        @task(retries=0)
        def plan_points(spec_data: dict, data: dict) -> list:
            from mysqlbench.studies import steps

            return steps.plan_points(spec_data, data)

        last_round = spec.round_tasks()

        @task(retries=0, trigger_rule="none_failed")
        def plan_round(spec_data: dict, planned: list, number: int) -> list:
            from airflow.sdk.exceptions import DownstreamTasksSkipped

            from mysqlbench.studies import steps

            chosen = steps.plan_round(spec_data, planned, number, _recorder(study, spec_data))
            if chosen:
                return chosen
            # nothing to measure: the sequence is decided, out of budget, or the fixed count is
            # measured, and no later round would measure anything either. Skip them all at once,
            # as ShortCircuitOperator skips what follows it: an empty mapped round left to expand
            # costs the scheduler a pass of its own, each round again
            raise DownstreamTasksSkipped(tasks=[round_task_id(number)] + [
                task_id for later in range(number + 1, last_round + 1)
                for task_id in (f"plan_round_{later}", round_task_id(later))])

        @teardown(on_failure_fail_dagrun=True)
        def restore_target(spec_data: dict | None) -> dict:
            from mysqlbench.studies import steps

            if spec_data is None:
                _rejected(skip=True)
            ti = get_current_context()["ti"]
            return steps.restore_target(spec_data, ti.dag_id, ti.run_id)

        @task(trigger_rule="all_done", retries=0)
        def validate(spec_data: dict | None, data: dict | None) -> dict:
            from mysqlbench.studies import steps

            if spec_data is None:
                _rejected(skip=False)
            # no dataset (ensure_dataset failed): nothing was measured, and the expectations say so
            return steps.validate(spec_data, _recorder(study, spec_data), (data or {}).get("dataset_id"))

        @task(trigger_rule="all_done", retries=0)
        def report(spec_data: dict | None, validation: dict | None) -> dict:
            from mysqlbench.studies import steps

            if spec_data is None:
                _rejected(skip=True)
            return steps.report(spec_data, validation, _recorder(study, spec_data))

        @task(outlets=[asset], retries=0)
        def publish(validation: dict, report_out: dict) -> dict:
            from mysqlbench.studies import steps

            out = steps.publish(validation, report_out)
            get_current_context()["outlet_events"][asset].extra = {"report": out["report"], "study": study}
            return out

        spec_data = check_spec()
        data = ensure_dataset(spec_data)
        points = plan_points(spec_data, data)
        restored = restore_target.override(**on_host)(spec_data)
        data >> restored
        # one measuring task per round, one repetition of every point a round (a fixed count larger
        # than the rounds is spread over them); with repetitions: auto each round after
        # min_repetitions measures the points plan_round still needs, possibly none
        planned, measured = points, None
        for number in range(1, last_round + 1):
            if measured is not None:  # a later round: decided once the round before has ended
                planned = plan_round.override(task_id=f"plan_round_{number}")(spec_data, points, number)
                measured >> planned
            measured = MeasurePointOperator.partial(
                task_id=round_task_id(number), study=study, pool=target_pool(spec.target), max_active_tis_per_dag=1,
                map_index_template="{{ point_label }}", execution_timeout=dt.timedelta(seconds=spec.point_timeout_s),
                **on_host,
            ).expand_kwargs(planned)
            measured >> restored
        checked = validate(spec_data, data)
        restored >> checked
        written = report(spec_data, checked)
        publish(checked, written)
    # The form is given to the DAG once its tasks exist. Each task made inside a DAG takes a deep
    # copy of the DAG's params, and serializing a task validates every one of its copies against its
    # JSON schema several times (the metaschema check included): with the form's ~40 fields that was
    # 4.6 s of the dag-processor's 5 s for studies.py, 2.9 MB of serialized DAGs, and twice that with
    # twelve rounds, past the 50 s parse timeout on a busy host. Nothing is lost: a task's params
    # at run time are the DAG's merged with its own (airflow.sdk process_params), and the trigger
    # form and the API read the DAG's.
    dag.params = form_params(spec)
    return dag


def spec_errors(path: Path) -> list[str]:
    """Located problems of one spec file ("file:line: field: message"); empty when it is valid."""
    return _load(path)[1]


def _load(path: Path) -> tuple[StudySpec | None, list[str]]:
    """One spec file read and validated once: the spec, or its located problems."""
    try:
        return load_spec(path), []
    except InvalidInput as exc:
        return None, [_locate(path, line) for line in str(exc).removeprefix("invalid params: ").split("; ")]
    except Exception as exc:  # noqa: BLE001 - a spec must never take the other DAGs down with it
        return None, [f"{path}: {type(exc).__name__}: {exc}"]


def _locate(path: Path, message: str) -> str:
    """Prefix ``message`` ("field.sub: text") with the file and the line the field is on."""
    import yaml

    if message.startswith(str(path)):
        return message
    field_path = message.split(": ", 1)[0].split(".")
    line = None
    try:
        node = yaml.compose(path.read_text())
        for key in field_path:
            if isinstance(node, yaml.MappingNode):
                match = next(((k, v) for k, v in node.value if k.value == key), None)
                if match is None:
                    break
                line, node = match[0].start_mark.line + 1, match[1]
            elif isinstance(node, yaml.SequenceNode) and key.isdigit() and int(key) < len(node.value):
                node = node.value[int(key)]
                line = node.start_mark.line + 1
            else:
                break
    except yaml.YAMLError:
        pass
    return f"{path}:{line}: {message}" if line else f"{path}: {message}"


def build_all() -> tuple[dict[str, DAG], dict[str, list[str]]]:
    """Every valid spec's DAG, and every broken spec's located errors, each spec on its own."""
    dags: dict[str, DAG] = {}
    errors: dict[str, list[str]] = {}
    for path in study_files():
        spec, problems = _load(path)
        if spec is not None:
            try:
                if spec.study in dags:
                    problems = [f"{path}: study {spec.study!r} is defined twice"]
                else:
                    dags[spec.study] = build_study_dag(spec, path)
            except Exception as exc:  # noqa: BLE001
                problems = [f"{path}: {type(exc).__name__}: {exc}"]
        if problems:
            log.error("study spec %s is broken: %s", path, problems)
            errors[str(path)] = problems
    return dags, errors

