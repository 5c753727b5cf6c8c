"""Fix JSON / Fix Markdown: deterministic rules and the diffusion repair."""
