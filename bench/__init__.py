"""Benchmarks: `python -m bench.<name>`; figures are quoted in the README."""
