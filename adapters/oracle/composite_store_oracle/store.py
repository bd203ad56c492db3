"""``OracleStore``: every domain Oracle serves, on one engine (one connection pool)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from composite_store.sql.domain import SqlDomain
from composite_store.sql.store import SqlStore
from composite_store_oracle.dialect import OracleDialect
from composite_store_oracle.domains import (
    OracleDatasets,
    OracleExperiments,
    OracleMemory,
    OracleObservability,
    OracleScores,
    OracleWorkflowDefinitions,
    OracleWorkflows,
)

__all__ = ["OracleStore"]


class OracleStore(SqlStore):
    """Every domain in one Oracle schema.

    ``OracleStore("oracle://app:pw@db:1521/?service_name=FREEPDB1&schema=agents")``; options
    are keywords or URL query parameters: ``schema`` (an existing Oracle user; default the
    connecting user's schema), ``prefix`` (default ``mastra_``), ``native_json`` (``JSON``
    columns instead of ``CLOB``, Oracle 21c+), ``pool_size``, ``max_overflow``,
    ``pool_timeout``, ``pool_recycle``; other query parameters go to python-oracledb.
    ``engine=`` shares an ``AsyncEngine`` you own instead.
    """

    dialect_cls = OracleDialect
    domain_classes: ClassVar[Mapping[str, type[SqlDomain]]] = {
        "memory": OracleMemory,
        "workflows": OracleWorkflows,
        "workflow_definitions": OracleWorkflowDefinitions,
        "scores": OracleScores,
        "observability": OracleObservability,
        "datasets": OracleDatasets,
        "experiments": OracleExperiments,
    }
