"""TPC-H's dataset, run parameters and tpch_load's params: one definition each, used by the
study specs, the tpch_load DAG's form and the dataset steps."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from mysqlbench.knobs import parse_size
from mysqlbench.params import CONN_ID_PATTERN, DatasetBase

# tpchgen-cli's smallest sensible size: at 0.01 every table has rows (lineitem 60,175) and the
# specification's counts are known; below it tables come out empty or nearly so.
MIN_SCALE_FACTOR = 0.01
MAX_SCALE_FACTOR = 1000


class TpchDataset(DatasetBase):
    """TPC-H at a scale factor, in a schema, loaded over parallel connections."""

    scale_factor: float = Field(ge=MIN_SCALE_FACTOR, le=MAX_SCALE_FACTOR,
                                description="TPC-H scale factor (1 = 1 GB of .tbl files, 6,001,215 lineitem rows)")
    schema_name: str = Field(default="tpch", alias="schema", description="schema to load into")
    load_streams: int = Field(default=2, ge=1, le=16, description="parallel LOAD DATA connections")

    @field_validator("scale_factor", mode="before")
    @classmethod
    def _number(cls, value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"must be a number, not {value!r}")
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError(f"must be a finite number, not {value!r}")
        return value


class TpchParams(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    oracle: bool = Field(default=True, description="compare every point's whole answer with DuckDB's (SF <= 1)")


class TpchLoadParams(TpchDataset):
    target_conn_id: str = Field(pattern=CONN_ID_PATTERN, description="Airflow connection of the target")
    load_redo_log_size: str = Field(default="keep", description="redo log size during the load, or keep")

    @field_validator("load_redo_log_size")
    @classmethod
    def _redo(cls, value: str) -> str:
        if value != "keep":
            parse_size(value, "load_redo_log_size")
        return value

    def redo_log_bytes(self) -> int | None:
        return None if self.load_redo_log_size == "keep" else parse_size(self.load_redo_log_size)
