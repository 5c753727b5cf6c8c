"""The completion engine: context, canvas, denoising, insertion, confidence."""
