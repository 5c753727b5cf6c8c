"""A mixture-of-experts forward for quantized expert weights: tokens sorted by expert, one matmul
pair per hit expert, one host synchronisation a layer.

transformers' fused implementations (grouped_mm, batched_mm: integrations/moe.py) index or
transpose the whole 3D weight, which torchao's quantized tensors do not implement; its eager loop
(modeling_diffusion_gemma.py:558-583) selects one expert at a time but synchronises with the host
twice per hit expert (`expert_idx == self.num_experts` and torch.where's data-dependent shape): a
256-slot canvas hits nearly all 128 experts in each of 30 layers, some 7,700 synchronisations a
pass. Here the (token, expert) pairs are sorted by expert once, their counts come to the host
once, and each hit expert runs F.linear on its weight's row block (aten.select, which torchao
implements, as eager uses). Registered in transformers' ExpertsInterface as `sorted`.
"""

from __future__ import annotations

import torch
from torch.nn import functional
from transformers.integrations.moe import ALL_EXPERTS_FUNCTIONS

NAME = "sorted"


def sorted_experts_forward(
    self: torch.nn.Module, hidden_states: torch.Tensor, top_k_index: torch.Tensor, top_k_weights: torch.Tensor
) -> torch.Tensor:
    """The experts' output for (tokens, hidden) `hidden_states` routed to `top_k_index` with
    `top_k_weights`: the eager loop's sum, in expert order."""
    top_k = top_k_index.size(-1)
    experts = top_k_index.reshape(-1)
    order = torch.argsort(experts, stable=True)
    tokens = order // top_k
    weights = top_k_weights.reshape(-1)[order, None]
    counts = torch.bincount(experts, minlength=self.num_experts).tolist()  # the one synchronisation
    out = torch.zeros_like(hidden_states)
    start = 0
    for expert, count in enumerate(counts):
        if not count:
            continue
        rows = slice(start, start + count)
        start += count
        state = hidden_states[tokens[rows]]
        gate, up = functional.linear(state, self.gate_up_proj[expert]).chunk(2, dim=-1)
        mixed = functional.linear(self.act_fn(gate) * up, self.down_proj[expert]) * weights[rows]
        out.index_add_(0, tokens[rows], mixed.to(out.dtype))
    return out


ALL_EXPERTS_FUNCTIONS.register(NAME, sorted_experts_forward)
