"""The repository's own tests: core units, the conformance matrix and the cross-backend tools."""
