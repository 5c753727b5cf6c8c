"""Syntax-closure check for inline completions (the languages it knows: engine.languages).

A completion is inserted between ``prefix`` and ``suffix``.  It must never
leave the file syntactically worse than ``prefix + suffix`` alone: no new
tree-sitter ERROR/MISSING nodes, no new unbalanced or duplicated brackets, no
new unclosed Markdown code fence.  Problems are reported as character offsets
into the candidate so the caller can re-noise or truncate exactly there.
"""

from __future__ import annotations

import dataclasses
import re
import threading
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cache, lru_cache
from itertools import accumulate

from tree_sitter import Language, Node, Parser, Query, QueryCursor

from diffusion_infill.engine import languages

# "${" opens a template substitution and "{|" a Flow-style exact object type;
# both are distinct tokens that the ordinary closers end.
_PAIRS = {"(": ")", "[": "]", "{": "}", "${": "}", "{|": "|}"}
_CLOSERS = frozenset(")]}")
_CLOSING_CHARACTERS = frozenset(b")]}\"'`")  # what a string's or a bracket's closing token is made of
_QUOTES = (b'"', b"'", b"`")
_TEXT_BRACKETS = re.compile(rb"[()\[\]{}]")
_OPENING = re.compile(r"[(\[{]")
_CLOSING = re.compile(r"[)\]}]")

# Markdown prose uses brackets freely ("1)", ":)"), so only fences count there.
_PROSE_LANGUAGES = frozenset({"markdown"})
_FENCE_QUERY = "(fenced_code_block) @fence"

# The baseline (prefix + suffix) repeats across calls for one cursor position,
# and longest_valid_prefix re-checks it for every cut point.
_ANALYSIS_CACHE_SIZE = 32


@dataclass(frozen=True)
class Problem:
    """Where in the candidate the damage is, in characters (not bytes).

    Damage that surfaces in the prefix or suffix is clamped to the candidate's
    nearest edge, so ``0 <= start <= end <= len(candidate)`` always holds.
    """

    start: int
    end: int  # exclusive
    kind: str  # "error", "missing", "bracket", "duplicate-closer" or "fence"
    message: str


@dataclass(frozen=True)
class ClosureReport:
    valid: bool
    problems: tuple[Problem, ...]

    def first_bad_offset(self) -> int | None:
        """Where to re-noise or truncate from; None when valid."""
        return min((problem.start for problem in self.problems), default=None)


_VALID = ClosureReport(valid=True, problems=())


def check(prefix: str, candidate: str, suffix: str, language: str | None) -> ClosureReport:
    """Whether inserting ``candidate`` keeps the file's syntax no worse."""
    if language is not None and not languages.is_known(language):
        raise ValueError(f"unsupported language: {language!r}")
    if not candidate:
        return _VALID
    problems = _problems(prefix, candidate, suffix, language)
    if not problems:
        return _VALID
    duplicate = _duplicate_closer(prefix, candidate, suffix, language)
    return ClosureReport(valid=False, problems=(duplicate,) if duplicate else problems)


def longest_valid_prefix(prefix: str, candidate: str, suffix: str, language: str | None) -> str:
    """Longest prefix of ``candidate`` that ``check`` accepts.

    Validity is not monotone in the cut length (cutting inside a string can
    break a valid candidate), so bisection would be wrong.  Instead the cut
    points are line ends plus the start of every problem found on the way,
    tried longest first; each failed try can only add shorter cut points.
    """
    pending = {len(candidate), *(i for i, char in enumerate(candidate) if char == "\n")}
    while pending:
        cut = max(pending)
        pending.remove(cut)
        report = check(prefix, candidate[:cut], suffix, language)
        if report.valid:
            return candidate[:cut]
        pending.update(problem.start for problem in report.problems if problem.start < cut)
    return ""


def first_valid(prefix: str, candidates: Iterable[str], suffix: str, language: str | None) -> str:
    """The first candidate insertion that ``check`` accepts, else "" (which always keeps
    closure). Engines pass their insertion cut at token boundaries, longest first."""
    for candidate in candidates:
        if check(prefix, candidate, suffix, language).valid:
            return candidate
    return ""


@dataclass(frozen=True, order=True)
class _Flaw:
    """A syntax flaw in a whole document, in UTF-8 byte offsets."""

    start: int
    end: int
    kind: str
    message: str


_Token = tuple[int, int, str]  # start byte, end byte, bracket text


@dataclass(frozen=True)
class _Brackets:
    flaws: tuple[_Flaw, ...]
    partners: dict[int, _Token]  # start byte of each matched bracket -> its partner
    lone: frozenset[int] = frozenset()  # start bytes of bracket tokens that pair with nothing by design


@dataclass(frozen=True)
class _Syntax:
    errors: tuple[_Flaw, ...]
    brackets: _Brackets
    fences: tuple[_Flaw, ...]
    root: Node | None = None  # the parse tree; None for the bracket check without a grammar


@dataclass(frozen=True)
class _Splice:
    """Where the candidate sits inside the document, for offset mapping."""

    start: int
    char_offsets: tuple[int, ...]  # byte offset of each character boundary

    @classmethod
    def of(cls, head: bytes, candidate: str) -> _Splice:
        sizes = (len(_encode(char)) for char in candidate)
        return cls(start=len(head), char_offsets=tuple(accumulate(sizes, initial=0)))

    @property
    def width(self) -> int:
        return self.char_offsets[-1]

    @property
    def end(self) -> int:
        return self.start + self.width

    def shift(self, position: int) -> int:
        """Where a baseline position starting suffix text lands after insertion."""
        return position + self.width if position >= self.start else position

    def touches(self, flaw: _Flaw) -> bool:
        return flaw.start <= self.end and flaw.end >= self.start

    def contains(self, flaw: _Flaw) -> bool:
        return self.start <= flaw.start < flaw.end <= self.end

    def from_baseline(self, flaw: _Flaw) -> tuple[int, int]:
        """The span a baseline flaw would have if the candidate did not affect it."""
        start = self.shift(flaw.start)
        if flaw.start == flaw.end:
            return start, start
        return start, flaw.end + self.width if flaw.end > self.start else flaw.end

    def to_problem(self, flaw: _Flaw) -> Problem:
        # Flaws outside the candidate are clamped to its nearest edge: an error
        # that surfaces in the suffix was caused where the candidate ends.
        start = min(max(flaw.start - self.start, 0), self.width)
        end = min(max(flaw.end - self.start, 0), self.width)
        return Problem(
            start=bisect_right(self.char_offsets, start) - 1,
            end=bisect_left(self.char_offsets, end),
            kind=flaw.kind,
            message=flaw.message,
        )


@dataclass
class _Grammar:
    parser: Parser
    brackets: Query | None
    fences: Query | None
    # Pack grammars have tokens that hold several brackets ("[[", "$((", "{{") or a
    # bracket after other text ("#{", "%w("); each bracket in them counts on its own.
    split_brackets: bool = False
    # Parsers keep per-parse state in C and must not be shared across threads.
    lock: threading.Lock = field(default_factory=threading.Lock)

    def parse(self, source: bytes) -> Node:
        with self.lock:
            return self.parser.parse(source).root_node


@cache
def _grammar(language: str) -> _Grammar:
    if languages.from_pack(language):
        return _pack_grammar(language)
    grammar = languages.tree_sitter_language(language)
    if language in _PROSE_LANGUAGES:
        return _Grammar(Parser(grammar), brackets=None, fences=Query(grammar, _FENCE_QUERY))
    # Grammars lack some tokens (JSON has no parentheses) and a query naming
    # an unknown token does not compile.
    tokens = [t for t in (*_PAIRS, *_PAIRS.values()) if grammar.id_for_node_kind(t, False)]
    return _Grammar(Parser(grammar), brackets=Query(grammar, _alternation(tokens)), fences=None)


def _pack_grammar(language: str) -> _Grammar:
    grammar = languages.tree_sitter_language(language)
    tokens = _bracket_kinds(grammar)
    brackets = Query(grammar, _alternation(tokens)) if tokens else None  # HTML has no bracket tokens
    return _Grammar(Parser(grammar), brackets=brackets, fences=None, split_brackets=True)


def _bracket_kinds(grammar: Language) -> list[str]:
    """The grammar's literal tokens that hold a bracket."""
    kinds = (
        grammar.node_kind_for_id(kind)
        for kind in range(grammar.node_kind_count)
        if not grammar.node_kind_is_named(kind) and grammar.node_kind_is_visible(kind)
    )
    return [kind for kind in kinds if kind and _TEXT_BRACKETS.search(_encode(kind))]


def _alternation(tokens: Iterable[str]) -> str:
    return "[" + " ".join(_query_string(token) for token in dict.fromkeys(tokens)) + "] @bracket"


def _query_string(token: str) -> str:
    escaped = token.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def _encode(text: str) -> bytes:
    # Lone surrogates can reach us from editor JSON; keep one byte mapping for them.
    return text.encode("utf-8", "surrogatepass")


def _problems(prefix: str, candidate: str, suffix: str, language: str | None) -> tuple[Problem, ...]:
    head, body, tail = _encode(prefix), _encode(candidate), _encode(suffix)
    before = _analyze(language, head + tail)
    after = _analyze(language, head + body + tail)
    splice = _Splice.of(head, candidate)
    flaws = [
        *_worsened(before.errors, after.errors, splice),
        *_blamed(before.brackets, after.brackets, splice),
        *_worsened(before.fences, after.fences, splice),
    ]
    if language is not None and _grammar(language).split_brackets:
        flaws += _closers_made_text(before.brackets, after.brackets, splice)
    if (retyped := _retyped_closer(before, after, splice, _closer_offset(tail))) is not None:
        flaws.append(retyped)
    problems = {splice.to_problem(flaw) for flaw in flaws}
    return tuple(sorted(problems, key=lambda problem: (problem.start, problem.end, problem.kind)))


def _added(before: Sequence[_Flaw], after: Sequence[_Flaw], splice: _Splice) -> list[_Flaw]:
    """Flaws of the edited document that the baseline did not already have."""
    known = {splice.from_baseline(flaw) for flaw in before}
    return [flaw for flaw in after if (flaw.start, flaw.end) not in known]


def _worsened(before: Sequence[_Flaw], after: Sequence[_Flaw], splice: _Splice) -> list[_Flaw]:
    """Flaws to blame on the candidate, if it made things worse.

    Tree-sitter's error recovery moves and resizes ERROR nodes when text is
    inserted, so positions alone cannot tell old errors from new ones and the
    count decides.  A completion usually starts mid-statement, where the
    baseline already has an error at the cursor; trading that error for one
    lying wholly inside the candidate's own text (say an unclosed string)
    keeps the count, so that trade is caught by position instead.

    Away from the candidate, text the baseline already flagged stays flagged: a
    completion that closes the call a windowed prefix left open lets the parser
    see the errors that the baseline's one big ERROR had swallowed, and those
    do not count against it.
    """
    after = _outside(before, after, splice)
    if len(after) < len(before):
        return []
    added = _added(before, after, splice)
    if len(after) == len(before):
        return [flaw for flaw in added if splice.contains(flaw)]
    return [flaw for flaw in added if splice.touches(flaw)] or added or list(after)


def _outside(before: Sequence[_Flaw], after: Sequence[_Flaw], splice: _Splice) -> list[_Flaw]:
    """The flaws of `after` that touch the candidate or lie outside every baseline flaw.

    A window cut inside a line can hold hundreds of flaws before and after: each is looked up
    among the baseline spans by its start (the furthest end of the spans starting at or before
    it), not compared with every span."""
    spans = sorted(splice.from_baseline(flaw) for flaw in before)
    starts = [start for start, _ in spans]
    furthest = list(accumulate((end for _, end in spans), max))
    return [flaw for flaw in after if splice.touches(flaw) or not _inside(flaw, starts, furthest)]


def _inside(flaw: _Flaw, starts: list[int], furthest: list[int]) -> bool:
    """Whether some span starting at or before `flaw` ends at or after it."""
    reached = bisect_right(starts, flaw.start)
    return reached > 0 and furthest[reached - 1] >= flaw.end


def retyped_closer(prefix: str, candidate: str, suffix: str, language: str, original: str = "") -> int | None:
    """Where ``candidate`` closes itself what the first closer after the cursor closes in
    ``prefix + original + suffix`` (a string or bracket opened in the prefix), in characters of
    the candidate; None where it does not (or ``language`` has no grammar). The benchmark asks it of
    the file as it was written; the closure check of prefix + suffix alone, through ``check``."""
    head, body, tail = _encode(prefix), _encode(candidate), _encode(suffix)
    before = _analyze(language, head + _encode(original) + tail)
    after = _analyze(language, head + body + tail)
    splice = _Splice.of(head, candidate)
    flaw = _retyped_closer(before, after, splice, _closer_offset(tail), len(_encode(original)), stray_counts=True)
    return None if flaw is None else splice.to_problem(flaw).start


def _closer_offset(tail: bytes) -> int:
    """Bytes of whitespace before the suffix's first other character: where its closer would be."""
    return len(tail) - len(tail.lstrip())


def _retyped_closer(
    before: _Syntax, after: _Syntax, splice: _Splice, gap: int, original: int = 0, stray_counts: bool = False
) -> _Flaw | None:
    """The candidate's character that closes what the suffix's first closer (``gap`` bytes into the
    suffix) closes in ``before`` (whose text holds ``original`` bytes between prefix and suffix).

    `"` + `nt" "` + `"` is valid Python (two strings side by side), as `f(` + `a) + (b` + `)` is; yet the
    candidate closed the string or call itself and opened another for the editor's closer to close:
    it typed that closer again. The suffix's closer must still close something opened before the
    cursor (`f(g(` + `x)` + `)` closes the inner call and leaves the outer one to it). Where the
    candidate leaves a bracket closing nothing, the bracket rule blames the extra closer itself, so the
    check leaves that case to it (the first closer of the construct found here may be the candidate's
    rightful one); ``stray_counts`` counts it here too. A suffix's closer the candidate made text (a
    string's or a comment's: `print(` + `x) # (` + `)`) no bracket rule sees, so it counts. A quote is
    no bracket rule's: strings do not nest, so the string it closed is the one the candidate closed
    (`"` + `r"` + `"`)."""
    if before.root is None or after.root is None:
        return None
    hole = None if original else splice.start
    closed = _closed_by(before.root, splice.start + original + gap, hole)
    if closed is None or closed[0].start_byte >= splice.start:
        return None  # nothing closes there, or what closes there opened after the cursor
    position = splice.end + gap
    now = _closed_by(after.root, position)
    construct, closer = closed
    counted = stray_counts or closer[-1:] in _QUOTES or _made_text(after.root, position)
    if now is None and not counted or now and now[0].start_byte < splice.start:
        return None
    # What the candidate made of the construct's opener may be parsed as another kind of node (an
    # extra ")" turns Python's call into a print statement's tuple): matched by opener and closer.
    node = after.root.descendant_for_byte_range(construct.start_byte, construct.start_byte + 1)
    while node is not None and node.start_byte == construct.start_byte:
        if splice.start < node.end_byte <= splice.end and node.text.endswith(closer):
            message = f"closes the {construct.type} that the suffix already closes"
            return _Flaw(node.end_byte - len(closer), node.end_byte, "duplicate-closer", message)
        node = node.parent
    return None


def _closed_by(root: Node, position: int, hole: int | None = None) -> tuple[Node, bytes] | None:
    """The construct whose closer is the token at ``position``, and that closer's text (None when
    no closer is there, or it closes a construct in or beside an error: which opener it closes is then
    the parser's guess, as in `print("a` + `"b")`, where the real text between was `", `). The one
    error a construct may hold is the parser's missing node at ``hole``, the cursor of prefix +
    suffix: `f"={` + `}"` and `d[` + `]` are the expression the completion is asked for, missing."""
    token = root.descendant_for_byte_range(position, position + 1)
    if token is None or token.start_byte != position or not _is_closer(token.text):
        return None
    node = token
    while node.parent is not None and node.parent.end_byte == token.end_byte and node.start_byte >= position:
        node = node.parent
    if node.start_byte >= position or _beside_error(node, hole):
        return None
    if node.parent is not None and _beside_error(node.parent, hole):
        return None
    return node, token.text


def _beside_error(node: Node, hole: int | None) -> bool:
    """Whether ``node`` holds an error other than a missing node at ``hole``."""
    if not node.has_error:
        return False
    return hole is None or any((f.kind, f.start, f.end) != ("missing", hole, hole) for f in _tree_errors(node))


def _made_text(root: Node, position: int) -> bool:
    """Whether the closer at ``position`` is now part of a longer token (a string's or a comment's
    text), where no bracket rule sees it: `print(` + `x) # (` + `)`, `f"{` + `a}"."` + `}"`."""
    token = root.descendant_for_byte_range(position, position + 1)
    return token is not None and (token.is_named or token.start_byte < position)  # a closer is a bare token


def _is_closer(text: bytes | None) -> bool:
    return bool(text) and all(char in _CLOSING_CHARACTERS for char in text)


def _blamed(before: _Brackets, after: _Brackets, splice: _Splice) -> list[_Flaw]:
    added = _added(before.flaws, after.flaws, splice)
    return [_blame(flaw, before, after, splice) for flaw in added]


def _closers_made_text(before: _Brackets, after: _Brackets, splice: _Splice) -> list[_Flaw]:
    """Candidate closers that took an opener whose closer in the suffix then became plain text.

    In a shell, "${a}}" and "$(b))" inside a string, or "[ -n x ]]", are valid: the retyped
    closer is a character of a word or string, so neither errors nor bracket flaws show it.
    Only pack grammars are asked (the first six keep their results; JavaScript's template
    `${a}}` is the same case).
    """
    flaws = []
    for start, opener in after.partners.items():
        if not splice.start <= start < splice.end or opener[0] >= splice.start:
            continue  # not a closer of the candidate's that an opener before the cursor took
        closed = before.partners.get(opener[0])
        if closed is None or closed[0] < splice.start:
            continue
        moved = closed[0] + splice.width
        if moved not in after.partners and moved not in after.lone and all(flaw.start != moved for flaw in after.flaws):
            closer = after.partners[opener[0]]
            message = f"{closer[2]!r} closes the {opener[2]!r} that the suffix already closes"
            flaws.append(_Flaw(closer[0], closer[1], "bracket", message))
    return flaws


def _blame(flaw: _Flaw, before: _Brackets, after: _Brackets, splice: _Splice) -> _Flaw:
    """Point a suffix closer that lost its opener at the candidate closer that took it.

    Clamping alone would put the problem at the candidate's end, which is no
    help when the stolen closer is followed by more text, as in ``a, b);``.
    """
    if flaw.start < splice.end:
        return flaw
    opener = before.partners.get(flaw.start - splice.width)
    if opener is None:
        return flaw
    thief = after.partners.get(splice.shift(opener[0]))
    if thief is None or not splice.start <= thief[0] < splice.end:
        return flaw
    message = f"{thief[2]!r} closes the {opener[2]!r} that the suffix already closes"
    return _Flaw(thief[0], thief[1], "bracket", message)


@lru_cache(maxsize=_ANALYSIS_CACHE_SIZE)
def _analyze(language: str | None, source: bytes) -> _Syntax:
    if language is None:
        matches = _TEXT_BRACKETS.finditer(source)
        tokens = ((match.start(), match.end(), match.group().decode()) for match in matches)
        return _Syntax(errors=(), brackets=_match_brackets(tokens), fences=())
    grammar = _grammar(language)
    root = grammar.parse(source)
    tokens, lone = _bracket_tokens(grammar, root)
    return _Syntax(
        errors=_tree_errors(root),
        brackets=dataclasses.replace(_match_brackets(tokens), lone=lone),
        fences=_unclosed_fences(grammar.fences, root),
        root=root,
    )


def _tree_errors(root: Node) -> tuple[_Flaw, ...]:
    flaws = []
    # Only subtrees flagged has_error can hold errors, so clean code is skipped
    # wholesale; nested ERRORs are one error, not several.
    pending = [root] if root.has_error else []
    while pending:
        node = pending.pop()
        if node.is_missing:
            message = f"missing {node.type!r}"
            flaws.append(_Flaw(node.start_byte, node.end_byte, "missing", message))
        elif node.is_error:
            flaws.append(_Flaw(node.start_byte, node.end_byte, "error", "syntax error"))
        else:
            pending.extend(child for child in node.children if child.has_error)
    return tuple(sorted(flaws))


def _bracket_tokens(grammar: _Grammar, root: Node) -> tuple[list[_Token], frozenset[int]]:
    """Bracket leaf tokens in document order, and where those that pair with nothing start.

    Brackets inside strings and comments are part of those tokens, not leaves
    of their own, so they are skipped for free.
    """
    if grammar.brackets is None:
        return [], frozenset()
    nodes = QueryCursor(grammar.brackets).captures(root).get("bracket", [])
    # A MISSING closer is tree-sitter's guess, not text; it is reported as an error instead.
    nodes = [node for node in nodes if not node.is_missing]
    if not grammar.split_brackets:
        return sorted((n.start_byte, n.end_byte, n.type) for n in nodes), frozenset()
    # Pack grammars also use a bracket alone: a shell case pattern ends in ")", and in
    # "${a[@]}" the "[" stands without its "]". Such a bracket pairs with nothing, so only
    # those of a node that holds both an opener and a closer count (or of an error).
    pairing: dict[int, bool] = {}
    paired = [node for node in nodes if _pairs_brackets(node.parent, pairing)]
    lone = frozenset(node.start_byte for node in nodes) - {node.start_byte for node in paired}
    tokens = sorted((n.start_byte, n.end_byte, n.type) for n in paired)
    return [bracket for token in tokens for bracket in _each_bracket(token)], lone


def _pairs_brackets(parent: Node | None, known: dict[int, bool]) -> bool:
    """Whether the node holds tokens that open and close brackets, or is an error (cached by node)."""
    if parent is None or parent.is_error:
        return True
    if parent.id not in known:
        tokens = "".join(child.type for child in parent.children if not child.is_named)
        known[parent.id] = bool(_OPENING.search(tokens) and _CLOSING.search(tokens))
    return known[parent.id]


def _each_bracket(token: _Token) -> Iterator[_Token]:
    """The brackets inside one token, each at its own byte ("$((" holds two)."""
    start, _, text = token
    for match in _TEXT_BRACKETS.finditer(_encode(text)):
        yield start + match.start(), start + match.end(), match.group().decode()


def _match_brackets(tokens: Iterable[_Token]) -> _Brackets:
    flaws: list[_Flaw] = []
    partners: dict[int, _Token] = {}
    stack: list[_Token] = []
    # Open counts per expected closer make "no opener at all" an O(1) answer,
    # so a run of stray closers over a deep stack stays linear.
    open_counts = dict.fromkeys(_PAIRS.values(), 0)
    for bracket in tokens:
        start, end, token = bracket
        if token in _PAIRS:
            stack.append(bracket)
            open_counts[_PAIRS[token]] += 1
        elif open_counts[token] == 0:
            flaws.append(_Flaw(start, end, "bracket", f"unmatched {token!r}"))
        else:
            opener, skipped = _pop_match(stack, open_counts, token)
            if skipped:
                message = f"{token!r} closes over unclosed {skipped[0][2]!r}"
                flaws.append(_Flaw(start, end, "bracket", message))
                flaws.extend(map(_unclosed, skipped))
            partners[opener[0]] = bracket
            partners[start] = opener
    flaws.extend(map(_unclosed, stack))
    return _Brackets(flaws=tuple(sorted(flaws)), partners=partners)


def _pop_match(stack: list[_Token], open_counts: dict[str, int], closer: str) -> tuple[_Token, list[_Token]]:
    """Pop the opener ``closer`` matches, and the openers above it that it skips.

    Skipped openers can never be closed any more; popping them keeps one
    misplaced bracket from cascading into every later pair.
    """
    skipped = []
    while True:
        opener = stack.pop()
        open_counts[_PAIRS[opener[2]]] -= 1
        if _PAIRS[opener[2]] == closer:
            return opener, skipped
        skipped.append(opener)


def _unclosed(opener: _Token) -> _Flaw:
    start, end, token = opener
    return _Flaw(start, end, "bracket", f"unclosed {token!r}")


def _unclosed_fences(query: Query | None, root: Node) -> tuple[_Flaw, ...]:
    if query is None:
        return ()
    blocks = QueryCursor(query).captures(root).get("fence", [])
    # A fence runs to the end of the document when never closed, which
    # Markdown accepts silently; only the missing closing delimiter shows it.
    return tuple(
        sorted(
            _Flaw(block.start_byte, block.end_byte, "fence", "unclosed code fence")
            for block in blocks
            if not _has_closing_delimiter(block)
        )
    )


def _has_closing_delimiter(block: Node) -> bool:
    delimiters = [c for c in block.children if c.type == "fenced_code_block_delimiter"]
    return len(delimiters) >= 2


def _duplicate_closer(prefix: str, candidate: str, suffix: str, language: str | None) -> Problem | None:
    """The candidate's trailing closers that repeat ones the suffix already has.

    Editors auto-insert closers after the cursor, and models happily type them
    again.  Only reported when dropping them would leave a valid insertion.
    """
    trailing = _trailing_closers(candidate)
    leading = _leading_closers(suffix)
    for count in range(1, min(len(trailing), len(leading)) + 1):
        positions = trailing[-count:]
        if "".join(candidate[i] for i in positions) != leading[:count]:
            continue
        dropped = set(positions)
        rest = "".join(char for i, char in enumerate(candidate) if i not in dropped)
        if not rest or not _problems(prefix, rest, suffix, language):
            message = f"{leading[:count]!r} duplicates what follows the cursor"
            return Problem(positions[0], positions[-1] + 1, "duplicate-closer", message)
    return None


def _trailing_closers(candidate: str) -> list[int]:
    """Positions of the closers ending the candidate, ignoring whitespace."""
    positions = []
    for i in range(len(candidate) - 1, -1, -1):
        if candidate[i] in _CLOSERS:
            positions.append(i)
        elif not candidate[i].isspace():
            break
    return positions[::-1]


def _leading_closers(suffix: str) -> str:
    """The closers starting the suffix, ignoring whitespace."""
    closers = []
    for char in suffix:
        if char in _CLOSERS:
            closers.append(char)
        elif not char.isspace():
            break
    return "".join(closers)
