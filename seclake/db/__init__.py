"""The metadata database: SQLAlchemy models and their Alembic migrations."""
