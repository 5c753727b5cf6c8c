"""Broken JSON: where the damage is, and a deterministic structural repair.

`damage` locates problems the way the design asks (tree-sitter-json ERROR/MISSING nodes
and the `json.loads` error position), as character spans; the diffusion repair turns
them into gaps. `structural_repair` is a lenient parser that rewrites the text token by
token, keeping the user's whitespace and every key and value it can: it quotes bare keys
and single-quoted strings, maps Python literals, drops comments and trailing commas, and
inserts missing commas, colons, closing quotes and closers. Its output is only a
candidate: like every other candidate it must pass `json.loads` (see diffusion_infill.engine.repair.fixes).

JSONC (VS Code settings, tsconfig) allows `//` and `/* */` comments and trailing commas:
`strip_jsonc` blanks them out, offsets unchanged, so that `json.loads` and `damage` see
what is left, and `structural_repair(text, jsonc=True)` keeps them.

One module a job: lexer (tokens, strings with lost or unescaped quotes), parser (the repair),
jsonc (comments, blanking), damage (where the damage is), content (words kept, values added).
"""

from diffusion_infill.engine.repair.jsonfix.content import added, holds, words
from diffusion_infill.engine.repair.jsonfix.damage import Cancelled, Damage, damage
from diffusion_infill.engine.repair.jsonfix.dialect import is_jsonc, jsonc_name
from diffusion_infill.engine.repair.jsonfix.jsonc import comments, dropped_comments, strip_jsonc
from diffusion_infill.engine.repair.jsonfix.lexer import Token, token_at, tokenize
from diffusion_infill.engine.repair.jsonfix.parser import structural_repair, too_deep

__all__ = [
    "Cancelled",
    "Damage",
    "Token",
    "added",
    "comments",
    "damage",
    "dropped_comments",
    "holds",
    "is_jsonc",
    "jsonc_name",
    "strip_jsonc",
    "structural_repair",
    "token_at",
    "too_deep",
    "tokenize",
    "words",
]
