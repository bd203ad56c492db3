"""``MysqlStore``: every domain MariaDB/MySQL serves, on one engine (one connection pool)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from composite_store.sql.domain import SqlDomain
from composite_store.sql.store import SqlStore
from composite_store_mysql.dialect import MysqlDialect
from composite_store_mysql.domains import (
    MysqlDatasets,
    MysqlExperiments,
    MysqlMemory,
    MysqlObservability,
    MysqlScores,
    MysqlWorkflowDefinitions,
    MysqlWorkflows,
)

__all__ = ["MysqlStore"]


class MysqlStore(SqlStore):
    """Every domain in one MariaDB/MySQL database.

    ``MysqlStore("mysql://user:pw@host/agents?pool_size=10")``; options are keywords or URL
    query parameters: ``prefix`` (default ``mastra_``), ``schema`` (another database on the
    same server, created if missing; default: the URL's), ``pool_size``, ``max_overflow``,
    ``pool_timeout``, ``pool_recycle``; other query parameters (``ssl_ca``,
    ``connect_timeout``, ...) go to the driver. ``engine=`` shares an ``AsyncEngine`` you own.
    """

    dialect_cls = MysqlDialect
    domain_classes: ClassVar[Mapping[str, type[SqlDomain]]] = {
        "memory": MysqlMemory,
        "workflows": MysqlWorkflows,
        "workflow_definitions": MysqlWorkflowDefinitions,
        "scores": MysqlScores,
        "observability": MysqlObservability,
        "datasets": MysqlDatasets,
        "experiments": MysqlExperiments,
    }
