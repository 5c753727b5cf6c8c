"""The architecture of the embedded model: a tiny DiffusionGemma built from a config.

Used by training and by the mechanics tests (random weights, no download). Every layer
is full attention with plain RoPE (contexts are a few hundred tokens), one expert beside
the dense MLP (the MoE block is required; more experts only cost time at this size),
and a vision tower of a few parameters that is never used.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from transformers import DiffusionGemmaConfig, DiffusionGemmaForBlockDiffusion

from diffusion_infill.engine import tokens

# the vision tower DiffusionGemma's config requires, of a few parameters: the engine never uses it
VISION = dict(
    model_type="gemma4_vision",
    hidden_size=8,
    intermediate_size=8,
    num_hidden_layers=1,
    num_attention_heads=1,
    num_key_value_heads=1,
    head_dim=8,
)


@dataclass(frozen=True)
class TinyArchitecture:
    vocab_size: int = 4096  # byte-level BPE trained on the corpus
    hidden_size: int = 256
    intermediate_size: int = 768  # dense MLP
    num_hidden_layers: int = 4
    num_attention_heads: int = 4  # head_dim 64
    num_key_value_heads: int = 2
    moe_intermediate_size: int = 64  # the single expert
    max_position_embeddings: int = 2048

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def of_shape(cls, layers: int, width: int) -> TinyArchitecture:
        """`layers` x `width` with today's proportions: 64-wide heads, two query heads per key/value
        head (one key/value head for an odd count, which it must divide), an MLP three times as
        wide (4 x 256 is the default)."""
        heads = width // 64
        return cls(
            hidden_size=width,
            intermediate_size=3 * width,
            num_hidden_layers=layers,
            num_attention_heads=heads,
            num_key_value_heads=heads // 2 if heads % 2 == 0 else 1,
        )


def config_token_ids(tokenizer) -> dict[str, int]:
    """The token ids `tiny_config` needs, from a tokenizer trained with diffusion_infill.engine.tokens."""
    names = {
        "pad": tokens.PAD,
        "eos": tokens.EOS,
        "bos": tokens.BOS,
        "image": tokens.IMAGE,
        "boi": tokens.BOI,
        "eoi": tokens.EOI,
    }
    return {key: tokenizer.convert_tokens_to_ids(token) for key, token in names.items()}


def tiny_config(arch: TinyArchitecture, special: dict[str, int], canvas_length: int) -> DiffusionGemmaConfig:
    """`special` maps pad/eos/bos/image/boi/eoi to token ids of the tokenizer."""
    head_dim = arch.hidden_size // arch.num_attention_heads
    text = dict(
        vocab_size=arch.vocab_size,
        hidden_size=arch.hidden_size,
        intermediate_size=arch.intermediate_size,
        num_hidden_layers=arch.num_hidden_layers,
        num_attention_heads=arch.num_attention_heads,
        num_key_value_heads=arch.num_key_value_heads,
        head_dim=head_dim,
        global_head_dim=head_dim,
        max_position_embeddings=arch.max_position_embeddings,
        layer_types=["full_attention"] * arch.num_hidden_layers,
        rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": 10_000.0}},
        num_experts=1,
        top_k_experts=1,
        moe_intermediate_size=arch.moe_intermediate_size,
        pad_token_id=special["pad"],
        eos_token_id=special["eos"],
        bos_token_id=special["bos"],
    )
    return DiffusionGemmaConfig(
        text_config=text,
        vision_config=VISION,
        canvas_length=canvas_length,
        image_token_id=special["image"],
        boi_token_id=special["boi"],
        eoi_token_id=special["eoi"],
    )


def tiny_model(config: DiffusionGemmaConfig) -> DiffusionGemmaForBlockDiffusion:
    return DiffusionGemmaForBlockDiffusion(config)
