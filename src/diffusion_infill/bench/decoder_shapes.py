"""What one denoising pass costs for decoders of other shapes, against one decoding step of
the autoregressive baseline (docs/performance.md, "What shape the decoder would need").

Randomly initialised models (cost does not depend on the weights): a DiffusionGemma decoder
pass over a canvas of `SLOTS` slots on a `PREFIX`-token encoder cache, with self-conditioning
logits and the lm_head on the gap slots, as src/diffusion_infill/engine/completion/sampler.py runs it; and one
cached decoding step of the baseline's Llama (src/diffusion_infill/engine/training/fim.py). CPU time
(`time.process_time`) at one thread, every shape once per round, so all see the same load.
Prints a Markdown table, then one JSON object on the last line.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable

import torch
from transformers import DynamicCache

from diffusion_infill.cli.inputs import shape
from diffusion_infill.engine.baseline.autoregressive import FimIds
from diffusion_infill.engine.tiny import TinyArchitecture, tiny_config, tiny_model
from diffusion_infill.engine.training.fim import FIM_ARCHITECTURE, fim_model

PREFIX, SLOTS, GAP, VOCAB = 128, 24, 16, 4096
SPECIAL = dict(pad=0, eos=1, bos=2, image=3, boi=4, eoi=5)
SHAPES = {
    name: TinyArchitecture.of_shape(*shape(name))  # as `train --shape`; 4x256: the embedded model's
    for name in ("4x256", "3x256", "2x256", "2x384", "3x320")
}
BASELINE = "baseline 4x256"


def tokens(count: int) -> torch.LongTensor:
    return torch.randint(10, VOCAB, (1, count))


def denoising_pass(arch: TinyArchitecture) -> tuple[Callable[[], None], int]:
    model = tiny_model(tiny_config(arch, SPECIAL, canvas_length=32)).eval()
    cache = DynamicCache(config=model.config.text_config)
    with torch.inference_mode():
        model.model.encoder(input_ids=tokens(PREFIX), cache=cache)
    canvas, conditioning = tokens(SLOTS), torch.randn(1, SLOTS, VOCAB)
    positions = torch.arange(PREFIX, PREFIX + SLOTS).unsqueeze(0)

    def run() -> None:
        with torch.inference_mode():
            hidden = model.model.decoder(
                decoder_input_ids=canvas,
                cache=cache,
                decoder_position_ids=positions,
                self_conditioning_logits=conditioning,
            ).last_hidden_state
            model.lm_head(hidden[:, :GAP])

    return run, sum(p.numel() for p in model.parameters())


def decoding_step() -> tuple[Callable[[], None], int]:
    model = fim_model(FIM_ARCHITECTURE, VOCAB, FimIds(prefix=6, suffix=7, middle=8, end=9, bos=2, pad=0)).eval()
    with torch.inference_mode():
        cache = model(tokens(PREFIX), use_cache=True).past_key_values

    def run() -> None:
        with torch.inference_mode():
            model(tokens(1), cache=cache, use_cache=True)
            cache.crop(-1)  # back to the prefix, so every step sees the same cache

    return run, sum(p.numel() for p in model.parameters())


def measure(rounds: int, shapes: dict[str, TinyArchitecture]) -> dict[str, dict[str, float]]:
    runs = {name: denoising_pass(arch) for name, arch in shapes.items()} | {BASELINE: decoding_step()}
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(rounds):
        for name, (run, _) in runs.items():
            start = time.process_time()
            run()
            times[name].append((time.process_time() - start) * 1000)
    base = statistics.median(times[BASELINE])
    return {
        name: {
            "parameters": params,
            "pass_ms_median": round(statistics.median(times[name]), 2),
            "over_baseline": round(statistics.median(times[name]) / base, 2),
        }
        for name, (_, params) in runs.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=60)
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    results = measure(args.rounds, SHAPES)
    print("| decoder | parameters | pass p50 | against the baseline's step |\n| --- | --- | --- | --- |")
    for name, row in results.items():
        cost = f"{row['pass_ms_median']:.1f} ms | {row['over_baseline']:.2f}x"
        print(f"| {name} | {row['parameters'] / 1e6:.2f}M | {cost} |")
    print(json.dumps(results))


if __name__ == "__main__":
    main()
