"""`serve --tcp`: one client at a time, each connection its own session, listening until `exit`.

pygls 2.1's `start_tcp` (pygls/server.py, `lsp_connection`) calls `self.shutdown()` once a
connection's read loop ends (pygls/io_.py `run_async`: an empty header line is the end of the
stream), and `JsonRPCServer.shutdown` closes the listening socket (`self._server.close()`): the
first client to disconnect ended the server and freed the port for anyone. Its connections also
share one protocol, a second one taking over the first's writer (`self.protocol.set_writer`). So
here each connection gets a server of its own (documents, settings, model), and a connection
that comes while one is open is closed at once, with a log line.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

from pygls.io_ import run_async
from pygls.server import JsonRPCServer

Server = TypeVar("Server", bound=JsonRPCServer)
log = logging.getLogger(__name__)


class Listener(Generic[Server]):
    """Serves on one address; `session()` makes each connection's server, `end(server)` frees what it
    holds once that connection closes (the client went without `exit`, which ends the process)."""

    def __init__(self, session: Callable[[], Server], end: Callable[[Server], None]):
        self.session, self.end = session, end
        self.busy = False  # a connection is being served
        self.ending: asyncio.Future | None = None  # the last session's end, on a thread: the next waits for it

    def serve(self, host: str, port: int) -> None:
        asyncio.run(self._serve(host, port))

    async def _serve(self, host: str, port: int) -> None:
        server = await asyncio.start_server(self._connection, host, port)
        # the format pygls logged: with --tcp 0 this line is the only way to learn the port
        log.info("Serving on %s", ", ".join(str(sock.getsockname()) for sock in server.sockets))
        async with server:
            await server.serve_forever()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        if self.busy:
            log.warning("closed a connection from %s: another client is connected (one at a time)", peer)
            writer.close()
            return
        self.busy = True
        if self.ending is not None:
            await self.ending
        session = self.session()
        try:
            session.protocol.set_writer(writer)
            await run_async(threading.Event(), reader, session.protocol, log, session.report_server_error)
        finally:
            log.info("the client at %s disconnected; listening for the next", peer)
            writer.close()
            self.busy = False
            self.ending = asyncio.ensure_future(asyncio.to_thread(self.end, session))
