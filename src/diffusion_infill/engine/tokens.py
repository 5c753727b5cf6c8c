"""The special tokens the infilling canvas relies on, looked up by name in the tokenizer."""

from __future__ import annotations

from dataclasses import dataclass

PAD = "<pad>"
EOS = "<eos>"
BOS = "<bos>"
MASK = "<mask>"
END = "<end>"  # closes one insertion; slots after it are unused and dropped
IMAGE, BOI, EOI = "<image>", "<boi>", "<eoi>"  # reserved: DiffusionGemmaConfig wants ids for them

SPECIAL_TOKENS = (PAD, EOS, BOS, MASK, END, IMAGE, BOI, EOI)
# the autoregressive baseline's fill-in-the-middle markers (engine.baseline.autoregressive), also sent to servers
FIM_TOKENS = ("<fim_prefix>", "<fim_suffix>", "<fim_middle>")


def never_written(tokenizer, end: int) -> tuple[int, ...]:
    """Every added (special) token of a transformers tokenizer but END: none of them is text,
    and decoded into a completion it would be written into the file as markup (`<image>`).
    END is structural: it closes an insertion, so a sampler must be able to choose it."""
    return tuple(sorted(set(tokenizer.added_tokens_decoder) - {end}))


def never_written_texts(tokenizer=None, *markers: str) -> tuple[str, ...]:
    """The text of every token that is markup, not code, END included: a repair candidate holding
    more of them than its input wrote one into the file. This repository's special tokens and FIM
    markers, the tokenizer's added tokens when it is known, and `markers` (a server's prompt
    markers and stop strings, when its tokenizer is not visible)."""
    added = tokenizer.convert_ids_to_tokens(sorted(tokenizer.added_tokens_decoder)) if tokenizer is not None else []
    return tuple(dict.fromkeys([*SPECIAL_TOKENS, *FIM_TOKENS, *added, *markers]))


@dataclass(frozen=True)
class SpecialIds:
    pad: int
    eos: int
    bos: int
    mask: int
    end: int
    unwritten: tuple[int, ...] = ()  # never_written: kept out of every slot the sampler fills

    @classmethod
    def from_tokenizer(cls, tokenizer) -> SpecialIds:
        """Reads ids from a transformers tokenizer."""
        ids = {
            name: tokenizer.convert_tokens_to_ids(token)
            for name, token in (("pad", PAD), ("eos", EOS), ("bos", BOS), ("mask", MASK), ("end", END))
        }
        missing = [name for name, value in ids.items() if value is None]
        if missing:
            raise ValueError(f"tokenizer lacks the infill special tokens: {', '.join(missing)}")
        return cls(**ids, unwritten=never_written(tokenizer, ids["end"]))
