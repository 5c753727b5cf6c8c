"""What a JSON text holds, compared: the words and numbers a repair keeps or loses, and what a model's
candidate adds that the user did not write."""

from __future__ import annotations

import json
import re
from collections import Counter

from diffusion_infill.engine.repair.jsonfix.jsonc import strip_jsonc
from diffusion_infill.engine.repair.jsonfix.lexer import _LITERALS

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
        value = json.loads(
            strip_jsonc(text) if jsonc else text,
            parse_int=_Number,
            parse_float=_Number,
            parse_constant=_Number,
            object_pairs_hook=_Pairs,
        )
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


_LITERAL_SPELLINGS = {
    "true": ("true", "True", "TRUE"),
    "false": ("false", "False", "FALSE"),
    "null": ("null", "None", "NULL", "Null"),
}


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
