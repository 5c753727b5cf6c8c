"""The HTTP client under the OpenAI client (engine.remote.client): the user's code goes only to the
server configured. A redirect is followed only within it (the same scheme, host and port; the OpenAI
client would follow any); a reply is read up to a bound; without a key for this server no
Authorization header is sent (the OpenAI client always sends one, from OPENAI_API_KEY when given none)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx2
import openai

from diffusion_infill.engine.remote.errors import MalformedReply

MAX_REPLY_BYTES = 1 << 20  # one reply's body: a one-line completion is a few hundred bytes of events
MAX_REDIRECTS = 5  # within the server


def same_server(first: httpx2.URL, second: httpx2.URL) -> bool:
    return (first.scheme, first.host, first.port) == (second.scheme, second.host, second.port)


class _Bounded(httpx2.AsyncByteStream):
    """A reply's body that ends in MalformedReply past `limit` bytes, so a server streaming without
    end costs a bounded read."""

    def __init__(self, stream: httpx2.AsyncByteStream, limit: int):
        self.stream, self.limit = stream, limit

    async def __aiter__(self) -> AsyncIterator[bytes]:
        read = 0
        async for chunk in self.stream:
            read += len(chunk)
            if read > self.limit:
                raise MalformedReply(f"the reply went past {self.limit:,} bytes")
            yield chunk

    async def aclose(self) -> None:
        await self.stream.aclose()


class ServerClient(openai.DefaultAsyncHttpxClient):
    """The OpenAI client's defaults, but redirects stay within the request's server and replies are bounded."""

    def __init__(self, send_key: bool, max_reply_bytes: int = MAX_REPLY_BYTES):
        hooks = {} if send_key else {"request": [_without_authorization]}
        super().__init__(follow_redirects=False, event_hooks=hooks)
        self.max_reply_bytes = max_reply_bytes

    async def send(self, request: httpx2.Request, *, stream: bool = False, **kwargs) -> httpx2.Response:
        kwargs["follow_redirects"] = False
        for _ in range(MAX_REDIRECTS + 1):
            response = await super().send(request, stream=True, **kwargs)
            response.stream = _Bounded(response.stream, self.max_reply_bytes)
            following = response.next_request
            if following is None or not same_server(request.url, following.url):
                break  # answered, or sent elsewhere: the 3xx is the answer (RemoteEngine says where to)
            await response.aclose()
            request = following
        if not stream or response.is_error:  # an error's text is read for the message (bounded as any reply)
            try:
                await response.aread()
            except BaseException:
                await response.aclose()
                raise
        return response


async def _without_authorization(request: httpx2.Request) -> None:
    request.headers.pop("Authorization", None)
