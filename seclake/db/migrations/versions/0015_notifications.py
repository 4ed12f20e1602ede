"""Notifications: rules, destinations, the outbox and its throttle windows.

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-28

A notification is decided in the detector's save (``notify/notifier.py``)
and written here, in the same transaction as the summaries it is about, as
a row of ``notify_deliveries``; a sender thread delivers it later
(``notify/sender.py``). Destination secrets (webhook signing secrets, chat
and PagerDuty URLs and keys, SMTP passwords, header values) are stored
encrypted with a key made here once per deployment (``notify_secrets`` in
``deployment_keys``, ``notify/cipher.py``).
"""

import os

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "notify_rules",
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("doc", sa.JSON(), nullable=False),
        sa.Column("updated_on", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_notify_rules")),
    )
    op.create_table(
        "notify_destinations",
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("config", sa.JSON(), nullable=False),
        sa.Column("secret", sa.LargeBinary(), nullable=True),
        sa.Column("updated_on", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_notify_destinations")),
    )
    op.create_table(
        "notify_deliveries",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("rule", sa.String(100), nullable=False),
        sa.Column("destination", sa.String(100), nullable=False),
        sa.Column("subject", sa.String(16), nullable=False),
        sa.Column("ref", sa.String(600), nullable=False),
        sa.Column("window_start", sa.BigInteger(), nullable=False),
        sa.Column("event", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(8), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("folded", sa.Integer(), nullable=False),
        sa.Column("created_ms", sa.BigInteger(), nullable=False),
        sa.Column("next_ms", sa.BigInteger(), nullable=False),
        sa.Column("sent_ms", sa.BigInteger(), nullable=True),
        sa.Column("last_error", sa.String(1000), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_notify_deliveries")),
    )
    op.create_index("ix_notify_deliveries_status_next_ms", "notify_deliveries", ["status", "next_ms"])
    op.create_table(
        "notify_throttle",
        sa.Column("rule", sa.String(100), nullable=False),
        sa.Column("ref", sa.String(600), nullable=False),
        sa.Column("window_start", sa.BigInteger(), nullable=False),
        sa.Column("folded", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("rule", "ref", name=op.f("pk_notify_throttle")),
    )
    keys = sa.table("deployment_keys", sa.column("name", sa.String), sa.column("value", sa.LargeBinary))
    op.bulk_insert(keys, [{"name": "notify_secrets", "value": os.urandom(32)}])


def downgrade() -> None:
    op.execute("DELETE FROM deployment_keys WHERE name = 'notify_secrets'")
    op.drop_table("notify_throttle")
    op.drop_index("ix_notify_deliveries_status_next_ms", table_name="notify_deliveries")
    op.drop_table("notify_deliveries")
    op.drop_table("notify_destinations")
    op.drop_table("notify_rules")
