"""The deterministic repair: a lenient parser that rewrites the tokens (diffusion_infill.engine.repair.jsonfix.lexer)
as JSON with the smallest local changes, keeping the user's whitespace and every key and value it can."""

from __future__ import annotations

import json
import re
from collections import Counter
from itertools import islice

from diffusion_infill.engine.repair.jsonfix.content import words
from diffusion_infill.engine.repair.jsonfix.lexer import (
    _LITERALS,
    CUT_TO_SIGN,
    Token,
    _after_blanks,
    _bare_end,
    _bare_value,
    token_at,
    tokenize,
    without_cut_escape,
)

_BLANKS = re.compile(r"[ \t]*")
_SPACES = re.compile(r"\s*")
# Nesting the repair declines: its recursion would pass Python's default limit (1000 frames) about here.
_MAX_DEPTH = 300
_OPENERS = {"{": "}", "[": "]", "(": ")"}  # a parenthesised tuple is an array
_AS_JSON = {"(": "[", ")": "]"}
_SCAN_BUDGET = 8  # times the text: what failed fast reads may cost before the repair reads token by token


def _not_json(constant: str) -> None:
    raise ValueError(f"{constant} is not JSON")


_STRICT = json.JSONDecoder(parse_constant=_not_json)  # NaN and Infinity are not JSON: the repair quotes them
_FIRST_WINDOW = 256  # characters `_valid_end` reads first (most records are shorter)
_CUT_MARGIN = 16  # an error this close to the end of what was read may be where it was cut (`tr|ue`)


def _valid_end(text: str, start: int) -> tuple[int | None, int]:
    """Where the object or array at `start` ends when it is valid JSON as written (else None), and how many
    characters were read to tell. Read in windows that double: json's error counts the lines before
    the error, so reading the whole rest of a 10 MB text for each broken container would be quadratic."""
    window = _FIRST_WINDOW
    while True:
        piece = text[start : start + window]
        try:
            return start + _STRICT.raw_decode(piece)[1], len(piece)
        except json.JSONDecodeError as error:
            cut = error.pos >= len(piece) - _CUT_MARGIN or error.msg.startswith("Unterminated string")
            if not cut or start + len(piece) == len(text):
                return None, len(piece)
        except (ValueError, RecursionError):  # NaN or Infinity (the repair quotes them), or nested too deeply
            return None, len(piece)
        window *= 2


# MongoDB's and JavaScript's wrappers whose quoted argument is a number (`NumberLong("42")` is 42)
_NUMBER_WRAPPERS = frozenset({"NumberLong", "NumberInt", "NumberDecimal", "Number", "BigInt", "parseInt", "parseFloat"})
_JSON_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")
_HAS_VALUE = re.compile(r"[\w{\[]")
# A fence (an LLM reply, a Markdown excerpt): the JSON is what the fenced blocks hold.
_FENCE = re.compile(r"`{3,}|~{3,}")
_INFO = re.compile(r"[\w+-]*[ \t]*")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
# Prose before the JSON: words and spaces, perhaps ending in a colon, no quotes or brackets.
_PROSE = re.compile(r"[^\W\d][^\n\"'{}\[\]()]*?\s[^\n\"'{}\[\]()]*?[:.!]?\s*", re.DOTALL)


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
        line_break = re.search(r"(\r\n|\r|\n)\Z", held)
        self.space = [held if line_break is None else held[: line_break.start()]]

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
        self.closed_object: int | None = None  # where the closer of the object that closed last was written
        self.scan_budget = _SCAN_BUDGET * len(text)  # characters failed `valid_container` attempts may read

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
            elif token.kind in ("comment", "hash"):
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
            if self.valid_container(token):
                return
            self.take()
            self.out.emit(_AS_JSON.get(token.text, token.text))
            self.container(_OPENERS[token.text])
        elif token.kind == "word" and self.call(token):
            return
        elif token.kind in ("word", "number") and (bare := _bare_value(self.text, token, self.in_object)) is not None:
            self.out.emit(bare)
            self.skip_to(_bare_end(self.text, token.start, self.in_object))
            self.concatenate()
        elif token.kind == "word":
            self.take()
            self.out.emit(_LITERALS.get(token.text, json.dumps(token.text, ensure_ascii=False)))
            if token.text not in _LITERALS:  # `abc + "def"`: a bare word is a string, and joins as one
                self.concatenate()
        elif token.kind == "string":
            self.take()
            self.out.emit(token.text)
            self.concatenate()
        elif token.kind == "number":
            self.take()
            self.out.emit(token.text)
        else:  # a comma, colon or closer where a value belongs: the value is missing
            self.out.insert("null")

    def valid_container(self, opener: Token) -> bool:
        """An object or array that is valid JSON as written is written as it is, read by json's scanner in C:
        token by token the repair writes the same text, a hundred times slower. A read that fails is read
        again from every container around it, up to the error: failures get `scan_budget` characters."""
        if opener.text == "(" or self.scan_budget <= 0:
            return False
        end, read = _valid_end(self.text, opener.start)
        if end is None:
            self.scan_budget -= read
            return False
        self.skip_to(end)
        self.out.emit(self.text[opener.start : end - 1])
        self.out.emit(self.text[end - 1])  # the closer a piece of its own, as `container` writes it
        self.closed_object = len(self.out.pieces) - 1 if opener.text == "{" else None
        return True

    @property
    def in_object(self) -> bool:
        return self.stack[-1:] == ["}"]

    def call(self, name: Token) -> bool:
        """`NumberLong(2)`, `ObjectId("5f1e")`, `callback({...})`: the value inside the call
        (MongoDB shell types, JSONP). False when the word is not followed by `(`."""
        if _after_blanks(self.text, name.end) != "(":
            return False
        self.skip_to(self.text.index("(", name.end) + 1)
        argument = self.peek()
        if name.text in _NUMBER_WRAPPERS and argument is not None and argument.kind == "string":
            if _JSON_NUMBER.fullmatch(number := json.loads(argument.text).strip()):
                self.take()  # `NumberLong("42")`: the number, as the wrapper says it is
                self.out.emit(number)
                argument = None
        if argument is not None:
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

    def _token_after(self, offset: int) -> Token | None:
        start = _SPACES.match(self.text, offset).end()
        return token_at(self.text, start) if start < len(self.text) else None

    def _value_follows(self, offset: int, words_listed: bool = False) -> bool:
        """Whether a JSON value (not prose) starts after `offset`: `1,2,3` is a list, `{...}, thanks` is not;
        in a list of bare words (`words_listed`) a word is its next item."""
        token = self._token_after(offset)
        return token is not None and (
            _starts_value(token)
            or (token.kind == "punct" and token.text in _OPENERS)
            or (words_listed and token.kind == "word")
        )

    def _member_follows(self, offset: int) -> bool:
        """Whether a key and its colon follow `offset`, after a comma, right after an object closed."""
        if self.closed_object != len(self.out.pieces) - 1:
            return False
        token = self._token_after(offset)
        return token is not None and self._key_at(token)

    def _key_at(self, token: Token) -> bool:
        """Whether `token` reads as a key: a colon follows it, or (a quoted key that lost its colon) a quoted
        value and the object's closer do (`"b" "x"}`)."""
        if token.kind not in ("string", "word"):
            return False
        if _colon_after(self.text, token.end):
            return True
        value = self._token_after(token.end) if token.kind == "string" else None
        if value is None or value.kind != "string" or not value.closed:
            return False
        closer = self._token_after(value.end)
        return closer is not None and closer.text == "}"

    def _on_next_line(self) -> bool:
        """Whether a line break stands between what was written last and the next token."""
        return any("\n" in space or "\r" in space for space in self.out.space)

    def key(self, token: Token) -> None:
        self.take()
        text = token.text if token.kind == "string" else json.dumps(token.text, ensure_ascii=False)
        self.out.emit(text)

    def container(self, closer: str) -> None:
        self.stack.append(closer)
        is_object, need_comma, written = closer == "}", False, _AS_JSON.get(closer, closer)
        opened, members, keys_alone, cut = len(self.out.pieces) - 1, 0, [], False
        while True:
            token = self.peek()
            if token is None:
                self.out.insert(written)  # truncated text: close what is open
                cut = True
                break
            if token.kind == "punct" and token.text in "]})":
                if token.text == closer:
                    self.take()
                    self.out.emit(written)
                    self.closed_object = len(self.out.pieces) - 1 if is_object else None
                    break
                if token.text in self.stack:  # an outer container closes: this one lost its closer
                    self.out.insert(written)
                    break
                self.take()  # a closer that closes nothing
                continue
            if token.kind == "punct" and token.text in ",:+":
                self.take()  # a comma with no value before it, a stray colon or plus
                continue
            if not is_object and self.reopen_object(token):
                need_comma = not self.after_item()
                continue
            if is_object and token.text == "[" and self.continue_array(token):
                need_comma = not self.after_item()
                continue
            if is_object and token.kind == "punct" and token.text in _OPENERS:
                # a value where a key belongs (`{"i": 1 {"i": 2}`): this object lost its closer, and
                # the value is the next item of what holds it; a key made up for it would be content
                self.drop_trailing_comma()
                self.out.insert(closer)
                break
            if is_object and self.label_before_key(token):
                continue
            if need_comma:
                self.out.insert(",")  # two items with no comma between them
            if is_object:
                members += 1
                before = len(self.out.pieces)
                if not self.member(token, first=members == 1):
                    keys_alone.append((before, token))
            else:
                self.value()
            need_comma = not self.after_item()
        self.stack.pop()
        # `{"a"` cut off after its only key is an object whose value is missing, not a set
        alone = members and len(keys_alone) == members and not (cut and members == 1)
        if alone and self.out.pieces[opened] == "{":  # not an object reopened
            self.as_set_literal(opened, keys_alone)

    def continue_array(self, opener: Token) -> bool:
        """An array where a key belongs, right after a member whose value is an array and a comma (`{"k": ["a"],
        ["b"]}`): its items go on that array (`{"k": ["a", "b"]}`), as json_repair reads it
        (src/json_repair/parse_object.py:132-172). False when the member before holds no array."""
        significant = [k for k in range(len(self.out.pieces) - 1, -1, -1) if self.out.pieces[k].strip()][:3]
        if len(significant) < 3 or [self.out.pieces[k] for k in significant[:2]] != [",", "]"]:
            return False
        comma, closer, before = significant
        empty = self.out.pieces[before].rstrip().endswith("[")  # `"k": []`: no comma before the first item
        del self.out.pieces[comma]
        del self.out.pieces[closer]
        self.take()
        following = self.peek()
        if following is not None and following.text == "]":  # `[]` adds nothing
            self.take()
            self.out.emit("]")
            return True
        if not empty:
            space, self.out.space = self.out.space, []
            self.out.emit(",")
            self.out.space = space
        self.container("]")
        return True

    def label_before_key(self, token: Token) -> bool:
        """A bare word before a quoted key and its colon (`{"a": 1, COMMENT "b": 2}`): an LLM's note, not a key
        (a key made of it would take `"b"` for its value and leave `2` a key with `null`). Dropped, as json_repair
        drops it (src/json_repair/parse_string.py:887-893)."""
        if token.kind != "word" or token.text in _LITERALS:
            return False
        after = _BLANKS.match(self.text, token.end).end()
        if after == token.end or after == len(self.text):
            return False
        following = token_at(self.text, after)
        if following.kind != "string" or not following.closed or not _colon_after(self.text, following.end):
            return False
        self.skip_to(after)
        return True

    def as_set_literal(self, opened: int, keys_alone: list[tuple[int, Token]]) -> None:
        """An object of keys alone (`{'a', 'b'}`, a Python set) is an array of them: the `:` and `null`
        written after each key are taken back, and the braces become brackets. An item keeps its type
        (`{"x", null, 2}` is `["x", null, 2]`): only a key had to be a string."""
        for index, token in reversed(keys_alone):
            key = next(k for k in range(index, len(self.out.pieces)) if self.out.pieces[k].strip())
            del self.out.pieces[key + 1 : key + 3]  # the ":" and " null" inserted right after it
            if token.kind == "number" or (token.kind == "word" and token.text in _LITERALS):
                self.out.pieces[key] = _LITERALS.get(token.text, token.text)
        self.out.pieces[opened] = "["
        self.out.pieces[-1] = "]"  # the closer, written or inserted last
        self.closed_object = None

    def reopen_object(self, token: Token) -> bool:
        """A key and a colon right after an object and a comma (`{"a": 1}, "b": 2}`): the object was closed
        too early, so its closer is taken back and its members go on; False when that is not so."""
        closed = self.closed_object
        if closed is None or not self._key_at(token) or not self._only_comma_after(closed):
            return False
        del self.out.pieces[closed]
        self.container("}")
        return True

    def _only_comma_after(self, piece: int) -> bool:
        """Whether what was written after `piece` is a comma and white space; read only as far as that can
        hold (an array of a million items after an object is not joined up at each of them)."""
        written = ""
        for later in islice(self.out.pieces, piece + 1, None):
            written += later.strip()
            if len(written) > 1:
                return False
        return written == ","

    def member(self, token: Token, first: bool = False) -> bool:
        """One key and its value; False when the key stands alone (no colon, no value: `{"a", "b"}`).
        `first`: no member before it in its object."""
        written = len(self.out.pieces)
        self.key(token)
        following = self.peek()
        if following is None and (not token.closed or token.kind == "word"):
            # the text ends inside the object's only key: kept, with null, as jsonrepair does (an empty one: dropped)
            if first and token.text != '""':
                self.out.insert(": null")
                return True
            self.drop_cut_key(written)  # the text ends inside a later key: no value is missing
            return True
        if following is not None and following.kind == "punct" and following.text == ":":
            self.take()
            self.out.emit(":")
        else:
            self.out.insert(":")
            if following is None or (following.kind == "punct" and following.text in ",}]"):
                self.out.insert(" null")
                return False
        self.value()
        return True

    def drop_trailing_comma(self) -> None:
        """Takes back the comma written last, when nothing but blanks followed it."""
        last = next((k for k in range(len(self.out.pieces) - 1, -1, -1) if self.out.pieces[k].strip()), None)
        if last is not None and self.out.pieces[last] == ",":
            del self.out.pieces[last]

    def drop_cut_key(self, written: int) -> None:
        """Takes back a key the text ends in (`{"a": 1, "ke`), and the comma before it: made a key with a
        `null`, it would be content the user did not write, and overwrite an earlier `"key"` on loading."""
        del self.out.pieces[written:]
        while self.out.pieces and not self.out.pieces[-1].strip():
            self.out.pieces.pop()
        if self.out.pieces and self.out.pieces[-1] == ",":
            self.out.pieces.pop()
        self.out.space = []

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
        # `a,b`: bare words separated by commas are a list of them, as numbers are (`1,2,3`)
        words_listed = first.kind == "word" and first.text not in _LITERALS and self.text[self.position - 1] != ")"
        values = 1
        while (token := self.peek()) is not None:
            # `{"a": 1}` then `"b": 2}`: closed too early, without a comma (`Note: ...` after it is prose)
            if token.kind == "string" and self._member_follows(token.start):
                self.out.insert(",")
                self.reopen_object(token)
                continue
            listed = _starts_value(token) or (words_listed and token.kind == "word")  # `red` / `green`: one a line
            if (token.kind == "punct" and token.text in _OPENERS) or (listed and self._on_next_line()):
                self.out.insert(",")
                self.value()
                values += 1
                continue
            if token.kind == "punct" and token.text == "," and self._member_follows(token.end):
                self.take()
                self.out.emit(",")
                self.reopen_object(self.peek())
                continue
            if token.kind == "punct" and token.text == "," and self._value_follows(token.end, words_listed):
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


def _colon_after(text: str, index: int) -> bool:
    index = _BLANKS.match(text, index).end()
    return text[index : index + 1] == ":"


def _starts_value(token: Token) -> bool:
    """A string, a number or a literal: a scalar JSON value, as opposed to prose."""
    return token.kind in ("string", "number") or (token.kind == "word" and token.text in _LITERALS)


def _unescaped(text: str) -> str:
    """A document whose every quote is backslash-escaped (`{\"a\": 1}`, copied out of a string)
    with those escapes removed; other text unchanged."""
    quotes = text.count('"')
    if not quotes or text.count('\\"') != quotes:  # each `\"` holds one quote: then every quote is escaped
        return text
    return text.replace('\\"', '"').replace("\\\\", "\\")


def _fenced(text: str) -> str | None:
    """What the fenced blocks of an LLM reply hold (one a line: several are several values), when
    only prose comes before the first fence; None when a bracket or quote does (the fence is then
    inside the JSON, in a string). A block opened at a line's end closes at a line holding only a
    fence; one opened inline (```` ```json {...} ``` ````) at the next fence."""
    opener = _FENCE.search(text)
    if opener is None or any(char in text[: opener.start()] for char in '{["'):
        return None
    blocks = []
    while opener is not None:
        start = _INFO.match(text, opener.end()).end()
        if line_break := _LINE_BREAK.match(text, start):
            start = line_break.end()
            closing = re.compile(rf"^[ \t]*{re.escape(opener.group()[0])}{{3,}}[ \t]*$", re.MULTILINE)
        else:
            closing = _FENCE
        close = closing.search(text, start)
        blocks.append(text[start : len(text) if close is None else close.start()])
        opener = None if close is None else _FENCE.search(text, close.end())
    inside = "\n".join(block for block in blocks if block.strip())
    return inside or None


def _unwrapped(text: str) -> str:
    """The JSON inside a wrapper: fenced code blocks (with any prose around them), or the text
    from the first bracket on after a sentence of prose (`Here is the data: {...}`)."""
    if (inside := _fenced(text)) is not None:
        return inside
    stripped = text.lstrip()
    opener = min((index for index in (stripped.find("{"), stripped.find("[")) if index > 0), default=-1)
    if opener > 0 and _PROSE.fullmatch(stripped[:opener]):
        return stripped[opener:]
    return text


def structural_repair(text: str, jsonc: bool = False) -> str | None:
    """The text rewritten as JSON (JSONC: keeping comments and trailing commas) with the smallest local
    changes, or None when there is nothing to repair."""
    if not _HAS_VALUE.search(text) and not CUT_TO_SIGN.fullmatch(text.strip()):
        # quotes and punctuation alone (`"`, `'"'`): no JSON here; a lone `-` or `.` is a number cut short
        return None
    try:
        repaired = _Parser(_unwrapped(_unescaped(text)), jsonc).document()
    except RecursionError:  # nesting deeper than Python's stack: json.loads could not load it either
        return None
    if repaired is not None and not words(repaired) and words(without_cut_escape(text)) - _wrapper_words(text):
        return None  # every word written is gone (`not json at all {{{ ]]]`): prose, not JSON
    return repaired


def _wrapper_words(text: str) -> Counter:
    """The words of comments and of call names (`callback_123({});`, `ObjectId(...)`): dropped by the
    repair as what wraps a value, not lost from it."""
    tokens = [token for token in tokenize(text) if token.kind != "space"]
    wrapping = [
        token.text
        for token, following in zip(tokens, tokens[1:] + [None], strict=True)
        if token.kind in ("comment", "hash")
        or (token.kind == "word" and following is not None and following.kind == "punct" and following.text == "(")
    ]
    return words(" ".join(wrapping))


def too_deep(text: str) -> bool:
    """Whether brackets nest deeper than the repair can follow (it declines such text)."""
    depth = deepest = 0
    for char in text:
        if char in "{[":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "}]":
            depth = max(0, depth - 1)
    return deepest >= _MAX_DEPTH
