"""Benchmark helpers: reproductions of third-party token figures and comparison tooling."""
