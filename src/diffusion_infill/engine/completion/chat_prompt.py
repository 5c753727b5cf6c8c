"""The chat prompt of a checkpoint not trained on the clamped canvas, in this process
(engine.completion.instruct) or on a server (engine.remote.client): the message that asks for
only the missing code, and the insertion read back from the answer. Plain text, no torch: a
server's engine needs neither torch nor transformers."""

from __future__ import annotations

import re

from diffusion_infill.engine.requests import InfillRequest

CURSOR = "<CURSOR>"
INSTRUCTION = (
    "Fill in the code at {cursor} in this {language} file. Answer with only the text that replaces {cursor}, "
    "no explanation and no code fence.\n\n{prefix}{cursor}{suffix}"
)
FENCE = re.compile(r"^\n*```[\w+-]*\n(.*?)(\n```)?\s*$", re.S)  # blank lines may come before the fence
CONTEXT_CHARS = 6000


def instruction(request: InfillRequest) -> str:
    """The chat message that asks for the missing text at the cursor (here and on a remote server)."""
    return INSTRUCTION.format(
        cursor=CURSOR,
        language=request.language or "text",
        prefix=request.prefix[-CONTEXT_CHARS:],
        suffix=request.suffix[:CONTEXT_CHARS],
    )


def answer_text(raw: str) -> str:
    """The insertion in a chat answer: what a code fence holds, else the answer as it is (a leading or
    trailing newline may be the insertion's own: a line added at the end of a file)."""
    match = FENCE.match(raw)
    return match.group(1) if match else raw
