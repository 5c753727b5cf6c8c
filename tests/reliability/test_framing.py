"""diffusion_infill.lsp.transport.framing in-process: what pygls reads from a stream that breaks the base protocol.
(test_fuzz_protocol drives the same reader through the real server's stdin.)"""

from __future__ import annotations

import io

import pytest

from diffusion_infill.lsp.transport import framing
from diffusion_infill.lsp.transport.framing import Frames


def bodies(data: bytes) -> list[bytes]:
    """The bodies pygls would read from `data`, reading as pygls' loop does."""
    reader, found = Frames(io.BytesIO(data)), []
    while True:
        header = reader.readline()
        if not header:
            return found
        assert header.startswith(b"Content-Length: ") and reader.readline() == b"\r\n"
        found.append(reader.read(int(header.split(b":")[1])))


def test_well_formed_frames_pass_unchanged():
    assert bodies(b"Content-Length: 2\r\n\r\n{}Content-Length: 3\r\n\r\n[1]") == [b"{}", b"[1]"]


@pytest.mark.parametrize(
    "header",
    [
        b"content-length: 2\r\n\r\n",
        b"Content-Length:2\n\n",
        b"CONTENT-LENGTH:  2 \r\n\r\n",
        b"Content-Type: x\r\nContent-Length: 2\r\n\r\n",
    ],
)
def test_header_spellings_other_clients_use(header):
    assert bodies(header + b"{}") == [b"{}"]


def test_a_body_without_header_costs_only_itself():
    # The stray body has no line end: it is glued to the next header line, where the length is found.
    assert bodies(b'{"lost": true}Content-Length: 2\r\n\r\n{}') == [b"{}"]


def test_the_last_length_before_the_blank_line_counts():
    assert bodies(b"Content-Length: 7\r\nContent-Length: 2\r\n\r\n{}") == [b"{}"]


def test_a_header_line_longer_than_the_limit_is_skipped_keeping_its_end():
    junk = b"x" * (framing.MAX_HEADER_LINE * 3 + 5)
    assert bodies(junk + b"Content-Length: 2\r\n\r\n{}") == [b"{}"]


def test_an_oversized_frame_ends_the_input_and_says_why(monkeypatch, caplog):
    """Its end cannot be known: dropping it read the next frames as its body, and the session went deaf."""
    monkeypatch.setattr(framing, "MAX_BODY", 10)
    reader = Frames(io.BytesIO(b"Content-Length: 2\r\n\r\n{}Content-Length: 11\r\n\r\nContent-Length: 2\r\n\r\n[]"))
    assert (
        reader.readline().startswith(b"Content-Length: 2") and reader.readline() == b"\r\n" and reader.read(2) == b"{}"
    )
    assert reader.refused is None
    assert reader.readline() == b""  # the end of input: pygls stops reading
    assert reader.refused.startswith("a frame announces 11 bytes, more than the 10 a message may have")
    assert reader.refused in caplog.text


def test_an_empty_body_is_dropped():
    assert bodies(b"Content-Length: 0\r\n\r\nContent-Length: 2\r\n\r\n{}") == [b"{}"]


def test_input_that_ends_mid_frame_ends_reading():
    assert bodies(b"Content-Length: 10\r\n\r\n{}") == []
    assert bodies(b"Content-Length: 10\r\n") == []
