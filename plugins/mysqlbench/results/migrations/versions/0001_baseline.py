"""Baseline: the results store as the first release wrote it (samples, validations and the
snapshots lineage points at, plus its own schema_version table).

Revision ID: 0001
Revises:
Create Date: 2026-12-02
"""
import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def _lineage() -> list[sa.Column]:
    return [
        sa.Column("study", sa.String(128), nullable=False),
        sa.Column("dag_id", sa.String(250), nullable=False),
        sa.Column("run_id", sa.String(250), nullable=False),
        sa.Column("task_id", sa.String(250), nullable=False),
        sa.Column("map_index", sa.Integer, nullable=False),
        sa.Column("try_number", sa.Integer, nullable=False),
        sa.Column("spec_hash", sa.String(64), nullable=False),
        sa.Column("package_version", sa.String(64), nullable=False),
        sa.Column("server_flavor", sa.String(32)),
        sa.Column("server_version", sa.String(128)),
        sa.Column("variables_hash", sa.String(64)),
        sa.Column("host_hash", sa.String(64)),
        sa.Column("dataset_id", sa.String(64)),
        sa.Column("recorded_at", sa.DateTime(timezone=True), nullable=False),
    ]


def upgrade() -> None:
    op.create_table("schema_version", sa.Column("version", sa.Integer, primary_key=True),
                    sa.Column("applied_at", sa.DateTime(timezone=True), nullable=False))
    op.create_table("samples", sa.Column("id", sa.Integer, primary_key=True, autoincrement=True), *_lineage(),
                    sa.Column("metric", sa.String(128), nullable=False), sa.Column("value", sa.Float),
                    sa.Column("unit", sa.String(32), nullable=False), sa.Column("status", sa.String(32), nullable=False),
                    sa.Column("metadata", sa.Text, nullable=False))
    op.create_index("ix_samples_task", "samples", ["dag_id", "run_id", "task_id", "map_index"])
    op.create_table("validations", sa.Column("id", sa.Integer, primary_key=True, autoincrement=True), *_lineage(),
                    sa.Column("suite", sa.String(128), nullable=False), sa.Column("success", sa.Boolean, nullable=False),
                    sa.Column("statistics", sa.Text, nullable=False), sa.Column("failures", sa.Text, nullable=False))
    op.create_index("ix_validations_task", "validations", ["dag_id", "run_id", "task_id", "map_index"])
    op.create_table("server_snapshots", sa.Column("variables_hash", sa.String(64), primary_key=True),
                    sa.Column("server_flavor", sa.String(32), nullable=False),
                    sa.Column("server_version", sa.String(128), nullable=False),
                    sa.Column("variables", sa.Text, nullable=False),
                    sa.Column("first_seen", sa.DateTime(timezone=True), nullable=False))
    op.create_table("host_snapshots", sa.Column("host_hash", sa.String(64), primary_key=True),
                    sa.Column("facts", sa.Text, nullable=False),
                    sa.Column("first_seen", sa.DateTime(timezone=True), nullable=False))
    op.create_table("datasets", sa.Column("dataset_id", sa.String(64), primary_key=True),
                    sa.Column("generator", sa.String(64), nullable=False),
                    sa.Column("generator_version", sa.String(64), nullable=False),
                    sa.Column("scale_factor", sa.Float, nullable=False),
                    sa.Column("manifest", sa.Text, nullable=False),
                    sa.Column("first_seen", sa.DateTime(timezone=True), nullable=False))


def downgrade() -> None:
    for table in ("datasets", "host_snapshots", "server_snapshots", "validations", "samples", "schema_version"):
        op.drop_table(table)
