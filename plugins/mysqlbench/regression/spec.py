"""A regression spec (``include/configs/regression/*.yaml``): one DAG each. ``schedule`` is a cron
expression (a nightly sweep: its ``suite`` of study runs, then the analysis), ``on_publish``
(the analysis alone, whenever one of the studies publishes its Asset, so manual and backfilled runs
join the same history) or ``releases`` (one study across server versions: a run per catalog
release date, whose logical date picks the server of the ``versions.flavor`` line current then;
``airflow backfill create`` replays a date range). Thresholds and notifiers are data too."""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from mysqlbench import yamlfile
from mysqlbench.errors import InvalidInput
from mysqlbench.identifiers import check_name
from mysqlbench.paths import CONFIG_DIR
from mysqlbench.regression.detect import Thresholds

REGRESSION_DIR = CONFIG_DIR / "regression"
ON_PUBLISH = "on_publish"
RELEASES = "releases"


class SuiteEntry(BaseModel):
    """One study run of the sweep, with its trigger-form conf (checked against the study's spec)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    study: str
    conf: dict[str, Any] = Field(default_factory=dict)

    @field_validator("study")
    @classmethod
    def _study(cls, value: str) -> str:
        return check_name(value, "study name")


class NotifierSpec(BaseModel):
    """An Airflow notifier (a ``BaseNotifier`` subclass, e.g. ours, ``SmtpNotifier``, ``SlackNotifier``)
    called with the regression report when the alert task fails; its kwargs are Airflow templates."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, populate_by_name=True)

    class_: str = Field(alias="class", pattern=r"^[A-Za-z_][\w.]*\.[A-Za-z_]\w*$")
    kwargs: dict[str, Any] = Field(default_factory=dict)

    def load(self):
        from airflow.sdk import BaseNotifier

        module, _, name = self.class_.rpartition(".")
        try:
            cls = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError) as exc:
            raise InvalidInput(f"notifier {self.class_!r} cannot be imported: {exc}") from exc
        if not (isinstance(cls, type) and issubclass(cls, BaseNotifier)):
            raise InvalidInput(f"notifier {self.class_!r} is not an Airflow BaseNotifier")
        return cls(**self.kwargs)


class VersionsSpec(BaseModel):
    """How a ``releases`` spec measures each server version: the flavor lines it follows (one DAG
    per line, ``<regression>_<flavor>``, scheduled on that line's release dates, so a backfill of
    one line never finds its dates taken by the other's runs and a trend never divides one flavor
    by another), and the ports of the managed targets it runs them on (``port_base`` plus the
    server's position in the catalog, so each server has its own port and datadir)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    flavors: list[Literal["mariadb", "mysql"]] = Field(["mariadb", "mysql"], min_length=1,
                                                       description="one releases DAG per flavor line")
    port_base: int = Field(3370, ge=1025, le=65000)
    target_prefix: str = Field("versions", description="managed targets are named PREFIX_<server id>")

    @field_validator("target_prefix")
    @classmethod
    def _prefix(cls, value: str) -> str:
        return check_name(value, "target name prefix")

    @field_validator("flavors")
    @classmethod
    def _flavors(cls, value: list[str]) -> list[str]:
        if len(set(value)) != len(value):
            raise ValueError(f"each flavor line once: {value}")
        return value


class RegressionSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    regression: str = Field(description="the DAG id")
    description: str = ""
    schedule: str = Field("0 2 * * *", description="cron (a nightly sweep), on_publish (after any study's Asset) or "
                                                    "releases (one study across server versions, backfillable)")
    suite: list[SuiteEntry] = Field(default_factory=list)
    studies: list[str] | None = Field(
        None, description="studies whose history is analysed (default: the suite's; on_publish: every study)")
    thresholds: Thresholds = Field(default_factory=Thresholds)
    notifiers: list[NotifierSpec] = Field(default_factory=list)
    wait_poke_s: int = Field(30, ge=1, le=3600, description="how often a deferred suite task looks at its study run")
    study_timeout_s: int = Field(6 * 3600, ge=60, description="the longest a suite entry may run")
    versions: VersionsSpec | None = Field(None, description="releases only: the flavor line and the targets' ports")

    @field_validator("regression")
    @classmethod
    def _name(cls, value: str) -> str:
        return check_name(value, "regression DAG id")

    @field_validator("studies")
    @classmethod
    def _studies(cls, value: list[str] | None) -> list[str] | None:
        return [check_name(v, "study name") for v in value] if value is not None else None

    @field_validator("schedule")
    @classmethod
    def _schedule(cls, value: str) -> str:
        if value in (ON_PUBLISH, RELEASES):
            return value
        from airflow.exceptions import AirflowTimetableInvalid
        from airflow.timetables.trigger import CronTriggerTimetable

        try:
            CronTriggerTimetable(value, timezone="UTC").validate()
        except AirflowTimetableInvalid as exc:
            raise ValueError(f"{value!r} is neither a cron expression nor {ON_PUBLISH!r} nor {RELEASES!r}: {exc}") \
                from None
        return value

    @model_validator(mode="after")
    def _shape(self) -> "RegressionSpec":
        if self.schedule == ON_PUBLISH and self.suite:
            raise ValueError("an on_publish analysis runs no suite (it is triggered by the studies' own runs)")
        if self.schedule != ON_PUBLISH and not self.suite:
            raise ValueError("a scheduled regression sweep needs a suite of study runs")
        if self.schedule == RELEASES:
            if len(self.suite) != 1:
                raise ValueError("a releases DAG measures one study (one suite entry) across server versions")
            if {"target_conn_id", "targets"} & set(self.suite[0].conf):
                raise ValueError("a releases DAG picks the target per server version; its conf names none")
            if self.versions is None:
                self.versions = VersionsSpec()
        elif self.versions is not None:
            raise ValueError("versions: only a releases DAG (schedule: releases) measures across server versions")
        return self

    def dag_ids(self) -> dict[str, str]:
        """The DAG ids this spec makes: one per flavor line for a releases spec (flavor -> id),
        else its own name."""
        if self.schedule == RELEASES:
            return {flavor: f"{self.regression}_{flavor}" for flavor in self.versions.flavors}
        return {"": self.regression}

    def analysed_studies(self) -> list[str]:
        if self.studies is not None:
            return self.studies
        if self.schedule == ON_PUBLISH:
            return all_studies()
        return list(dict.fromkeys(entry.study for entry in self.suite))


def all_studies() -> list[str]:
    from mysqlbench.studies.spec import read_spec_file, study_files

    names = []
    for path in study_files():
        try:
            names.append(str(read_spec_file(path)["study"]))
        except Exception:  # noqa: BLE001 - a broken study spec is reported by study_spec_errors, not here
            continue
    return sorted(set(names))


def check_suite(spec: RegressionSpec) -> None:
    """Every suite entry's conf merged into its study's spec and validated, and every analysed
    study known, before anything runs (the study's own first task checks targets again)."""
    from mysqlbench.studies.steps import merged_spec

    problems = []
    known = set(all_studies())
    for i, entry in enumerate(spec.suite):
        try:
            merged_spec(entry.study, entry.conf)
        except InvalidInput as exc:
            problems.append(f"suite.{i} ({entry.study}): {exc}")
    for study in spec.studies or []:
        if study not in known:
            problems.append(f"studies: no study spec {study!r}")
    for i, notifier in enumerate(spec.notifiers):
        try:
            notifier.load()
        except (InvalidInput, TypeError) as exc:
            problems.append(f"notifiers.{i}: {exc}")
    if problems:
        raise InvalidInput(f"regression spec {spec.regression}: " + "; ".join(problems))


def regression_dirs() -> list[Path]:
    extra = [Path(p) for p in (os.environ.get("MYSQLBENCH_REGRESSION_DIRS") or "").split(":") if p]
    return [REGRESSION_DIR, *extra]


def regression_files() -> list[Path]:
    return sorted(p for d in regression_dirs() for p in d.glob("*.yaml"))


def load_regression(path: Path) -> RegressionSpec:
    try:
        raw = yamlfile.load(path.read_text()) or {}
        spec = RegressionSpec.model_validate(raw)
    except (yaml.YAMLError, ValidationError) as exc:
        raise InvalidInput(f"{path}: {exc}") from exc
    return spec


def releases_dag_ids() -> list[str]:
    """Every DAG a releases spec makes (a broken spec is lint's to report, not this list's)."""
    out = []
    for path in regression_files():
        try:
            spec = load_regression(path)
        except InvalidInput:
            continue
        if spec.schedule == RELEASES:
            out.extend(spec.dag_ids().values())
    return out
