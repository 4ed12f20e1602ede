"""Behavior rules in the database, so every API node of a cluster reads and edits the same rules.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-22
"""

import sqlalchemy as sa
from alembic import op

from seclake.db.base import UTCDateTime

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "rules",
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("document", sa.JSON(), nullable=False),
        sa.Column("created_on", UTCDateTime(), nullable=False),
        sa.Column("updated_on", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_rules")),
    )
    table = op.create_table(
        "rule_generation",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("value", sa.BigInteger(), nullable=False),
        sa.Column("seeded_on", UTCDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_rule_generation")),
    )
    # Unseeded: the first start imports the legacy rule files or the starter pack.
    op.bulk_insert(table, [{"id": 1, "value": 0, "seeded_on": None}])


def downgrade() -> None:
    op.drop_table("rule_generation")
    op.drop_table("rules")
