"""The task of a ``releases`` DAG that measures one server version: Airflow's own
``TriggerDagRunOperator`` (the study's DAG run does the measuring, deferred while it waits), told
which server and which study run by the run's logical date first."""

from __future__ import annotations

import logging
from typing import Any

from airflow.providers.standard.operators.trigger_dagrun import TriggerDagRunOperator

log = logging.getLogger(__name__)


class MeasureVersionOperator(TriggerDagRunOperator):
    """Pick the server current at the logical date, start its managed target, and trigger the
    study on it, unless that spec, server version and host were measured already (a valid run in
    the results store, or a study run another run of this DAG started): then the task is skipped
    and says why. A server it started is stopped again when it is not needed or its study run is
    over. The study run's id is derived from what it measures, so two runs of this DAG that
    pick one server cannot both start it; ``max_active_tis_per_dag=1`` makes the check and the
    trigger one step across the backfill's concurrent runs."""

    def __init__(self, *, spec_data: dict[str, Any], flavor: str, **kwargs: Any) -> None:
        self.spec_data = spec_data
        self.flavor = flavor  # the DAG's flavor line
        study = spec_data["suite"][0]["study"]
        super().__init__(trigger_dag_id=study, conf={}, wait_for_completion=True, deferrable=True,
                         skip_when_already_exists=True, allowed_states=["success"], failed_states=["failed"],
                         max_active_tis_per_dag=1, **kwargs)

    def execute(self, context):
        from airflow.sdk.exceptions import AirflowSkipException

        from mysqlbench.regression import versions
        from mysqlbench.regression.spec import RegressionSpec
        from mysqlbench.results.store import ResultsStore

        spec = RegressionSpec.model_validate(self.spec_data)
        study, ti = spec.suite[0].study, context["ti"]
        flavor = self.flavor
        when = context.get("logical_date") or context["dag_run"].run_after
        provisioned = None
        try:
            entry = versions.pick(flavor, when)
            provisioned = versions.provision(entry, spec.versions)
            conf = versions.study_conf(spec, context["params"], provisioned["conn_id"])
            key = versions.measured_key(study, conf, provisioned)
            what = f"{entry.id} ({provisioned['version']})"
            done = versions.already_measured(ResultsStore.from_airflow(), key)
            if done:
                raise versions.NotMeasured(
                    f"{what} was already measured with this spec on this host: study run {done['run_id']} "
                    f"({done['dag_id']}, dataset {done['dataset_id']}, {done['measured_at']})")
            attempt = 1
            while True:
                run_id = versions.study_run_id(context["dag"].dag_id, entry.id, key, attempt)
                if ti.get_dr_count(dag_id=study, run_ids=[run_id]) == 0:
                    break
                if ti.get_dr_count(dag_id=study, run_ids=[run_id], states=list(versions.RUNNABLE_STATES)):
                    raise versions.NotMeasured(f"{what} is measured by study run {run_id}, which another run of "
                                               "this DAG started")
                attempt += 1  # that study run failed: measure again under the next id
        except versions.NotMeasured as exc:
            if provisioned and provisioned["started"]:  # started only to learn its exact version
                versions.stand_down(provisioned["name"], provisioned["conn_id"])
            ti.xcom_push(key="outcome", value={"measured": False, "why": str(exc)})
            raise AirflowSkipException(str(exc)) from None
        log.info("measuring %s (current %s at %s, %s line) on %s as %s.%s", what, entry.released, when.date(), flavor,
                 provisioned["conn_id"], study, run_id)
        ti.xcom_push(key="outcome", value={"measured": True, "server": entry.id, "version": provisioned["version"],
                                           "study_run_id": run_id, "target": provisioned["conn_id"],
                                           "target_name": provisioned["name"], "started": provisioned["started"]})
        self.trigger_run_id, self.conf = run_id, conf
        return super().execute(context)

    def execute_complete(self, context, event):
        """Back from waiting for the study run: its outcome decides the task, and the server this
        task started is stopped either way."""
        from mysqlbench.regression import versions

        try:
            return super().execute_complete(context, event)
        finally:
            outcome = context["ti"].xcom_pull(task_ids=self.task_id, key="outcome") or {}
            if outcome.get("started"):
                versions.stand_down(outcome["target_name"], outcome["target"])
