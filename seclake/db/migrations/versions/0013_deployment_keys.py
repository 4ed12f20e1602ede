"""Keys made once per deployment: the key that makes record ids opaque.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-24

docId, _id and a behavior's sequence were the write-ahead log's global
sequence, so the gaps between one customer's ids showed every other
customer's volume. They are now shown through a keyed permutation
(``record/identity.RecordIds``); the key is made here, once, and shared by
every node reading this database, so ids stay the same across restarts and
API nodes.
"""

import os

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    table = op.create_table(
        "deployment_keys",
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("value", sa.LargeBinary(), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_deployment_keys")),
    )
    op.bulk_insert(table, [{"name": "record_ids", "value": os.urandom(32)}])


def downgrade() -> None:
    op.drop_table("deployment_keys")
