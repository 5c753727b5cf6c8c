"""A mixture-of-experts forward for quantized expert weights: tokens sorted by expert, one matmul
pair per hit expert, one host synchronisation a layer.

transformers' fused implementations (grouped_mm, batched_mm: integrations/moe.py) index or
transpose the whole 3D weight, which torchao's quantized tensors do not implement; its eager loop
(modeling_diffusion_gemma.py:558-583) selects one expert at a time but synchronises with the host
twice per hit expert (`expert_idx == self.num_experts` and torch.where's data-dependent shape): a
256-slot canvas hits nearly all 128 experts in each of 30 layers, some 7,700 synchronisations a
pass. Here the (token, expert) pairs are sorted by expert once, their counts come to the host
once, and each hit expert runs F.linear on its weight's row block (aten.select, which torchao
implements, as eager uses). An int8 weight-only expert (a scale per row, what --quantize int8
stores) is read as its integers and row scales, computing Int8Tensor's own weight-only per-row
formula (torchao quantization/quantize_/workflows/int8/int8_tensor.py, the `aten.linear` weight-only
branch) on plain tensors: torchao's select and F.linear cost a tensor-subclass dispatch each, two of
each per hit expert, more than the products at these sizes (docs/performance.md, "The experts'
implementations"). Registered in transformers' ExpertsInterface as `sorted`.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch.nn import functional
from transformers.integrations.moe import ALL_EXPERTS_FUNCTIONS

NAME = "sorted"

ExpertLinear = Callable[[torch.Tensor, int], torch.Tensor]  # (rows, expert) -> rows @ weight[expert].T


def expert_linear(weights: torch.Tensor) -> ExpertLinear:
    """How to multiply rows by one expert of a 3D weight (experts, out, in)."""
    qdata, scale = getattr(weights, "qdata", None), getattr(weights, "scale", None)
    # the conditions of Int8Tensor's weight-only per-row branch (which ignores the zero point)
    per_row_int8 = (
        qdata is not None
        and qdata.dtype == torch.int8
        and scale is not None
        and weights.block_size[-1] == qdata.shape[-1]
        and getattr(weights, "act_quant_kwargs", None) is None
        and getattr(weights, "act_pre_scale", None) is None
    )
    if per_row_int8:
        return lambda rows, expert: (
            functional.linear(rows, qdata[expert].to(rows.dtype)) * scale[expert].reshape(-1).to(rows.dtype)
        )
    return lambda rows, expert: functional.linear(rows, weights[expert])


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
    gate_up, down = expert_linear(self.gate_up_proj), expert_linear(self.down_proj)
    out = torch.zeros_like(hidden_states)
    start = 0
    for expert, count in enumerate(counts):
        if not count:
            continue
        rows = slice(start, start + count)
        start += count
        state = hidden_states[tokens[rows]]
        gate, up = gate_up(state, expert).chunk(2, dim=-1)
        mixed = down(self.act_fn(gate) * up, expert) * weights[rows]
        out.index_add_(0, tokens[rows], mixed.to(out.dtype))
    return out


ALL_EXPERTS_FUNCTIONS.register(NAME, sorted_experts_forward)
