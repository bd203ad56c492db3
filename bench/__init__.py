"""Benchmarks: composite-store against the raw driver on the same engine, in one run."""
