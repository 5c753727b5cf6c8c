"""A small least-recently-used mapping: the server keeps its last completions (lsp.completion.without_run)
and its last fix results (lsp) in one. `functools.lru_cache` does not fit either: both store results
computed elsewhere, one looks through its entries newest first, and the other forgets a document's."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Lru(Generic[K, V]):
    """At most `size` entries; storing one makes it the newest, and the oldest goes first."""

    def __init__(self, size: int):
        self.size = size
        self._entries: OrderedDict[K, V] = OrderedDict()

    def put(self, key: K, value: V) -> None:
        self._entries[key] = value
        self._entries.move_to_end(key)
        while len(self._entries) > self.size:
            self._entries.popitem(last=False)

    def get(self, key: K) -> V | None:
        """The value kept for `key`, now the newest; None when there is none."""
        if key in self._entries:
            self._entries.move_to_end(key)
        return self._entries.get(key)

    def peek(self, key: K) -> V | None:
        """The value kept for `key` without making it the newest; None when there is none."""
        return self._entries.get(key)

    def newest_first(self) -> Iterator[tuple[K, V]]:
        return reversed(self._entries.items())

    def forget_where(self, which: Callable[[K], bool]) -> None:
        """Drops the entries whose key `which` picks."""
        for key in [key for key in self._entries if which(key)]:
            del self._entries[key]

    def clear(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)
