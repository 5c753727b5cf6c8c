"""The GPU check of issue 50: google/diffusiongemma-26B-A4B-it's full text shape with random
weights, one-line insertions after 2,000 tokens of context, per experts implementation and weight
format (docs/performance.md, "26B-A4B on one GPU").

For each (format, experts implementation): the model is built on the device and quantized (the
load time: random weights, so no disk read is in it), then `--completions` completions run the
instruction path's generate as the engine does (engine.completion.instruct: the checkpoint's
defaults, a one-line canvas of LINE_CANVAS slots) after a random prompt of `--context` tokens:
completion p50/p95, denoising pass p50 (a pass timed by a streamer's put_draft; random weights
never stop early, so each completion runs the step limit) and the peak memory. `--small` is a
CPU-sized shape for the test (int8 stands in for int4 there). Prints a Markdown table, then one
JSON object on the last line.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from dataclasses import asdict, replace

from diffusion_infill.bench.throughput import SHAPES, diffusion_model
from diffusion_infill.cli.inputs import positive_int

# transformers' own (integrations/moe.py) and engine.sorted_experts; the fused two fail on torchao's tensors
IMPLEMENTATIONS = {"bfloat16": ("eager", "grouped_mm", "batched_mm", "sorted"), "int4": ("eager", "sorted")}
SMALL = replace(SHAPES["small"], moe_intermediate=64)  # a multiple of int4's group


def _now(device) -> float:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter()


class _PassTimer:
    """A streamer timing the passes between generate's drafts (put_draft after every step)."""

    def __init__(self, device):
        self.device, self.passes, self.last = device, [], None

    def put(self, value) -> None:
        self.last = _now(self.device)

    def put_draft(self, value, **kwargs) -> None:
        now = _now(self.device)
        self.passes.append((now - self.last) * 1000)
        self.last = now

    def end(self) -> None:
        pass


def measure(shape, fmt: str, experts: str, device, context: int, completions: int, steps: dict) -> dict:
    """One row: load, peak memory, pass and completion times of `fmt` weights with `experts`."""
    import torch

    from diffusion_infill.engine import sorted_experts  # noqa: F401  registers "sorted"
    from diffusion_infill.engine.completion.instruct import LINE_CANVAS, canvas_of
    from diffusion_infill.engine.quantization import quantize_in_place

    torch.manual_seed(0)
    if device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)
    start = _now(device)
    with torch.device(device):
        model = diffusion_model(shape, LINE_CANVAS, torch.bfloat16 if device.type == "cuda" else torch.float32, experts)
    quantize_in_place(model, {"bfloat16": "none", "int4": "int4" if device.type == "cuda" else "int8"}[fmt])
    load_s = _now(device) - start
    prompt = torch.randint(10, shape.vocab, (1, context), device=device)
    totals, timer = [], _PassTimer(device)
    try:
        with torch.no_grad(), canvas_of(model, LINE_CANVAS):  # not inference_mode: engine.quantization
            for index in range(completions + 1):
                start = _now(device)
                model.generate(prompt, streamer=timer, max_new_tokens=LINE_CANVAS, **steps)
                if index:  # the first is a warm-up
                    totals.append((_now(device) - start) * 1000)
    except (RuntimeError, NotImplementedError, TypeError) as error:
        return {"format": fmt, "experts": experts, "fails": f"{type(error).__name__}: {str(error).splitlines()[0]}"}
    ordered = sorted(totals)
    peak = torch.cuda.max_memory_allocated(device) / 2**30 if device.type == "cuda" else None
    return {
        "format": fmt,
        "experts": experts,
        "load_s": round(load_s, 1),
        "peak_gib": peak and round(peak, 1),
        "pass_ms_p50": round(statistics.median(timer.passes), 1),
        "completion_ms_p50": round(statistics.median(ordered), 0),
        "completion_ms_p95": round(ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))], 0),
    }


def table(rows: list[dict]) -> str:
    lines = [
        "| weights | experts | load | peak memory | pass p50 | completion p50 | p95 |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in rows:
        if "fails" in row:
            lines.append(f"| {row['format']} | {row['experts']} | fails: {row['fails']} | | | | |")
            continue
        peak = f"{row['peak_gib']} GiB" if row["peak_gib"] is not None else "-"
        lines.append(
            f"| {row['format']} | {row['experts']} | {row['load_s']} s | {peak} | {row['pass_ms_p50']} ms | "
            f"{row['completion_ms_p50']:.0f} ms | {row['completion_ms_p95']:.0f} ms |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--small", action="store_true", help="a CPU-sized shape (int8 for int4)")
    parser.add_argument("--context", type=positive_int, default=2000, help="prompt tokens (default 2000)")
    parser.add_argument("--completions", type=positive_int, default=10, help="measured after one warm-up")
    parser.add_argument("--steps", type=positive_int, help="denoising steps at most (default: transformers' 48)")
    parser.add_argument("--formats", nargs="+", choices=IMPLEMENTATIONS, default=list(IMPLEMENTATIONS))
    args = parser.parse_args(argv)
    import torch

    device = torch.device("cpu" if args.small or not torch.cuda.is_available() else "cuda")
    if device.type == "cpu" and not args.small:
        parser.exit(2, f"{parser.prog}: the full shape needs a CUDA GPU; --small runs on the CPU\n")
    shape = SMALL if args.small else SHAPES["full"]
    steps = {"max_denoising_steps": args.steps} if args.steps else {}
    rows = [
        measure(shape, fmt, experts, device, args.context, args.completions, steps)
        for fmt in args.formats
        for experts in IMPLEMENTATIONS[fmt]
    ]
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU"
    print(f"{name}, shape {asdict(shape)}, one-line canvas after {args.context} tokens\n")
    print(table(rows))
    print(json.dumps({"device": name, "shape": asdict(shape), "context": args.context, "rows": rows}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
