"""Bridges from other libraries into the storage contract (OpenTelemetry: ``otel``)."""
