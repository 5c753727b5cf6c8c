"""Broken JSON: where the damage is, and a deterministic structural repair.

`damage` locates problems the way the design asks (tree-sitter-json ERROR/MISSING nodes
and the `json.loads` error position), as character spans; the diffusion repair turns
them into gaps. `structural_repair` is a lenient parser that rewrites the text token by
token, keeping the user's whitespace and every key and value it can: it quotes bare keys
and single-quoted strings, maps Python literals, drops comments and trailing commas, and
inserts missing commas, colons, closing quotes and closers. Its output is only a
candidate: like every other candidate it must pass `json.loads` (see engine.repair.fixes).

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


def _body(raw: str, quote: str) -> str:
    """The inside of a JSON string for the inside of a string quoted with `quote`."""
    chars, index = [], 0
    controls = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}
    while index < len(raw):
        char = raw[index]
        if char == "\\" and index + 1 < len(raw):
            escaped = raw[index + 1]
            # `\'` and an escaped closing quote of another kind are the quote itself in JSON
            chars.append(escaped if escaped == "'" or (quote != '"' and escaped in _CLOSING[quote]) else char + escaped)
            index += 2
            continue
        if char == '"':
            chars.append('\\"')
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


def _continues_on_next_line(text: str, newline: int, closers: str) -> bool:
    """A line break written inside a string: the next line holds only text up to a closing quote
    that ends the string (`"line one` / `line two",`)."""
    end = text.find("\n", newline + 1)
    line = text[newline + 1 : len(text) if end == -1 else end]
    close = next((i for i, char in enumerate(line) if char in closers), None)
    if close is None or not line[:close].strip() or any(char in _STRUCTURE or char in _QUOTES for char in line[:close]):
        return False
    after = newline + 1 + close + 1
    return _ends_string(text, after) and text[after:].lstrip(" \t")[:1] != ":"


def _string_end(text: str, start: int) -> tuple[int, bool]:
    """Offset of the closing quote of the string at `start` (or of its line's end), and whether it closed.

    The first quote that reads as an end closes the string; a quote inside it written
    without its backslash and followed by a word (`"he said "hi" twice"`) does not, unless
    taking the later quote would swallow structure (`"x, "b": 1` is an unclosed string
    before a key). Without such an end on the line, the first quote closes it.
    """
    closers = _CLOSING[text[start]]
    index, first = start + 1, None
    while index < len(text):
        char = text[index]
        if char == "\\":
            index += 2
            continue
        if char in closers:
            if _ends_string(text, index + 1):
                if first is None:
                    return index, True
                later_key = text[index + 1 :].lstrip(" \t")[:1] == ":"
                if later_key or _STRUCTURE_AFTER_COMMA.search(text[start + 1 : index]):
                    return first, True
                return index, True
            if first is None and not text[index + 1 :].lstrip(" \t")[:1].isalpha():
                return index, True  # not followed by a word: not a quote inside the text
            first = index if first is None else first
        elif char == "\n" and first is None and _continues_on_next_line(text, index, closers):
            pass  # the line break is part of the string
        elif char in "\r\n":
            break
        index += 1
    if first is not None:
        return first, True
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


def _bare_end(text: str, start: int) -> int:
    """Where a value written without quotes ends: at structure, a line break, a comment, a
    quoted string or a bare key after white space; trailing white space is not part of it."""
    index = start
    while index < len(text):
        char = text[index]
        if char in ",]}[{)\r\n":
            break
        spaced = index > start and text[index - 1] in " \t"
        if spaced and (char in _QUOTES or text.startswith(("//", "/*", "#"), index)
                       or _KEY_AHEAD.match(text, index)):
            break
        index += 1
    while index > start and text[index - 1] in " \t":
        index -= 1
    return index


def _bare_value(text: str, token: Token) -> str | None:
    """The JSON for a value written without quotes that runs past its first token (`hello big
    world`, `https://example.org/a?b=1`, `2024-10-18T18:35:22Z`, `2e-`), or None when the
    token is the whole value or values merely lack their commas (`1 2 3`, `true false`)."""
    end = _bare_end(text, token.start)
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
        elif token.kind in ("word", "number") and (bare := _bare_value(self.text, token)) is not None:
            self.out.emit(bare)
            self.skip_to(_bare_end(self.text, token.start))
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
        """One value; more values after it (newline-delimited JSON) become the items of an array,
        and what is left that cannot start a value (closers, prose after the JSON) is dropped.
        None when the text holds no value at all (only punctuation)."""
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
    if not text.strip():
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


def added(original: str, candidate: str) -> Counter:
    """Words and numbers `candidate` has that `original` lacks; `null` (a missing value) is not counted."""
    extra = words(candidate) - words(original)
    del extra["null"]
    return extra
