"""Access control: data policies, custom roles, token restrictions.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-22
"""

import sqlalchemy as sa
from alembic import op

from seclake.db.base import UTCDateTime

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "data_policies",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("description", sa.String(500), nullable=False),
        sa.Column("filters", sa.JSON(), nullable=False),
        sa.Column("created_on", UTCDateTime(), nullable=False),
        sa.Column("updated_on", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_data_policies")),
        sa.UniqueConstraint("name", name=op.f("uq_data_policies_name")),
    )
    op.create_table(
        "roles",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("description", sa.String(500), nullable=False),
        sa.Column("permissions", sa.JSON(), nullable=False),
        sa.Column("api_policies", sa.JSON(), nullable=False),
        sa.Column("data_policies", sa.JSON(), nullable=False),
        sa.Column("created_on", UTCDateTime(), nullable=False),
        sa.Column("updated_on", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_roles")),
        sa.UniqueConstraint("name", name=op.f("uq_roles_name")),
    )
    op.add_column("api_tokens", sa.Column("data_policies", sa.JSON(), nullable=True))
    op.add_column("api_tokens", sa.Column("api_policies", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("api_tokens") as batch:
        batch.drop_column("api_policies")
        batch.drop_column("data_policies")
    op.drop_table("roles")
    op.drop_table("data_policies")
