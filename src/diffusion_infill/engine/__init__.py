"""Text in, drafts out: the diffusion infilling engine. Knows nothing of LSP."""
