"""Quantized weights (`--quantize int8|int4`) through transformers' torchao integration (TorchAoConfig).

Why torchao and not bitsandbytes: most of a DiffusionGemma's weights are its experts, stored as 3D
parameters (`experts.gate_up_proj`, `experts.down_proj`: about 23 of 26B-A4B's 25 billion), not as
nn.Linear modules. bitsandbytes replaces nn.Linear modules only and would leave the experts in
bfloat16 (over 45 GB); torchao quantizes parameters by name (FqnToConfig), experts included.
int8 is weight-only with a scale per row (Int8WeightOnlyConfig), on the CPU and on CUDA; int4 is
weight-only in groups of 64 (Int4WeightOnlyConfig, tile-packed for CUDA's tinygemm kernel, which
also packs experts and selects one), on CUDA only and in bfloat16.

What transformers does not do by itself for this model:
- `modules_to_not_convert` is given: left at None, transformers skips every tied weight, and the
  encoder's layers are tied to the decoder's (one set of weights), so nothing would be quantized.
- `experts_implementation="sorted"` (engine.sorted_experts): the default grouped_mm transposes the 3D
  weight and batched_mm indexes it, which torchao's tensors do not implement; sorted selects one
  expert's weight (aten.select) as eager does, without eager's two host synchronisations per expert.
- The decoder runs under torch.no_grad, not inference_mode (completion/sampler.py): selecting an
  expert of an Int8Tensor fails in inference mode ("Cannot set version_counter for inference tensor").

Left in the loaded dtype: the embedding (tied to lm_head: every logit goes through it), the
routers (which experts a token goes to), norms, and the vision tower the engine never uses.
"""

from __future__ import annotations

import re

import torch

from diffusion_infill.engine.checkpoint import TORCHAO_MISSING, ModelLoadError, quantize_problem

# Module weights and expert parameters, by name: the layers' attention and MLP projections, the
# self-conditioning MLP, and the experts.
_LINEARS = (
    r"re:.*(\.layers\.\d+\.(self_attn\.[qkvo]_proj|mlp\.(gate|up|down)_proj)"
    r"|\.self_conditioning\.(gate|up|down)_proj)"
)
_EXPERTS = r"re:.*\.layers\.\d+\.experts\.(gate_up_proj|down_proj)"
_LINEAR, _EXPERT = re.compile(_LINEARS.removeprefix("re:")), re.compile(_EXPERTS.removeprefix("re:"))
# weights sharing one int4 scale and zero point: torchao leaves a weight whose input width is no
# multiple of it unquantized, and 26B-A4B's experts are 704 wide (5.5 x 128, 11 x 64)
INT4_GROUP = 64


def _weight_config(mode: str):
    """torchao's config for one weight in `mode`."""
    try:
        from torchao.quantization import Int4WeightOnlyConfig, Int8WeightOnlyConfig
    except ImportError:
        raise ModelLoadError(TORCHAO_MISSING.format(mode=mode)) from None
    if mode == "int8":
        return Int8WeightOnlyConfig()
    return Int4WeightOnlyConfig(group_size=INT4_GROUP, int4_packing_format="tile_packed_to_4d")


def _torchao_config(mode: str):
    """The whole model's config: each weight named by _LINEARS and _EXPERTS."""
    config = _weight_config(mode)  # first: its import names the way out when torchao is missing
    from torchao.quantization import FqnToConfig

    return FqnToConfig({_LINEARS: config, _EXPERTS: config})


def loading_options(mode: str | None, device: torch.device, dtype: torch.dtype) -> dict:
    """What `from_pretrained` needs besides the dtype to load the weights quantized as `mode`; nothing
    for none. Raises ModelLoadError for a mode the device cannot run, or without torchao."""
    if not mode or mode == "none":
        return {}
    if problem := quantize_problem(mode, device.type):
        raise ModelLoadError(problem)
    if mode == "int4" and dtype != torch.bfloat16:
        raise ModelLoadError(f"--quantize int4 runs in bfloat16 (tinygemm), not {str(dtype).removeprefix('torch.')}")
    from transformers import TorchAoConfig

    # the vision tower: not a tied weight, named so that transformers does not skip the tied layers
    config = TorchAoConfig(quant_type=_torchao_config(mode), modules_to_not_convert=["vision_tower"])
    return dict(quantization_config=config, experts_implementation="eager")


def is_quantized_weight(name: str) -> bool:
    """Whether a parameter of this name (`model.decoder.layers.0.experts.down_proj`) is one that
    --quantize stores as integers."""
    module, key = name.rsplit(".", 1)
    return bool(key == "weight" and _LINEAR.fullmatch(module) or _EXPERT.fullmatch(name))


def quantize_in_place(model: torch.nn.Module, mode: str) -> None:
    """Quantizes a model built in memory (bench/throughput.py: random weights never written to disk)
    with the same configs as loading; a weight shared by two modules (the encoder's layers are the
    decoder's) is quantized once and shared again. Its experts must run sorted (loading_options)."""
    if mode == "none":
        return
    from torchao.quantization import FqnToConfig, quantize_

    config, done = _weight_config(mode), {}  # id of a float weight -> (it, its quantized form)
    for name, module in model.named_modules():
        for key, weight in list(module.named_parameters(recurse=False)):
            if not is_quantized_weight(f"{name}.{key}"):
                continue
            if id(weight) not in done:
                quantize_(module, FqnToConfig({key: config}), filter_fn=None)
                done[id(weight)] = weight, getattr(module, key)
            setattr(module, key, done[id(weight)][1])


def quantized_dtype(mode: str | None, requested: str | None) -> str | None:
    """The dtype to load in: int4 needs bfloat16, so auto means bfloat16 there on any device."""
    return "bfloat16" if mode == "int4" and (not requested or requested == "auto") else requested


def storage_bytes(tensor: torch.Tensor) -> int:
    """Bytes a tensor holds: a quantized one's integer data, scales and zero points added up."""
    if hasattr(tensor, "__tensor_flatten__"):  # a tensor subclass (torchao's): its inner tensors
        names, _ = tensor.__tensor_flatten__()
        return sum(storage_bytes(inner) for name in names if (inner := getattr(tensor, name)) is not None)
    return tensor.numel() * tensor.element_size()


def weight_bytes(model: torch.nn.Module) -> int:
    """Bytes of the model's parameters, each shared one (tied) counted once."""
    return sum(storage_bytes(parameter) for parameter in model.parameters())


def is_quantized(model: torch.nn.Module) -> bool:
    return getattr(model, "hf_quantizer", None) is not None
