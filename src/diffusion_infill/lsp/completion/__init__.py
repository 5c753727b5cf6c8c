"""Inline completion: the engine's own thread, one live run per document, the items, acceptance counts."""
