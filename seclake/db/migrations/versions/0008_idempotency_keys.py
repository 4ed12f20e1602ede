"""Idempotency keys of imports: a retried import is answered from here, not stored twice.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-22
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "idempotency_keys",
        sa.Column("scope", sa.String(100), nullable=False),
        sa.Column("key", sa.String(255), nullable=False),
        sa.Column("digest", sa.String(64), nullable=False),
        sa.Column("reply", sa.JSON(), nullable=False),
        sa.Column("first_doc", sa.BigInteger(), nullable=True),
        sa.Column("last_doc", sa.BigInteger(), nullable=True),
        sa.Column("created_ms", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("scope", "key", name=op.f("pk_idempotency_keys")),
    )
    # Expiry deletes by age (the retention schedule).
    op.create_index(op.f("ix_idempotency_keys_created_ms"), "idempotency_keys", ["created_ms"])


def downgrade() -> None:
    op.drop_index(op.f("ix_idempotency_keys_created_ms"), table_name="idempotency_keys")
    op.drop_table("idempotency_keys")
