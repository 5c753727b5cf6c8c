"""Real servers for engine.remote's tests: `transformers serve` (an OpenAI-compatible server,
extra `transformers[serving]`) on a free port, and a TCP peer that takes a request and never
answers (what a hung server looks like from the client: timeouts and cancellation)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

START_TIMEOUT_S = 300  # importing torch and transformers on a busy 2-core machine


def free_port() -> int:
    """A port nothing listens on (the OS picked it free; it is closed again at once)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class TransformersServe:
    """`transformers serve MODEL` on a free localhost port, the model loaded before requests come."""

    model: Path
    port: int = field(default_factory=free_port)
    process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> None:
        command = shutil.which("transformers", path=str(Path(sys.executable).parent))
        assert command, "transformers[serving] is installed with the dev extras"
        environment = dict(os.environ, HF_HUB_OFFLINE="1", OMP_NUM_THREADS="1", TRANSFORMERS_NO_ADVISORY_WARNINGS="1")
        self.process = subprocess.Popen(
            [command, "serve", str(self.model), "--host", "127.0.0.1", "--port", str(self.port), "--device", "cpu"],
            env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self._wait_healthy()

    def _wait_healthy(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"transformers serve exited: {self.process.stderr.read()[-2000:]}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=1):
                    return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                time.sleep(0.2)  # a process starting up has nothing to wait on but its port
        raise RuntimeError(f"transformers serve did not answer /health within {START_TIMEOUT_S} s")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


class SilentServer:
    """Accepts connections and reads what is sent, never answers; records each request's
    arrival and whether the client closed the connection."""

    def __init__(self):
        self.socket = socket.create_server(("127.0.0.1", 0))
        self.port = self.socket.getsockname()[1]
        self.received = threading.Event()  # a request head arrived
        self.closed_by_client = threading.Event()  # a connection that had sent a request was closed
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self.socket.accept()
            except OSError:
                return  # closed
            threading.Thread(target=self._read, args=(connection,), daemon=True).start()

    def _read(self, connection: socket.socket) -> None:
        with connection:
            data = b""
            while chunk := connection.recv(65536):
                data += chunk
                if b"\r\n\r\n" in data:
                    self.received.set()
            if data:
                self.closed_by_client.set()

    def close(self) -> None:
        self.socket.close()
