"""Report files: each report's HTML, charts and JSON kept in the store beside its run's rows.

On a distributed deployment the report task writes its folder on whichever worker ran it; the
Benchmarks pages in the Airflow UI (the api-server, another machine) read the report from here.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-04
"""
import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table("report_files",
                    sa.Column("dag_id", sa.String(250), primary_key=True),
                    sa.Column("run_dir", sa.String(250), primary_key=True),
                    sa.Column("name", sa.String(128), primary_key=True),
                    sa.Column("content", sa.LargeBinary, nullable=False),
                    sa.Column("written_at", sa.DateTime(timezone=True), nullable=False))


def downgrade() -> None:
    op.drop_table("report_files")
