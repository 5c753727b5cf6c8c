"""Generation throughput of DiffusionGemma's real architecture beside a same-shape causal decoder
(docs/performance.md, "Throughput of the real architecture").

Random weights (speed does not depend on them): a DiffusionGemmaForBlockDiffusion of the shape
asked for (sliding and full attention layers 5:1, a larger head on the full layers with fewer
key/value heads and no v_proj, a dense MLP beside top-k experts) generates one canvas the way
block diffusion does: the prompt encoded once, a fixed number of denoising passes over the whole
canvas (self-conditioning on the previous pass's logits, lm_head on every slot), then the canvas
committed through the encoder into the KV cache. The autoregressive side is transformers'
Gemma4ForCausalLM of the same shape (Gemma 4 is the family DiffusionGemma was made from), decoding
as many tokens greedily with its KV cache. Each side runs in its own fresh process, so the peak
memory is its own: CUDA's peak allocation on a GPU, the process's peak RSS on the CPU (torch's
own few hundred MB included). Times are wall time on a GPU, CPU time on the CPU (a shared
machine's load does not count; one thread by default).

`--shape small` runs on a laptop CPU; `--shape full` is google/diffusiongemma-26B-A4B-it's text
model (30 layers, hidden 2816, 16 heads, 8 key/value heads of 256 on sliding layers and 2 of 512 on
full ones, 128 experts of 704 top 8, vocabulary 262,144, window 1024; the vision tower is left
out), for a GPU (scripts/gpu_throughput.sh). `--quantize` stores both sides' weights as
engine.quantization does. Prints a Markdown table, then one JSON object on the last line.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import multiprocessing
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

from diffusion_infill.cli.inputs import positive_int
from diffusion_infill.engine.checkpoint import QUANTIZE, quantize_problem

SLIDING_PATTERN = 6  # every sixth layer attends to the whole context, as Gemma 4's


@dataclass(frozen=True)
class Shape:
    layers: int
    hidden: int
    intermediate: int  # the dense MLP beside the experts
    heads: int
    kv_heads: int  # on sliding layers
    global_kv_heads: int  # on full layers (keys are values there)
    head_dim: int  # on sliding layers
    global_head_dim: int  # on full layers
    experts: int
    top_k: int
    moe_intermediate: int
    vocab: int
    sliding_window: int

    def text_config(self) -> dict:
        """The text model's config, as both DiffusionGemmaTextConfig and Gemma4TextConfig name it."""
        return dict(
            vocab_size=self.vocab,
            hidden_size=self.hidden,
            intermediate_size=self.intermediate,
            num_hidden_layers=self.layers,
            num_attention_heads=self.heads,
            num_key_value_heads=self.kv_heads,
            num_global_key_value_heads=self.global_kv_heads,
            head_dim=self.head_dim,
            global_head_dim=self.global_head_dim,
            num_experts=self.experts,
            top_k_experts=self.top_k,
            moe_intermediate_size=self.moe_intermediate,
            sliding_window=self.sliding_window,
            layer_types=[
                "full_attention" if (i + 1) % SLIDING_PATTERN == 0 or i == self.layers - 1 else "sliding_attention"
                for i in range(self.layers)
            ],
            max_position_embeddings=8192,
            pad_token_id=0,
            eos_token_id=1,
            bos_token_id=2,
        )


SHAPES = {
    # 26B-A4B's proportions at a size one CPU core runs: 6 layers (5 sliding, 1 full), 16 experts top 4
    "small": Shape(6, 512, 384, 8, 4, 1, 64, 128, 16, 4, 128, 16384, 128),
    "full": Shape(30, 2816, 2112, 16, 8, 2, 256, 512, 128, 8, 704, 262144, 1024),
}
_SPECIAL = dict(image_token_id=3, boi_token_id=4, eoi_token_id=5)  # ids a random canvas may hold; never images


@dataclass(frozen=True)
class Run:
    shape: str
    steps: int  # denoising passes per canvas
    canvas: int  # tokens a canvas commits, and the tokens the causal decoder generates
    prefix: int  # prompt tokens encoded first
    canvases: int  # canvases (and generations) measured after one warm-up
    device: str
    dtype: str
    quantize: str
    threads: int


def diffusion_model(shape: Shape, canvas: int, dtype, experts: str | None = None):
    """DiffusionGemmaForBlockDiffusion of `shape` with random weights, built on the current default device."""
    from transformers import DiffusionGemmaConfig, DiffusionGemmaForBlockDiffusion

    from diffusion_infill.engine.tiny import VISION

    config = DiffusionGemmaConfig(
        text_config=shape.text_config(), vision_config=VISION, canvas_length=canvas, **_SPECIAL
    )
    options = {"experts_implementation": experts} if experts else {}
    return DiffusionGemmaForBlockDiffusion._from_config(config, dtype=dtype, **options).eval()


def causal_model(shape: Shape, dtype, experts: str | None = None):
    """Gemma4ForCausalLM of `shape` with random weights: Gemma 4's MoE block, keys as values on full layers."""
    from transformers import Gemma4ForCausalLM, Gemma4TextConfig

    config = Gemma4TextConfig(
        **shape.text_config(),
        enable_moe_block=True,
        attention_k_eq_v=True,
        hidden_size_per_layer_input=0,
        final_logit_softcapping=30.0,
    )
    options = {"experts_implementation": experts} if experts else {}
    return Gemma4ForCausalLM._from_config(config, dtype=dtype, **options).eval()


def _diffusion_canvas(model, run: Run, vocab: int) -> Callable[[], list[float]]:
    """One canvas: prompt, `run.steps` denoising passes, commit; returns each pass's milliseconds."""
    import torch
    from transformers import DynamicCache

    device = model.device

    def generate() -> list[float]:
        cache = DynamicCache(config=model.config.text_config)
        prompt = torch.randint(10, vocab, (1, run.prefix), device=device)
        model.model.encoder(input_ids=prompt, cache=cache)
        positions = torch.arange(run.prefix, run.prefix + run.canvas, device=device).unsqueeze(0)
        canvas = torch.randint(10, vocab, (1, run.canvas), device=device)
        logits, passes = None, []
        for _ in range(run.steps):
            start = _now(device)
            hidden = model.model.decoder(
                decoder_input_ids=canvas, cache=cache, decoder_position_ids=positions, self_conditioning_logits=logits
            ).last_hidden_state
            logits = model.lm_head(hidden)
            canvas = logits.argmax(-1)
            passes.append(_ms_since(start, device))
        model.model.encoder(input_ids=canvas, cache=cache, position_ids=positions)  # the commit
        return passes

    return generate


def _causal_generation(model, run: Run, vocab: int) -> Callable[[], list[float]]:
    """`run.canvas` tokens decoded greedily after the prompt; returns each decoding step's milliseconds."""
    import torch
    from transformers import DynamicCache

    device = model.device

    def generate() -> list[float]:
        cache = DynamicCache(config=model.config)
        prompt = torch.randint(10, vocab, (1, run.prefix), device=device)
        token = model(input_ids=prompt, cache=cache, use_cache=True).logits[:, -1:].argmax(-1)
        steps = []
        for _ in range(run.canvas - 1):
            start = _now(device)
            token = model(input_ids=token, cache=cache, use_cache=True).logits[:, -1:].argmax(-1)
            steps.append(_ms_since(start, device))
        return steps

    return generate


def _now(device) -> float:
    """Wall time on a GPU once its queue is done; the process's CPU time on the CPU, so that other
    processes on a shared machine do not count (at one thread, as bench.decoder_shapes)."""
    import torch

    if device.type != "cuda":
        return time.process_time()
    torch.cuda.synchronize(device)
    return time.perf_counter()


def _ms_since(start: float, device) -> float:
    return (_now(device) - start) * 1000


def measure(side: str, run: Run) -> dict:
    """One side (diffusion or autoregressive) of `run`; meant to run in a fresh process."""
    import resource

    import torch

    from diffusion_infill.engine import sorted_experts
    from diffusion_infill.engine.quantization import quantize_in_place, weight_bytes

    torch.manual_seed(0)
    torch.set_num_threads(run.threads)
    device = torch.device(run.device)
    dtype = getattr(torch, run.dtype)
    shape = SHAPES[run.shape]
    experts = sorted_experts.NAME if run.quantize != "none" else None  # engine.quantization
    with torch.device(device):
        model = (
            diffusion_model(shape, run.canvas, dtype, experts)
            if side == "diffusion"
            else causal_model(shape, dtype, experts)
        )
    quantize_in_place(model, run.quantize)
    if device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)
    make = _diffusion_canvas if side == "diffusion" else _causal_generation
    generate = make(model, run, shape.vocab)
    totals, steps = [], []
    with torch.no_grad():  # not inference_mode: engine.quantization
        for index in range(run.canvases + 1):
            start = _now(device)
            passes = generate()
            if index:  # the first is a warm-up
                totals.append(_ms_since(start, device))
                steps.extend(passes)
    total_ms = statistics.median(totals)
    if device.type == "cuda":
        peak_mb = torch.cuda.max_memory_allocated(device) / 2**20
    else:
        peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "side": side,
        "parameters": sum(p.numel() for p in model.parameters()),
        "weights_mb": round(weight_bytes(model) / 2**20, 1),
        "forward_passes": (run.steps + 2) if side == "diffusion" else run.canvas,
        "step_ms_median": round(statistics.median(steps), 2),
        "total_ms_median": round(total_ms, 1),
        "tokens_per_s": round(run.canvas / (total_ms / 1000), 1),
        "peak_memory_mb": round(peak_mb, 1),
    }


def measure_in_fresh_process(side: str, run: Run) -> dict:
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
        return pool.submit(measure, side, run).result()


def machine(run: Run) -> dict:
    import platform

    import torch
    import transformers

    name = torch.cuda.get_device_name(run.device) if run.device.startswith("cuda") else platform.processor()
    return {
        "device": run.device,
        "name": name or platform.machine(),
        "threads": run.threads,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
    }


def report(run: Run) -> dict:
    sides = {side: measure_in_fresh_process(side, run) for side in ("diffusion", "autoregressive")}
    diffusion, autoregressive = sides["diffusion"], sides["autoregressive"]
    return {
        "run": asdict(run),
        "shape": asdict(SHAPES[run.shape]),
        "machine": machine(run),
        "diffusion": diffusion,
        "autoregressive": autoregressive,
        "tokens_per_s_diffusion_over_autoregressive": round(
            diffusion["tokens_per_s"] / autoregressive["tokens_per_s"], 2
        ),
    }


def table(result: dict) -> str:
    run = result["run"]
    lines = [
        f"{run['shape']} shape, {run['dtype']}, quantize {run['quantize']}, {result['machine']['name']} "
        f"({run['threads']} threads): canvas {run['canvas']}, {run['steps']} denoising passes, prompt {run['prefix']}",
        "",
        "| model | parameters | weights | forward passes | step p50 | tokens/s | peak memory |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for side in ("diffusion", "autoregressive"):
        row = result[side]
        lines.append(
            f"| {side} | {row['parameters'] / 1e6:,.1f}M | {row['weights_mb']:,.0f} MB | {row['forward_passes']} | "
            f"{row['step_ms_median']:.1f} ms | {row['tokens_per_s']:,.1f} | {row['peak_memory_mb']:,.0f} MB |"
        )
    return "\n".join(lines)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--shape", choices=SHAPES, default="small", help="small (a CPU) or full (26B-A4B, a GPU)")
    parser.add_argument("--steps", type=positive_int, default=16, help="denoising passes per canvas (default 16)")
    parser.add_argument("--canvas", type=positive_int, default=256, help="tokens per canvas (default 256)")
    parser.add_argument("--prefix", type=positive_int, default=256, help="prompt tokens (default 256)")
    parser.add_argument("--canvases", type=positive_int, default=3, help="canvases measured per side (default 3)")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--dtype", choices=("float32", "bfloat16"), help="default: bfloat16 on CUDA, else float32")
    parser.add_argument("--quantize", choices=QUANTIZE, default="none", help="as engine.quantization (int4: CUDA)")
    parser.add_argument("--threads", type=positive_int, default=1, help="torch CPU threads (default 1)")
    parser.add_argument("--json", action="store_true", help="only the JSON object")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    args = parser.parse_args(argv)
    if problem := quantize_problem(args.quantize, args.device):
        parser.exit(2, f"{parser.prog}: {problem}\n")
    dtype = args.dtype or ("bfloat16" if args.device == "cuda" or args.quantize == "int4" else "float32")
    run = Run(
        args.shape, args.steps, args.canvas, args.prefix, args.canvases, args.device, dtype, args.quantize, args.threads
    )
    result = report(run)
    if not args.json:
        print(table(result))
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
