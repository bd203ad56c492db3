"""The documented schema and everything about schemas: the tables as data (``documented``), what
a backend physically created (``physical``), the differences between the two (``drift``), the
versioned migrations (``migrations``) and the generated reference (``doc``).

This package re-exports the documented schema, which every other part of composite-store reads;
the other modules are imported by name where they are used.
"""

from composite_store.schema.documented import (
    DEFAULT_PREFIX,
    DOMAIN_ALIASES,
    DOMAINS,
    EMPTY_STRING_IS_NULL,
    MASTRA_FAMILIES,
    POSTGRESQL,
    SCHEMA_VERSION,
    SHADOW_TIMESTAMPS,
    SQLITE,
    TABLES,
    VARIANTS,
    Column,
    ColumnType,
    Index,
    TableSpec,
    domain_key,
    shadow_name,
    table,
    tables_for,
    validate_identifier,
    validate_prefix,
    variant_columns,
    variant_nullable,
)

__all__ = [
    "DEFAULT_PREFIX",
    "DOMAINS",
    "DOMAIN_ALIASES",
    "EMPTY_STRING_IS_NULL",
    "MASTRA_FAMILIES",
    "POSTGRESQL",
    "SCHEMA_VERSION",
    "SQLITE",
    "SHADOW_TIMESTAMPS",
    "TABLES",
    "VARIANTS",
    "Column",
    "ColumnType",
    "Index",
    "TableSpec",
    "domain_key",
    "shadow_name",
    "table",
    "tables_for",
    "validate_identifier",
    "validate_prefix",
    "variant_columns",
    "variant_nullable",
]
