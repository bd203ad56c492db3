"""The domains on Oracle: the shared relational implementation bound to ``OracleDialect``.

Each class stands alone (``OracleMemory(url="oracle://...")``, or ``engine=`` an ``AsyncEngine``
you own) or shares its store's engine (``OracleStore(url).memory``).
"""

from __future__ import annotations

from typing import Any

from composite_store.records.memory import Resource
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
    """Threads, messages and resources in Oracle.

    Oracle stores ``''`` as NULL, so an empty working memory reads back as None; a
    compare-and-set expecting ``''`` therefore matches the NULL it became (and a resource
    without working memory), where other backends tell the two apart.
    """

    dialect_cls = OracleDialect

    async def _update_resource(
        self,
        resource_id: str,
        *,
        working_memory: str | None,
        metadata: dict[str, Any] | None,
        now: Any,
        expected_working_memory: Any,
    ) -> Resource:
        if expected_working_memory == "":
            expected_working_memory = None
        return await super()._update_resource(
            resource_id,
            working_memory=working_memory,
            metadata=metadata,
            now=now,
            expected_working_memory=expected_working_memory,
        )


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
