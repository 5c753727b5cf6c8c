"""Held-out completion quality and speed of a checkpoint (default: the embedded model).

Cases: cursor positions inside lines of held-out stdlib files (never trained on), with
the rest of the line as the expected completion; the probe set used during training is
drawn with another seed. `context_gain_nats` checks that the model reads the prefix: the
log-probability of the true next token given its own prefix minus given another file's.
Prints one JSON object on the last line of stdout.

    python -m diffusion_infill.bench.heldout --cases 60
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
from dataclasses import asdict

import torch

from diffusion_infill.bench.metrics import aggregate, run_case
from diffusion_infill.engine.completion.canvas import completion_canvas
from diffusion_infill.engine.completion.prefix_cache import PrefixCache
from diffusion_infill.engine.factory import create_engine
from diffusion_infill.engine.loading import load
from diffusion_infill.engine.settings import EngineSettings
from diffusion_infill.engine.training.corpus import stdlib_files
from diffusion_infill.engine.training.probes import held_out_line_cases

CASE_SEED = 20261202  # not the training probe seed (1234)


def evaluate(engine, cases) -> dict:
    """diffusion_infill.bench.metrics aggregates, plus the denoising steps and their latency."""
    rows = [run_case(engine, case, engine.loaded.tokenizer, prefill_passes=1) for case in cases]
    steps = [r["forward_passes"] - 1 for r in rows]
    return {
        **aggregate(rows),
        "steps_median": statistics.median(steps),
        "step_ms_median": statistics.median(
            (r["total_ms"] - r["prefill_ms"]) / max(r["forward_passes"] - 1, 1) for r in rows
        ),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def _first_slot_logprob(loaded, prefix_ids: list[int], target: int, suffix_ids: list[int]) -> float:
    spec, ids = loaded.spec, loaded.ids
    cache = PrefixCache().encode(loaded.model, prefix_ids)
    canvas = completion_canvas(suffix_ids, spec.gap_slots, spec.suffix_head, ids)
    with torch.no_grad():
        logits = loaded.model(decoder_input_ids=torch.tensor([canvas.tokens]), cache=cache).logits
    return torch.log_softmax(logits[0, canvas.gaps[0].start], dim=-1)[target].item()


def context_gain(loaded, count: int = 24) -> float:
    """Mean log-probability of the true next token given its own prefix, minus given another
    file's prefix: above zero when the first gap slot reads the context."""
    tokenizer, files = loaded.tokenizer, [d for d in stdlib_files(held_out=True) if len(d.text) > 4000]
    windows = []
    for index in range(count):
        text = files[index % len(files)].text
        ids = tokenizer.encode(text[1000 + 97 * index : 3000 + 97 * index], add_special_tokens=False)
        windows.append((ids[:96], ids[96], ids[97 : 97 + loaded.spec.suffix_head]))
    own = [_first_slot_logprob(loaded, p, t, s) for p, t, s in windows]
    other = [_first_slot_logprob(loaded, windows[i - 1][0], t, s) for i, (_, t, s) in enumerate(windows)]
    return sum(own) / count - sum(other) / count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model")
    parser.add_argument("--cases", type=int, default=60)
    parser.add_argument("--seed", type=int, default=0)
    for name in ("max-steps", "entropy-bound", "t-min", "t-max", "confidence-threshold"):
        parser.add_argument(f"--{name}", type=float)
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    loaded = load(args.model)
    settings = EngineSettings(mode="single-line").with_overrides(
        max_steps=int(args.max_steps) if args.max_steps else None,
        entropy_bound=args.entropy_bound,
        t_min=args.t_min,
        t_max=args.t_max,
        confidence_threshold=args.confidence_threshold,
    )
    engine = create_engine(loaded, settings)
    result = {
        "model": loaded.source,
        "torch_threads": torch.get_num_threads(),
        "settings": asdict(settings),
        **evaluate(engine, held_out_line_cases(args.cases, seed=CASE_SEED)),
        "context_gain_nats": context_gain(loaded),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
