"""Where broken JSON is damaged: tree-sitter-json ERROR and MISSING nodes and the json.loads error
position, as character spans."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass

import tree_sitter_json
from tree_sitter import Language, Node, Parser


@dataclass(frozen=True)
class Damage:
    start: int  # character offsets into the text
    end: int
    message: str


_parsers = threading.local()  # a Parser keeps per-parse state in C: one per thread (diagnostics, engine, loop)


def _json_parser() -> Parser:
    if not hasattr(_parsers, "json"):
        _parsers.json = Parser(Language(tree_sitter_json.language()))
    return _parsers.json


def _char_offsets(source: bytes, text: str, offsets: set[int]) -> dict[int, int]:
    """The character offset of each byte offset into `source` (`text` encoded), in one pass over it."""
    if len(source) == len(text):  # ASCII: bytes are characters
        return {byte: byte for byte in offsets}
    found, chars, previous = {}, 0, 0
    for byte in sorted(offsets):
        chars += len(source[previous:byte].decode("utf-8", errors="ignore"))
        found[byte], previous = chars, byte
    return found


class Cancelled(Exception):
    """`damage` was told to stop (a newer version of the document is waiting)."""


def _never() -> bool:
    return False


def _parse(source: bytes, cancelled: Callable[[], bool]) -> Node:
    """The tree of `source`, parsed whole. Not through a read callback, which would give other threads
    their turn between chunks: py-tree-sitter 0.26.1 keeps a reference to every chunk a callback
    returns, so each parse leaked its whole source (20 KB a diagnosis in the 20,000-document soak,
    docs/reliability.md; tests/engine/repair/test_json_damage.py). The parse runs in the diagnostics
    and repairs processes, apart from the server's event loop; `cancelled` is asked before and after it."""
    if cancelled():
        raise Cancelled
    root = _json_parser().parse(source).root_node
    if cancelled():
        raise Cancelled
    return root


def damage(text: str, cancelled: Callable[[], bool] = _never) -> list[Damage]:
    """Problems found by tree-sitter-json and by `json.loads`, in text order; empty when valid.
    Cancelled as soon as `cancelled()` says so (it is asked every few thousand nodes or 64 KB)."""
    try:
        json.loads(text)
        return []
    except json.JSONDecodeError as error:
        found = [Damage(error.pos, min(error.pos + 1, len(text)), error.msg)]
    except RecursionError:
        return [Damage(0, len(text), "nested too deeply to load")]
    source = text.encode("utf-8")
    stack, spans, visited = [_parse(source, cancelled)], [], 0
    while stack:
        node, visited = stack.pop(), visited + 1
        if visited % 4096 == 0 and cancelled():
            raise Cancelled
        if node.is_missing:
            spans.append((node.start_byte, node.start_byte, f"missing {node.type}"))
        elif node.type == "ERROR":
            spans.append((node.start_byte, node.end_byte, "syntax error"))
            continue
        stack += [child for child in node.children if child.has_error]  # only where the damage is
    chars = _char_offsets(source, text, {byte for start, end, _ in spans for byte in (start, end)})
    found += [Damage(chars[start], chars[end], message) for start, end, message in spans]
    return sorted(set(found), key=lambda item: (item.start, item.end))
