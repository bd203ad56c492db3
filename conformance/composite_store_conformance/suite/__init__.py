"""The behaviour suites, one module per domain."""
