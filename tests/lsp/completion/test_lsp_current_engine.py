"""diffusion_infill.lsp.completion.current_engine: the load's state has two writers, a load's start on the event
loop and its end on the engine thread; the latest load's end alone sets it."""

from __future__ import annotations

import threading

from diffusion_infill.engine.remote.settings import RemoteSettings
from diffusion_infill.engine.settings import EngineSettings
from diffusion_infill.lsp.completion.current_engine import CurrentEngine, State

UNCONFIGURED = RemoteSettings(url="", model="")  # a connect that fails at once, without a network


def test_only_the_latest_loads_end_sets_the_state():
    current = CurrentEngine()
    first, second = current.begin(None), current.begin(None)
    current.connect(first, UNCONFIGURED, EngineSettings())
    assert current.state is State.LOADING  # the second load is still to come
    current.connect(second, UNCONFIGURED, EngineSettings())
    assert current.state is State.FAILED


def test_a_load_started_while_the_previous_one_ends_leaves_the_state_loading():
    """The start cannot slip between the end's check that it is the latest load and its write of the state."""
    current = CurrentEngine()
    checking, started = threading.Event(), threading.Event()

    class Checked(int):
        """The ending load's number: comparing it with the latest holds the check open for the next start."""

        def __eq__(self, other: object) -> bool:
            checking.set()
            started.wait(1.0)  # a start that slips in ends meanwhile; one that waits for the end does not
            return int(self) == other

        __hash__ = int.__hash__

    ending = threading.Thread(
        target=current.connect, args=(Checked(current.begin(None)), UNCONFIGURED, EngineSettings())
    )
    ending.start()
    assert checking.wait(30)
    starting = threading.Thread(target=lambda: (current.begin(None), started.set()))
    starting.start()
    ending.join(30)
    starting.join(30)
    assert (current.loads, current.state) == (2, State.LOADING)
