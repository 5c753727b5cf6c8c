"""Broken JSON: where the damage is, and a deterministic structural repair.

`damage` locates problems the way the design asks (tree-sitter-json ERROR/MISSING nodes
and the `json.loads` error position), as character spans; the diffusion repair turns
them into gaps. `structural_repair` is a lenient parser that rewrites the text token by
token, keeping the user's whitespace and every key and value it can: it quotes bare keys
and single-quoted strings, maps Python literals, drops comments and trailing commas, and
inserts missing commas, colons, closing quotes and closers. Its output is only a
candidate: like every other candidate it must pass `json.loads` (see engine.fixes).

JSONC (VS Code settings, tsconfig) allows `//` and `/* */` comments and trailing commas:
`strip_jsonc` blanks them out, offsets unchanged, so that `json.loads` and `damage` see
what is left, and `structural_repair(text, jsonc=True)` keeps them.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from functools import cache

import tree_sitter_json
from tree_sitter import Language, Parser

_LITERALS = {"true": "true", "false": "false", "null": "null", "True": "true", "False": "false",
             "None": "null", "TRUE": "true", "FALSE": "false", "NULL": "null", "Null": "null"}
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
_WORD = re.compile(r"[A-Za-z_$][\w$\-.]*")
_OPENERS = {"{": "}", "[": "]"}
# What may follow a closing quote; anything else suggests the quote was not the end.
_FOLLOWERS = frozenset(",:]}/#") | frozenset(" \t\r\n")
# Inside a string that lost its closing quote, a comma followed by what starts a JSON value or a
# key (`, null`, `, 12`, `, "x"`, `, key:`) is structure, not prose ("one, two" is prose).
_STRUCTURE_AFTER_COMMA = re.compile(
    r""",\s*(?:(?:null|true|false|None|True|False)\b|-?\d|["'{\[]|[A-Za-z_$][\w$-]*\s*:)""")


@dataclass(frozen=True)
class Token:
    kind: str  # "space", "comment" (// and /* */), "punct", "string", "number", "word", "junk"
    text: str  # the JSON text to write for it ("" for junk; a comment's own text)
    start: int  # offset in the original text
    end: int
    closed: bool = True  # a string that had its closing quote


def _body(raw: str, quote: str) -> str:
    """The inside of a JSON string for the inside of a string quoted with `quote`."""
    chars, index = [], 0
    while index < len(raw):
        char = raw[index]
        if char == "\\" and index + 1 < len(raw):
            escaped = raw[index + 1]
            chars.append(escaped if quote == "'" and escaped == "'" else char + escaped)
            index += 2
            continue
        chars.append('\\"' if char == '"' else "\\t" if char == "\t" else char)
        index += 1
    return "".join(chars)


def _string_end(text: str, start: int) -> tuple[int, bool]:
    """Offset of the closing quote of the string at `start` (or of its line's end), and whether it closed."""
    quote, index = text[start], start + 1
    while index < len(text):
        char = text[index]
        if char == "\\":
            index += 2
        elif char == quote:
            return index, True
        elif char in "\r\n":
            break
        else:
            index += 1
    return min(index, len(text)), False


def _string(text: str, start: int) -> tuple[str, int, bool]:
    """The string starting at `start` as a JSON string, its end offset, and whether it was closed.

    An unclosed string ends at the end of its line, before any trailing commas and
    closers there: the quote that went missing was most likely right before them. A
    closing quote followed by a word (`"x, "b": 1`) most likely opened the next string,
    so the string ends at its last comma instead (or where its text ends). Either way, a
    comma followed by what starts a JSON value or key ends it sooner.
    """
    quote = text[start]
    close, closed = _string_end(text, start)
    raw = text[start + 1 : close]
    if closed:
        after = text[close + 1 : close + 2]
        if not after or after in _FOLLOWERS:
            return '"' + _body(raw, quote) + '"', close + 1, True
        # The quote at `close` opens the next string: this one ended at its last comma, or
        # where its text ends; the closers before that comma were structure, not text.
        comma = raw.rfind(",")
        kept = raw[:comma].rstrip(" \t]}") if comma != -1 else raw.rstrip()
    else:
        kept = raw.rstrip(" \t,]}")
    if structure := _STRUCTURE_AFTER_COMMA.search(kept):
        kept = kept[: structure.start()].rstrip(" \t]}")
    return '"' + _body(kept, quote) + '"', start + 1 + len(kept), False


def tokenize(text: str) -> list[Token]:
    tokens, index = [], 0
    while index < len(text):
        char = text[index]
        if char.isspace():
            end = index
            while end < len(text) and text[end].isspace():
                end += 1
            tokens.append(Token("space", text[index:end], index, end))
        elif text.startswith("//", index) or char == "#":
            end = text.find("\n", index)
            end = len(text) if end == -1 else end
            comment = char == "/"  # a JSONC comment; `#` starts junk (dropped, in JSONC too)
            tokens.append(Token("comment", text[index:end], index, end) if comment else Token("junk", "", index, end))
        elif text.startswith("/*", index):
            end = text.find("*/", index + 2)
            end = len(text) if end == -1 else end + 2
            tokens.append(Token("comment", text[index:end], index, end))
        elif char in "{}[]:,":
            end = index + 1
            tokens.append(Token("punct", char, index, end))
        elif char == "=":  # `key = value`: a colon written as in other formats
            end = index + 1
            tokens.append(Token("punct", ":", index, end))
        elif char in "\"'":
            value, end, closed = _string(text, index)
            tokens.append(Token("string", value, index, end, closed))
        elif match := _NUMBER.match(text, index):
            end = match.end()
            number = match.group().lstrip("+")
            number = "0" + number if number.startswith(".") else number
            number = number.replace("-.", "-0.")
            number = number + "0" if number.endswith(".") else number
            tokens.append(Token("number", number, index, end))
        elif match := _WORD.match(text, index):
            end = match.end()
            tokens.append(Token("word", match.group(), index, end))
        else:
            end = index + 1
            tokens.append(Token("junk", "", index, end))
        index = end
    return tokens


class _Writer:
    """Output pieces, with whitespace held back so that an inserted comma lands before it."""

    def __init__(self) -> None:
        self.pieces: list[str] = []
        self.space: list[str] = []

    def emit(self, text: str) -> None:
        self.pieces += self.space
        self.space = []
        self.pieces.append(text)

    def insert(self, text: str) -> None:
        """Text the user did not write, placed right after the last significant token."""
        self.pieces.append(text)

    def text(self) -> str:
        return "".join(self.pieces + self.space)


class _Parser:
    def __init__(self, tokens: list[Token], jsonc: bool = False):
        self.tokens = tokens
        self.jsonc = jsonc  # comments and trailing commas are kept
        self.index = 0
        self.out = _Writer()
        self.stack: list[str] = []  # closers of the open containers, innermost last

    def peek(self) -> Token | None:
        """The next significant token; whitespace and comments on the way are written or dropped."""
        while self.index < len(self.tokens):
            token = self.tokens[self.index]
            if token.kind == "space" or (token.kind == "comment" and self.jsonc):
                self.out.space.append(token.text)  # held back like whitespace: an inserted comma lands before it
            elif token.kind not in ("comment", "junk"):
                return token
            self.index += 1
        return None

    def take(self) -> Token:
        token = self.tokens[self.index]
        self.index += 1
        return token

    def value(self) -> None:
        token = self.peek()
        if token is None:
            self.out.insert("null")
            return
        if token.kind == "punct" and token.text in _OPENERS:
            self.take()
            self.out.emit(token.text)
            self.container(_OPENERS[token.text])
        elif token.kind == "word":
            self.take()
            self.out.emit(_LITERALS.get(token.text, json.dumps(token.text)))
        elif token.kind in ("string", "number"):
            self.take()
            self.out.emit(token.text)
        else:  # a comma, colon or closer where a value belongs: the value is missing
            self.out.insert("null")

    def key(self, token: Token) -> None:
        self.take()
        text = token.text if token.kind == "string" else json.dumps(token.text)
        self.out.emit(text)

    def container(self, closer: str) -> None:
        self.stack.append(closer)
        is_object, need_comma = closer == "}", False
        while True:
            token = self.peek()
            if token is None:
                self.out.insert(closer)  # truncated text: close what is open
                break
            if token.kind == "punct" and token.text in "]}":
                if token.text == closer:
                    self.take()
                    self.out.emit(closer)
                    break
                if token.text in self.stack:  # an outer container closes: this one lost its closer
                    self.out.insert(closer)
                    break
                self.take()  # a closer that closes nothing
                continue
            if token.kind == "punct" and token.text in ",:":
                self.take()  # a comma with no value before it, or a stray colon
                continue
            if need_comma:
                self.out.insert(",")  # two items with no comma between them
            if is_object:
                self.member(token)
            else:
                self.value()
            need_comma = not self.after_item()
        self.stack.pop()

    def member(self, token: Token) -> None:
        if token.kind in ("string", "word", "number"):
            self.key(token)
        else:  # an object or array where a key belongs: keep it under an empty key
            self.out.insert('""')
        following = self.peek()
        if following is not None and following.kind == "punct" and following.text == ":":
            self.take()
            self.out.emit(":")
        else:
            self.out.insert(":")
            if following is None or (following.kind == "punct" and following.text in ",}]"):
                self.out.insert(" null")
                return
        self.value()

    def after_item(self) -> bool:
        """Writes the comma after an item, unless it is a trailing one; whether one was written or dropped."""
        token = self.peek()
        if token is None or token.kind != "punct" or token.text != ",":
            return False
        self.take()
        self.out.emit(",")  # written now, so that the whitespace after it stays after it
        written = len(self.out.pieces) - 1
        following = self.peek()
        while following is not None and following.kind == "punct" and following.text == ",":
            self.take()  # ",,": one comma is enough
            following = self.peek()
        if not self.jsonc and (following is None or (following.kind == "punct" and following.text in "]}")):
            del self.out.pieces[written]  # trailing comma: dropped
        return True

    def document(self) -> str | None:
        self.value()
        while (token := self.peek()) is not None:
            if token.kind == "punct" and token.text in "]},":
                self.take()  # closers and commas left over after the document
                continue
            return None  # a second value after the document: nothing sensible to do here
        return self.out.text()


def structural_repair(text: str, jsonc: bool = False) -> str | None:
    """The text rewritten as JSON (JSONC: keeping comments and trailing commas) with the smallest local
    changes, or None when it is not one value."""
    if not text.strip():
        return None
    try:
        return _Parser(tokenize(text), jsonc).document()
    except RecursionError:  # nesting deeper than Python's stack: json.loads could not load it either
        return None


def _unclosed_block(comment: str) -> bool:
    return comment.startswith("/*") and (len(comment) < 4 or not comment.endswith("*/"))


def comments(text: str) -> Counter:
    """The `//` and `/* */` comments in `text`, as written."""
    return Counter(token.text for token in tokenize(text) if token.kind == "comment")


def strip_jsonc(text: str) -> str:
    """JSONC as JSON: comments and trailing commas replaced by spaces (line breaks kept), so offsets into
    the result are offsets into `text`."""
    tokens = tokenize(text)
    structure = [token for token in tokens if token.kind not in ("space", "comment")]
    trailing = [comma for comma, following in zip(structure, structure[1:], strict=False)
                if comma.kind == "punct" and comma.text == "," and following.text in ("]", "}")]
    # A block comment never closed runs to the end of the text: that is damage, not a comment.
    closed = [token for token in tokens if token.kind == "comment" and not _unclosed_block(token.text)]
    chars = list(text)
    for token in closed + trailing:
        chars[token.start : token.end] = [char if char in "\r\n" else " " for char in text[token.start : token.end]]
    return "".join(chars)


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


def atoms(text: str) -> Counter:
    """Every key and scalar the user wrote, normalised, as the lenient tokenizer reads them."""
    found: Counter = Counter()
    for token in tokenize(text):
        if token.kind == "string":
            try:
                found["s:" + json.loads(token.text)] += 1
            except json.JSONDecodeError:
                found["s:" + token.text[1:-1]] += 1
        elif token.kind == "number":
            found["n:" + repr(float(token.text))] += 1
        elif token.kind == "word":
            literal = _LITERALS.get(token.text)
            found[("l:" + literal) if literal else ("s:" + token.text)] += 1
    return found


def value_atoms(value: object) -> Counter:
    """The keys and scalars of a loaded JSON value, normalised like `atoms`."""
    found: Counter = Counter()
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            found.update("s:" + key for key in item)
            stack += item.values()
        elif isinstance(item, list):
            stack += item
        elif isinstance(item, bool) or item is None:
            found["l:" + json.dumps(item)] += 1
        elif isinstance(item, int | float):
            found["n:" + repr(float(item))] += 1
        else:
            found["s:" + item] += 1
    return found
