"""One denoising pass of DiffusionGemma-26B-A4B's topology with each experts implementation, in
float and int8 (docs/performance.md, "The experts' implementations").

30 layers (5 sliding to 1 full), 128 experts of which 8 a token, 16 heads with 8 key/value heads on
sliding layers and 2 (of twice the width) on full ones: the real layout, at widths one CPU core
runs (`--hidden`, `--expert-width`; the real ones are 2816 and 704). Random weights: the time does
not depend on them, and random routing hits nearly every expert, as a real canvas does. A pass is
what the sampler runs a step: the decoder over the canvas beside a cached prompt, then lm_head.
Times are the process's CPU time at one thread (a shared machine's load does not count), the
median of `--passes` after one warm-up. Prints a Markdown table, then one JSON object.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from dataclasses import asdict, replace

from diffusion_infill.bench.throughput import SHAPES, Shape, diffusion_model
from diffusion_infill.cli.inputs import positive_int

IMPLEMENTATIONS = ("eager", "grouped_mm", "batched_mm", "sorted")  # sorted: engine.sorted_experts
# 26B-A4B's layout (SHAPES["full"]) at a CPU's widths; the expert width a multiple of int4's group (64)
REDUCED = replace(SHAPES["full"], hidden=256, intermediate=192, head_dim=32, global_head_dim=64, moe_intermediate=64)


def shape_of(hidden: int, expert_width: int, vocab: int) -> Shape:
    return replace(REDUCED, hidden=hidden, intermediate=hidden * 3 // 4, moe_intermediate=expert_width, vocab=vocab)


def pass_ms(shape: Shape, experts: str, quantize: str, canvas: int, prefix: int, passes: int) -> float | str:
    """Median CPU milliseconds of one pass, or why the combination does not run."""
    import torch
    from transformers import DynamicCache

    from diffusion_infill.engine import sorted_experts  # noqa: F401  registers "sorted"
    from diffusion_infill.engine.quantization import quantize_in_place

    torch.manual_seed(0)
    model = diffusion_model(shape, canvas, torch.float32, experts)
    quantize_in_place(model, quantize)
    cache = DynamicCache(config=model.config.text_config)
    positions = torch.arange(prefix, prefix + canvas).unsqueeze(0)
    canvas_ids = torch.randint(10, shape.vocab, (1, canvas))
    try:
        times = _passes(model, cache, canvas_ids, positions, torch.randint(10, shape.vocab, (1, prefix)), passes)
    except (RuntimeError, NotImplementedError, TypeError, AttributeError) as error:
        return f"fails: {type(error).__name__}"
    return round(statistics.median(times[1:]), 1)


def _passes(model, cache, canvas_ids, positions, prompt, passes: int) -> list[float]:
    """The prompt encoded into `cache`, then `passes` + 1 passes; each one's CPU milliseconds."""
    import torch

    times = []
    with torch.no_grad():  # not inference_mode: engine.quantization
        model.model.encoder(input_ids=prompt, cache=cache)
        for _ in range(passes + 1):
            start = time.process_time()
            hidden = model.model.decoder(
                decoder_input_ids=canvas_ids, cache=cache, decoder_position_ids=positions
            ).last_hidden_state
            model.lm_head(hidden)
            times.append((time.process_time() - start) * 1000)
    return times


def table(result: dict) -> str:
    modes = result["quantize"]
    lines = [
        f"one pass, canvas {result['canvas']} after {result['prefix']} tokens, {asdict(result['shape'])}",
        "",
        "| experts | " + " | ".join(modes) + " |",
        "| --- |" + " --- |" * len(modes),
    ]
    for name, row in result["ms"].items():
        cells = [f"{row[m]} ms" if isinstance(row[m], float) else row[m] for m in modes]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hidden", type=positive_int, default=REDUCED.hidden)
    parser.add_argument("--expert-width", type=positive_int, default=REDUCED.moe_intermediate)
    parser.add_argument("--vocab", type=positive_int, default=4096)
    parser.add_argument("--layers", type=positive_int, default=REDUCED.layers)
    parser.add_argument("--canvas", type=positive_int, default=256)
    parser.add_argument("--prefix", type=positive_int, default=256)
    parser.add_argument("--passes", type=positive_int, default=3)
    parser.add_argument("--experts", nargs="+", choices=IMPLEMENTATIONS, default=list(IMPLEMENTATIONS))
    parser.add_argument("--quantize", nargs="+", choices=("none", "int8"), default=["none", "int8"])
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    shape = replace(shape_of(args.hidden, args.expert_width, args.vocab), layers=args.layers)
    ms = {
        name: {mode: pass_ms(shape, name, mode, args.canvas, args.prefix, args.passes) for mode in args.quantize}
        for name in args.experts
    }
    result = dict(shape=shape, canvas=args.canvas, prefix=args.prefix, quantize=args.quantize, ms=ms)
    print(table(result))
    print(json.dumps({**result, "shape": asdict(shape)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
