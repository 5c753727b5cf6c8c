"""Lone UTF-16 surrogates replaced in every string of a message, as it is decoded.

JSON lets a client send one (`"\\ud800"`) and Python keeps it, but no tokenizer, parser or encoder
can encode it: in document text it failed every completion and code action on the document, in
`selectedCompletionInfo.text` the request (-32803), in a settings key or a URI the log line that
names it. The replacement, U+FFFD, is one code point for one, of the same width in UTF-8, UTF-16
and UTF-32, so every position the client sends still means the same place.
"""

from __future__ import annotations

import re
from typing import Any

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def well_formed(text: str) -> str:
    """`text` with each lone UTF-16 surrogate replaced by U+FFFD."""
    if text.isascii():  # most strings: known without reading them
        return text
    return _LONE_SURROGATE.sub("\ufffd", text)


def _value(value: Any) -> Any:
    if isinstance(value, str):
        return well_formed(value)
    if isinstance(value, list):
        return [_value(item) for item in value]
    return value  # numbers, booleans, null, and objects: `well_formed_object` has seen those already


def well_formed_object(data: dict[str, Any]) -> dict[str, Any]:
    """`data` with its keys and string values well formed, in place where only values change. As
    json.loads' object_hook it sees every object of a body, innermost first, so nested objects are
    done by the time their parent is."""
    if any(not key.isascii() and _LONE_SURROGATE.search(key) for key in data):
        return {well_formed(key): _value(value) for key, value in data.items()}
    for key, value in data.items():
        if isinstance(value, str | list):
            data[key] = _value(value)
    return data
