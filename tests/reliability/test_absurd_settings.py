"""Absurd settings a workspace sends (issue 52): counts far beyond their range are clamped to it with
one message, and completions go on being answered. Through the real server over stdio.

Before the ranges, `invokedItems` at 2^31 asked two billion samples of every invoked completion: the
request never came back and a core stayed pegged (HANG_S turns that into a failure here)."""

from __future__ import annotations

from raw_server import FAST, start_server

# Clamped to 10 items of one step and one slot each: the answer stays cheap on a busy machine.
ABSURD = {"invokedItems": 2**31, "maxSteps": -(10**9), "maxGapTokens": 0}
EXPECTED = {"invokedItems": ("more", 10), "maxSteps": ("less", 1), "maxGapTokens": ("less", 1)}


def test_counts_beyond_their_range_are_clamped_with_one_message_and_an_invoked_completion_is_answered(
    tiny_model_dir, tmp_path
):
    server = start_server(tiny_model_dir, tmp_path)
    try:
        uri = "file:///reliability/absurd.py"
        text = "def area(width, height):\n    return "
        server.notify(
            "textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}}
        )
        start = len(server.messages)
        server.notify(
            "workspace/didChangeConfiguration", {"settings": {"diffusionInfill": FAST["diffusionInfill"] | ABSURD}}
        )
        answer = server.call(
            "textDocument/inlineCompletion",
            {"textDocument": {"uri": uri}, "position": {"line": 1, "character": 11}, "context": {"triggerKind": 1}},
        )
        assert isinstance(answer, list) and len(answer) <= 10
        shown = [m["params"]["message"] for m in server.messages[start:] if m.get("method") == "window/showMessage"]
        [message] = [text for text in shown if "settings" in text]  # the load says whether the model is calibrated
        for key, (side, bound) in EXPECTED.items():
            assert f"diffusionInfill.{key}: {ABSURD[key]} is {side} than it may be" in message
            assert f"using {bound}" in message
    finally:
        assert server.stop() == 0
