"""Acceptance counts (lsp.completion.telemetry): counts only, written off the event loop, shared by the
servers of several editor windows without losing a count."""

import json
import os
import subprocess
import sys
import threading
import time

from diffusion_infill.lsp.completion.telemetry import Telemetry, accept_command


def test_telemetry_keeps_counts_only(tmp_path):
    path = tmp_path / "state" / "acceptance.json"
    telemetry = Telemetry(path)
    telemetry.offered("automatic", 1)
    telemetry.offered("invoked", 0)  # nothing offered: not a request that could be accepted
    telemetry.accepted("automatic")
    telemetry.flush()
    saved = json.loads(path.read_text())
    assert (saved["requests"], saved["items"], saved["accepted"]) == (1, 1, 1)
    assert Telemetry(path).counts.accepted == 1  # survives a restart
    assert accept_command("invoked").arguments == ["invoked"]


def test_counting_writes_nothing_on_the_calling_thread(tmp_path, monkeypatch):
    """The server counts on its event loop: the file is written by the telemetry thread."""
    writers, save = [], Telemetry._saved

    def saved(telemetry, counts):
        writers.append(threading.current_thread().name)
        return save(telemetry, counts)

    monkeypatch.setattr(Telemetry, "_saved", saved)
    path = tmp_path / "acceptance.json"
    telemetry = Telemetry(path)
    for _ in range(20):
        telemetry.offered("automatic", 1)
    deadline = time.monotonic() + 30
    while not (path.exists() and json.loads(path.read_text())["requests"] == 20) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert json.loads(path.read_text())["requests"] == 20
    assert writers and set(writers) == {"telemetry"}


def test_two_servers_on_one_telemetry_file_keep_both_counts(tmp_path):
    """Each editor window runs its own server on the same file: a save adds to the file's counts."""
    path = tmp_path / "acceptance.json"
    first, second = Telemetry(path), Telemetry(path)  # both read the file before either wrote
    first.offered("automatic", 2)
    second.offered("invoked", 1)
    first.accepted("automatic")
    first.flush()
    second.accepted("invoked")
    second.flush()  # its last save, by its thread or here, read the file after first's
    saved = json.loads(path.read_text())
    assert (saved["requests"], saved["items"], saved["accepted"]) == (2, 3, 2)
    assert saved["by_trigger"] == {
        "automatic": {"requests": 1, "items": 2, "accepted": 1},
        "invoked": {"requests": 1, "items": 1, "accepted": 1},
    }
    assert second.counts.accepted == 2  # what the file says now, not only its own


def test_servers_writing_at_the_same_time_lose_no_count(tmp_path):
    path, each = tmp_path / "acceptance.json", 150
    script = (
        "import sys; from pathlib import Path; from diffusion_infill.lsp.completion.telemetry import Telemetry; "
        f"t = Telemetry(Path(sys.argv[1])); [t.offered('automatic', 1) for _ in range({each})]; t.flush()"
    )
    writers = [subprocess.Popen([sys.executable, "-c", script, str(path)]) for _ in range(2)]
    assert [writer.wait(timeout=120) for writer in writers] == [0, 0]
    saved = json.loads(path.read_text())
    assert (saved["requests"], saved["items"]) == (2 * each, 2 * each)


def test_a_held_telemetry_lock_defers_the_save_and_a_stale_one_is_broken(tmp_path):
    path = tmp_path / "acceptance.json"
    lock = tmp_path / "acceptance.json.lock"
    lock.touch()  # another server is saving
    telemetry = Telemetry(path)
    telemetry.offered("automatic", 1)
    assert not path.exists() and telemetry.counts.requests == 1  # kept for the next save
    old = time.time() - 60
    os.utime(lock, (old, old))  # a server that died holding it
    telemetry.accepted("automatic")
    telemetry.flush()
    saved = json.loads(path.read_text())
    assert (saved["requests"], saved["accepted"]) == (1, 1) and not lock.exists()
