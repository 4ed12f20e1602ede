"""Alembic environment, run programmatically by ``Database.migrate``.

The caller hands over an open connection in ``config.attributes``; there is
no alembic.ini at runtime.
"""

from alembic import context

import seclake.db.tables  # noqa: F401  (registers every model on Base.metadata)
from seclake.db.base import Base

connection = context.config.attributes["connection"]
context.configure(
    connection=connection,
    target_metadata=Base.metadata,
    # SQLite cannot ALTER most things; batch mode rebuilds the table instead.
    render_as_batch=connection.dialect.name == "sqlite",
)
with context.begin_transaction():
    context.run_migrations()
