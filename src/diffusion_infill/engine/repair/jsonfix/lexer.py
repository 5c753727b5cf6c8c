"""Broken JSON read token by token: strings (with the quotes they lost or hold unescaped), numbers,
words, punctuation, comments; each as the JSON text to write for it."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

_LITERALS = {
    "true": "true",
    "false": "false",
    "null": "null",
    "True": "true",
    "False": "false",
    "None": "null",
    "TRUE": "true",
    "FALSE": "false",
    "NULL": "null",
    "Null": "null",
    "undefined": "null",  # JavaScript's: no value, as jsonrepair writes it
}
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
# A number cut short (`2e-`, `1.`, `-3.5E`): the digits before the cut are the number.
_TRUNCATED_NUMBER = re.compile(r"([+-]?\d+(?:\.\d+)?)(?:\.|[eE][+-]?|\.[eE][+-]?)")
_WORD = re.compile(r"[A-Za-z_$][\w$\-.]*")
# An unquoted URL (`https://example.org/a`, `file:///tmp/x`): its `//` is the value's, not a comment's.
# An escape the end of the text cut short: a lone backslash, or `\u` with fewer than four digits.
_CUT_ESCAPE = re.compile(r"(\\+)(u[0-9a-fA-F]{0,3})?$")
_LEADING_ZERO = re.compile(r"[+-]?0\d")
_RUN_ON = re.compile(r"[\w.]*")  # what a number with leading zeros runs on into (`05e`): its string's
# Digit separators (Python's and JavaScript's `1_000`): the number is the digits.
_SEPARATED_NUMBER = re.compile(r"[+-]?\d+(?:_\d+)*(?:\.\d+(?:_\d+)*)?(?:[eE][+-]?\d+)?(?![\w.])")
# A number cut to its sign or point (`-`, `.`, `-.`) where a number ends: jsonrepair writes `-0`, `0.0`,
# `-0.0` (src/regular/jsonrepair.ts:683-715). A dash before words (`- item`) is no number, an ellipsis none.
CUT_TO_SIGN = re.compile(r"(?<![.-])(?:-\.?|\.)")  # not the last dot of an ellipsis (`[1, ...]`)
_CUT_NUMBERS = {"-": "-0", ".": "0.0", "-.": "-0.0"}
_VALUE_ENDS = re.compile(r"\s*(?:[,\]})]|\Z)")
# A JavaScript regular expression as a value (`/[a-z]_/`): its text, as jsonrepair writes it
# (src/regular/jsonrepair.ts:864-876).
_REGEX = re.compile(r"/(?![/*])(?:[^/\\\r\n]|\\.)+/")
# The end of a string's text that a `+` joins to the next string (`"abc+/*c*/"def"`): its closing quote went missing.
_JOINED = re.compile(r"(?:\s|/\*.*?\*/)*\+(?:\s|/\*.*?\*/)*\Z", re.DOTALL)
_JOIN_WINDOW = 256  # how far back from a quote the `+` is looked for
# NaN and Infinity are not JSON; a sign before them is kept in the string they become (`"-Infinity"`).
_SIGNED_CONSTANT = re.compile(r"[+-](?:Infinity|NaN)\b")
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s,\]}\"'`]*")


# The quotes a string may be opened with, and the ones that close it: typographic quotes
# (word processors, chat replies) pair with their closing shape or with themselves.
_CLOSING = {
    '"': '"',
    "'": "'",
    "\u201c": "\u201d\u201c",
    "\u201d": "\u201d",
    "\u2018": "\u2019\u2018",
    "\u2019": "\u2019",
}
_QUOTES = frozenset(_CLOSING)
# What may follow a closing quote; anything else suggests the quote was not the end.
_FOLLOWERS = frozenset(",:]})/#") | frozenset(" \t\r\n")
# Inside a string that lost its closing quote, a comma followed by what starts a JSON value or a
# key (`, null`, `, 12`, `, "x"`, `, key:`) is structure, not prose ("one, two" is prose).
_STRUCTURE_AFTER_COMMA = re.compile(
    r""",\s*(?:(?:null|true|false|None|True|False)\b|-?\d|["'{\[]|[A-Za-z_$][\w$-]*\s*:)"""
)
# A bare key after a value written without quotes or a comma: `{a: hello b: 2}`. A colon
# followed by `/` is a URL's, after digits a time's.
_KEY_AHEAD = re.compile(r"[A-Za-z_$][\w$-]*\s*:(?![/\d])")
_STRUCTURE = frozenset("{}[]:,")
_DECODER = json.JSONDecoder()
_LETTER = re.compile(r"[^\W\d_]")
_BLANKS = re.compile(r"[ \t]*")
# Up to the next quote or the end of the line: how far the string rules look ahead on a line, so that
# a look costs what lies before that quote, not the rest of a one-line document.
_UP_TO_QUOTE = re.compile("[^" + "".join(sorted(_QUOTES)) + "\r\n]*")


@dataclass(frozen=True)
class Token:
    kind: str  # "space", "comment" (// and /* */), "hash" (a # comment), "punct", "string", "number", "word", "junk"
    text: str  # the JSON text to write for it ("" for junk; a comment's own text)
    start: int  # offset in the original text
    end: int
    closed: bool = True  # a string that had its closing quote


_JSON_ESCAPE = re.compile(r'\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})')
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_PLAIN = re.compile(r'[^"\\\x00-\x1f]*')  # the inside of a string that is JSON as it is


def _body(raw: str, quote: str) -> str:
    """The inside of a JSON string for the inside of a string quoted with `quote`: every character
    kept, as what it is (a backslash that starts no JSON escape is a backslash; a backslash before a
    line break escapes it: the line break is kept, as `\\n`)."""
    if _PLAIN.fullmatch(raw):
        return raw  # most strings: nothing in them to escape, nor to read as an escape
    chars, index = [], 0
    controls = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}
    while index < len(raw):
        char = raw[index]
        if char == "\\" and index + 1 < len(raw):
            escaped = raw[index + 1]
            if (line_break := _LINE_BREAK.match(raw, index + 1)) is not None:
                chars += [controls[char] for char in line_break.group()]
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


def _after_blanks(text: str, index: int) -> str:
    """The character after the spaces and tabs at `index` ("" at the end): `text[index:].lstrip(" \t")[:1]`
    without copying the rest of the text."""
    start = _BLANKS.match(text, index).end()
    return text[start : start + 1]


def _next_quote(text: str, index: int) -> int | None:
    """Offset of the first quote at or after `index` on its line; None when the line ends first."""
    end = _UP_TO_QUOTE.match(text, index).end()
    return end if end < len(text) and text[end] in _QUOTES else None


def _continues_on_next_line(text: str, line_start: int, closers: str, key: bool, fenced: bool = False) -> bool:
    """A line break written inside a string: the next line holds only text up to a closing quote
    that ends the string (`"line one` / `line two",`), or, for a `key`, that a colon follows
    (`"first` / `name": "Ada"`). After a fenced block in the string (`fenced`) that line may hold
    the closing quote alone."""
    close = _next_quote(text, line_start)
    if close is None or text[close] not in closers:
        return False
    before = text[line_start:close]
    if (not fenced and not before.strip()) or any(char in _STRUCTURE for char in before):
        return False
    return _ends_string(text, close + 1) and (key or _after_blanks(text, close + 1) != ":")


_FENCE_LINE = re.compile(r"[ \t]*(`{3,}|~{3,})[^\r\n`]*(?=\r|\n|\Z)")


def _fenced_lines_end(text: str, line_start: int) -> int | None:
    """When the line at `line_start` opens a fenced code block (```` ``` ```` or `~~~`, a Markdown
    answer held in a string) that a later line closes: the end of that closing line, else None."""
    opener = _FENCE_LINE.match(text, line_start)
    if opener is None:
        return None
    fence = opener.group(1)
    # the closing line may end in the string's closing quote (`"```sh\nls\n```", ...`)
    closing = re.compile(rf"(?:\r\n|\r|\n)[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*(?=\r|\n|\Z|[\"'])")
    found = closing.search(text, opener.end())
    return None if found is None else found.end()


def _text_follows_parenthesis(text: str, index: int, closers: str) -> bool:
    """A quote before `)` inside a string (`"six feet (72") tall"`, `"[link]("url")"`): the string
    goes on after the parenthesis, with words or with a quote that ends it. After a call's argument
    (`ObjectId("5f1e"),`) structure follows instead."""
    parenthesis = _BLANKS.match(text, index).end()
    if text[parenthesis : parenthesis + 1] != ")":
        return False
    following = parenthesis
    while following < len(text) and text[following] == ")":  # `((72")) tall`: every parenthesis it closes
        following += 1
    following = _BLANKS.match(text, following).end()
    char = text[following : following + 1]
    if char.isalnum():
        return True
    return (
        bool(char)
        and char in closers
        and _ends_string(text, following + 1)
        and _after_blanks(text, following + 1) != ":"
    )


def _text_goes_on(text: str, index: int, closers: str) -> bool:
    """After a quote that would end a string already holding a stray quote: its line goes on with
    words, no key, and a quote that ends the string (`"say "hi", then go"`, `"see "b" } here"`), so
    that quote, not this one, is the end."""
    close = _next_quote(text, index)
    if (
        close is None
        or text[close] not in closers
        or ":" in text[index:close]
        or not _LETTER.search(text, index, close)
    ):
        return False
    return _ends_string(text, close + 1) and _after_blanks(text, close + 1) != ":"


def _opens_next_string(text: str, quote: int, closers: str) -> bool:
    """Whether the quote at `quote` reads as the opening of the next string (the one before it
    lost its closing quote): the next quote closes that string where structure follows."""
    index = quote + 1
    while index < len(text) and text[index] not in closers and text[index] not in "\r\n":
        index += 2 if text[index] == "\\" else 1
    return index < len(text) and text[index] in closers and _ends_string(text, index + 1)


def _quoted_document_end(text: str, index: int, closers: str) -> int | None:
    """A JSON object or array written inside a string without escaping its quotes (`"{"k": "v"}"`):
    the offset of the quote right after it that ends the string, else None."""
    if text[index : index + 1] not in ("{", "["):
        return None
    try:
        end = _DECODER.raw_decode(text, index)[1]
    except (json.JSONDecodeError, RecursionError):
        return None
    if text[end : end + 1] and text[end] in closers and _ends_string(text, end + 1):
        return end
    return None


def _inner_document_end(text: str, quote: int, closers: str) -> int | None:
    """A JSON object or array written with its quotes unescaped in the middle of a string (`"she wrote
    {"k": "v"} here"`), the quote at `quote` its first: the offset right after it, when the string's
    text goes on after it to a quote that ends the string; else None."""
    bracket = quote - 1
    while bracket > 0 and text[bracket] in " \t":
        bracket -= 1
    if text[bracket] not in "{[":
        return None
    try:
        end = _DECODER.raw_decode(text, bracket)[1]
    except (json.JSONDecodeError, RecursionError):
        return None
    return end if _ends_on_its_line(text, end, closers) else None


def _ends_on_its_line(text: str, index: int, closers: str) -> bool:
    """Whether the string goes on from `index` to a quote on the same line that ends it, with no colon
    or other quote before it (```` ```"} ````, ` back", "n": 1`): what follows is the string's text."""
    close = index
    while close < len(text) and text[close] not in _QUOTES and text[close] not in ":\r\n":
        close += 1
    if close == len(text) or text[close] not in closers:
        return False
    return _ends_string(text, close + 1) and _after_blanks(text, close + 1) != ":"


def _joined_before(text: str, start: int, quote: int, closers: str) -> int | None:
    """Where a string's text ends when a `+` joins it to the string the quote at `quote` opens (`"abc+"def"`,
    `"abc/*c*/+"def"`): its closing quote went missing before the `+`, as jsonrepair reads it
    (src/index.test.ts:170-171). None when no `+` is there."""
    if text[quote - 1 : quote] not in ("+", "/", " ", "\t"):
        return None
    joined = _JOINED.search(text, max(start, quote - _JOIN_WINDOW), quote)
    if joined is None or not _opens_next_string(text, quote, closers):
        return None
    return joined.start()


_OPENER_OF = {"]": "[", "}": "{", ")": "("}


class _Brackets:
    """The brackets of a string's text up to a quote, counted once however often a later quote asks (quotes
    are asked in order): a long string of `"]` costs what it is long, not its square."""

    def __init__(self, text: str, start: int):
        self.text, self.counted, self.counts = text, start, dict.fromkeys("[]{}()", 0)

    def unclosed(self, closer: str, quote: int) -> bool:
        """Whether the text before `quote` holds more of `closer`'s opener than of it."""
        for char in self.counts:
            self.counts[char] += self.text.count(char, self.counted, quote)
        self.counted = quote
        return self.counts[_OPENER_OF[closer]] > self.counts[closer]


def _closes_inside(text: str, quote: int, brackets: _Brackets) -> bool:
    """Whether the closer after the quote at `quote` closes a bracket the string opened (`"see [a, b"] later"`).
    jsonrepair's rule (src/regular/jsonrepair.ts:519-525, isInsideUnclosedBracket in
    src/utils/stringUtils.ts:219-230)."""
    closer = _after_blanks(text, quote + 1)
    return closer in _OPENER_OF and brackets.unclosed(closer, quote)


def _words_after_closer(text: str, quote: int) -> bool:
    """Whether a closer and then a word follow the quote at `quote` (`"see "] here"`): JSON has no word right
    after a closer, so the quote and the closer are the string's text."""
    closer = _BLANKS.match(text, quote + 1).end()
    return text[closer : closer + 1] in ("]", "}") and _LETTER.match(_after_blanks(text, closer + 1)) is not None


def _in_key_place(text: str, start: int) -> bool:
    """Whether a string at `start` stands where an object's key does: after `{` or a comma."""
    index = start - 1
    while index >= 0 and text[index].isspace():
        index -= 1
    return index >= 0 and text[index] in "{,"


def _string_end(text: str, start: int) -> tuple[int, bool]:
    """Offset of the closing quote of the string at `start` (or of its line's end), and whether it closed.

    The first quote that reads as an end closes the string; a quote inside it written
    without its backslash and followed by more of its text (`"he said "hi" twice"`,
    `"six feet (72") tall"`) does not, unless it reads as the opening of the next string
    (`"x, "b": 1` is an unclosed string before a key). Without a quote that reads as an
    end, the string is unclosed and runs to its line's end, inner quotes included.
    """
    closers = _CLOSING[text[start]]
    if (quoted := _quoted_document_end(text, start + 1, closers)) is not None:
        return quoted, True
    index, first, fenced, brackets = start + 1, None, False, _Brackets(text, start + 1)
    if (fence := _fenced_lines_end(text, index)) is not None:  # the string opens with a fenced block
        index, fenced = fence, True
    while index < len(text):
        char = text[index]
        if char == "\\":
            index += 2
            continue
        if char in closers:
            if first is None and (inner_end := _inner_document_end(text, index, closers)) is not None:
                index = inner_end
                continue
            if first is None and (joined := _joined_before(text, start + 1, index, closers)) is not None:
                return joined, False
            if (
                first is None
                and (_closes_inside(text, index, brackets) or _words_after_closer(text, index))
                and _ends_on_its_line(text, index + 1, closers)
            ):
                index += 1  # `"the list [1, 2"] more"`, `"see "] here"`: the quote and the closer are text
                continue
            inner = _text_follows_parenthesis(text, index + 1, closers) or (
                first is not None and _text_goes_on(text, index + 1, closers)
            )
            if _ends_string(text, index + 1) and not inner:
                if first is None:
                    return index, True
                later_key = _after_blanks(text, index + 1) == ":"
                structure = later_key or _STRUCTURE_AFTER_COMMA.search(text[start + 1 : index])
                return (first if structure and _opens_next_string(text, first, closers) else index), True
            if (
                first is None
                and not inner
                and (not _after_blanks(text, index + 1).isalpha() or _value_after_space(text, index + 1))
            ):
                return index, True  # not followed by a word, or a value follows (`"id"  null`): its end
            first = index if first is None else first
        elif char in "\r\n":
            line_break = _LINE_BREAK.match(text, index)
            if first is None and (fence := _fenced_lines_end(text, line_break.end())) is not None:
                index = fence  # a fenced code block written inside the string: its lines are the string's
                fenced = True
                continue
            if first is None and _continues_on_next_line(
                text, line_break.end(), closers, _in_key_place(text, start), fenced
            ):
                index = line_break.end()  # the line break is part of the string
                continue
            break
        index += 1
    return min(index, len(text)), False


def _value_after_space(text: str, index: int) -> bool:
    """White space, then what starts a JSON value (a number, a literal, a quote, a bracket)."""
    start = _BLANKS.match(text, index).end()
    if start == index or start == len(text):
        return False
    token = token_at(text, start)  # it looks back only past the blanks, to the quote: as if they started the text
    return (
        token.kind in ("string", "number") or (token.kind == "word" and token.text in _LITERALS) or text[start] in "{["
    )


def without_cut_escape(raw: str) -> str:
    """`raw` without the escape its end cut short (an odd run of backslashes starts one), and the blanks
    before it."""
    match = _CUT_ESCAPE.search(raw)
    if match is None or len(match.group(1)) % 2 == 0:
        return raw
    return raw[: match.end(1) - 1].rstrip(" \t")


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
        if close >= len(text) and (cut := without_cut_escape(kept)) != kept:
            # the text ends inside the string, in an escape: the escape is dropped (`"caf\u00`)
            return '"' + _body(cut, quote) + '"', len(text), False
    if structure := _STRUCTURE_AFTER_COMMA.search(kept):
        kept = kept[: structure.start()].rstrip(" \t]}")
    return '"' + _body(kept, quote) + '"', start + 1 + len(kept), False


def _space(text: str) -> str:
    """White space as JSON allows it: no-break and other Unicode spaces become plain ones."""
    return "".join(char if char in " \t\r\n" else " " for char in text)


def _line_comment_end(text: str, start: int) -> int:
    """Where a `//` or `#` comment at `start` ends: at its line's end, or before a closer it did not
    open when a comma or another closer follows it on the line (`{"a": {"b": 1 # note }, "c": 2}`
    written on one line: the comment does not take `}, "c": 2}`). One pass over the comment."""
    index, depth, decided = start, 0, False
    while index < len(text) and text[index] not in "\r\n":
        char = text[index]
        if char in "{[" and not decided:
            depth += 1
        elif char in "}]" and not decided:
            if depth == 0:
                after = index + 1
                while after < len(text) and text[after] in " \t":
                    after += 1
                if text[after : after + 1] in (",", "}", "]"):
                    return index
                decided = True  # the first closer it did not open decides: the rest of the line is the comment's
            depth -= 1
        index += 1
    return index


def token_at(text: str, index: int) -> Token:
    """The token that starts at `index`."""
    char = text[index]
    if char.isspace() or char == "\ufeff":
        end = index
        while end < len(text) and (text[end].isspace() or text[end] == "\ufeff"):
            end += 1
        return Token("space", _space(text[index:end].replace("\ufeff", "")), index, end)
    if text.startswith("//", index) or char == "#":
        end = _line_comment_end(text, index)
        # a JSONC comment; a `#` comment is not JSONC's (dropped, in JSONC too)
        return Token("comment" if char == "/" else "hash", text[index:end], index, end)
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
    if match := _SIGNED_CONSTANT.match(text, index):
        return Token("word", match.group(), index, match.end())
    if (match := CUT_TO_SIGN.match(text, index)) and _VALUE_ENDS.match(text, match.end()):
        return Token("number", _CUT_NUMBERS[match.group()], index, match.end())
    if (match := _REGEX.match(text, index)) and _VALUE_ENDS.match(text, match.end()):
        return Token("string", json.dumps(match.group(), ensure_ascii=False), index, match.end())
    if (match := _SEPARATED_NUMBER.match(text, index)) and "_" in match.group():
        number = match.group().replace("_", "").lstrip("+")
        if not _LEADING_ZERO.match(number):
            return Token("number", number, index, match.end())
    if match := _NUMBER.match(text, index):
        if _LEADING_ZERO.match(match.group()):  # `0789`, `-05`: JSON has no such number, a zip code is text
            end = _RUN_ON.match(text, match.end()).end()
            return Token("string", json.dumps(text[index:end]), index, end)
        number = match.group().lstrip("+")
        number = "0" + number if number.startswith(".") else number
        number = number.replace("-.", "-0.")
        number = number + "0" if number.endswith(".") else number
        return Token("number", number, index, match.end())
    if char == "+":  # not a number's sign: string concatenation
        return Token("punct", "+", index, index + 1)
    if match := _URL.match(text, index) or _WORD.match(text, index):
        return Token("word", match.group(), index, match.end())
    return Token("junk", "", index, index + 1)


def tokenize(text: str) -> list[Token]:
    tokens, index = [], 0
    while index < len(text):
        token = token_at(text, index)
        tokens.append(token)
        index = token.end
    return tokens


_BLANKS_AND_BLOCK_COMMENTS = re.compile(r"(?:\s|/\*.*?\*/)*", re.DOTALL)


def joins_string(text: str, index: int) -> bool:
    """Whether a quoted string follows `index` past blanks and block comments: a `+` before it concatenates."""
    after = _BLANKS_AND_BLOCK_COMMENTS.match(text, index).end()
    return text[after : after + 1] in _QUOTES and after < len(text)


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
        if text.startswith("/*", index) or (char == "+" and joins_string(text, index + 1)):
            break  # a block comment ends a value even unspaced (`2/*two*/`), as a `+` before a string does
        if spaced and (
            char in _QUOTES or text.startswith(("//", "#"), index) or (keys and _KEY_AHEAD.match(text, index))
        ):
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
    if all(part.kind == "number" or (part.kind == "word" and part.text in _LITERALS) for part in significant) and all(
        a.kind == "space" or b.kind == "space" for a, b in zip(parts, parts[1:], strict=False)
    ):
        return None
    return json.dumps(run, ensure_ascii=False)
