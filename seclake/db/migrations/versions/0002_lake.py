"""The lake: split catalog and write-ahead log checkpoint.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-21
"""

import sqlalchemy as sa
from alembic import op

from seclake.db.base import UTCDateTime

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "splits",
        sa.Column("split_id", sa.String(64), nullable=False),
        sa.Column("dataset", sa.String(32), nullable=False),
        sa.Column("time_min", sa.BigInteger(), nullable=False),
        sa.Column("time_max", sa.BigInteger(), nullable=False),
        sa.Column("num_records", sa.BigInteger(), nullable=False),
        sa.Column("size_bytes", sa.BigInteger(), nullable=False),
        sa.Column("seq_min", sa.BigInteger(), nullable=False),
        sa.Column("seq_max", sa.BigInteger(), nullable=False),
        sa.Column("format_version", sa.Integer(), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("split_id", name=op.f("pk_splits")),
    )
    op.create_index(op.f("ix_splits_dataset"), "splits", ["dataset"])
    op.create_index(op.f("ix_splits_state"), "splits", ["state"])
    op.create_table(
        "lake_checkpoint",
        sa.Column("name", sa.String(32), nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_lake_checkpoint")),
    )


def downgrade() -> None:
    op.drop_table("lake_checkpoint")
    op.drop_index(op.f("ix_splits_state"), table_name="splits")
    op.drop_index(op.f("ix_splits_dataset"), table_name="splits")
    op.drop_table("splits")
