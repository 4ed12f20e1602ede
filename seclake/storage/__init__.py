"""The lake: write-ahead log, immutable splits, the split catalog.

A split is one tantivy index holding the records of one dataset and one time
window, written once, never changed, published in the catalog in one
transaction and later merged or deleted whole.
"""
