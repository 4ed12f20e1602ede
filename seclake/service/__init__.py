"""The work behind the calls: users, sessions, tokens, audit, login.

Service objects raise ``seclake.errors`` exceptions and know nothing of HTTP;
the CLI uses them directly.
"""
