"""The relational implementation: every domain written once over SQLAlchemy Core.

Backend packages (PostgreSQL, MySQL/MariaDB, Oracle, libSQL) subclass ``SqlDialect`` and bind
the shared domain classes to it; SQLite lives here as the embedded default.
"""

from composite_store.sql.database import SqlDatabase
from composite_store.sql.datasets import SqlDatasets
from composite_store.sql.dialect import SqlDialect
from composite_store.sql.domain import SqlDomain
from composite_store.sql.experiments import SqlExperiments
from composite_store.sql.memory import SqlMemory
from composite_store.sql.observability import SqlObservability
from composite_store.sql.scores import SqlScores
from composite_store.sql.store import SqlStore
from composite_store.sql.workflow_definitions import SqlWorkflowDefinitions
from composite_store.sql.workflows import SqlWorkflows

__all__ = [
    "SqlDatabase",
    "SqlDatasets",
    "SqlDialect",
    "SqlDomain",
    "SqlExperiments",
    "SqlMemory",
    "SqlObservability",
    "SqlScores",
    "SqlStore",
    "SqlWorkflowDefinitions",
    "SqlWorkflows",
]
