"""Detector state per customer: history and threshold windows keyed by customer too.

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-24

One customer's records counted toward another's thresholds and changed its
first-seen flags (9 globex failures and 1 acme failure from one address
made an acme brute-force behavior). Each table is made anew with a
``customer`` column leading its key; the rows already there are kept under
customer "" (records without one), so state from before the upgrade
stays with such records and customers start fresh.
"""

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

# table: (columns other than customer as (name, type), primary key other than customer)
TABLES = {
    "seen_behaviors": ([("behavior", sa.String(200))], ["behavior"]),
    "seen_keys": ([("key_type", sa.String(64)), ("key", sa.String(512))], ["key_type", "key"]),
    "seen_key_behaviors": (
        [("key_type", sa.String(64)), ("key", sa.String(512)), ("behavior", sa.String(200))],
        ["key_type", "key", "behavior"],
    ),
    "signal_windows": ([("rule", sa.String(100)), ("key", sa.String(512)), ("state", sa.Text())], ["rule", "key"]),
}


def _columns(spec: list) -> list[sa.Column]:
    return [sa.Column(name, kind, nullable=False) for name, kind in spec]


def _key(table: str, pk: list[str]) -> list[str]:
    # signal_windows keeps the rule first (its rows are found by rule and key).
    return [pk[0], "customer", *pk[1:]] if table == "signal_windows" else ["customer", *pk]


def upgrade() -> None:
    for table, (columns, pk) in TABLES.items():
        names = [name for name, _ in columns]
        op.create_table(
            f"{table}_new",
            sa.Column("customer", sa.String(128), nullable=False),
            *_columns(columns),
            sa.PrimaryKeyConstraint(*_key(table, pk), name=f"pk_{table}_new"),
        )
        listed = ", ".join(names)
        op.execute(f"INSERT INTO {table}_new (customer, {listed}) SELECT '', {listed} FROM {table}")
        op.drop_table(table)
        op.rename_table(f"{table}_new", table)
        _rename_key(table)


def _rename_key(table: str) -> None:
    # The key constraint keeps the name it was made with; give it the table's own.
    if op.get_bind().dialect.name == "postgresql":
        op.execute(f"ALTER TABLE {table} RENAME CONSTRAINT pk_{table}_new TO pk_{table}")


def downgrade() -> None:
    for table, (columns, pk) in TABLES.items():
        names = [name for name, _ in columns]
        op.create_table(f"{table}_old", *_columns(columns), sa.PrimaryKeyConstraint(*pk, name=f"pk_{table}_old"))
        listed = ", ".join(names)
        op.execute(f"INSERT INTO {table}_old ({listed}) SELECT {listed} FROM {table} WHERE customer = ''")
        op.drop_table(table)
        op.rename_table(f"{table}_old", table)
        if op.get_bind().dialect.name == "postgresql":
            op.execute(f"ALTER TABLE {table} RENAME CONSTRAINT pk_{table}_old TO pk_{table}")
