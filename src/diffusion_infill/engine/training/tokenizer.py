"""A byte-level BPE tokenizer trained on the training corpus (byte-level: any file encodes)."""

from __future__ import annotations

import random

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

from diffusion_infill.engine import tokens
from diffusion_infill.engine.training.corpus import Document

SAMPLE_CHARACTERS = 8_000_000


def train_tokenizer(documents: list[Document], vocab_size: int, seed: int) -> PreTrainedTokenizerFast:
    rng = random.Random(seed)
    sample = rng.sample(documents, len(documents))
    texts, total = [], 0
    for doc in sample:
        texts.append(doc.text)
        total += len(doc.text)
        if total > SAMPLE_CHARACTERS:
            break
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(tokens.SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    bpe.train_from_iterator(texts, trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        pad_token=tokens.PAD,
        eos_token=tokens.EOS,
        bos_token=tokens.BOS,
        mask_token=tokens.MASK,
        additional_special_tokens=[tokens.END],
    )
