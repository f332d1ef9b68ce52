"""The study spec schema, for every workload. It is the one source of truth: specs are validated
with it before any task touches a server, the trigger form is generated from it (titles,
descriptions, sections, drop-downs), and ``bin/mysqlbench lint`` reports against it with file,
line and field. The workload validates its own ``dataset``, ``units`` and ``workload_params``."""

from __future__ import annotations

import itertools
import random
import re
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    SerializeAsAny,
    ValidationError,
    field_validator,
    model_validator,
)

from mysqlbench import paths, yamlfile
from mysqlbench.errors import InvalidInput
from mysqlbench.identifiers import check_name
from mysqlbench.knobs import (
    check_knob,
    check_raw_variables_against_knobs,
    check_settable_variable,
    parse_raw_value,
    server_config,
)
from mysqlbench.measure import SEED_COUNTERS
from mysqlbench.params import CONN_ID_PATTERN, DatasetBase, validate_params

STUDIES_DIR = paths.CONFIG_DIR / "studies"
# Above this many points a sweep is a mistake more often than a plan, and Airflow's mapped-task
# XCom (the list of points) must stay small.
MAX_POINTS = 512
# A study DAG's measuring rounds at the fewest (one task per point and round): a spec file with a
# fixed count of 1 still lets a trigger ask for up to this many repetitions, each in its own round.
MIN_ROUND_TASKS = 6

# Trigger-form sections, in the order the form shows them.
GENERAL, DATASET, SWEEP, MEASURE, VALIDATE, EXECUTE = ("Target", "Dataset", "Sweep",
                                                      "Measurement", "Validation", "Retries and time limits")


# The fields a user may leave empty (no other servers, no fixed knobs or variables, no sweep): the
# trigger form marks them optional, and an emptied one (null) is empty (issue 24: each had a "*").
MAY_BE_EMPTY = ("targets", "settings", "variables", "matrix")


def _form(section: str, title: str, **extra: Any) -> dict[str, Any]:
    """Field metadata the trigger form is generated from (``studies.form``)."""
    return {"form": {"section": section, "title": title, **extra}}


class StudySpec(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, populate_by_name=True)

    study: str = Field(description="the study's name, also its DAG id")
    description: str = ""
    workload: str = Field(default="tpch", description="registered workload name (tpch, ...)")
    dataset: SerializeAsAny[DatasetBase] = Field(
        description="the workload's dataset (e.g. TPC-H scale factor and schema)",
        json_schema_extra=_form(DATASET, "Dataset", type="object"))
    target: str = Field(pattern=CONN_ID_PATTERN, description="Airflow connection of the server under test",
                        json_schema_extra=_form(GENERAL, "Target connection", param="target_conn_id"))
    targets: list[str] = Field(
        default_factory=list, max_length=8,
        description="measure the same study on several servers in one run (Airflow connections, e.g. one per "
                    "catalog server); empty: only the target connection. One point measures at a time per host",
        json_schema_extra=_form(GENERAL, "Compare servers (connections)"))
    units: list[str] = Field(min_length=1, validation_alias=AliasChoices("units", "queries"),
                             description="what each point measures: queries (TPC-H) or windows (drivers)",
                             json_schema_extra=_form(SWEEP, "Units (queries)"))
    settings: dict[str, Any] = Field(default_factory=dict, description="logical knobs fixed for every point",
                                     json_schema_extra=_form(SWEEP, "Fixed knobs"))
    variables: dict[str, Any] = Field(default_factory=dict, description="raw server variables fixed for every point",
                                      json_schema_extra=_form(SWEEP, "Raw server variables"))
    server_config: str | None = Field(
        default=None, description="a server config from include/configs/server_configs/ (a seed's my.cnf) as "
                                  "every point's base: its knobs override it",
        json_schema_extra=_form(SWEEP, "Server config"))
    matrix: dict[str, list[Any]] = Field(
        default_factory=dict, description="swept knobs: a cross product of the lists; a list of mappings is "
                                          "one dimension of paired values",
        json_schema_extra=_form(SWEEP, "Sweep matrix"))
    cache: list[Literal["warm", "cold"]] = Field(
        default_factory=lambda: ["warm"], min_length=1,
        description="warm: untimed runs until physical reads stop; cold: restart and drop the OS page cache",
        json_schema_extra=_form(SWEEP, "Cache modes"))
    cold_eviction: Literal["target_files", "host"] = Field(
        default="target_files", description="cold cache: evict the target's files from the page cache, or drop the "
                                            "whole host's (a dedicated benchmark host)",
        json_schema_extra=_form(SWEEP, "Cold cache eviction"))
    repetitions: Annotated[int, Field(ge=1, le=100)] | Literal["auto"] = Field(
        default=3,
        description="measured executions per unit and point; auto: measure in rounds of alternating order until "
                    "every comparison is decided, or max_repetitions or max_time_s is spent",
        json_schema_extra=_form(MEASURE, "Repetitions (a number, or auto)"))
    min_repetitions: int = Field(
        default=6, ge=6, le=100,
        description="auto: repetitions before the first look (6 pairs are the fewest with an interval at the "
                    "97.5% each look uses), one a round, the point order reversed each round",
        json_schema_extra=_form(MEASURE, "Auto: repetitions before the first look"))
    max_repetitions: int = Field(default=12, ge=6, le=100, description="auto: repetitions at most per point",
                                 json_schema_extra=_form(MEASURE, "Auto: repetitions at most"))
    round_repetitions: int = Field(default=2, ge=1, le=20,
                                   description="auto: repetitions between two looks, one a round, for an undecided point",
                                   json_schema_extra=_form(MEASURE, "Auto: repetitions between looks"))
    dag_rounds: int | None = Field(
        default=None, ge=1, le=100,
        description="the measuring rounds of the DAG a run belongs to, set when the run's spec is checked "
                    "(from the spec file the DAG was built from); not a setting")
    max_time_s: float = Field(default=4 * 3600, gt=0, le=7 * 86400,
                              description="auto: no further round starts once the run has measured this long",
                              json_schema_extra=_form(MEASURE, "Auto: time budget (s)"))
    warmup_max_runs: int = Field(default=5, ge=1, le=50,
                                 description="untimed warm-up runs at most, before a warm point is declared unwarmable "
                                             "(earlier once its physical reads are steady from the third run)",
                                 json_schema_extra=_form(MEASURE, "Warm-up runs at most"))
    timeout_s: float = Field(default=600, ge=0.001, le=86400,
                             description="per-execution timeout, enforced by the server",
                             json_schema_extra=_form(MEASURE, "Execution timeout (s)"))
    counters: list[str] = Field(default_factory=lambda: list(SEED_COUNTERS), min_length=1,
                                description="status counters whose deltas are recorded per execution",
                                json_schema_extra=_form(MEASURE, "Counters"))
    seed: int | None = Field(default=None, description="point order seed (random when empty; always recorded)",
                             json_schema_extra=_form(MEASURE, "Point order seed"))
    workload_params: dict[str, Any] = Field(default_factory=dict, description="the workload's own run parameters",
                                            json_schema_extra=_form(MEASURE, "Workload parameters"))
    noise_cv_max: float = Field(default=0.10, gt=0, le=10,
                                description="flag a point whose coefficient of variation is above this",
                                json_schema_extra=_form(VALIDATE, "Noise threshold (CV)"))
    min_effect: float = Field(default=0.03, ge=0, le=1,
                              description="practical-equivalence band of a comparison (0.03: 3%): a difference is "
                                          "called more or less only when its whole 95% interval lies beyond it, "
                                          "and no difference when the interval lies inside it",
                              json_schema_extra=_form(VALIDATE, "Smallest effect that matters"))
    allow_timeouts: bool = Field(default=False, description="a timed-out execution does not invalidate the run",
                                 json_schema_extra=_form(VALIDATE, "Allow timeouts"))
    retries: int = Field(default=1, ge=0, le=10, description="Airflow retries of a point (and of the dataset step)",
                         json_schema_extra=_form(EXECUTE, "Retries per point"))
    retry_delay_s: float = Field(default=30, ge=0, le=86400, description="wait before a retry",
                                 json_schema_extra=_form(EXECUTE, "Retry delay (s)"))
    point_timeout_s: float = Field(default=4 * 3600, ge=1, le=7 * 86400,
                                   description="Airflow execution_timeout of one point: the point is killed, its "
                                               "statement cancelled on the server, and it is retried",
                                   json_schema_extra=_form(EXECUTE, "Point time limit (s)"))
    schedule: str | None = None

    @field_validator("study")
    @classmethod
    def _study(cls, value: str) -> str:
        return check_name(value, "study name")

    @model_validator(mode="before")
    @classmethod
    def _typed_dataset(cls, data: Any) -> Any:
        """The ``dataset`` is validated by the workload's own model."""
        if isinstance(data, dict) and isinstance(data.get("dataset"), dict):
            from mysqlbench.workloads.base import workload_class

            data = dict(data)
            data["dataset"] = workload_class(data.get("workload", "tpch")).dataset_model.model_validate(data["dataset"])
        return data

    @field_validator("repetitions", mode="before")
    @classmethod
    def _repetitions(cls, value: Any) -> Any:
        """A number 1-100 (the form's text field sends digits as a string), or auto."""
        if isinstance(value, str) and value.strip().lower() == "auto":
            return "auto"
        if isinstance(value, str) and value.strip().isdigit():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 100:
            raise ValueError(f"a number of repetitions from 1 to 100, or auto; got {value!r}")
        return value

    @field_validator("units")
    @classmethod
    def _no_duplicate_units(cls, value: list[str]) -> list[str]:
        duplicates = sorted({u for u in value if value.count(u) > 1})
        if duplicates:
            raise ValueError(f"listed twice: {duplicates}")
        return value

    @field_validator("cache")
    @classmethod
    def _no_duplicate_cache(cls, value: list[str]) -> list[str]:
        if len(set(value)) != len(value):
            raise ValueError(f"a cache mode is listed twice: {value}")
        return value

    @field_validator("counters")
    @classmethod
    def _counters(cls, value: list[str]) -> list[str]:
        # status variable names, matched against SHOW GLOBAL STATUS output, never put in SQL
        for name in value:
            check_name(name, "counter name")
        return value

    @field_validator("settings")
    @classmethod
    def _settings(cls, value: dict[str, Any]) -> dict[str, Any]:
        for knob, knob_value in value.items():
            check_knob(knob, knob_value)
        return value

    @field_validator("variables")
    @classmethod
    def _variables(cls, value: dict[str, Any]) -> dict[str, Any]:
        for name, var_value in value.items():
            parse_raw_value(var_value, f"variable {check_settable_variable(name)}")
        check_raw_variables_against_knobs(value)
        return value

    @field_validator("server_config")
    @classmethod
    def _server_config(cls, value: str | None) -> str | None:
        if value is not None:
            server_config(value)  # known, allow-listed, values checked
        return value

    @field_validator(*MAY_BE_EMPTY, mode="before")
    @classmethod
    def _emptied(cls, value: Any, info) -> Any:
        """An emptied form field (null) is the field left empty, never the spec file's value."""
        return cls.model_fields[info.field_name].default_factory() if value is None else value

    @field_validator("targets")
    @classmethod
    def _targets(cls, value: list[str]) -> list[str]:
        for conn_id in value:
            if not re.fullmatch(CONN_ID_PATTERN, conn_id):
                raise ValueError(f"connection id {conn_id!r} is not allowed (letters, digits, '_', '-', '.')")
        duplicates = sorted({c for c in value if value.count(c) > 1})
        if duplicates:
            raise ValueError(f"listed twice: {duplicates}")
        return value

    def measured_targets(self) -> list[str]:
        """The connections this run measures: ``targets``, or the one ``target``."""
        return list(self.targets) or [self.target]

    @field_validator("matrix")
    @classmethod
    def _matrix(cls, value: dict[str, list[Any]], info) -> dict[str, list[Any]]:
        from mysqlbench.workloads.base import workload_class

        try:
            swept_params = workload_class(info.data.get("workload") or "tpch").sweep_params
        except InvalidInput:
            swept_params = ()  # the workload field reports its own error
        for dimension, options in value.items():
            check_name(dimension, "matrix dimension")
            if not options:
                raise ValueError(f"matrix dimension {dimension!r} has no values")
            for option in options:
                for knob, knob_value in as_knobs(dimension, option).items():
                    if knob not in swept_params:  # a workload param is checked by its model (_whole)
                        check_knob(knob, knob_value)
        return value

    @model_validator(mode="after")
    def _whole(self) -> "StudySpec":
        from mysqlbench.workloads.base import workload_class

        workload = workload_class(self.workload)
        if not isinstance(self.dataset, workload.dataset_model):
            self.dataset = workload.dataset_model.model_validate(self.dataset.model_dump(by_alias=True))
        workload.check_units(self.units, self.dataset)
        workload.params_model.model_validate(self.workload_params)
        for dimension, options in self.matrix.items():  # each swept workload param, as its model takes it
            for option in options:
                mine = {k: v for k, v in as_knobs(dimension, option).items() if k in workload.sweep_params}
                if mine:
                    try:
                        workload.params_model.model_validate({**self.workload_params, **mine})
                    except ValidationError as exc:
                        raise ValueError(f"matrix {dimension} = {option!r}: " + "; ".join(
                            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())) from None
        workload.check_spec(self)
        swept = {k for d, opts in self.matrix.items() for o in opts for k in as_knobs(d, o)}
        fixed = swept & (set(self.settings) | set(self.workload_params))
        if fixed:
            raise ValueError(f"both fixed (settings or workload_params) and swept in the matrix: {sorted(fixed)}")
        size = len(self.cache) * len(self.measured_targets())
        for options in self.matrix.values():
            size *= len(options)
        if size > MAX_POINTS:
            raise ValueError(f"the matrix expands to {size} points; at most {MAX_POINTS} per run "
                             "(split the study, or sweep fewer values)")
        if self.repetitions == "auto" and self.max_repetitions < self.min_repetitions:
            raise ValueError(f"max_repetitions ({self.max_repetitions}) is below min_repetitions "
                             f"({self.min_repetitions})")
        if self.point_timeout_s <= self.timeout_s:
            raise ValueError(f"point_timeout_s ({self.point_timeout_s:g}) must exceed timeout_s ({self.timeout_s:g}): "
                             "a point runs at least one execution")
        return self

    @property
    def sequential(self) -> bool:
        """``repetitions: auto``: measured in rounds until each comparison is decided."""
        return self.repetitions == "auto"

    def rounds(self) -> list[tuple[int, int]]:
        """The repetitions each round measures, as [start, stop) ranges: one repetition of every
        point a round, the point order reversed each round. A repetition is thus measured in a
        task of its own (its own restart and warm-up for a warm point), so what stays with a task
        (the server instance a restart gave, a neighbour busy for a few seconds) varies from
        repetition to repetition like the rest of the noise instead of moving all of a point's
        repetitions at once (``tests/unit/test_sequential.py`` simulates both), and what drifts
        through a run weighs alike on every point. A fixed number larger than the DAG's round
        tasks (``dag_rounds``) measures as many near-equal runs of repetitions as there are tasks.
        Auto: one round per repetition up to ``max_repetitions``; ``sequential.plan_round`` says
        which points each round measures."""
        count = int(self.repetitions) if not self.sequential else self.max_repetitions
        tasks = min(count, self.dag_rounds or count)
        bounds = [round(i * count / tasks) for i in range(tasks + 1)]
        return list(zip(bounds[:-1], bounds[1:], strict=True))

    def round_tasks(self) -> int:
        """The measuring tasks a DAG built from this spec has: one per round, and never fewer than
        ``MIN_ROUND_TASKS``, so that a trigger may fix a count without a file change."""
        return max(MIN_ROUND_TASKS, len(self.rounds()))

    def points(self) -> list[dict[str, Any]]:
        """The sweep: cross product of the matrix dimensions, cache modes and targets, in a random
        order whose seed is recorded with every point (servers interleave, so neither always runs
        first)."""
        from mysqlbench.workloads.base import workload_class

        swept_params = workload_class(self.workload).sweep_params
        dims = list(self.matrix.items())
        combos = itertools.product(*[opts for _, opts in dims]) if dims else [()]
        points = []
        for combo in combos:
            swept: dict[str, Any] = {}
            defaults = []  # an empty mapping sets nothing: the server's default, the sweep's baseline
            for (dimension, _), option in zip(dims, combo, strict=True):
                swept.update(as_knobs(dimension, option))
                if option == {}:
                    defaults.append(f"{dimension}=default")
            for cache in self.cache:
                for target in self.measured_targets():
                    # a point's label says its server only when the run compares servers
                    server = [f"target={target}"] if self.targets else []
                    label = " ".join([*server, *(f"{k}={_show(v)}" for k, v in swept.items()), *defaults,
                                      f"cache={cache}"])
                    knobs = {k: v for k, v in swept.items() if k not in swept_params}
                    params = {k: v for k, v in swept.items() if k in swept_params}
                    points.append({"label": label, "swept": swept, "knobs": {**self.settings, **knobs},
                                   "params": params, "cache": cache, "target": target})
        seed = self.seed if self.seed is not None else random.SystemRandom().randrange(2**31)
        random.Random(seed).shuffle(points)
        for order, point in enumerate(points):
            point.update(order=order, seed=seed)
        return points


def as_knobs(dimension: str, option: Any) -> dict[str, Any]:
    """A scalar option sets the knob named like the dimension; a mapping sets several knobs."""
    if isinstance(option, dict):
        return dict(option)
    return {dimension: option}


def _show(value: Any) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value)


def read_spec_file(path: Path) -> dict[str, Any]:
    try:
        raw = yamlfile.load(path.read_text())
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark else str(path)
        raise InvalidInput(f"{where}: not valid YAML: {getattr(exc, 'problem', exc)}") from None
    if not isinstance(raw, dict):
        raise InvalidInput(f"{path}: a study spec is a mapping of fields")
    if isinstance(raw.get("study"), str) and raw["study"] != path.stem:
        raise InvalidInput(f"{path}: study: {raw['study']!r} differs from the file's name: the DAG id is the study "
                           f"name and the trigger looks its spec up by it (rename the file to {raw['study']}.yaml "
                           f"or the study to {path.stem!r})")
    return raw


def spec_path(name_or_path: str | Path) -> Path:
    """A spec file by path, or by study name in the study directories."""
    path = Path(name_or_path)
    if path.suffix:
        return path
    name = check_name(str(name_or_path), "study name")
    for directory in study_dirs():
        if (directory / f"{name}.yaml").exists():
            return directory / f"{name}.yaml"
    raise InvalidInput(f"no study spec {name!r} in {', '.join(str(d) for d in study_dirs())}")


def load_spec(name_or_path: str | Path, overrides: dict[str, Any] | None = None) -> StudySpec:
    """The spec ``include/configs/studies/<name>.yaml`` with trigger-form ``overrides`` merged
    (top-level keys replace; ``dataset`` keys merge; null keeps the file's value, except for a
    field that may be empty, where it empties it), validated as a whole."""
    raw = read_spec_file(spec_path(name_or_path))
    for key, value in (overrides or {}).items():
        if value is None and key not in MAY_BE_EMPTY:
            continue
        if key == "dataset" and isinstance(value, dict):
            raw["dataset"] = {**raw.get("dataset", {}), **value}
        else:
            if key == "units":
                raw.pop("queries", None)  # a TPC-H spec spells its units "queries"
            raw[key] = value
    return validate_params(StudySpec, raw)  # type: ignore[return-value]


def study_dirs() -> list[Path]:
    """include/configs/studies, plus MYSQLBENCH_STUDY_DIRS (colon-separated) for a deployment's own."""
    import os

    extra = [Path(p) for p in (os.environ.get("MYSQLBENCH_STUDY_DIRS") or "").split(":") if p]
    return [STUDIES_DIR, *extra]


def study_files() -> list[Path]:
    return sorted(p for d in study_dirs() for p in d.glob("*.yaml"))
