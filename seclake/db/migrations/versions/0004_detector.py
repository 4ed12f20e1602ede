"""Detector state: history of behaviors and keys, signal windows, progress.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-21
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "seen_behaviors",
        sa.Column("behavior", sa.String(200), nullable=False),
        sa.PrimaryKeyConstraint("behavior", name=op.f("pk_seen_behaviors")),
    )
    op.create_table(
        "seen_keys",
        sa.Column("key_type", sa.String(64), nullable=False),
        sa.Column("key", sa.String(512), nullable=False),
        sa.PrimaryKeyConstraint("key_type", "key", name=op.f("pk_seen_keys")),
    )
    op.create_table(
        "seen_key_behaviors",
        sa.Column("key_type", sa.String(64), nullable=False),
        sa.Column("key", sa.String(512), nullable=False),
        sa.Column("behavior", sa.String(200), nullable=False),
        sa.PrimaryKeyConstraint("key_type", "key", "behavior", name=op.f("pk_seen_key_behaviors")),
    )
    op.create_table(
        "signal_windows",
        sa.Column("rule", sa.String(100), nullable=False),
        sa.Column("key", sa.String(512), nullable=False),
        sa.Column("state", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("rule", "key", name=op.f("pk_signal_windows")),
    )
    op.create_table(
        "detector_progress",
        sa.Column("name", sa.String(32), nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("sequence", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_detector_progress")),
    )


def downgrade() -> None:
    for table in ("detector_progress", "signal_windows", "seen_key_behaviors", "seen_keys", "seen_behaviors"):
        op.drop_table(table)
