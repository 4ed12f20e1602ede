"""Splits record their customers, so searches skip splits a data policy excludes.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-22
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # NULL for the splits already there: their customers are unknown, and
    # they are searched as before until a merge rewrites them.
    op.add_column("splits", sa.Column("customers", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("splits") as batch:
        batch.drop_column("customers")
