"""The `diffusion-infill` command line: subcommands that call the engine (and the server)."""
