"""Restore journals: what a run changed on a server and has not yet undone, one row per server.

Kept beside the holds, in the store every worker of a deployment shares, so a change one worker
made and could not undo (it was SIGKILLed, or its host was lost) is undone by the next taker on
any worker (issue 27). Journals an earlier release left as files in ``work/journal/`` are taken
over by the first run that takes their server.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-05
"""
import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table("restore_journals",
                    sa.Column("server", sa.String(255), primary_key=True),
                    sa.Column("target", sa.String(250), nullable=False),
                    sa.Column("owner", sa.Text, nullable=False),
                    sa.Column("entries", sa.Text, nullable=False),
                    sa.Column("updated_at", sa.Float, nullable=False))


def downgrade() -> None:
    op.drop_table("restore_journals")
