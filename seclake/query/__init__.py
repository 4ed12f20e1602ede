"""Queries: a Lucene ``searchStr`` parsed once into a tree, then evaluated.

    ast        the tree and what each node means (the contract)
    parser     searchStr / facet filters -> tree (luqum does the parsing)
    pattern    Lucene regex dialect -> the regex Python and Rust share
    datemath   dates, ISO 8601 and date math in queries
    limits     how costly a query may be
    matcher    evaluate a tree on one record in Python
    echo       the tree as responses show it, and the words to highlight
    tantivy_compiler  the tree as tantivy queries (one method per node)
"""
