"""diffusion_infill.engine.streaming: a blocking generate call on a thread, its items yielded in order."""

from __future__ import annotations

import threading

import pytest

from diffusion_infill.engine.streaming import Cancelled, stream_from_thread


def test_items_arrive_in_order_and_the_thread_is_joined():
    def work(emit):
        for value in range(5):
            emit(value)

    before = threading.active_count()
    assert list(stream_from_thread(work, "test")) == [0, 1, 2, 3, 4]
    assert threading.active_count() == before


def test_an_exception_in_the_worker_is_raised_in_the_caller():
    def work(emit):
        emit("draft")
        raise RuntimeError("out of memory in step 2")

    stream = stream_from_thread(work, "test")
    assert next(stream) == "draft"
    with pytest.raises(RuntimeError, match="step 2"):
        next(stream)


def test_cancelled_ends_the_stream_quietly():
    def work(emit):
        emit(1)
        raise Cancelled

    assert list(stream_from_thread(work, "test")) == [1]
