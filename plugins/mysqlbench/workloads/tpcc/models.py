"""TPC-C's dataset and tpcc_load's params: one definition each, for the load DAG's form, the dataset
steps and (with the driver) the study specs."""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator

from mysqlbench.params import CONN_ID_PATTERN, DatasetBase

MAX_WAREHOUSES = 10_000


class TpccDataset(DatasetBase):
    """W warehouses of TPC-C's initial population in a schema, loaded over parallel connections."""

    schema_name: str = Field(default="tpcc", alias="schema", description="schema to load into")
    warehouses: int = Field(default=1, ge=1, le=MAX_WAREHOUSES,
                            description="warehouses (each: 10 districts, 30,000 customers, 100,000 stock rows; "
                                        "about 100 MB loaded)")
    data_seed: int = Field(default=1, ge=0, le=2**31 - 1,
                           description="seed of the generator: the same warehouses and seed give the same data")
    load_streams: int = Field(default=2, ge=1, le=16, description="parallel LOAD DATA connections")

    @field_validator("warehouses", "data_seed", "load_streams", mode="before")
    @classmethod
    def _integer(cls, value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"must be a whole number, not {value!r}")
        return value


class TpccLoadParams(TpccDataset):
    target_conn_id: str = Field(pattern=CONN_ID_PATTERN, description="Airflow connection of the target")
