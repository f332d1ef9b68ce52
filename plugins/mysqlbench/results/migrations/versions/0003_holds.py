"""Holds: who has a target, and a benchmark host, to itself, with a lease.

A hold lives in the results store because every worker of a deployment sees it, on any host (a
server-side lock is dropped by every restart; a local lock file is invisible to other hosts).

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-02
"""
import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table("holds",
                    sa.Column("resource", sa.String(255), primary_key=True),
                    sa.Column("holder", sa.String(64), nullable=False),
                    sa.Column("owner", sa.Text, nullable=False),
                    # seconds since the epoch: compared across hosts and databases without time zones
                    sa.Column("acquired_at", sa.Float, nullable=False),
                    sa.Column("lease_until", sa.Float, nullable=False))


def downgrade() -> None:
    op.drop_table("holds")
