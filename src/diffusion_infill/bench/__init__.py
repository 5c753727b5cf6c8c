"""Benchmarks of the engine; run with `python -m bench.<name>`."""
