"""First-seen rules: the (key, value) pairs each rule already fired on.

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-28

A rule with ``firstSeen`` fires once per customer, key and value
(``detect/history.py``); the pairs are kept here, like the other history
tables, so a restart never fires again on a pair seen before it.
"""

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "seen_values",
        sa.Column("customer", sa.String(128), nullable=False),
        sa.Column("rule", sa.String(100), nullable=False),
        sa.Column("key", sa.String(512), nullable=False),
        sa.Column("value", sa.String(512), nullable=False),
        sa.PrimaryKeyConstraint("customer", "rule", "key", "value", name="pk_seen_values"),
    )


def downgrade() -> None:
    op.drop_table("seen_values")
