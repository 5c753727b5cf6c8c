"""An OpenAI-compatible server (vLLM, transformers serve) as the engine."""
