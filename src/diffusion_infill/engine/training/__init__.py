"""Reproducible training of the embedded tiny DiffusionGemma on the clamped infilling canvas."""
