"""Broken-JSON corpora for diffusion_infill.bench.json_repair_compare: generated documents, broken one way per corpus.

Valid documents are generated from a seed (nested objects and arrays of words, sentences
with commas and apostrophes, integers, floats, booleans and nulls; half printed with
indent=2, half on one line). Each corpus breaks them one way and knows the value a
careful reader expects back (usually the generated document; for damage that replaces
a value, such as `NumberLong(42)`, the value it stands for). A break that still loads
is drawn again.

Two groups of corpora. The first ten were written together with the repair
(`ORIGINAL`). The others (`README`) follow the damage that jsonrepair (npm) and
json_repair (PyPI) list in their own READMEs, plus what LLM replies wrap JSON in:
missing escapes, special quotes and white space, truncation, ellipsis, JSONP, escaped
documents, MongoDB types, string concatenation, newline-delimited JSON, missing values,
unquoted values (sentences, URLs, dates), fenced code blocks, prose around the JSON, and
bare scalar documents. This is evaluation data, generated here; none of it is training
data, and the repair is tuned on a seed other than the reported one.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable

from diffusion_infill.engine.repair.jsonfix import Token, tokenize

WORDS = (
    "alpha",
    "beta",
    "gamma",
    "delta",
    "name",
    "id",
    "size",
    "tags",
    "owner",
    "items",
    "count",
    "price",
    "enabled",
    "created",
    "notes",
    "path",
    "level",
    "score",
    "color",
    "region",
    "user_id",
    "max-retries",
)
PHRASES = (
    "hello world",
    "it's fine",
    "one, two, three",
    "C:/tmp/file.txt",
    "x = 1",
    "a {brace} here",
    "semi; colon",
    "done.",
    "tab\tchar",
    "Ünïcode ✓",
)
COMMENTS = ("// note", "# python style", "/* block */")
# Values a person writes without quotes: sentences, URLs, dates, times, versions, addresses.
BARE_VALUES = (
    "hello big world",
    "https://example.org/a/b?c=1",
    "2024-10-18T18:35:22.229Z",
    "New York",
    "v1.2.3",
    "user@example.com",
    "18:35",
    "http://localhost:8080/api",
    "2024-10-18",
    "not yet started",
    "it's fine",
    "red and blue",
)
# Strings whose quotes, line breaks or tabs were written without escapes.
UNESCAPED = (
    'he said "hi" twice',
    'the "best" one',
    "line one\nline two",
    "a\ttab",
    '"quoted" at the start',
    'a 6" pipe here',
)
SPECIAL_SPACES = ("\u00a0", "\u2002", "\u2003", "\u2009", "\u202f", "\u3000")
INTRODUCTIONS = (
    "Here is the JSON you asked for:",
    "Sure! The result is below.",
    "Output:",
    "I extracted the following data.",
)
CLOSINGS = ("Let me know if you need anything else.", "Hope this helps!", "Each field is explained above.")
CALLBACKS = ("callback", "callback_7", "jQuery36001_1700", "handleData")
SENTINEL = "@@{}@@"

Corpus = list[tuple[str, object]]
Damage = Callable[[random.Random, object], "tuple[str, object] | None"]


def generate(rng: random.Random, depth: int = 0):
    """A random JSON value; objects and arrays get shallower with depth."""
    roll = rng.random()
    if depth < 3 and roll < (0.6 if depth == 0 else 0.3):
        keys = rng.sample(WORDS, rng.randint(1, 5))
        return {key: generate(rng, depth + 1) for key in keys}
    if depth < 3 and roll < (0.75 if depth == 0 else 0.45):
        return [generate(rng, depth + 1) for _ in range(rng.randint(1, 4))]
    kind = rng.randrange(6)
    if kind == 0:
        return rng.choice(WORDS)
    if kind == 1:
        return rng.choice(PHRASES)
    if kind == 2:
        return rng.randint(-1000, 100000)
    if kind == 3:
        return round(rng.uniform(-100, 100), rng.randint(1, 4))
    if kind == 4:
        return rng.choice([True, False])
    return None


def document(rng: random.Random):
    """A top-level object or array with at least a few members."""
    while True:
        value = generate(rng)
        if isinstance(value, dict | list) and len(json.dumps(value)) > 40:
            return value


def serialize(rng: random.Random, value) -> str:
    return (
        json.dumps(value, indent=2, ensure_ascii=False) if rng.random() < 0.5 else json.dumps(value, ensure_ascii=False)
    )


# Breaking valid JSON text. Each function returns the broken text (it may be unchanged).


def _significant(text: str) -> list[Token]:
    return [token for token in tokenize(text) if token.kind != "space"]


def _keys(text: str) -> list[Token]:
    tokens = _significant(text)
    return [
        token for token, after in zip(tokens, tokens[1:], strict=False) if token.kind == "string" and after.text == ":"
    ]


def _edit(text: str, edits: list[tuple[int, int, str]]) -> str:
    for start, end, new in sorted(edits, reverse=True):
        text = text[:start] + new + text[end:]
    return text


def trailing_commas(rng, text):
    tokens = _significant(text)
    places = [
        before.end
        for before, token in zip(tokens, tokens[1:], strict=False)
        if token.text in "]}" and before.text not in "[{"
    ]
    return _edit(text, [(end, end, ",") for end in rng.sample(places, min(len(places), rng.randint(1, 2)))])


def missing_closers(rng, text):
    stripped = text.rstrip()
    closers = []
    index = len(stripped)
    while index > 0 and stripped[index - 1] in "]} \n":
        index -= 1
        if stripped[index] in "]}":
            closers.append(index)
    return stripped[: closers[rng.randrange(len(closers))]] if closers else text


def missing_commas(rng, text):
    commas = [token for token in _significant(text) if token.text == ","]
    return _edit(text, [(t.start, t.end, "") for t in rng.sample(commas, min(len(commas), rng.randint(1, 2)))])


def missing_colons(rng, text):
    colons = [token for token in _significant(text) if token.text == ":"]
    return _edit(text, [(t.start, t.end, " ") for t in rng.sample(colons, min(len(colons), rng.randint(1, 2)))])


def unquoted_keys(rng, text):
    return _edit(text, [(key.start, key.end, json.loads(key.text)) for key in _keys(text)])


def single_quotes(rng, text):
    edits = []
    for token in _significant(text):
        if token.kind == "string":
            body = json.loads(token.text)
            escaped = json.dumps(body, ensure_ascii=False)[1:-1].replace('\\"', '"').replace("'", "\\'")
            edits.append((token.start, token.end, f"'{escaped}'"))
    return _edit(text, edits)


def comments(rng, text):
    if "\n" in text:
        lines = text.split("\n")
        for index in rng.sample(range(len(lines)), min(len(lines), rng.randint(1, 3))):
            comment = rng.choice(COMMENTS)
            lines[index] = lines[index] + " " + comment if index else comment + "\n" + lines[index]
        return "\n".join(lines)
    commas = [token for token in _significant(text) if token.text == ","]
    return _edit(text, [(t.end, t.end, " /* note */") for t in rng.sample(commas, min(len(commas), 2))])


def python_literals(rng, text):
    names = {"true": "True", "false": "False", "null": "None"}
    return _edit(text, [(t.start, t.end, names[t.text]) for t in _significant(text) if t.text in names])


def unclosed_string(rng, text):
    tokens = _significant(text)
    values = [
        token
        for token, before in zip(tokens[1:], tokens, strict=False)
        if token.kind == "string" and before.text in ":[," and token not in _keys(text)
    ]
    if not values:
        return text
    token = rng.choice(values)
    return _edit(text, [(token.end - 1, token.end, "")])


def mixed(rng, text):
    for damage in rng.sample(SINGLE, 3):
        text = damage(rng, text)
    return text


SINGLE: list[Callable[[random.Random, str], str]] = [
    trailing_commas,
    missing_closers,
    missing_commas,
    missing_colons,
    unquoted_keys,
    single_quotes,
    comments,
    python_literals,
    unclosed_string,
]


def _text_damage(damage: Callable[[random.Random, str], str]) -> Damage:
    """A break of the serialized text that keeps the intended value."""

    def broken(rng: random.Random, value) -> tuple[str, object]:
        return damage(rng, serialize(rng, value)), value

    return broken


ORIGINAL: dict[str, Damage] = {damage.__name__.replace("_", " "): _text_damage(damage) for damage in [*SINGLE, mixed]}


# The READMEs' damage. Replacing values: a few scalar places get a sentinel, the document is
# serialized, and each sentinel (with its quotes) is replaced by the broken text for its value.


def _scalar_places(value, in_object_only: bool = False) -> list[tuple[object, object]]:
    """(container, key or index) of every scalar in the document (only object members with `in_object_only`)."""
    places, stack = [], [value]
    while stack:
        item = stack.pop()
        pairs = (
            list(item.items()) if isinstance(item, dict) else list(enumerate(item)) if isinstance(item, list) else []
        )
        for key, child in pairs:
            if isinstance(child, dict | list):
                stack.append(child)
            elif isinstance(item, dict) or not in_object_only:
                places.append((item, key))
    return places


def _substitute(
    rng: random.Random,
    value,
    make: Callable[[random.Random, object], tuple[object, str]],
    count: int = 2,
    in_object_only: bool = False,
) -> tuple[str, object] | None:
    """`make(rng, old)` gives (intended value, raw text) for up to `count` scalar places."""
    intended = json.loads(json.dumps(value))
    places = _scalar_places(intended, in_object_only)
    if not places:
        return None
    chosen = [
        (container, key, *make(rng, container[key]))
        for container, key in rng.sample(places, min(len(places), rng.randint(1, count)))
    ]
    for number, (container, key, _, _) in enumerate(chosen):
        container[key] = SENTINEL.format(number)
    text = serialize(rng, intended)
    for number, (container, key, wanted, raw) in enumerate(chosen):
        text = text.replace(json.dumps(SENTINEL.format(number)), raw)
        container[key] = wanted
    return text, intended


def unquoted_values(rng, value):
    def make(rng, old):
        bare = rng.choice(BARE_VALUES)
        return bare, bare

    return _substitute(rng, value, make)


def missing_escapes(rng, value):
    def make(rng, old):
        text = rng.choice(UNESCAPED)
        return text, '"' + text + '"'

    return _substitute(rng, value, make)


def missing_values(rng, value):
    return _substitute(rng, value, lambda rng, old: (None, ""), in_object_only=True)


def mongodb_types(rng, value):
    def make(rng, old):
        roll = rng.randrange(4)
        if roll == 0:
            number = rng.randint(1, 10**12)
            return number, f"NumberLong({number})"
        if roll == 1:
            number = rng.randint(1, 1000)
            return number, f"NumberInt({number})"
        if roll == 2:
            object_id = "".join(rng.choice("0123456789abcdef") for _ in range(24))
            return object_id, f'ObjectId("{object_id}")'
        date = f"2012-12-{rng.randint(10, 28)}T06:01:17.171Z"
        return date, f'ISODate("{date}")'

    return _substitute(rng, value, make)


def string_concatenation(rng, value):
    def make(rng, old):
        text = rng.choice(PHRASES + WORDS)
        cut = rng.randint(1, len(text) - 1)
        join = rng.choice([" + ", "+", "\n  + "])
        parts = [json.dumps(text[:cut], ensure_ascii=False), json.dumps(text[cut:], ensure_ascii=False)]
        return text, join.join(parts)

    return _substitute(rng, value, make)


def _string_tokens(text: str) -> list[Token]:
    return [token for token in _significant(text) if token.kind == "string"]


def special_quotes(rng, value):
    text = serialize(rng, value)
    opening, closing = rng.choice([("\u201c", "\u201d"), ("\u201c", "\u201c"), ("\u2018", "\u2019")])
    edits = []
    for token in _string_tokens(text):
        edits += [(token.start, token.start + 1, opening), (token.end - 1, token.end, closing)]
    return _edit(text, edits), value


def special_whitespace(rng, value):
    text = serialize(rng, value)
    spaces = [token for token in tokenize(text) if token.kind == "space" and " " in token.text]
    edits = [
        (token.start, token.end, token.text.replace(" ", rng.choice(SPECIAL_SPACES)))
        for token in rng.sample(spaces, min(len(spaces), rng.randint(1, 4)))
    ]
    return _edit(text, edits), value


def truncated(rng, value):
    """The text cut after a value (and maybe its comma), inside a string or number, or after a colon."""
    text = serialize(rng, value)
    tokens = _significant(text)
    keys = {token.start for token in _keys(text)}
    places = []
    for token in tokens[:-1]:
        if token.kind in ("string", "number", "word") and token.start not in keys:
            places.append((token.end, ""))
            if token.kind == "string" and len(token.text) > 3:
                cut = rng.randint(token.start + 2, token.end - 2)
                if text[cut - 1].isalnum():
                    places.append((cut, '"'))
            if token.kind == "number" and len(token.text) > 2:
                cut = rng.randint(token.start + 2, token.end - 1)
                places.append((cut, "number"))
        if token.text == ":":
            places.append((token.end, "null"))
    if not places:
        return None
    cut, kind = rng.choice(places)
    # after a value, the comma that followed it may be the last thing written
    comma = kind == "" and text[cut:].lstrip().startswith(",") and rng.random() < 0.5
    broken = text[:cut] + ("," if comma else "")
    head = text[:cut]
    if kind == "number":
        head = head.rstrip(".eE+-")
    completed = head + ('"' if kind == '"' else " null" if kind == "null" else "")
    stack = []
    for token in _significant(completed):
        if token.text in "[{":
            stack.append("]" if token.text == "[" else "}")
        elif token.text in "]}":
            stack.pop()
    return broken, json.loads(completed + "".join(reversed(stack)))


def ellipsis(rng, value):
    text = serialize(rng, value)
    tokens = _significant(text)
    places = [
        before.end
        for before, token in zip(tokens, tokens[1:], strict=False)
        if token.text in "]}" and before.text not in "[{"
    ]
    edits = [(end, end, rng.choice([", ...", ",...", ", …"])) for end in rng.sample(places, min(len(places), 2))]
    return _edit(text, edits), value


def jsonp(rng, value):
    return rng.choice(CALLBACKS) + "(" + serialize(rng, value) + ")" + rng.choice([";", "", ";\n"]), value


def escaped_document(rng, value):
    text = serialize(rng, value)
    return (text.replace('"', '\\"'), value) if "\\" not in text else None


def code_fence(rng, value):
    return f"```{rng.choice(['json', '', 'JSON'])}\n{serialize(rng, value)}\n```", value


def llm_reply(rng, value):
    fence = f"```{rng.choice(['json', ''])}\n{serialize(rng, value)}\n```"
    return f"{rng.choice(INTRODUCTIONS)}\n\n{fence}\n\n{rng.choice(CLOSINGS)}", value


def surrounding_text(rng, value):
    text = serialize(rng, value)
    return f"{rng.choice(INTRODUCTIONS)} {text}{rng.choice(['', ' ' + rng.choice(CLOSINGS)])}", value


def newline_delimited(rng, value):
    records = [value] + [document(rng) for _ in range(rng.randint(1, 3))]
    records = [record if isinstance(record, dict) else {"items": record} for record in records]
    return "\n".join(json.dumps(record, ensure_ascii=False) for record in records) + "\n", records


def bare_scalar(rng, value):
    roll = rng.randrange(3)
    if roll == 0:
        bare = rng.choice(BARE_VALUES)
        return bare, bare
    if roll == 1:
        text = rng.choice(PHRASES + WORDS)
        return "'" + text.replace("'", "\\'") + "'", text
    mantissa = rng.choice([str(rng.randint(-99, 999)), f"{rng.uniform(-10, 10):.3f}"])
    return mantissa + rng.choice(["e", "e-", "e+", "E"]), float(mantissa)


README: dict[str, Damage] = {
    damage.__name__.replace("_", " "): damage
    for damage in [
        missing_escapes,
        special_quotes,
        special_whitespace,
        truncated,
        ellipsis,
        jsonp,
        escaped_document,
        mongodb_types,
        string_concatenation,
        newline_delimited,
        missing_values,
        unquoted_values,
        code_fence,
        llm_reply,
        surrounding_text,
        bare_scalar,
    ]
}
CORPORA: dict[str, Damage] = {**ORIGINAL, **README}


def _loads(text: str) -> bool:
    try:
        json.loads(text)
    except json.JSONDecodeError:
        return False
    return True


def corpus(damage: Damage, cases: int, seed: int) -> Corpus:
    """`cases` (broken text, intended value) pairs; breaks that still load are drawn again."""
    rng, out = random.Random(seed), []
    while len(out) < cases:
        case = damage(rng, document(rng))
        if case is not None and not _loads(case[0]):
            out.append(case)
    return out
