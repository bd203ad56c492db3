"""``PostgresStore``: every domain PostgreSQL serves, on one engine (one connection pool)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from composite_store.sql.domain import SqlDomain
from composite_store.sql.store import SqlStore
from composite_store_postgres.dialect import PostgresDialect
from composite_store_postgres.domains import (
    PostgresDatasets,
    PostgresExperiments,
    PostgresMemory,
    PostgresObservability,
    PostgresScores,
    PostgresWorkflowDefinitions,
    PostgresWorkflows,
)

__all__ = ["PostgresStore"]


class PostgresStore(SqlStore):
    """Every domain in one PostgreSQL schema.

    ``PostgresStore("postgresql://user:pw@host/db?schema=agents&pool_size=10")``; options are
    keywords or URL query parameters: ``schema`` (default ``public``), ``prefix`` (default
    ``mastra_``), ``pool_size``, ``max_overflow``, ``pool_timeout``, ``pool_recycle``; other
    query parameters (``sslmode``, ``connect_timeout``, ...) go to libpq. ``engine=`` shares
    an ``AsyncEngine`` you own instead.
    """

    dialect_cls = PostgresDialect
    domain_classes: ClassVar[Mapping[str, type[SqlDomain]]] = {
        "memory": PostgresMemory,
        "workflows": PostgresWorkflows,
        "workflow_definitions": PostgresWorkflowDefinitions,
        "scores": PostgresScores,
        "observability": PostgresObservability,
        "datasets": PostgresDatasets,
        "experiments": PostgresExperiments,
    }
