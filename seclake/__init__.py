"""seclake: a self-hosted security analytics query service."""

__version__ = "0.1.0"
