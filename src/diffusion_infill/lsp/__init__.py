"""The language server: LSP 3.18 inline completion streaming converging drafts.

server.py        handlers: protocol in, engine call, protocol out
model_lifecycle.py  the model's load, its progress and the state editors are shown
settings.py      the `diffusionInfill` settings section
status.py        the server's state as editors show it
languages.py     the languages diagnostics and code actions handle
transport/       framing.py (well-formed frames from an untrusted stdin), protocol.py (every request
                 answered: bad params, before init, after shutdown), pygls_internals.py
text/            documents.py (open documents, incremental sync), rope.py, positions.py (LSP positions
                 <-> str offsets in utf-8/16/32), window.py (the bounded text around the cursor)
completion/      worker.py (the engine's own thread), current_engine.py (the engine it holds: loads,
                 swaps, calibration), sampling.py (one completion job), runs.py (one live run per
                 document, joins, kept results), items.py (where a completion goes and the items that
                 put it there), telemetry.py (local acceptance counts)
fixes/           actions.py (the code-action handlers), targets.py (what a request is offered), edits.py
                 (actions as the protocol carries them), results.py (kept results), repairs.py (the
                 repairs' process)
diagnostics/     publisher.py (publishDiagnostics, off the event loop, size-bounded), process.py (the
                 worker process diagnostics and repairs are computed in)
"""
