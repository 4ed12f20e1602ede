"""Search: the root plans a request and merges, leaves search one split each."""
