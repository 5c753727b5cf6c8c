"""engine.completion.repeated_text: what followed the same tokens earlier in the file, offered at the cursor."""

from __future__ import annotations

from samples import BOX as CLASS

from diffusion_infill.engine.completion.repeated_text import DocumentDraft, document_draft, estimate, kind, offer
from diffusion_infill.engine.requests import InfillRequest


def test_the_tokens_after_the_same_tokens_earlier_are_the_draft():
    draft = document_draft(CLASS + "        self.count")
    assert draft == DocumentDraft(" = 0", matched_tokens=8, places=1)  # `items = [] self.count`


def test_the_most_tokens_found_earlier_decide_the_places():
    text = "a = f(x, 1)\nb = g(x, 2)\nc = f(x,"
    assert document_draft(text).text == " 1)"  # `f(x,` matches once; `(x,` alone also matched g's
    assert document_draft("a = g(x, 1)\nb = h(x, 2)\nc = f(x,") is None  # fewer than 3 tokens in common


def test_a_draft_is_at_most_four_tokens_of_a_line_and_what_all_places_share():
    text = "run(alpha, beta, gamma, delta, eps)\nrun(alpha, beta, zeta)\nx = 1\nrun(alpha,"
    draft = document_draft(text)
    assert draft.text == " beta," and draft.places == 2  # then `gamma` and `zeta`
    long_line = "call(one, two, three, four, five)\ncall(one,"
    assert document_draft(long_line).text == " two, three,"  # a comma is a token


def test_an_earlier_place_must_start_at_a_word_boundary_and_end_its_line_before_the_cursor():
    assert document_draft("value_total = 1\ntotal =") is None  # `total =` inside `value_total =`
    assert document_draft("x = abc + abc") is None  # the earlier place's line is the cursor's own


def test_nothing_in_common_after_the_places_is_no_draft():
    assert document_draft("f(a, b)\ng = 1\nf(a, c)\nh = 2\nf(a,") is None


def test_the_estimate_follows_the_kind_of_draft():
    one = document_draft(CLASS + "        self.count")
    several = document_draft(CLASS + "\n    def reset(self):\n        self.items")
    after_space = document_draft(CLASS + "        self.count = ")
    assert kind(one, CLASS + "        self.count") == "one place"
    assert several.places == 2 and kind(several, "self.items") == "several places"
    assert after_space is None or kind(after_space, "self.count = ") == "not after a word"
    assert estimate(several, "self.items") > estimate(one, "self.count") > estimate(one, "self.count ")
    assert all(0 < estimate(one, prefix) < 1 for prefix in ("x", " ", ""))


def test_a_draft_is_offered_only_at_a_line_end_and_where_it_keeps_closure():
    prefix = CLASS + "        self.count"
    assert offer(InfillRequest(prefix, "\n", "python")).text == " = 0"
    assert offer(InfillRequest(prefix, " + 1\n", "python")) is None  # code follows on the line
    broken = "print(x))\nprint(x"
    assert document_draft(broken).text == "))" and offer(InfillRequest(broken, "", "python")) is None


# VS Code closes `(` as it is typed: the cursor stands before a `)` the user never typed.
COUNTING = "total = sum(len(line) for line in lines)\ncount = sum(1 for line in li"


def test_before_closers_the_editor_added_the_draft_is_offered_without_them():
    assert offer(InfillRequest(COUNTING, ")\n", "python")).text == "nes"  # `)` is there already
    assert offer(InfillRequest(COUNTING, "\n", "python")).text == "nes)"  # typed without auto-closing
    quoted = 'print(f"{name}")\nprint(f"{na'
    assert offer(InfillRequest(quoted, '")\n', "python")).text == "me}"  # several closers
    assert offer(InfillRequest("keys = {a: [b]}\nkeys = {a: [", "]}\n", "python")).text == "b"  # nested


def test_before_closers_a_draft_that_holds_no_closer_is_offered_as_it_is_inside_the_brackets():
    """VS Code typed `)` after `TextWrapper(`: the earlier line's first four tokens stop before its own `)`
    (scripts/typing_bench.py retypes textwrap.py's `fill`: before this, nothing showed from `(` to `, **`)."""
    wrapped = "    w = TextWrapper(width=width, **kwargs)\n    w = TextWrapper("
    assert offer(InfillRequest(wrapped, ")\n", "python")).text == "width=width,"
    assert offer(InfillRequest(wrapped + "width=width, **", ")\n", "python")).text == "kwargs"  # then it ends so
    assert offer(InfillRequest(wrapped + "width=width, **kwargs", ")\n", "python")) is None  # `)` alone is left


def test_before_closers_a_draft_that_does_not_end_with_them_is_not_offered():
    assert offer(InfillRequest(COUNTING, "))\n", "python")) is None  # the earlier line closes once
    assert offer(InfillRequest(COUNTING, ") + 1\n", "python")) is None  # code after the closer
    assert offer(InfillRequest("f(x)\nf(x", ")\n", "python")) is None  # nothing but the closer left
    assert offer(InfillRequest("keys = {a: [b]}\nkeys = {a: [", "]\n", "python")) is None  # `b]}` ends in `}`


def test_a_long_line_before_the_last_tokens_changes_nothing():
    earlier = "config.load(path, strict=True)\n"
    assert document_draft(earlier + "config.load(path,").text == " strict=True)"
    for long_line in ("[1, 2], " * 20_000, "z" * 100_000 + " "):
        assert document_draft(earlier + long_line + "config.load(path,").text == " strict=True)"
    assert document_draft("[1, 2], " * 20_000 + "[1,") is None  # no earlier place ends its line


def test_the_closure_check_of_a_draft_reads_a_few_thousand_characters_around_the_cursor(monkeypatch):
    """The server offers drafts on its event loop at every keystroke: parsing the whole 40,000-character
    window cost 30-66 ms there, so the check reads CHECK_BEFORE and CHECK_AFTER characters of it."""
    from diffusion_infill.engine import syntax_check
    from diffusion_infill.engine.completion import repeated_text

    parsed, check = [], syntax_check.check

    def recording(prefix: str, candidate: str, suffix: str, language: str | None):
        parsed.append((len(prefix), len(suffix)))
        return check(prefix, candidate, suffix, language)

    monkeypatch.setattr(syntax_check, "check", recording)
    filler = "def f(a):\n    return a + 1\n\n" * 1_500  # 40,000 characters before the class
    assert offer(InfillRequest(filler + CLASS + "        self.count", "\n" + filler, "python")).text == " = 0"
    assert parsed == [(repeated_text.CHECK_BEFORE, repeated_text.CHECK_AFTER)]
