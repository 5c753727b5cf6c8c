"""The open documents' text: incremental sync, positions in utf-8/16/32, the bounded window a request reads."""
