"""Behavior summaries: one row per key and UTC day, the document as JSON.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "behavior_summaries",
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("key", sa.String(512), nullable=False),
        sa.Column("key_type", sa.String(64), nullable=False),
        sa.Column("day", sa.String(10), nullable=False),
        sa.Column("from_ms", sa.BigInteger(), nullable=False),
        sa.Column("to_ms", sa.BigInteger(), nullable=False),
        sa.Column("risk_score", sa.BigInteger(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("updated_on", sa.BigInteger(), nullable=False),
        sa.Column("customer", sa.String(256), nullable=False),
        sa.Column("doc", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_behavior_summaries")),
    )
    op.create_index(op.f("ix_behavior_summaries_from_ms"), "behavior_summaries", ["from_ms"])
    op.create_index(op.f("ix_behavior_summaries_to_ms"), "behavior_summaries", ["to_ms"])
    op.create_index(op.f("ix_behavior_summaries_updated_on"), "behavior_summaries", ["updated_on"])


def downgrade() -> None:
    op.drop_index(op.f("ix_behavior_summaries_updated_on"), table_name="behavior_summaries")
    op.drop_index(op.f("ix_behavior_summaries_to_ms"), table_name="behavior_summaries")
    op.drop_index(op.f("ix_behavior_summaries_from_ms"), table_name="behavior_summaries")
    op.drop_table("behavior_summaries")
