"""The domains on PostgreSQL: the shared relational implementation bound to ``PostgresDialect``.

Each class stands alone (``PostgresMemory(url="postgresql://...")``, or ``engine=`` an
``AsyncEngine`` you own) or shares its store's engine (``PostgresStore(url).memory``).
"""

from __future__ import annotations

from composite_store.sql.datasets import SqlDatasets
from composite_store.sql.experiments import SqlExperiments
from composite_store.sql.memory import SqlMemory
from composite_store.sql.observability import SqlObservability
from composite_store.sql.scores import SqlScores
from composite_store.sql.workflow_definitions import SqlWorkflowDefinitions
from composite_store.sql.workflows import SqlWorkflows
from composite_store_postgres.dialect import PostgresDialect

__all__ = [
    "PostgresDatasets",
    "PostgresExperiments",
    "PostgresMemory",
    "PostgresObservability",
    "PostgresScores",
    "PostgresWorkflowDefinitions",
    "PostgresWorkflows",
]


class PostgresMemory(SqlMemory):
    """Threads, messages and resources in PostgreSQL."""

    dialect_cls = PostgresDialect


class PostgresWorkflows(SqlWorkflows):
    """Workflow run snapshots in PostgreSQL."""

    dialect_cls = PostgresDialect


class PostgresWorkflowDefinitions(SqlWorkflowDefinitions):
    """Workflow definitions and their versions (beta) in PostgreSQL."""

    dialect_cls = PostgresDialect


class PostgresScores(SqlScores):
    """Scorer results and evals in PostgreSQL."""

    dialect_cls = PostgresDialect


class PostgresObservability(SqlObservability):
    """AI spans and OpenTelemetry spans in PostgreSQL."""

    dialect_cls = PostgresDialect


class PostgresDatasets(SqlDatasets):
    """Datasets, versioned items and the version log in PostgreSQL."""

    dialect_cls = PostgresDialect


class PostgresExperiments(SqlExperiments):
    """Experiments and their results in PostgreSQL."""

    dialect_cls = PostgresDialect
