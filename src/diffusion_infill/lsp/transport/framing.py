"""LSP base-protocol frames read from a byte stream that is not trusted.

pygls' read loop matches `Content-Length: N\\r\\n` exactly and reads header lines of any
length. One frame it does not recognise (a lowercase header name, `\\n` line ends, a
body without a header) leaves the body's bytes to be read as header lines, glued to the
next frame's `Content-Length` line, and then every later frame is lost the same way: the
session is dead while the process still runs. A header of a few gigabytes is allocated
before a byte of it arrives.

`Frames` sits between stdin and pygls and shows it well-formed frames only:

- header names are matched without regard to case, `\\n` ends a line as `\\r\\n` does,
  and a `Content-Length` header is found at the end of a line that starts with garbage,
  so reading gets back in step at the next frame after any damage;
- a header line is read at most `MAX_HEADER_LINE` bytes at a time (the rest of a longer
  one is skipped, keeping its end where a header may be);
- a frame announcing more than `MAX_BODY` ends the input, with an error on stderr that says so
  (`refused`): where its body really ends cannot be known (a client that sent fewer bytes than
  it announced would have every later message read as part of it, and the server would stay
  alive and deaf), so the server exits with status 1 and the editor starts it again.
"""

from __future__ import annotations

import logging
import re
from collections import deque
from typing import BinaryIO

log = logging.getLogger(__name__)

MAX_HEADER_LINE = 8192  # bytes: real headers are a few dozen
MAX_BODY = 256 * 2**20  # bytes: a 10 MB document escaped as JSON \\uXXXX fits six times over
_CONTENT_LENGTH = re.compile(rb"content-length[ \t]*:[ \t]*(\d+)[ \t]*\r?\n?\Z", re.IGNORECASE)


class Frames:
    """A file-like reader (the `readline` and `read` that pygls' stdin reader calls) that
    yields only complete frames: `Content-Length: N\\r\\n`, `\\r\\n`, then N bytes."""

    def __init__(self, stream: BinaryIO):
        self._stream = stream
        self._pending: deque[bytes] = deque()
        self.refused: str | None = None  # why reading ended early: a frame over MAX_BODY

    def readline(self) -> bytes:
        if not self._pending:
            body = self._next_body()
            if body is None:
                return b""  # end of input: pygls stops reading
            self._pending.extend((b"Content-Length: %d\r\n" % len(body), b"\r\n", body))
        return self._pending.popleft()

    def read(self, size: int) -> bytes:
        body = self._pending.popleft()
        assert len(body) == size, "pygls reads the body right after the blank line, by its length"
        return body

    def _next_body(self) -> bytes | None:
        length = None
        while True:
            line = self._header_line()
            if not line:
                return None
            if line.strip():
                if match := _CONTENT_LENGTH.search(line):
                    length = int(match.group(1))
                continue  # another header (Content-Type), or garbage
            if length is None:
                continue  # a blank line without a length before it: nothing to read yet
            if length > MAX_BODY:
                self.refused = (
                    f"a frame announces {length:,} bytes, more than the {MAX_BODY:,} a message may have: "
                    "where it ends cannot be known, so the server stops reading and exits (the editor starts it again)"
                )
                log.error("%s", self.refused)
                return None
            if length == 0:
                log.warning("dropping a frame with an empty body")
                length = None
                continue
            body = self._stream.read(length)
            return body if len(body) == length else None  # a short read: the input ended mid-frame

    def _header_line(self) -> bytes:
        """The next line, or its last MAX_HEADER_LINE bytes when it is longer."""
        line = self._stream.readline(MAX_HEADER_LINE)
        while len(line) == MAX_HEADER_LINE and not line.endswith(b"\n"):
            more = self._stream.readline(MAX_HEADER_LINE)
            if not more:
                break
            line = (line + more)[-MAX_HEADER_LINE:]
        return line
