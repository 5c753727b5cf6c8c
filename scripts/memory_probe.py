"""Where a long session's memory goes: the real server, its Python heap traced, driven through the soak's
cycle (tests/reliability/test_soak.py: open a document of about 20 KB, complete at its end, close; every 20th a
broken JSON document that waits for its diagnostics and its fixes). At the end of each phase it prints the
server's RSS before and after glibc's malloc_trim (what only the allocator holds), the traced heap, the live
objects by type that grew most, and the tracebacks whose allocations grew most since the phase before.

    .venv/bin/python scripts/memory_probe.py [--model DIR] [--phases 300,600,1100,1600] [--top 5]

Tracing starts at the first phase's end (a traced import of torch takes minutes), so what a phase shows is what
was allocated after the warm-up and still lives. The server runs as `memory_probe.py --serve ARGS...` (the same
CLI, with a SIGUSR1 handler that writes a tracemalloc snapshot); RSS is inflated by tracemalloc's own records.
How issue 52's leak was found with it: docs/reliability.md.
"""

from __future__ import annotations

import argparse
import collections
import ctypes
import gc
import json
import os
import signal
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODEL = ROOT / "src" / "diffusion_infill" / "engine" / "model"
FRAMES = 12  # traceback depth: pygls' handler chain is about 10 deep under the event loop


def _rss() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


def _dump(out: Path, phase: list[int]) -> None:
    """In the server, at SIGUSR1: the first starts tracing; each writes what it measured as phaseN.json."""
    phase[0] += 1
    gc.collect()
    info: dict = {"rss": _rss()}
    if tracemalloc.is_tracing():
        tracemalloc.take_snapshot().dump(str(out / f"phase{phase[0]}.tm"))
        info["traced"] = tracemalloc.get_traced_memory()[0]
    else:
        tracemalloc.start(FRAMES)
    info["objects"] = collections.Counter(type(o).__qualname__ for o in gc.get_objects())
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    info["trimmed"] = _rss()
    (out / f"phase{phase[0]}.json").write_text(json.dumps(info))


def serve(out: Path, argv: list[str]) -> int:
    phase = [0]
    signal.signal(signal.SIGUSR1, lambda signum, frame: _dump(out, phase))
    from diffusion_infill.cli.main import main

    return main(argv)


def _report(out: Path, index: int, cycles: int, top: int) -> None:
    info = json.loads((out / f"phase{index}.json").read_text())
    line = f"{cycles} documents: RSS {info['rss'] / 2**20:.1f} MB, after malloc_trim {info['trimmed'] / 2**20:.1f}"
    if "traced" in info:
        line += f", traced heap {info['traced'] / 2**20:.2f} MB (allocated since phase 1, still live)"
    print(line, flush=True)
    if index < 2:
        return
    before = json.loads((out / f"phase{index - 1}.json").read_text())["objects"]
    grown = sorted(((n - before.get(k, 0), k) for k, n in info["objects"].items()), reverse=True)[:top]
    print("  objects grown: " + ", ".join(f"{kind} +{n}" for n, kind in grown if n > 0))
    if index < 3:
        return
    older = tracemalloc.Snapshot.load(str(out / f"phase{index - 1}.tm"))
    newer = tracemalloc.Snapshot.load(str(out / f"phase{index}.tm"))
    for stat in newer.compare_to(older, "traceback")[:top]:
        frames = [f"{Path(f.filename).name}:{f.lineno}" for f in stat.traceback]
        print(f"  {stat.size_diff / 1024:+.0f} KB in {stat.count_diff:+d} blocks: {' < '.join(reversed(frames))}")


def drive(model: Path, phases: list[int], top: int) -> None:
    sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "reliability")]
    from raw_server import RawServer
    from test_soak import OPTIONS, _cycle

    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder)
        command = [sys.executable, __file__, "--serve", "serve", "--telemetry", str(out / "telemetry.json")]
        server = RawServer(command + ["--model", str(model), "--threads", "1"], {"MEMORY_PROBE_DIR": folder})
        server.initialize(OPTIONS)
        try:
            for index, (start, end) in enumerate(zip([0, *phases[:-1]], phases, strict=True), 1):
                for cycle in range(start, end):
                    _cycle(server, cycle)
                os.kill(server.pid, signal.SIGUSR1)
                while not (out / f"phase{index}.json").exists():
                    time.sleep(0.1)
                time.sleep(0.2)  # written, perhaps not closed yet
                _report(out, index, end, top)
        finally:
            server.stop()


def main() -> int:
    if sys.argv[1:2] == ["--serve"]:
        return serve(Path(os.environ.get("MEMORY_PROBE_DIR", tempfile.gettempdir())), sys.argv[2:])
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, default=MODEL, help="checkpoint directory (default: the embedded one)")
    parser.add_argument("--phases", default="300,600,1100,1600", help="documents at each phase's end, cumulative")
    parser.add_argument("--top", type=int, default=5, help="object types and tracebacks shown per phase")
    args = parser.parse_args()
    drive(args.model, [int(n) for n in args.phases.split(",")], args.top)
    return 0


if __name__ == "__main__":  # the worker processes (multiprocessing spawn) import this module: nothing runs then
    sys.exit(main())
