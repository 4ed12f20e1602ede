"""Failed logins counted per (username, client address), and per address
across usernames: a lockout that strangers cannot turn against a user.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-24

The rows are transient counters (minutes long), so the table is made anew
rather than converted: at worst a lockout in force during the upgrade ends.
"""

import sqlalchemy as sa
from alembic import op

from seclake.db.base import UTCDateTime

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.drop_table("login_failures")
    op.create_table(
        "login_failures",
        # "" for the row counting one address's failures over every username.
        sa.Column("username", sa.String(128), nullable=False),
        sa.Column("client", sa.String(64), nullable=False),
        sa.Column("failures", sa.Integer(), nullable=False),
        sa.Column("first_failure", UTCDateTime(), nullable=False),
        sa.Column("locked_until", UTCDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("username", "client", name="pk_login_failures"),
    )
    # Purging old rows reads by age.
    op.create_index("ix_login_failures_first_failure", "login_failures", ["first_failure"])


def downgrade() -> None:
    op.drop_index("ix_login_failures_first_failure", table_name="login_failures")
    op.drop_table("login_failures")
    op.create_table(
        "login_failures",
        sa.Column("username", sa.String(128), nullable=False),
        sa.Column("failures", sa.Integer(), nullable=False),
        sa.Column("first_failure", UTCDateTime(), nullable=False),
        sa.Column("locked_until", UTCDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("username", name="pk_login_failures"),
    )
