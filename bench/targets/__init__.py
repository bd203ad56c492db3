"""Benchmark targets: the library through its public API, and raw drivers doing the same work."""
