"""Running a blocking `generate` call on a thread and yielding what its streamer emits, so
engines built on `generate` hand out drafts as they come, like the denoising loop does."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator
from typing import Any


class Cancelled(Exception):
    """Raised inside `generate` (from a streamer) to stop it between two forward passes."""


class _Failure:
    def __init__(self, error: BaseException):
        self.error = error


_DONE = object()


def stream_from_thread(work: Callable[[Callable[[Any], None]], None], name: str) -> Iterator[Any]:
    """Runs `work(emit)` on a daemon thread and yields every emitted item in order. A
    `Cancelled` raised in `work` ends the stream quietly; any other exception is re-raised here."""
    items: queue.Queue = queue.Queue()

    def run() -> None:
        try:
            work(items.put)
        except Cancelled:
            pass
        except Exception as error:  # surfaced in the caller's thread
            items.put(_Failure(error))
        finally:
            items.put(_DONE)

    thread = threading.Thread(target=run, name=name, daemon=True)
    thread.start()
    while (item := items.get()) is not _DONE:
        if isinstance(item, _Failure):
            thread.join()
            raise item.error
        yield item
    thread.join()
