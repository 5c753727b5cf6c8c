"""The autoregressive baseline the benchmark measures against (served as an engine too)."""
