"""Foundation: users, sessions, API tokens, login failures, audit.

Revision ID: 0001
Revises:
Create Date: 2026-11-21
"""

import sqlalchemy as sa
from alembic import op

from seclake.db.base import UTCDateTime

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "users",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("username", sa.String(128), nullable=False),
        sa.Column("password_hash", sa.String(255), nullable=False),
        sa.Column("email", sa.String(254), nullable=False),
        sa.Column("first_name", sa.String(100), nullable=False),
        sa.Column("last_name", sa.String(100), nullable=False),
        sa.Column("organization", sa.String(200), nullable=False),
        sa.Column("restricted", sa.Boolean(), nullable=False),
        sa.Column("disabled", sa.Boolean(), nullable=False),
        sa.Column("roles", sa.JSON(), nullable=False),
        sa.Column("data_policies", sa.JSON(), nullable=True),
        sa.Column("api_policies", sa.JSON(), nullable=True),
        sa.Column("preference", sa.JSON(), nullable=False),
        sa.Column("profile", sa.JSON(), nullable=True),
        sa.Column("created_on", UTCDateTime(), nullable=False),
        sa.Column("password_date", UTCDateTime(), nullable=False),
        sa.Column("last_login", UTCDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_users"),
        sa.UniqueConstraint("username", name="uq_users_username"),
    )
    op.create_table(
        "sessions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("public_id", sa.String(32), nullable=False),
        sa.Column("token_hash", sa.String(64), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("created_on", UTCDateTime(), nullable=False),
        sa.Column("last_seen", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name="fk_sessions_user_id_users", ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name="pk_sessions"),
        sa.UniqueConstraint("public_id", name="uq_sessions_public_id"),
        sa.UniqueConstraint("token_hash", name="uq_sessions_token_hash"),
    )
    op.create_index("ix_sessions_user_id", "sessions", ["user_id"])
    op.create_table(
        "api_tokens",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("token_hash", sa.String(64), nullable=False),
        sa.Column("prefix", sa.String(16), nullable=False),
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("created_on", UTCDateTime(), nullable=False),
        sa.Column("expires_on", UTCDateTime(), nullable=True),
        sa.Column("last_used", UTCDateTime(), nullable=True),
        sa.Column("revoked_on", UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name="fk_api_tokens_user_id_users", ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name="pk_api_tokens"),
        sa.UniqueConstraint("token_hash", name="uq_api_tokens_token_hash"),
    )
    op.create_index("ix_api_tokens_user_id", "api_tokens", ["user_id"])
    op.create_table(
        "login_failures",
        sa.Column("username", sa.String(128), nullable=False),
        sa.Column("failures", sa.Integer(), nullable=False),
        sa.Column("first_failure", UTCDateTime(), nullable=False),
        sa.Column("locked_until", UTCDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("username", name="pk_login_failures"),
    )
    op.create_table(
        "audit",
        sa.Column("id", BigId, autoincrement=True, nullable=False),
        sa.Column("created_on", UTCDateTime(), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("username", sa.String(128), nullable=True),
        sa.Column("call", sa.String(200), nullable=False),
        sa.Column("client", sa.String(64), nullable=False),
        sa.Column("outcome", sa.String(16), nullable=False),
        sa.Column("status", sa.Integer(), nullable=False),
        sa.Column("duration_ms", sa.Integer(), nullable=False),
        sa.Column("detail", sa.String(500), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_audit"),
    )
    op.create_index("ix_audit_created_on", "audit", ["created_on"])
    op.create_index("ix_audit_username", "audit", ["username"])


def downgrade() -> None:
    op.drop_table("audit")
    op.drop_table("login_failures")
    op.drop_table("api_tokens")
    op.drop_table("sessions")
    op.drop_table("users")
