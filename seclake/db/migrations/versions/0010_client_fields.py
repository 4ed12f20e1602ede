"""Fields the clients of this interface send: a user's OAuth provider, a
token's description and roles.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-24
"""

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # The clients' user model always sends oauthProvider and oauthFlag (a user
    # who signs in through "Azure AD" or "Google" rather than a password).
    op.add_column("users", sa.Column("oauth_provider", sa.String(100), nullable=False, server_default=""))
    op.add_column("users", sa.Column("oauth_flag", sa.Boolean(), nullable=False, server_default=sa.false()))
    op.add_column("api_tokens", sa.Column("description", sa.String(500), nullable=False, server_default=""))
    # NULL: the token has its user's roles; a list narrows them.
    op.add_column("api_tokens", sa.Column("roles", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("api_tokens") as batch:
        batch.drop_column("roles")
        batch.drop_column("description")
    with op.batch_alter_table("users") as batch:
        batch.drop_column("oauth_flag")
        batch.drop_column("oauth_provider")
