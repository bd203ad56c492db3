"""The libSQL store and its domain classes: the shared SQL domains bound to ``LibsqlDialect``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from composite_store.sql.datasets import SqlDatasets
from composite_store.sql.domain import SqlDomain
from composite_store.sql.experiments import SqlExperiments
from composite_store.sql.memory import SqlMemory
from composite_store.sql.observability import SqlObservability
from composite_store.sql.scores import SqlScores
from composite_store.sql.store import SqlStore
from composite_store.sql.workflow_definitions import SqlWorkflowDefinitions
from composite_store.sql.workflows import SqlWorkflows
from composite_store_libsql.dialect import LibsqlDialect

__all__ = [
    "LibsqlDatasets",
    "LibsqlExperiments",
    "LibsqlMemory",
    "LibsqlObservability",
    "LibsqlScores",
    "LibsqlStore",
    "LibsqlWorkflowDefinitions",
    "LibsqlWorkflows",
]


class LibsqlMemory(SqlMemory):
    """Threads, messages and resources in a libSQL database."""

    dialect_cls = LibsqlDialect


class LibsqlWorkflows(SqlWorkflows):
    """Workflow snapshots in a libSQL database."""

    dialect_cls = LibsqlDialect


class LibsqlWorkflowDefinitions(SqlWorkflowDefinitions):
    """Workflow definitions and their versions in a libSQL database (beta)."""

    dialect_cls = LibsqlDialect


class LibsqlScores(SqlScores):
    """Scores and evals in a libSQL database."""

    dialect_cls = LibsqlDialect


class LibsqlObservability(SqlObservability):
    """AI spans and OpenTelemetry spans in a libSQL database."""

    dialect_cls = LibsqlDialect


class LibsqlDatasets(SqlDatasets):
    """Datasets, versioned items and the version log in a libSQL database."""

    dialect_cls = LibsqlDialect


class LibsqlExperiments(SqlExperiments):
    """Experiments and their results in a libSQL database."""

    dialect_cls = LibsqlDialect


class LibsqlStore(SqlStore):
    """Every domain in one libSQL database: ``LibsqlStore("libsql:///agent.db")``."""

    dialect_cls = LibsqlDialect
    domain_classes: ClassVar[Mapping[str, type[SqlDomain]]] = {
        "memory": LibsqlMemory,
        "workflows": LibsqlWorkflows,
        "workflow_definitions": LibsqlWorkflowDefinitions,
        "scores": LibsqlScores,
        "observability": LibsqlObservability,
        "datasets": LibsqlDatasets,
        "experiments": LibsqlExperiments,
    }
