"""Records and their values: the bottom layer every other part shares.

``value`` fixes how a single value is tokenized, normalized and compared;
``flatten`` turns a nested record into (path, value) leaves; ``dataset``
describes the five datasets and how a query's field names resolve in them.
Indexing (storage) and in-process matching (query) both use these, so the
engine and the Python evaluator cannot drift apart.
"""
