"""The domains on Oracle: the shared relational implementation bound to ``OracleDialect``.

Each class stands alone (``OracleMemory(url="oracle://...")``, or ``engine=`` an ``AsyncEngine``
you own) or shares its store's engine (``OracleStore(url).memory``).
"""

from __future__ import annotations

from composite_store.sql.datasets import SqlDatasets
from composite_store.sql.experiments import SqlExperiments
from composite_store.sql.memory import SqlMemory
from composite_store.sql.observability import SqlObservability
from composite_store.sql.scores import SqlScores
from composite_store.sql.workflow_definitions import SqlWorkflowDefinitions
from composite_store.sql.workflows import SqlWorkflows
from composite_store_oracle.dialect import OracleDialect

__all__ = [
    "OracleDatasets",
    "OracleExperiments",
    "OracleMemory",
    "OracleObservability",
    "OracleScores",
    "OracleWorkflowDefinitions",
    "OracleWorkflows",
]


class OracleMemory(SqlMemory):
    """Threads, messages and resources in Oracle."""

    dialect_cls = OracleDialect


class OracleWorkflows(SqlWorkflows):
    """Workflow run snapshots in Oracle."""

    dialect_cls = OracleDialect


class OracleWorkflowDefinitions(SqlWorkflowDefinitions):
    """Workflow definitions and their versions (beta) in Oracle."""

    dialect_cls = OracleDialect


class OracleScores(SqlScores):
    """Scorer results and evals in Oracle."""

    dialect_cls = OracleDialect


class OracleObservability(SqlObservability):
    """AI spans and OpenTelemetry spans in Oracle."""

    dialect_cls = OracleDialect


class OracleDatasets(SqlDatasets):
    """Datasets, versioned items and the version log in Oracle."""

    dialect_cls = OracleDialect


class OracleExperiments(SqlExperiments):
    """Experiments and their results in Oracle."""

    dialect_cls = OracleDialect
