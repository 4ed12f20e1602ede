"""The benchmark behind ``seclake bench`` / ``make bench`` (issue 6).

seclake over HTTP, its engine layer in-process, raw tantivy over the same
splits, and peer engines (DuckDB, SQLite FTS5) holding the same records,
timed side by side on the seeded demo data, with every answer checked
against every other; plus ingest, scale and load figures. Results go to
docs/benchmarks.md and bench-results/<name>.json.
"""
