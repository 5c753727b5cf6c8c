"""Specification of the model inputs built from the text around the cursor (engine.completion.prefix)."""

import pytest

from diffusion_infill.engine.completion.prefix import CHARS_PER_TOKEN_BOUND, encode_context

MAX_PREFIX, SUFFIX_TOKENS = 64, 4
LONG_FILE = "".join(f"value_{n} = compute(value_{n - 1}, {n})\n" for n in range(1, 200))


@pytest.fixture
def encode(tiny_tokenizer, ids):
    def encode(prefix, suffix="", max_prefix=MAX_PREFIX, suffix_tokens=SUFFIX_TOKENS, heal=True, context_tokens=0):
        return encode_context(
            tiny_tokenizer, ids.bos, prefix, suffix, max_prefix, suffix_tokens, heal=heal, context_tokens=context_tokens
        )

    return encode


def text_of(tokenizer, token_ids, bos):
    return tokenizer.decode([t for t in token_ids if t != bos])


# The prefix window


def test_bos_comes_first_when_the_window_starts_at_the_file_start(encode, ids):
    assert encode("import os\n").prefix_ids[0] == ids.bos


def test_bos_comes_first_for_an_empty_file(encode, ids):
    assert encode("").prefix_ids == [ids.bos]


def test_no_bos_when_the_character_window_cuts_the_file(encode, ids):
    assert len(LONG_FILE) > MAX_PREFIX * CHARS_PER_TOKEN_BOUND

    assert ids.bos not in encode(LONG_FILE).prefix_ids


def test_no_bos_when_the_token_budget_cuts_the_file(encode, ids):
    # short enough for the character window, too many tokens for the budget
    prefix = "(" * (MAX_PREFIX * 2)
    assert len(prefix) <= MAX_PREFIX * CHARS_PER_TOKEN_BOUND

    assert ids.bos not in encode(prefix).prefix_ids


@pytest.mark.parametrize("prefix", ["x = 1\n", "(" * 100, "[]{}" * 100, LONG_FILE, "word " * 300])
@pytest.mark.parametrize("max_prefix", [8, 33, MAX_PREFIX])
def test_prefix_is_at_most_max_prefix_tokens(encode, prefix, max_prefix):
    assert 0 < len(encode(prefix, max_prefix=max_prefix).prefix_ids) <= max_prefix


def test_cut_prefix_ends_at_the_cursor(encode, tiny_tokenizer, ids):
    context = encode(LONG_FILE)

    assert LONG_FILE.endswith(text_of(tiny_tokenizer, context.prefix_ids, ids.bos) + context.healed)


def test_window_moves_in_whole_chunks_so_a_longer_prefix_keeps_the_cache_reusable(encode, ids):
    prefix = "(" * 80  # more tokens than MAX_PREFIX: the window start is cut
    shorter, longer = encode(prefix).prefix_ids, encode(prefix + "(").prefix_ids

    assert ids.bos not in shorter
    assert longer[: len(shorter)] == shorter


# Token healing


@pytest.mark.parametrize("prefix", ["value=valu", "def compute_tot", "import os\nos.pa", "x = self._na"])
def test_healing_takes_back_the_last_token_inside_a_word(encode, prefix):
    context = encode(prefix)

    assert context.healed
    assert prefix.endswith(context.healed)


@pytest.mark.parametrize("prefix", ["value=valu", "def compute_tot", "import os\nos.pa"])
def test_prefix_ids_and_healed_text_together_spell_the_prefix(encode, tiny_tokenizer, ids, prefix):
    context = encode(prefix)

    assert text_of(tiny_tokenizer, context.prefix_ids, ids.bos) + context.healed == prefix


@pytest.mark.parametrize("prefix", ["x = 1 ", "x = foo(", "items[", "a.b.", "print(x)\n", "    ", "d = {'k': 1,"])
def test_no_healing_after_whitespace_or_punctuation(encode, prefix):
    assert encode(prefix).healed == ""


def test_no_healing_when_disabled(encode):
    assert encode("value=valu", heal=False).healed == ""


def test_healing_a_one_word_file_leaves_bos_as_the_whole_prefix(encode, ids):
    context = encode("x")

    assert context.prefix_ids == [ids.bos]
    assert context.healed == "x"


# Context from further up the file

CONTEXT_TOKENS = 32
RELATED = "TARGET_SETTING = config(alpha)\n"
FILLER = "".join(f"filler_{n} = {n}\n" for n in range(300))


@pytest.mark.parametrize("prefix", ["x = 1\n", LONG_FILE, "word " * 300, RELATED + FILLER + "TARGET_SETTING."])
def test_without_context_tokens_the_prefix_is_as_before(encode, tiny_tokenizer, ids, prefix):
    default = encode_context(tiny_tokenizer, ids.bos, prefix, "", MAX_PREFIX, SUFFIX_TOKENS)

    assert encode(prefix, context_tokens=0) == default


def test_related_lines_from_further_up_come_before_the_window(encode, tiny_tokenizer):
    prefix_ids = encode(RELATED + FILLER + "result = TARGET_SETTING.", context_tokens=CONTEXT_TOKENS).prefix_ids
    related = tiny_tokenizer.encode(RELATED, add_special_tokens=False)

    assert prefix_ids[: len(related)] == related
    assert len(related) <= CONTEXT_TOKENS


def test_with_context_the_prefix_is_max_prefix_tokens_ending_at_the_cursor(encode, tiny_tokenizer):
    prefix = RELATED + FILLER + "result = TARGET_SETTING."
    prefix_ids = encode(prefix, context_tokens=CONTEXT_TOKENS).prefix_ids
    window = prefix_ids[len(tiny_tokenizer.encode(RELATED, add_special_tokens=False)) :]

    assert len(prefix_ids) == MAX_PREFIX
    assert window == tiny_tokenizer.encode(prefix, add_special_tokens=False)[-len(window) :]


def test_context_is_not_added_when_the_prefix_fits(encode, tiny_tokenizer):
    def length(text):
        return len(tiny_tokenizer.encode(text, add_special_tokens=False))

    filler = ""
    while length(RELATED + filler + "ab = 1\nx = TARGET_SETTING.") < MAX_PREFIX - 1:  # BOS takes one
        filler += "ab = 1\n"
    prefix = RELATED + filler + "x = TARGET_SETTING."
    assert length(prefix) > MAX_PREFIX - CONTEXT_TOKENS + length(RELATED)  # the related line is whole before it

    assert encode(prefix, context_tokens=CONTEXT_TOKENS) == encode(prefix)


def test_lines_are_chosen_from_before_the_shortest_window(encode, tiny_tokenizer):
    """A related line inside the last max_prefix - context_tokens tokens is in the window already."""
    prefix = RELATED + FILLER + "y = TARGET_SETTING\nz = 1\nx = TARGET_SETTING."
    related = tiny_tokenizer.encode(RELATED, add_special_tokens=False)

    assert encode(prefix, context_tokens=CONTEXT_TOKENS).prefix_ids[: len(related)] == related


def test_without_related_lines_the_window_is_as_before(encode):
    prefix = RELATED + FILLER + "result = other_name("

    assert encode(prefix, context_tokens=CONTEXT_TOKENS) == encode(prefix)


def test_healing_keeps_working_with_context(encode, tiny_tokenizer):
    prefix = RELATED + FILLER + "result = TARGET_SETTING.confi"
    context = encode(prefix, context_tokens=CONTEXT_TOKENS)
    related = tiny_tokenizer.encode(RELATED, add_special_tokens=False)

    assert context.healed and prefix.endswith(context.healed)
    assert context.prefix_ids[: len(related)] == related
    assert prefix.endswith(tiny_tokenizer.decode(context.prefix_ids[len(related) :]) + context.healed)


# The suffix head


def test_suffix_head_is_cut_to_suffix_tokens(encode):
    assert len(encode("x = ", LONG_FILE).suffix_ids) == SUFFIX_TOKENS


def test_short_suffix_is_kept_whole(encode, tiny_tokenizer):
    assert encode("x = ", ")\n").suffix_ids == tiny_tokenizer.encode(")\n", add_special_tokens=False)


def test_empty_suffix_has_no_head(encode):
    assert encode("x = ", "").suffix_ids == []


def test_suffix_head_is_the_start_of_the_suffix(encode, tiny_tokenizer):
    head = encode("x = ", LONG_FILE).suffix_ids

    assert LONG_FILE.startswith(tiny_tokenizer.decode(head))
