"""The conformance plugin beside a user's own test suite and other async plugins."""
