"""Trigger-form params, validated once before any task touches a server. Airflow's Param schema
catches most bad input in the UI; this catches the rest (and runs under dag.test and the CLI)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from mysqlbench.errors import InvalidInput
from mysqlbench.identifiers import check_schema
from mysqlbench.knobs import parse_size

CONN_ID_PATTERN = r"^[A-Za-z0-9_.\-]{1,250}$"
SCHEMA_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]{0,63}$"


class DatasetFields(BaseModel):
    """Scale factor and schema, shared by tpch_load's params and the study specs' dataset."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    scale_factor: float = Field(gt=0, le=1000, description="TPC-H scale factor (1 = 1 GB of .tbl files)")
    schema_name: str = Field(default="tpch", alias="schema", description="schema to load into")

    @field_validator("scale_factor", mode="before")
    @classmethod
    def _number(cls, value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"must be a number, not {value!r}")
        return value

    @field_validator("schema_name")
    @classmethod
    def _schema(cls, value: str) -> str:
        return check_schema(value)


class TpchLoadParams(DatasetFields):
    target_conn_id: str = Field(pattern=CONN_ID_PATTERN, description="Airflow connection of the target")
    load_streams: int = Field(default=2, ge=1, le=16, description="parallel LOAD DATA connections")
    load_redo_log_size: str = Field(default="keep", description="redo log size during the load, or keep")

    @field_validator("load_redo_log_size")
    @classmethod
    def _redo(cls, value: str) -> str:
        if value != "keep":
            parse_size(value, "load_redo_log_size")
        return value

    def redo_log_bytes(self) -> int | None:
        return None if self.load_redo_log_size == "keep" else parse_size(self.load_redo_log_size)


def validate_params(model: type[BaseModel], raw: dict[str, Any]) -> BaseModel:
    """``model`` from ``raw``, or :class:`InvalidInput` naming each bad field."""
    try:
        return model.model_validate(dict(raw))
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in err['loc']) or 'params'}: {err['msg']}"
                             for err in exc.errors())
        raise InvalidInput(f"invalid params: {problems}") from None
