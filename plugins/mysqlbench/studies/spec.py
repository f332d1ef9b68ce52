"""The study spec schema. Everything a study does is here and validated before any task touches a
server: queries exist, knobs and values are known and well-formed, counts are positive."""

from __future__ import annotations

import itertools
import random
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from mysqlbench import paths
from mysqlbench.identifiers import check_name
from mysqlbench.knobs import check_knob, check_settable_variable, parse_raw_value
from mysqlbench.measure import SEED_COUNTERS
from mysqlbench.params import CONN_ID_PATTERN, DatasetFields, validate_params

STUDIES_DIR = paths.CONFIG_DIR / "studies"


class DatasetSpec(DatasetFields):
    """The study's dataset: TPC-H at a scale factor, in a schema."""


class StudySpec(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    study: str
    description: str = ""
    workload: Literal["tpch"] = "tpch"
    dataset: DatasetSpec
    target: str = Field(pattern=CONN_ID_PATTERN)
    queries: list[str] = Field(min_length=1)
    settings: dict[str, Any] = Field(default_factory=dict)     # knobs fixed for every point
    variables: dict[str, Any] = Field(default_factory=dict)    # raw server variables, fixed
    matrix: dict[str, list[Any]] = Field(default_factory=dict)  # cross product; a mapping = paired knobs
    counters: list[str] = Field(default_factory=lambda: list(SEED_COUNTERS), min_length=1)
    cache: list[Literal["warm", "cold"]] = Field(default_factory=lambda: ["warm"], min_length=1)
    repetitions: int = Field(default=3, ge=1, le=100)
    warmup_max_runs: int = Field(default=5, ge=1, le=50)
    timeout_s: float = Field(default=600, gt=0, le=86400)
    noise_cv_max: float = Field(default=0.10, gt=0, le=10)
    allow_timeouts: bool = False
    oracle: bool = True
    seed: int | None = None
    schedule: str | None = None

    @field_validator("study")
    @classmethod
    def _study(cls, value: str) -> str:
        return check_name(value, "study name")

    @field_validator("queries")
    @classmethod
    def _queries(cls, value: list[str]) -> list[str]:
        from mysqlbench.workloads.tpch import queries

        for query_id in value:
            queries.load(query_id, 1)
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
        return value

    @field_validator("matrix")
    @classmethod
    def _matrix(cls, value: dict[str, list[Any]]) -> dict[str, list[Any]]:
        for dimension, options in value.items():
            check_name(dimension, "matrix dimension")
            if not options:
                raise ValueError(f"matrix dimension {dimension!r} has no values")
            for option in options:
                for knob, knob_value in _as_knobs(dimension, option).items():
                    check_knob(knob, knob_value)
        return value

    @model_validator(mode="after")
    def _no_overlap(self) -> "StudySpec":
        swept = {k for d, opts in self.matrix.items() for o in opts for k in _as_knobs(d, o)}
        fixed = swept & set(self.settings)
        if fixed:
            raise ValueError(f"knobs both fixed in settings and swept in the matrix: {sorted(fixed)}")
        return self

    def points(self) -> list[dict[str, Any]]:
        """The sweep: cross product of the matrix dimensions and cache modes, in a random order
        whose seed is recorded with every point."""
        dims = list(self.matrix.items())
        combos = itertools.product(*[opts for _, opts in dims]) if dims else [()]
        points = []
        for combo in combos:
            swept: dict[str, Any] = {}
            for (dimension, _), option in zip(dims, combo):
                swept.update(_as_knobs(dimension, option))
            for cache in self.cache:
                label = " ".join([*(f"{k}={_show(v)}" for k, v in swept.items()), f"cache={cache}"])
                points.append({"label": label, "swept": swept, "knobs": {**self.settings, **swept},
                               "cache": cache})
        seed = self.seed if self.seed is not None else random.SystemRandom().randrange(2**31)
        random.Random(seed).shuffle(points)
        for order, point in enumerate(points):
            point.update(order=order, seed=seed)
        return points


def _as_knobs(dimension: str, option: Any) -> dict[str, Any]:
    """A scalar option sets the knob named like the dimension; a mapping sets several knobs."""
    if isinstance(option, dict):
        return dict(option)
    return {dimension: option}


def _show(value: Any) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value)


def load_spec(name_or_path: str | Path, overrides: dict[str, Any] | None = None) -> StudySpec:
    """The spec ``include/configs/studies/<name>.yaml`` with trigger-form ``overrides`` merged
    (top-level keys replace; ``dataset`` keys merge), validated as a whole."""
    path = Path(name_or_path)
    if not path.suffix:
        path = STUDIES_DIR / f"{check_name(str(name_or_path), 'study name')}.yaml"
    raw = yaml.safe_load(path.read_text()) or {}
    for key, value in (overrides or {}).items():
        if value is None:
            continue
        if key == "dataset" and isinstance(value, dict):
            raw["dataset"] = {**raw.get("dataset", {}), **value}
        else:
            raw[key] = value
    return validate_params(StudySpec, raw)  # type: ignore[return-value]


def study_files() -> list[Path]:
    return sorted(STUDIES_DIR.glob("*.yaml"))

