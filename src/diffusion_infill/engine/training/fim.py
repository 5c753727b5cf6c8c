"""Fill-in-the-middle batches and model for the autoregressive baseline (engine.baseline.autoregressive).

The baseline learns from the same streams, the same cursor positions and the same
insertion lengths as the diffusion objective (it reuses `objective.BatchMaker`'s
sampling), sees the same context (prefix up to 128 tokens, an 8-token suffix head) and about as
many tokens per batch (24 rows of P + 36 tokens against 12 prefixes of P tokens and 48
canvases of 32). The loss is
next-token cross-entropy over the whole PSM sequence, as in FIM pretraining
(arXiv:2207.14255); it also covers the prefix, like the diffusion objective's encoder loss.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from diffusion_infill.engine.baseline.autoregressive import FimIds, fim_prompt
from diffusion_infill.engine.tiny import TinyArchitecture
from diffusion_infill.engine.training.objective import IGNORE, BatchMaker

# Same width, depth, heads and vocabulary as the embedded DiffusionGemma; the MLP is
# wider so the parameter counts match (4.98M here, 5.03M there: its expert, router and
# per-layer norms have no counterpart in Llama).
FIM_ARCHITECTURE = TinyArchitecture(intermediate_size=1024)
ROWS_PER_PREFIX = 2  # rows per batch = ObjectiveConfig.prefixes x this


def fim_model(arch: TinyArchitecture, vocab_size: int, ids: FimIds) -> LlamaForCausalLM:
    config = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=arch.hidden_size,
        intermediate_size=arch.intermediate_size,
        num_hidden_layers=arch.num_hidden_layers,
        num_attention_heads=arch.num_attention_heads,
        num_key_value_heads=arch.num_key_value_heads,
        max_position_embeddings=arch.max_position_embeddings,
        tie_word_embeddings=True,  # as DiffusionGemma's head
        bos_token_id=ids.bos,
        eos_token_id=ids.end,
        pad_token_id=ids.pad,
    )
    return LlamaForCausalLM(config)


@dataclass
class FimBatch:
    input_ids: torch.LongTensor  # (rows, longest) PSM sequences, right-padded
    labels: torch.LongTensor  # IGNORE on padding

    @property
    def tokens(self) -> int:
        """Tokens the model reads, padding included (for tokens a second)."""
        return self.input_ids.numel()


class FimBatchMaker(BatchMaker):
    def __init__(self, *args, fim_ids: FimIds, **kwargs):
        super().__init__(*args, **kwargs)
        self.fim_ids = fim_ids

    def example(self, tokens: np.ndarray, start: int, prefix_length: int) -> list[int]:
        c = self.config
        length = self.insertion_length(tokens, start)
        prefix = self.prefix(tokens, start, prefix_length).tolist()
        suffix = tokens[start + length : start + length + c.suffix_head].tolist()
        middle = tokens[start : start + length].tolist()
        return fim_prompt(prefix, suffix, self.fim_ids) + middle + [self.fim_ids.end]

    def make(self) -> FimBatch:
        c, rng = self.config, self.rng
        prefix_length = int(rng.choice(c.prefix_lengths))
        rows = []
        for _ in range(c.prefixes * ROWS_PER_PREFIX):
            tokens, start = self.sample_start(prefix_length)
            rows.append(self.example(tokens, start, prefix_length))
        longest = max(len(row) for row in rows)
        input_ids = torch.full((len(rows), longest), self.fim_ids.pad, dtype=torch.long)
        labels = torch.full((len(rows), longest), IGNORE, dtype=torch.long)
        for index, row in enumerate(rows):
            input_ids[index, : len(row)] = torch.tensor(row)
            labels[index, : len(row)] = torch.tensor(row)
        return FimBatch(input_ids, labels)


def loss(model: LlamaForCausalLM, batch: FimBatch) -> tuple[torch.Tensor, dict[str, float]]:
    value = model(input_ids=batch.input_ids, labels=batch.labels).loss
    return value, {"fim": value.item()}
