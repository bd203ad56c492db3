"""Units of the core without a server."""
