"""Fuzzing the real server process over stdio with raw bytes (hypothesis, derandomized).

Every case is written to the server's stdin as it is (broken frames, bodies that are not
JSON or not UTF-8, JSON that is no message, requests with any method and params, document
edits out of range), then the canary checks that the server still answers a valid
completion request correctly. Each case's own answer is checked against JSON-RPC 2.0 and
LSP: a request gets exactly one response, a notification none, an unreadable body an
error with id null.

Every document text sent holds MARKER; the log at the default level never may
(tests/reliability/test_security.py checks that it does with -v).
"""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from raw_server import FAST, RawServer, encode, frame, start_server

pytestmark = pytest.mark.slow  # minutes: hundreds of cases through the real server

MARKER = "SECRET-7f3a9c-DOCUMENT-TEXT"
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602
CANARY = "file:///reliability/canary.py"
FUZZ_URIS = [f"file:///reliability/fuzz{i}.py" for i in range(3)] + ["file:///reliability/never-opened.py"]
SYNC_URI = "file:///reliability/sync.py"


# Derandomized: CI runs the same cases every time; no example database, so a local run does too.
def cases(count: int) -> settings:
    return settings(
        max_examples=count,
        derandomize=True,
        database=None,
        deadline=None,
        print_blob=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


_case_ids = itertools.count(1)


class Canary:
    """A document only the checks touch. Each check edits it to a new version and asks for a
    completion: the answer must come, with a final draft before it that is its first item."""

    def __init__(self, server: RawServer):
        self.server, self.version, self.checks = server, 1, 0
        server.notify(
            "textDocument/didOpen",
            {"textDocument": {"uri": CANARY, "languageId": "python", "version": 1, "text": f"# {MARKER}\n"}},
        )

    def check(self) -> None:
        server = self.server
        self.version += 1
        self.checks += 1
        server.notify("workspace/didChangeConfiguration", {"settings": FAST})  # undoes fuzzed settings
        server.notify(
            "textDocument/didChange",
            {
                "textDocument": {"uri": CANARY, "version": self.version},
                "contentChanges": [{"text": f"# {MARKER}\ncount_{self.version} = 0\nvalue = "}],
            },
        )
        start = len(server.messages)
        msg_id = server.request(
            "textDocument/inlineCompletion",
            {"textDocument": {"uri": CANARY}, "position": {"line": 2, "character": 8}, "context": {"triggerKind": 2}},
        )
        answer = server.response(msg_id)
        assert "result" in answer, f"the canary failed: {answer}"
        before = server.messages[start : server.messages.index(answer)]
        finals = [
            m["params"]
            for m in before
            if m.get("method") == "infill/draft"
            and m["params"]["final"]
            and m["params"]["uri"] == CANARY
            and m["params"]["version"] == self.version
        ]
        assert len(finals) == 1, "no final draft before the canary's answer"
        cursor = {"line": 2, "character": 8}
        if finals[0]["text"]:
            [item] = answer["result"]
            assert item["insertText"] == finals[0]["text"]
            assert item["range"] == {"start": cursor, "end": cursor}
        else:
            assert answer["result"] == []


@pytest.fixture(scope="module")
def server(tiny_model_dir, tmp_path_factory):
    server = start_server(tiny_model_dir, tmp_path_factory.mktemp("fuzz"))
    yield server
    assert MARKER not in server.log, "document text reached the log at the default level"
    assert server.stop() == 0


@pytest.fixture(scope="module")
def canary(server) -> Canary:
    canary = Canary(server)
    canary.check()
    return canary


def replies_after(server: RawServer, start: int) -> list[dict]:
    """Responses (not requests or notifications) the server sent from message `start` on."""
    return [m for m in server.messages[start:] if "method" not in m]


def answered_since(server: RawServer, start: int, canary: Canary) -> list[dict]:
    """The responses to a fuzz case: everything answered before the canary's own request."""
    canary.check()
    return [m for m in replies_after(server, start) if not str(m.get("id", "")).startswith("valid-")]


# Strategies

LSP_KEYS = [
    "jsonrpc",
    "id",
    "method",
    "params",
    "textDocument",
    "uri",
    "languageId",
    "version",
    "text",
    "position",
    "line",
    "character",
    "context",
    "triggerKind",
    "range",
    "start",
    "end",
    "contentChanges",
    "settings",
    "diffusionInfill",
    "maxSteps",
    "mode",
    "command",
    "arguments",
    "diagnostics",
    "selectedCompletionInfo",
]
EXTREME_INTS = st.sampled_from([-1, -(2**31), 2**31 - 1, 2**31, 2**32, 2**53 + 1, 2**63, 2**64, -(2**63), 10**30])
NUMBERS = st.integers(0, 12) | EXTREME_INTS | st.floats(allow_nan=True, allow_infinity=True)
TEXTS = st.text(max_size=30) | st.sampled_from(FUZZ_URIS + [CANARY.replace("canary", "other"), "", "\x00", "💥" * 5])
JSON_LEAVES = st.none() | st.booleans() | NUMBERS | TEXTS
JSON_VALUES = st.recursive(
    JSON_LEAVES,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.sampled_from(LSP_KEYS) | st.text(max_size=8), children, max_size=5)
    ),
    max_leaves=16,
)
# Methods the server knows (exit and shutdown end the session by design: tested in test_faults).
METHODS = st.sampled_from(
    [
        "initialize",
        "initialized",
        "textDocument/inlineCompletion",
        "textDocument/codeAction",
        "codeAction/resolve",
        "textDocument/didOpen",
        "textDocument/didChange",
        "textDocument/didClose",
        "textDocument/didSave",
        "workspace/didChangeConfiguration",
        "workspace/executeCommand",
        "$/cancelRequest",
        "$/setTrace",
        "$/unknown",
        "textDocument/hover",
        "window/workDoneProgress/cancel",
    ]
) | st.text(max_size=30).filter(lambda method: method not in ("exit", "shutdown"))
REQUEST_IDS = st.integers(-(2**53), 2**53) | st.text(min_size=1, max_size=20)


def document_text() -> st.SearchStrategy[str]:
    return st.text(max_size=60).map(lambda text: f"{text}\n# {MARKER}\n{text}")


def position() -> st.SearchStrategy[dict]:
    coordinate = st.integers(0, 6) | EXTREME_INTS
    return st.fixed_dictionaries({"line": coordinate, "character": coordinate})


def valid_params(method: str, draw) -> dict:
    """Params of the right shape for `method`, with any values (unknown documents, positions anywhere)."""
    uri = draw(st.sampled_from(FUZZ_URIS))
    document = {"uri": uri}
    if method == "textDocument/inlineCompletion":
        return {
            "textDocument": document,
            "position": draw(position()),
            "context": {"triggerKind": draw(st.sampled_from([1, 2, 0, 3]))},
        }
    if method == "textDocument/codeAction":
        return {
            "textDocument": document,
            "range": {"start": draw(position()), "end": draw(position())},
            "context": {"diagnostics": []},
        }
    if method == "textDocument/didOpen":
        return {
            "textDocument": {
                **document,
                "languageId": draw(st.sampled_from(["python", "json", "markdown", "x"])),
                "version": draw(NUMBERS),
                "text": draw(document_text()),
            }
        }
    if method == "textDocument/didChange":
        return {
            "textDocument": {**document, "version": draw(NUMBERS)},
            "contentChanges": draw(
                st.lists(
                    st.fixed_dictionaries(
                        {
                            "range": st.fixed_dictionaries({"start": position(), "end": position()}),
                            "text": document_text(),
                        }
                    )
                    | st.fixed_dictionaries({"text": document_text()}),
                    max_size=3,
                )
            ),
        }
    if method == "workspace/executeCommand":
        return {
            "command": draw(st.sampled_from(["diffusionInfill.accept", "other"])),
            "arguments": draw(st.lists(JSON_LEAVES, max_size=2)),
        }
    return {"textDocument": document}


@st.composite
def near_valid(draw) -> tuple[str, dict]:
    """A method and params of the right shape, then one field replaced by any value or removed."""
    method = draw(
        st.sampled_from(
            [
                "textDocument/inlineCompletion",
                "textDocument/codeAction",
                "textDocument/didOpen",
                "textDocument/didChange",
                "textDocument/didClose",
                "workspace/executeCommand",
            ]
        )
    )
    params = valid_params(method, draw)
    paths = list(_paths(params))
    if paths and draw(st.booleans()):
        *parents, last = draw(st.sampled_from(paths))
        node = params
        for key in parents:
            node = node[key]
        if draw(st.booleans()):
            node[last] = draw(JSON_VALUES)
        elif isinstance(node, dict):
            del node[last]
    return method, params


def _paths(node, prefix=()):
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, value in items:
        yield (*prefix, key)
        yield from _paths(value, (*prefix, key))


# Bodies in well-formed frames


@cases(100)
@given(body=st.binary(min_size=1, max_size=300))
def test_any_bytes_as_a_body_are_answered_or_ignored(server, canary, body):
    start = len(server.messages)
    server.write(frame(body))
    for reply in answered_since(server, start, canary):
        # Nothing in random bytes names an id this test could wait for: only id null errors may come.
        assert reply["id"] is None and reply["error"]["code"] in (PARSE_ERROR, INVALID_REQUEST), reply


@cases(60)
@given(
    message=st.fixed_dictionaries(
        {
            "jsonrpc": st.just("2.0"),
            "id": st.integers(1, 2**31),
            "method": st.sampled_from(["textDocument/inlineCompletion", "textDocument/hover"]),
            "params": JSON_VALUES,
        }
    ),
    damage=st.sampled_from([b"\xff", b"\xc3\x28", b"\xf8\x88\x80\x80\x80", b"\x80"]),
    where=st.integers(0, 10**6),
)
def test_invalid_utf8_gets_a_parse_error(server, canary, message, damage, where):
    """A body that is not UTF-8 cannot be read at all, so its id is unknown: error with id null."""
    body = encode(message)
    at = where % (len(body) + 1)
    start = len(server.messages)
    server.write(frame(body[:at] + damage + body[at:]))
    [reply] = answered_since(server, start, canary)
    assert reply == {"jsonrpc": "2.0", "id": None, "error": reply["error"]} and reply["error"]["code"] == PARSE_ERROR


@cases(80)
@given(value=JSON_VALUES.filter(lambda value: not isinstance(value, dict) or value.get("jsonrpc") != "2.0"))
def test_json_that_is_not_a_jsonrpc_message_gets_invalid_request(server, canary, value):
    start = len(server.messages)
    server.write(frame(encode(value)))
    [reply] = answered_since(server, start, canary)
    msg_id = value.get("id") if isinstance(value, dict) else None
    expected_id = msg_id if isinstance(msg_id, (int, str)) and not isinstance(msg_id, bool) else None
    assert reply["id"] == expected_id and reply["error"]["code"] == INVALID_REQUEST, reply


# Requests and notifications with any method and params


@cases(120)
@given(method=METHODS, params=JSON_VALUES, msg_id=REQUEST_IDS)
def test_every_request_gets_exactly_one_response(server, canary, method, params, msg_id):
    msg_id = f"{msg_id}-{next(_case_ids)}" if isinstance(msg_id, str) else msg_id * 1000 + next(_case_ids) % 1000
    start = len(server.messages)
    server.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
    replies = [reply for reply in answered_since(server, start, canary) if reply.get("id") == msg_id]
    assert len(replies) == 1, f"{method}: {len(replies)} responses"
    if "error" in replies[0]:
        assert isinstance(replies[0]["error"]["code"], int) and isinstance(replies[0]["error"]["message"], str)
    if method == "initialize":
        assert replies[0]["error"]["code"] in (INVALID_REQUEST, INVALID_PARAMS), "a second initialize was run"
    if method not in (
        "textDocument/inlineCompletion",
        "textDocument/codeAction",
        "codeAction/resolve",
        "workspace/executeCommand",
        "initialize",
    ) and not method.startswith("textDocument/did"):
        assert replies[0].get("error", {}).get("code") in (METHOD_NOT_FOUND, INVALID_PARAMS, INVALID_REQUEST), replies[
            0
        ]


@cases(100)
@given(method=METHODS, params=JSON_VALUES)
def test_notifications_are_never_answered(server, canary, method, params):
    start = len(server.messages)
    server.send({"jsonrpc": "2.0", "method": method, "params": params})
    assert answered_since(server, start, canary) == []


@cases(120)
@given(case=near_valid(), as_request=st.booleans())
def test_params_of_the_right_shape_with_wrong_values(server, canary, case, as_request):
    """Unknown documents, positions past the end, negative or huge numbers, a field missing or of
    another type: a request gets a result or InvalidParams, a notification is applied or ignored."""
    method, params = case
    as_request = as_request and not method.startswith("textDocument/did")
    start = len(server.messages)
    msg_id = server.request(method, params, msg_id=f"near-{next(_case_ids)}") if as_request else None
    if not as_request:
        server.notify(method, params)
    replies = answered_since(server, start, canary)
    if as_request:
        [reply] = [r for r in replies if r["id"] == msg_id]
        assert "result" in reply or reply["error"]["code"] in (INVALID_PARAMS, METHOD_NOT_FOUND), reply
    else:
        assert replies == []


# Document sync: edits that do not fit the document


@pytest.fixture(scope="module")
def sync_document(server) -> str:
    server.notify(
        "textDocument/didOpen",
        {"textDocument": {"uri": SYNC_URI, "languageId": "python", "version": 1, "text": f"# {MARKER}\nx = 1\n"}},
    )
    return SYNC_URI


@cases(80)
@given(
    params=st.fixed_dictionaries(
        {
            "version": NUMBERS,
            "contentChanges": st.lists(
                st.fixed_dictionaries(
                    {"range": st.fixed_dictionaries({"start": position(), "end": position()}), "text": document_text()}
                ),
                min_size=1,
                max_size=4,
            ),
        }
    ),
    lines=st.integers(1, 5),
)
def test_edits_out_of_range_or_stale_then_a_resync(server, canary, sync_document, params, lines):
    """Whatever the edits did, a full-text change puts the server back in step with the client:
    the server's document then has exactly the lines the client sent."""
    server.notify(
        "textDocument/didChange",
        {
            "textDocument": {"uri": sync_document, "version": params["version"]},
            "contentChanges": params["contentChanges"],
        },
    )
    text = "".join(f"line_{i} = {i}  # {MARKER}\n" for i in range(lines))  # `lines` lines, then an empty one
    server.notify(
        "textDocument/didChange",
        {"textDocument": {"uri": sync_document, "version": 10**6}, "contentChanges": [{"text": text}]},
    )
    last, beyond = {"line": lines, "character": 0}, {"line": lines + 1, "character": 0}
    context = {"triggerKind": 2}
    inside = server.response(
        server.request(
            "textDocument/inlineCompletion",
            {"textDocument": {"uri": sync_document}, "position": last, "context": context},
        )
    )
    assert isinstance(inside.get("result"), list), inside
    past = server.response(
        server.request(
            "textDocument/inlineCompletion",
            {"textDocument": {"uri": sync_document}, "position": beyond, "context": context},
        )
    )
    assert past["error"]["code"] == INVALID_PARAMS
    canary.check()


def test_an_edit_that_names_no_place_leaves_the_document_out_of_sync_until_the_whole_text_comes(server, canary):
    """The first change of this didChange fits, the second points inside a surrogate pair (utf-16)
    on the line the first one moved down: neither is applied (lsp.text.documents, all or nothing), the
    document is out of sync, and nothing is computed from it (no items, no error) until the editor
    sends the whole text; then completions answer again."""
    uri = "file:///reliability/atomic.py"
    server.notify(
        "textDocument/didOpen",
        {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": f"emoji = '😀'  # {MARKER}\n"}},
    )
    inside_the_emoji = {"line": 3, "character": 10}  # after the first change has put three lines above
    server.notify(
        "textDocument/didChange",
        {
            "textDocument": {"uri": uri, "version": 2},
            "contentChanges": [
                {
                    "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
                    "text": "a\nb\nc\n",
                },
                {"range": {"start": inside_the_emoji, "end": inside_the_emoji}, "text": "x"},
            ],
        },
    )
    past = server.response(
        server.request(
            "textDocument/inlineCompletion",
            {"textDocument": {"uri": uri}, "position": {"line": 2, "character": 0}, "context": {"triggerKind": 2}},
        )
    )
    assert "error" not in past and not past["result"], "something was computed from a copy the editor does not have"
    whole = "a\nb\nc\nemoji = 'x😀'\n"
    server.notify(
        "textDocument/didChange", {"textDocument": {"uri": uri, "version": 3}, "contentChanges": [{"text": whole}]}
    )
    again = server.response(
        server.request(
            "textDocument/inlineCompletion",
            {"textDocument": {"uri": uri}, "position": {"line": 3, "character": 0}, "context": {"triggerKind": 2}},
        )
    )
    assert isinstance(again.get("result"), list), again
    canary.check()


def test_lone_surrogates_in_text_are_completed_and_fixed(server, canary):
    """JSON can carry a lone UTF-16 surrogate ("\\ud800"), which no tokenizer or parser encodes."""
    server.write(
        frame(
            json.dumps(
                {
                    "jsonrpc": "2.0",
                    "method": "textDocument/didOpen",
                    "params": {
                        "textDocument": {
                            "uri": "file:///reliability/surrogate.json",
                            "languageId": "json",
                            "version": 1,
                            "text": '{"a": "\ud800", "b": "\udfff' + MARKER + '",\n',
                        }
                    },
                }
            ).encode("ascii")
        )
    )
    uri = {"uri": "file:///reliability/surrogate.json"}
    completion = server.response(
        server.request(
            "textDocument/inlineCompletion",
            {"textDocument": uri, "position": {"line": 1, "character": 0}, "context": {"triggerKind": 2}},
        )
    )
    assert isinstance(completion.get("result"), list), completion
    whole = {"start": {"line": 0, "character": 0}, "end": {"line": 1, "character": 0}}
    actions = server.response(
        server.request("textDocument/codeAction", {"textDocument": uri, "range": whole, "context": {"diagnostics": []}})
    )
    assert isinstance(actions.get("result"), list), actions
    canary.check()


def test_lone_surrogates_in_any_string_of_a_request_are_replaced_as_in_document_text(server, canary):
    """The selected menu entry's text failed the request with RequestFailed (-32803, the tokenizer could not
    encode it); the protocol replaces them in every string of every message now (lsp.transport.strings)."""
    uri = "file:///reliability/selected\ud83d.py"  # the URI too: didOpen and the request both carry it
    text = "import os\nos.pa"
    server.notify(
        "textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}}
    )
    selected = {
        "range": {"start": {"line": 1, "character": 3}, "end": {"line": 1, "character": 5}},
        "text": "pa\udc00th",
    }
    for trigger in (1, 2):
        answer = server.response(
            server.request(
                "textDocument/inlineCompletion",
                {
                    "textDocument": {"uri": uri},
                    "position": {"line": 1, "character": 5},
                    "context": {"triggerKind": trigger, "selectedCompletionInfo": selected},
                },
            )
        )
        assert isinstance(answer.get("result"), list), answer
    start = len(server.messages)
    server.notify("workspace/didChangeConfiguration", {"settings": {"diffusionInfill": {"colo\ud800ur": "red"}}})
    warning = server.wait_for(lambda m: m.get("method") == "window/showMessage", start)
    assert "diffusionInfill.colo\ufffdur: unknown setting" in warning["params"]["message"]
    assert "Logging error" not in server.log and "UnicodeEncodeError" not in server.log
    canary.check()


# Frames


HEADER_STYLES = {
    "canonical": b"Content-Length: %d\r\n\r\n",
    "lowercase": b"content-length: %d\r\n\r\n",
    "no space, LF only": b"Content-Length:%d\n\n",
    "with Content-Type": b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\nContent-Length: %d\r\n\r\n",
    "after garbage": b"garbage \x00\xff Content-Length: %d\r\n\r\n",
}


@cases(100)
@given(
    style=st.sampled_from(sorted(HEADER_STYLES)),
    body=st.binary(max_size=200) | JSON_VALUES.map(encode),
    declared=st.integers(-20, 20),
    garbage=st.binary(max_size=100).filter(lambda b: b"ength" not in b.lower()),
)
def test_broken_frames_cost_at_most_themselves(server, canary, style, body, declared, garbage):
    """A header the reader does not expect, a length that is wrong, garbage between frames:
    the server gets back in step at the next frame and answers it.

    A declared length longer than the body makes the server wait for that many bytes: framing
    is all a stream has, so the case sends them (as filler) before the next frame.
    """
    length = max(1, len(body) + declared)
    filler = b"." * max(0, length - len(body))
    server.write(garbage + HEADER_STYLES[style] % length + body + filler)
    start = len(server.messages)
    canary.check()
    stray = [m for m in replies_after(server, start) if not str(m.get("id", "")).startswith("valid-")]
    assert all(m["id"] is None or isinstance(m["id"], (int, str)) for m in stray)
