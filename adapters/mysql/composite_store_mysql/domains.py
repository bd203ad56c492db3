"""The domains on MariaDB/MySQL: the shared relational implementation bound to ``MysqlDialect``.

Each class stands alone (``MysqlMemory(url="mysql://...")``, or ``engine=`` an
``AsyncEngine`` you own) or shares its store's engine (``MysqlStore(url).memory``).
"""

from __future__ import annotations

from composite_store.sql.datasets import SqlDatasets
from composite_store.sql.experiments import SqlExperiments
from composite_store.sql.memory import SqlMemory
from composite_store.sql.observability import SqlObservability
from composite_store.sql.scores import SqlScores
from composite_store.sql.workflow_definitions import SqlWorkflowDefinitions
from composite_store.sql.workflows import SqlWorkflows
from composite_store_mysql.dialect import MysqlDialect

__all__ = [
    "MysqlDatasets",
    "MysqlExperiments",
    "MysqlMemory",
    "MysqlObservability",
    "MysqlScores",
    "MysqlWorkflowDefinitions",
    "MysqlWorkflows",
]


class MysqlMemory(SqlMemory):
    """Threads, messages and resources in MariaDB or MySQL."""

    dialect_cls = MysqlDialect


class MysqlWorkflows(SqlWorkflows):
    """Workflow run snapshots in MariaDB or MySQL."""

    dialect_cls = MysqlDialect


class MysqlWorkflowDefinitions(SqlWorkflowDefinitions):
    """Workflow definitions and their versions (beta) in MariaDB or MySQL."""

    dialect_cls = MysqlDialect


class MysqlScores(SqlScores):
    """Scorer results and evals in MariaDB or MySQL."""

    dialect_cls = MysqlDialect


class MysqlObservability(SqlObservability):
    """AI spans and OpenTelemetry spans in MariaDB or MySQL."""

    dialect_cls = MysqlDialect


class MysqlDatasets(SqlDatasets):
    """Datasets, versioned items and the version log in MariaDB or MySQL."""

    dialect_cls = MysqlDialect


class MysqlExperiments(SqlExperiments):
    """Experiments and their results in MariaDB or MySQL."""

    dialect_cls = MysqlDialect
