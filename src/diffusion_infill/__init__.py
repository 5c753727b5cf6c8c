"""diffusion-infill: an editor language server for inline infilling with a text-diffusion model.

One import package, four parts: `engine` (the model, completions and repairs; never imports
`lsp`), `lsp` (the language server: protocol in, engine call, protocol out), `cli` (the
`diffusion-infill` command) and `bench` (benchmarks and their peers)."""
