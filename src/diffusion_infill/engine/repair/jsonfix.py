"""Broken JSON: where the damage is, and a deterministic structural repair.

`damage` locates problems the way the design asks (tree-sitter-json ERROR/MISSING nodes
and the `json.loads` error position), as character spans; the diffusion repair turns
them into gaps. `structural_repair` is a lenient parser that rewrites the text token by
token, keeping the user's whitespace and every key and value it can: it quotes bare keys
and single-quoted strings, maps Python literals, drops comments and trailing commas, and
inserts missing commas, colons, closing quotes and closers. Its output is only a
candidate: like every other candidate it must pass `json.loads` (see diffusion_infill.engine.repair.fixes).

JSONC (VS Code settings, tsconfig) allows `//` and `/* */` comments and trailing commas:
`strip_jsonc` blanks them out, offsets unchanged, so that `json.loads` and `damage` see
what is left, and `structural_repair(text, jsonc=True)` keeps them.
"""

from __future__ import annotations

import json
import re
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

import tree_sitter_json
from tree_sitter import Language, Node, Parser

_LITERALS = {"true": "true", "false": "false", "null": "null", "True": "true", "False": "false",
             "None": "null", "TRUE": "true", "FALSE": "false", "NULL": "null", "Null": "null"}
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
# A number cut short (`2e-`, `1.`, `-3.5E`): the digits before the cut are the number.
_TRUNCATED_NUMBER = re.compile(r"([+-]?\d+(?:\.\d+)?)(?:\.|[eE][+-]?|\.[eE][+-]?)")
_WORD = re.compile(r"[A-Za-z_$][\w$\-.]*")
_BLANKS = re.compile(r"[ \t]*")
_OPENERS = {"{": "}", "[": "]"}
# The quotes a string may be opened with, and the ones that close it: typographic quotes
# (word processors, chat replies) pair with their closing shape or with themselves.
_CLOSING = {'"': '"', "'": "'", "\u201c": "\u201d\u201c", "\u201d": "\u201d", "\u2018": "\u2019\u2018",
            "\u2019": "\u2019"}
_QUOTES = frozenset(_CLOSING)
# What may follow a closing quote; anything else suggests the quote was not the end.
_FOLLOWERS = frozenset(",:]})/#") | frozenset(" \t\r\n")
# Inside a string that lost its closing quote, a comma followed by what starts a JSON value or a
# key (`, null`, `, 12`, `, "x"`, `, key:`) is structure, not prose ("one, two" is prose).
_STRUCTURE_AFTER_COMMA = re.compile(
    r""",\s*(?:(?:null|true|false|None|True|False)\b|-?\d|["'{\[]|[A-Za-z_$][\w$-]*\s*:)""")
# A bare key after a value written without quotes or a comma: `{a: hello b: 2}`. A colon
# followed by `/` is a URL's, after digits a time's.
_KEY_AHEAD = re.compile(r"[A-Za-z_$][\w$-]*\s*:(?![/\d])")
_STRUCTURE = frozenset("{}[]:,")
_HAS_VALUE = re.compile(r"[\w{\[]")
# A fenced code block (an LLM reply, a Markdown excerpt): the JSON is what it fences.
_FENCED = re.compile(r"^[ \t]*(`{3,}|~{3,})[^\n`]*\n(.*?)(?:^[ \t]*\1[ \t]*$|\Z)", re.DOTALL | re.MULTILINE)
# Prose before the JSON: words and spaces, perhaps ending in a colon, no quotes or brackets.
_PROSE = re.compile(r"[^\W\d][^\n\"'{}\[\]()]*?\s[^\n\"'{}\[\]()]*?[:.!]?\s*", re.DOTALL)


@dataclass(frozen=True)
class Token:
    kind: str  # "space", "comment" (// and /* */), "punct", "string", "number", "word", "junk"
    text: str  # the JSON text to write for it ("" for junk; a comment's own text)
    start: int  # offset in the original text
    end: int
    closed: bool = True  # a string that had its closing quote


_JSON_ESCAPE = re.compile(r'\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})')
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def _body(raw: str, quote: str) -> str:
    """The inside of a JSON string for the inside of a string quoted with `quote`: every character
    kept, as what it is (a backslash that starts no JSON escape is a backslash; a backslash before a
    line break continues the line, as in JavaScript)."""
    chars, index = [], 0
    controls = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}
    while index < len(raw):
        char = raw[index]
        if char == "\\" and index + 1 < len(raw):
            escaped = raw[index + 1]
            if (line_break := _LINE_BREAK.match(raw, index + 1)) is not None:
                index = line_break.end()
                continue
            if escaped == "'" or (quote != '"' and escaped in _CLOSING[quote]):
                chars.append(escaped)  # `\'` and an escaped closing quote of another kind are the quote itself
            elif _JSON_ESCAPE.match(raw, index):
                chars.append(char + escaped)
            else:  # `\x`, a `\u` with fewer than four digits: the backslash is text
                chars.append("\\\\")
                index += 1
                continue
            index += 2
            continue
        if char == '"':
            chars.append('\\"')
        elif char == "\\":
            chars.append("\\\\")
        else:
            chars.append(controls.get(char, char if ord(char) >= 0x20 else f"\\u{ord(char):04x}"))
        index += 1
    return "".join(chars)


def _ends_string(text: str, index: int) -> bool:
    """Whether a quote just before `index` reads as a string's end: what follows it (after spaces)
    is structure, the end of the line, a comment, another string, a `+` or a bare key."""
    while index < len(text) and text[index] in " \t":
        index += 1
    if index == len(text) or text[index] in ",:]})+\r\n" or text[index] in _QUOTES:
        return True
    if text.startswith(("//", "/*", "#"), index):
        return True
    return text[index - 1] in " \t" and _KEY_AHEAD.match(text, index) is not None


def _continues_on_next_line(text: str, line_start: int, closers: str) -> bool:
    """A line break written inside a string: the next line holds only text up to a closing quote
    that ends the string (`"line one` / `line two",`)."""
    end = _LINE_BREAK.search(text, line_start)
    line = text[line_start : len(text) if end is None else end.start()]
    close = next((i for i, char in enumerate(line) if char in closers), None)
    if close is None or not line[:close].strip() or any(char in _STRUCTURE or char in _QUOTES for char in line[:close]):
        return False
    after = line_start + close + 1
    return _ends_string(text, after) and text[after:].lstrip(" \t")[:1] != ":"


def _text_follows_parenthesis(text: str, index: int, closers: str) -> bool:
    """A quote before `)` inside a string (`"six feet (72") tall"`, `"[link]("url")"`): the string
    goes on after the parenthesis, with words or with a quote that ends it. After a call's argument
    (`ObjectId("5f1e"),`) structure follows instead."""
    rest = text[index:].lstrip(" \t")
    if not rest.startswith(")"):
        return False
    following = index + len(text[index:]) - len(rest) + 1
    while following < len(text) and text[following] in " \t":
        following += 1
    char = text[following : following + 1]
    if char.isalnum():
        return True
    return bool(char) and char in closers and _ends_string(text, following + 1) \
        and text[following + 1 :].lstrip(" \t")[:1] != ":"


def _opens_next_string(text: str, quote: int, closers: str) -> bool:
    """Whether the quote at `quote` reads as the opening of the next string (the one before it
    lost its closing quote): the next quote closes that string where structure follows."""
    index = quote + 1
    while index < len(text) and text[index] not in closers and text[index] not in "\r\n":
        index += 2 if text[index] == "\\" else 1
    return index < len(text) and text[index] in closers and _ends_string(text, index + 1)


def _string_end(text: str, start: int) -> tuple[int, bool]:
    """Offset of the closing quote of the string at `start` (or of its line's end), and whether it closed.

    The first quote that reads as an end closes the string; a quote inside it written
    without its backslash and followed by more of its text (`"he said "hi" twice"`,
    `"six feet (72") tall"`) does not, unless it reads as the opening of the next string
    (`"x, "b": 1` is an unclosed string before a key). Without a quote that reads as an
    end, the string is unclosed and runs to its line's end, inner quotes included.
    """
    closers = _CLOSING[text[start]]
    index, first = start + 1, None
    while index < len(text):
        char = text[index]
        if char == "\\":
            index += 2
            continue
        if char in closers:
            inner = _text_follows_parenthesis(text, index + 1, closers)
            if _ends_string(text, index + 1) and not inner:
                if first is None:
                    return index, True
                later_key = text[index + 1 :].lstrip(" \t")[:1] == ":"
                structure = later_key or _STRUCTURE_AFTER_COMMA.search(text[start + 1 : index])
                return (first if structure and _opens_next_string(text, first, closers) else index), True
            if first is None and not inner and (not text[index + 1 :].lstrip(" \t")[:1].isalpha()
                                                or _value_after_space(text, index + 1)):
                return index, True  # not followed by a word, or a value follows (`"id"  null`): its end
            first = index if first is None else first
        elif char in "\r\n":
            line_break = _LINE_BREAK.match(text, index)
            if first is None and _continues_on_next_line(text, line_break.end(), closers):
                index = line_break.end()  # the line break is part of the string
                continue
            break
        index += 1
    return min(index, len(text)), False


def _value_after_space(text: str, index: int) -> bool:
    """White space, then what starts a JSON value (a number, a literal, a quote, a bracket)."""
    rest = text[index:]
    stripped = rest.lstrip(" \t")
    if stripped == rest or not stripped:
        return False
    token = token_at(stripped, 0)
    return token.kind in ("string", "number") or (token.kind == "word" and token.text in _LITERALS) \
        or stripped[0] in "{["


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
        if not after or after in _FOLLOWERS or _ends_string(text, close + 1):
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


def _space(text: str) -> str:
    """White space as JSON allows it: no-break and other Unicode spaces become plain ones."""
    return "".join(char if char in " \t\r\n" else " " for char in text)


def token_at(text: str, index: int) -> Token:
    """The token that starts at `index`."""
    char = text[index]
    if char.isspace() or char == "\ufeff":
        end = index
        while end < len(text) and (text[end].isspace() or text[end] == "\ufeff"):
            end += 1
        return Token("space", _space(text[index:end].replace("\ufeff", "")), index, end)
    if text.startswith("//", index) or char == "#":
        end = text.find("\n", index)
        end = len(text) if end == -1 else end
        # a JSONC comment; `#` starts junk (dropped, in JSONC too)
        return Token("comment", text[index:end], index, end) if char == "/" else Token("junk", "", index, end)
    if text.startswith("/*", index):
        end = text.find("*/", index + 2)
        end = len(text) if end == -1 else end + 2
        return Token("comment", text[index:end], index, end)
    if char in "{}[]:,()":
        return Token("punct", char, index, index + 1)
    if char == "=":  # `key = value`: a colon written as in other formats
        return Token("punct", ":", index, index + 1)
    if char in _QUOTES:
        value, end, closed = _string(text, index)
        return Token("string", value, index, end, closed)
    if match := _NUMBER.match(text, index):
        number = match.group().lstrip("+")
        number = "0" + number if number.startswith(".") else number
        number = number.replace("-.", "-0.")
        number = number + "0" if number.endswith(".") else number
        return Token("number", number, index, match.end())
    if char == "+":  # not a number's sign: string concatenation
        return Token("punct", "+", index, index + 1)
    if match := _WORD.match(text, index):
        return Token("word", match.group(), index, match.end())
    return Token("junk", "", index, index + 1)


def tokenize(text: str) -> list[Token]:
    tokens, index = [], 0
    while index < len(text):
        token = token_at(text, index)
        tokens.append(token)
        index = token.end
    return tokens


def _bare_end(text: str, start: int, keys: bool = True) -> int:
    """Where a value written without quotes ends: at structure, a line break, a comment, a
    quoted string or (with `keys`: in an object) a bare key after white space; trailing white
    space is not part of it. Outside an object `word:` is text (`She said: no way`)."""
    index = start
    while index < len(text):
        char = text[index]
        if char in ",]}[{)\r\n":
            break
        spaced = index > start and text[index - 1] in " \t"
        if spaced and (char in _QUOTES or text.startswith(("//", "/*", "#"), index)
                       or (keys and _KEY_AHEAD.match(text, index))):
            break
        index += 1
    while index > start and text[index - 1] in " \t":
        index -= 1
    return index


def _bare_value(text: str, token: Token, keys: bool = True) -> str | None:
    """The JSON for a value written without quotes that runs past its first token (`hello big
    world`, `https://example.org/a?b=1`, `2024-10-18T18:35:22Z`, `2e-`), or None when the
    token is the whole value or values merely lack their commas (`1 2 3`, `true false`)."""
    end = _bare_end(text, token.start, keys)
    run = text[token.start : end]
    if end <= token.end:
        return None
    if match := _TRUNCATED_NUMBER.fullmatch(run):
        return match.group(1).lstrip("+")
    parts = tokenize(run)
    significant = [part for part in parts if part.kind != "space"]
    if all(part.kind == "number" or (part.kind == "word" and part.text in _LITERALS) for part in significant) \
            and all(a.kind == "space" or b.kind == "space" for a, b in zip(parts, parts[1:], strict=False)):
        return None
    return json.dumps(run, ensure_ascii=False)


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

    def drop_blanks(self) -> None:
        """The held spaces and tabs before a comment left out at the end of its line, and the line
        break before them when it stood alone: no trailing space and no blank line are left."""
        held = "".join(self.space).rstrip(" \t")
        self.space = [held.removesuffix("\n")]

    def text(self) -> str:
        return "".join(self.pieces + self.space)


class _Parser:
    def __init__(self, text: str, jsonc: bool = False):
        self.text = text
        self.jsonc = jsonc  # comments and trailing commas are kept
        self.position = 0  # offset of the next token; tokens are read lazily, a bare value skips several
        self.next: Token | None = None  # the token at `position`, once read
        self.out = _Writer()
        self.stack: list[str] = []  # closers of the open containers, innermost last

    def _current(self) -> Token | None:
        if self.position >= len(self.text):
            return None
        if self.next is None or self.next.start != self.position:
            self.next = token_at(self.text, self.position)
        return self.next

    def peek(self) -> Token | None:
        """The next significant token; whitespace and comments on the way are written or dropped."""
        while (token := self._current()) is not None:
            if token.kind == "space" or (token.kind == "comment" and self.jsonc):
                self.out.space.append(token.text)  # held back like whitespace: an inserted comma lands before it
            elif token.kind == "comment":
                self.position = self._drop_comment(token)
                continue
            elif token.kind != "junk":
                return token
            self.position = token.end
        return None

    def _drop_comment(self, token: Token) -> int:
        """Where reading goes on after a comment left out, leaving no blanks of its own: the blanks after it
        when the line goes on, else the ones before it (and its line break when it stood alone)."""
        after = _BLANKS.match(self.text, token.end).end()
        if after < len(self.text) and self.text[after] not in "\r\n":
            return after
        self.out.drop_blanks()
        return token.end

    def take(self) -> Token:
        token = self._current()
        self.position = token.end
        return token

    def skip_to(self, offset: int) -> None:
        self.position = offset

    def value(self) -> None:
        token = self.peek()
        if token is None:
            self.out.insert("null")
            return
        if token.kind == "punct" and token.text in _OPENERS:
            self.take()
            self.out.emit(token.text)
            self.container(_OPENERS[token.text])
        elif token.kind == "word" and self.call(token):
            return
        elif token.kind in ("word", "number") and (bare := _bare_value(self.text, token, self.in_object)) is not None:
            self.out.emit(bare)
            self.skip_to(_bare_end(self.text, token.start, self.in_object))
        elif token.kind == "word":
            self.take()
            self.out.emit(_LITERALS.get(token.text, json.dumps(token.text, ensure_ascii=False)))
        elif token.kind == "string":
            self.take()
            self.out.emit(token.text)
            self.concatenate()
        elif token.kind == "number":
            self.take()
            self.out.emit(token.text)
        else:  # a comma, colon or closer where a value belongs: the value is missing
            self.out.insert("null")

    @property
    def in_object(self) -> bool:
        return self.stack[-1:] == ["}"]

    def call(self, name: Token) -> bool:
        """`NumberLong(2)`, `ObjectId("5f1e")`, `callback({...})`: the value inside the call
        (MongoDB shell types, JSONP). False when the word is not followed by `(`."""
        if not self.text[name.end :].lstrip(" \t").startswith("("):
            return False
        self.skip_to(self.text.index("(", name.end) + 1)
        self.value()
        token = self.peek()
        if token is not None and token.kind == "punct" and token.text == ")":
            self.take()
        return True

    def concatenate(self) -> None:
        """Joins the strings `+` adds to the string just written (`"long text" + "more text"`)."""
        while True:
            position, space = self.position, list(self.out.space)
            plus = self.peek()
            following = None
            if plus is not None and plus.kind == "punct" and plus.text == "+":
                self.take()
                following = self.peek()
            if following is None or following.kind != "string":
                self.position, self.out.space = position, space
                return
            self.take()
            self.out.pieces[-1] = self.out.pieces[-1][:-1] + following.text[1:]
            self.out.space = space  # the space around `+` goes with it

    def _value_follows(self, offset: int) -> bool:
        """Whether a JSON value (not prose) starts after `offset`: `1,2,3` is a list, `{...}, thanks` is not."""
        rest = self.text[offset:].lstrip()
        if not rest:
            return False
        token = token_at(rest, 0)
        return token.kind in ("string", "number") or (token.kind == "word" and token.text in _LITERALS) \
            or (token.kind == "punct" and token.text in _OPENERS)

    def key(self, token: Token) -> None:
        self.take()
        text = token.text if token.kind == "string" else json.dumps(token.text, ensure_ascii=False)
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
            if token.kind == "punct" and token.text in ",:()+":
                self.take()  # a comma with no value before it, a stray colon, parenthesis or plus
                continue
            if is_object and token.kind == "punct" and token.text in _OPENERS:
                # a value where a key belongs (`{"i": 1 {"i": 2}`): this object lost its closer, and
                # the value is the next item of what holds it; a key made up for it would be content
                self.out.insert(closer)
                break
            if need_comma:
                self.out.insert(",")  # two items with no comma between them
            if is_object:
                self.member(token)
            else:
                self.value()
            need_comma = not self.after_item()
        self.stack.pop()

    def member(self, token: Token) -> None:
        self.key(token)
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
        """One value; more values after it (newline-delimited JSON, or values separated by commas)
        become the items of an array, and what is left that cannot start a value (closers, prose
        after the JSON) is dropped. None when the text holds no value at all (only punctuation)."""
        first = self.peek()
        if first is None or (first.kind == "punct" and first.text not in _OPENERS):
            return None
        self.value()
        values = 1
        while (token := self.peek()) is not None:
            if token.kind == "punct" and token.text in _OPENERS:
                self.out.insert(",")
                self.value()
                values += 1
                continue
            if token.kind == "punct" and token.text == "," and self._value_follows(token.end):
                self.take()
                self.out.emit(",")
                self.value()
                values += 1
                continue
            if token.kind == "punct" and token.text in "]},;)":
                self.take()  # closers, commas and semicolons left over after the document
                continue
            self.out.space = []
            break  # prose after the JSON
        if values > 1:
            self.out.pieces.insert(0, "[")
            self.out.insert("]")
        return self.out.text()


def _unescaped(text: str) -> str:
    """A document whose every quote is backslash-escaped (`{\"a\": 1}`, copied out of a string)
    with those escapes removed; other text unchanged."""
    quotes = [index for index, char in enumerate(text) if char == '"']
    if not quotes or any(index == 0 or text[index - 1] != "\\" for index in quotes):
        return text
    return text.replace('\\"', '"').replace("\\\\", "\\")


def _unwrapped(text: str) -> str:
    """The JSON inside a wrapper: a fenced code block (with any prose around it), or the text
    from the first bracket on after a sentence of prose (`Here is the data: {...}`)."""
    if fenced := _FENCED.search(text):
        inside = fenced.group(2)
        if inside.strip():
            return inside
    stripped = text.lstrip()
    opener = min((index for index in (stripped.find("{"), stripped.find("[")) if index > 0), default=-1)
    if opener > 0 and _PROSE.fullmatch(stripped[:opener]):
        return stripped[opener:]
    return text


def structural_repair(text: str, jsonc: bool = False) -> str | None:
    """The text rewritten as JSON (JSONC: keeping comments and trailing commas) with the smallest local
    changes, or None when there is nothing to repair."""
    if not _HAS_VALUE.search(text):  # quotes and punctuation alone (`"`, `'"'`): no JSON here
        return None
    try:
        return _Parser(_unwrapped(_unescaped(text)), jsonc).document()
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


_PARSE_CHUNK = 65_536  # bytes
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
    """The tree of `source`, read in chunks: the parser holds the GIL while it runs, and between two
    reads other threads (the language server's event loop) get their turn, and `cancelled` is asked;
    one call on 10 MB held the GIL for seconds."""
    def read(byte: int, _) -> bytes:
        if cancelled():
            raise Cancelled
        return source[byte : byte + _PARSE_CHUNK]

    parser = _json_parser()
    try:
        return parser.parse(read).root_node
    except Cancelled:
        parser.reset()  # else its next parse would resume this one
        raise


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


_ESCAPE = re.compile(r"\\(?:u[0-9a-fA-F]{4}|.)")
_WORDS = re.compile(r"\w+")


def _unescape(match: re.Match) -> str:
    try:
        return json.loads('"' + match.group() + '"')
    except json.JSONDecodeError:
        return match.group()[1:]


def words(text: str) -> Counter:
    """The words and numbers in a text, escapes decoded and Python literals as JSON's: what a
    repair keeps (or loses), and what a model's candidate may not add to."""
    return Counter(_LITERALS.get(word, word) for word in _WORDS.findall(_ESCAPE.sub(_unescape, text)))


class _Number(str):
    """A number as the candidate wrote it (`1.30` is not `1.3`)."""


class _Pairs(list):
    """An object's members in order, duplicates kept."""


_NOT_JSON = Counter({"(does not load)": 1})


def holds(text: str, jsonc: bool = False) -> Counter | None:
    """What a JSON text holds, counted: `s:` and each string (keys included), `n:` and each number as
    written, `true`, `false`, `null`, and `{` / `[` per object / array. None when it does not load."""
    try:
        value = json.loads(strip_jsonc(text) if jsonc else text, parse_int=_Number, parse_float=_Number,
                           parse_constant=_Number, object_pairs_hook=_Pairs)
    except (json.JSONDecodeError, RecursionError):
        return None
    found: Counter = Counter()
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, _Pairs):
            found["{"] += 1
            for key, member in item:
                found["s:" + key] += 1
                stack.append(member)
        elif isinstance(item, list):
            found["["] += 1
            stack += item
        elif isinstance(item, _Number):
            found["n:" + item] += 1
        elif isinstance(item, str):
            found["s:" + item] += 1
        else:
            found[json.dumps(item)] += 1  # true, false, null
    return found


_LITERAL_SPELLINGS = {"true": ("true", "True", "TRUE"), "false": ("false", "False", "FALSE"),
                      "null": ("null", "None", "NULL", "Null")}


def _written(text: str, part: str) -> int:
    """How often `part` (a `holds` entry) is in `text` as the user wrote it."""
    if part in "{[":
        return text.count(part)
    if part in _LITERAL_SPELLINGS:
        return sum(len(re.findall(rf"(?<![\w$]){spelling}(?![\w$])", text)) for spelling in _LITERAL_SPELLINGS[part])
    kind, value = part[:2], part[2:]
    if kind == "n:":
        return len(re.findall(rf"(?<![\w.]){re.escape(value)}(?![\w.])", text))
    if not value:
        return text.count('""') + text.count("''")
    forms = {value, json.dumps(value, ensure_ascii=False)[1:-1], json.dumps(value)[1:-1]}
    return max(text.count(form) for form in forms)


def added(original: str, candidate: str, reference: str | None = None, jsonc: bool = False) -> Counter:
    """What `candidate` holds that is not in `original`: a string (key or value), number or literal the
    user did not write, as written or in its escaped form, or more objects and arrays than the text
    opens. `reference` (the deterministic repair) adds only structure, so what it holds is allowed too
    (a `null` for a missing value, the closing of what was left open). A candidate that does not load
    adds `(does not load)`."""
    found = holds(candidate, jsonc)
    if found is None:
        return Counter(_NOT_JSON)
    allowed = holds(reference, jsonc) if reference is not None else None
    extra = Counter()
    for part, count in found.items():
        limit = max(_written(original, part), (allowed or Counter())[part])
        if count > limit:
            extra[part] = count - limit
    return extra
