"""The language server: LSP 3.18 inline completion streaming converging drafts.

server.py     handlers: protocol in, engine call, protocol out
protocol.py   pygls' protocol with every request answered (bad params, before init, after shutdown)
documents.py  open documents, incremental sync
positions.py  LSP positions <-> str offsets in utf-8/16/32
items.py      where a completion goes and the items that put it there
runs.py       staleness: one live run per document, joins, kept results
worker.py     the engine's own thread: model loading and completions
settings.py   the `diffusionInfill` settings section
telemetry.py  local acceptance counts
actions.py    code actions: fix JSON / Markdown selection, regenerate selection
diagnostics.py  publishDiagnostics for JSON and Markdown documents, off the event loop, size-bounded
diagnosis_process.py  the worker process diagnostics are computed in
framing.py    well-formed base-protocol frames from an untrusted stdin
window.py     the bounded text around the cursor that the engine sees
"""
