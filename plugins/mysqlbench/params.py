"""Trigger-form params, validated once before any task touches a server. Airflow's Param schema
catches most bad input in the UI; this catches the rest (and runs under dag.test and the CLI)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from mysqlbench.errors import InvalidInput
from mysqlbench.identifiers import check_schema

CONN_ID_PATTERN = r"^[A-Za-z0-9_.\-]{1,250}$"
SCHEMA_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]{0,63}$"


class DatasetBase(BaseModel):
    """What the study engine needs of any workload's dataset: the schema it lives in."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, populate_by_name=True)

    schema_name: str = Field(default="bench", alias="schema", description="schema the dataset is loaded into")

    @field_validator("schema_name")
    @classmethod
    def _schema(cls, value: str) -> str:
        return check_schema(value)


def validate_params(model: type[BaseModel], raw: dict[str, Any]) -> BaseModel:
    """``model`` from ``raw``, or :class:`InvalidInput` naming each bad field."""
    try:
        return model.model_validate(dict(raw))
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in err['loc']) or 'params'}: {err['msg']}"
                             for err in exc.errors())
        raise InvalidInput(f"invalid params: {problems}") from None
