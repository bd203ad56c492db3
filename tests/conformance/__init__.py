"""The conformance suite once per backend, one module each (CI derives the backends from the
module names)."""
