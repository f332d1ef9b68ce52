"""The sample-to-execution contract as columns, and time series as first-class samples.

Until now a sample said which execution it belonged to only through keys in its metadata JSON
(point, query, repetition) and what it was through its metric's name (``os_*``, ``plan``). Now:

- ``kind``: what the sample is (metric, counter, gauge, os, series, answer, plan, phase, run);
- ``point``, ``subject`` (the workload's unit: a query, a timed window), ``repetition``: the
  execution it belongs to (NULL for point- and run-level samples);
- ``series``: a time series (JSON: offsets in seconds, values, interval, where rampup ends).

Rows written before this revision are classified from their metric name and metadata, exactly as
the old analysis read them, so history keeps its meaning. Alembic replaces the old
``schema_version`` table.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-02
"""
import json

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

_GAUGES = {"Innodb_buffer_pool_pages_data", "pages_data_bytes"}


def _kind(metric: str, meta: dict) -> str:
    if metric == "plan":
        return "plan"
    if metric == "phase_seconds":
        return "phase"
    if metric == "answer":
        return "answer"
    if metric.startswith("os_"):
        return "os"
    if "repetition" not in meta and metric != "client_seconds":
        return "run"
    if metric in ("client_seconds", "server_seconds"):
        return "metric"
    return "gauge" if metric in _GAUGES else "counter"


def upgrade() -> None:
    with op.batch_alter_table("samples") as batch:
        batch.add_column(sa.Column("kind", sa.String(16), nullable=False, server_default="run"))
        batch.add_column(sa.Column("point", sa.String(512)))
        batch.add_column(sa.Column("subject", sa.String(128)))
        batch.add_column(sa.Column("repetition", sa.Integer))
        batch.add_column(sa.Column("series", sa.Text))
    op.create_index("ix_samples_series_key", "samples", ["study", "metric", "subject"])
    conn = op.get_bind()
    samples = sa.table("samples", sa.column("id", sa.Integer), sa.column("metric", sa.String),
                       sa.column("metadata", sa.Text), sa.column("kind", sa.String), sa.column("point", sa.String),
                       sa.column("subject", sa.String), sa.column("repetition", sa.Integer))
    for row in conn.execute(sa.select(samples.c.id, samples.c.metric, samples.c.metadata)).fetchall():
        meta = json.loads(row.metadata or "{}")
        conn.execute(samples.update().where(samples.c.id == row.id).values(
            kind=_kind(row.metric, meta), point=meta.get("point"), subject=meta.get("query"),
            repetition=meta.get("repetition")))
    op.drop_table("schema_version")


def downgrade() -> None:
    op.create_table("schema_version", sa.Column("version", sa.Integer, primary_key=True),
                    sa.Column("applied_at", sa.DateTime(timezone=True), nullable=False))
    op.drop_index("ix_samples_series_key", "samples")
    with op.batch_alter_table("samples") as batch:
        for column in ("series", "repetition", "subject", "point", "kind"):
            batch.drop_column(column)
