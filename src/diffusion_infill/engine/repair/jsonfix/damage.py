"""Where broken JSON is damaged: tree-sitter-json ERROR and MISSING nodes and the json.loads error
position, as character spans."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache

import tree_sitter_json
from tree_sitter import Language, Parser


@dataclass(frozen=True)
class Damage:
    start: int  # character offsets into the text
    end: int
    message: str


@cache
def _json_parser() -> Parser:
    return Parser(Language(tree_sitter_json.language()))


def _char_offset(source: bytes, byte: int) -> int:
    return len(source[:byte].decode("utf-8", errors="ignore"))


def damage(text: str) -> list[Damage]:
    """Problems found by tree-sitter-json and by `json.loads`, in text order; empty when valid."""
    try:
        json.loads(text)
        return []
    except json.JSONDecodeError as error:
        found = [Damage(error.pos, min(error.pos + 1, len(text)), error.msg)]
    except RecursionError:
        return [Damage(0, len(text), "nested too deeply to load")]
    source = text.encode("utf-8")
    stack = [_json_parser().parse(source).root_node]
    while stack:
        node = stack.pop()
        if node.is_missing:
            at = _char_offset(source, node.start_byte)
            found.append(Damage(at, at, f"missing {node.type}"))
        elif node.type == "ERROR":
            start, end = _char_offset(source, node.start_byte), _char_offset(source, node.end_byte)
            found.append(Damage(start, end, "syntax error"))
            continue
        stack += node.children
    return sorted(set(found), key=lambda item: (item.start, item.end))
