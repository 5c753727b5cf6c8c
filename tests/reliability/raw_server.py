"""The real `diffusion-infill serve` process, spoken to in raw bytes.

pytest-lsp's client can only send well-formed messages; the reliability tests need to
write anything to the server's stdin (broken frames, invalid UTF-8, wrong types) and
then check, with a valid request, that it still answers correctly. One reader thread
parses the server's frames, another keeps its stderr (the log) so the pipe never fills.

Waiting is on messages; HANG_S only turns a server that stopped answering into a
failure instead of a test run that never ends.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from commands import serve_command

# Two denoising steps at most: these tests count answers, not their quality. Every request
# runs the engine: no document drafts, no quiet characters (tests/lsp/completion/test_lsp_without_a_run.py).
FAST = {"diffusionInfill": {"maxSteps": 2, "invokedItems": 2, "documentDrafts": False, "quietAfter": ""}}
HANG_S = 120.0  # far beyond any answer here: only a hung or dead server takes this long
_ids = itertools.count(1)


def frame(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def encode(message: dict) -> bytes:
    return json.dumps(message).encode("utf-8")


class ServerDied(AssertionError):
    pass


class RawServer:
    def __init__(self, command: list[str], env: dict[str, str | None] | None = None):
        """`env` is added to this process's environment; a None value removes the variable."""
        environment = {**os.environ, **(env or {})}
        environment = {name: value for name, value in environment.items() if value is not None}
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=environment
        )
        self.messages: list[dict] = []  # everything the server sent, in order
        self.stderr: list[str] = []
        self._arrived = threading.Condition()
        self._writing = threading.Lock()  # the frame reader answers server requests too
        self._threads = [
            threading.Thread(target=self._read_frames, daemon=True),
            threading.Thread(target=self._read_log, daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def log(self) -> str:
        with self._arrived:
            return "".join(self.stderr)

    # Writing

    def write(self, data: bytes) -> None:
        try:
            with self._writing:
                self.process.stdin.write(data)
                self.process.stdin.flush()
        except BrokenPipeError:
            raise ServerDied(f"the server exited (status {self.process.poll()}):\n{self.log[-4000:]}") from None

    def send(self, message: dict) -> None:
        self.write(frame(encode(message)))

    def notify(self, method: str, params: Any) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def request(self, method: str, params: Any, msg_id: int | str | None = None) -> int | str:
        msg_id = f"valid-{next(_ids)}" if msg_id is None else msg_id
        self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        return msg_id

    # Reading

    def wait_for(self, matches: Callable[[dict], bool], start: int = 0) -> dict:
        """The first message from index `start` on that `matches`, already received or still to come."""
        with self._arrived:
            seen = start
            while True:
                for message in self.messages[seen:]:
                    if matches(message):
                        return message
                seen = len(self.messages)
                if self.process.poll() is not None and not self._threads[0].is_alive():
                    raise ServerDied(f"the server exited (status {self.process.poll()}):\n{self.log[-4000:]}")
                if not self._arrived.wait(HANG_S):
                    raise AssertionError(f"no answer within {HANG_S} s: the server hangs\n{self.log[-4000:]}")

    def wait_for_log(self, text: str, count: int, start: int = 0) -> str:
        """The log from character `start` on, once `text` occurs in it `count` times: the log is read
        on a thread of its own, so a line can arrive after the answer that followed it."""
        with self._arrived:
            while (log := "".join(self.stderr)[start:]).count(text) < count:
                if not self._arrived.wait(HANG_S):
                    raise AssertionError(f"{text!r} not logged {count} times within {HANG_S} s\n{log[-4000:]}")
            return log

    def forget_messages(self) -> None:
        """Drops what was received so far (a long run's own memory and searches stay small)."""
        with self._arrived:
            self.messages.clear()

    def response(self, msg_id: Any) -> dict:
        """The response to request `msg_id` (a result or an error)."""
        return self.wait_for(lambda m: "method" not in m and m.get("id") == msg_id and ("result" in m or "error" in m))

    def call(self, method: str, params: Any) -> Any:
        """A request that must succeed: its result."""
        answer = self.response(self.request(method, params))
        assert "error" not in answer, f"{method} failed: {answer['error']}"
        return answer["result"]

    def _read_frames(self) -> None:
        stdout = self.process.stdout
        while True:
            length = None
            while True:
                line = stdout.readline()
                if not line:
                    self._notify_all()
                    return
                if not line.strip():
                    break
                name, _, value = line.decode("ascii").partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value)
            assert length is not None, "the server sent a frame without Content-Length"
            message = json.loads(stdout.read(length))
            if "method" in message and "id" in message:  # a request to the client: answer it plainly
                self.send({"jsonrpc": "2.0", "id": message["id"], "result": None})
            with self._arrived:
                self.messages.append(message)
                self._arrived.notify_all()

    def _read_log(self) -> None:
        for line in iter(self.process.stderr.readline, b""):
            with self._arrived:
                self.stderr.append(line.decode("utf-8", "replace"))
                self._arrived.notify_all()
        self._notify_all()

    def _notify_all(self) -> None:
        with self._arrived:
            self._arrived.notify_all()

    # Lifecycle

    def initialize(self, options: dict | None = None, capabilities: dict | None = None) -> dict:
        result = self.call(
            "initialize",
            {"processId": None, "rootUri": None, "capabilities": capabilities or {}, "initializationOptions": options},
        )
        self.notify("initialized", {})
        return result

    def stop(self) -> int:
        """shutdown and exit, as an editor closes it; the exit status."""
        if self.process.poll() is None:
            try:
                self.call("shutdown", None)
                self.notify("exit", None)
                self.process.stdin.close()
            except (ServerDied, BrokenPipeError, OSError):
                pass
        try:
            return self.process.wait(HANG_S)
        finally:
            self.kill()

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        for thread in self._threads:
            thread.join(HANG_S)


def rss_bytes(pid: int) -> int:
    """Resident memory of a process (Linux /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def thread_count(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/task"))


def start_server(
    model: Path | str | None,
    tmp_path: Path,
    *extra: str,
    options: dict | None = FAST,
    verbose: bool = False,
    env: dict[str, str | None] | None = None,
) -> RawServer:
    """A server on `model`, initialized; its first completion waits for the model to load."""
    server = RawServer(
        serve_command(model, tmp_path / "telemetry.json", "--threads", "1", *extra, verbose=verbose), env
    )
    server.initialize(options)
    return server
