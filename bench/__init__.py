"""Benchmarks: `python -m bench.<name>`; figures are quoted in docs/performance.md and cluster."""
