"""The libSQL store and its domain classes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from composite_store.sql.domain import SqlDomain
from composite_store.sql.memory import SqlMemory
from composite_store.sql.store import SqlStore
from composite_store.sql.workflows import SqlWorkflows
from composite_store_libsql.dialect import LibsqlDialect

__all__ = ["LibsqlMemory", "LibsqlStore", "LibsqlWorkflows"]


class LibsqlMemory(SqlMemory):
    """Threads, messages and resources in a libSQL database."""

    dialect_cls = LibsqlDialect


class LibsqlWorkflows(SqlWorkflows):
    """Workflow snapshots in a libSQL database."""

    dialect_cls = LibsqlDialect


class LibsqlStore(SqlStore):
    """Every domain in one libSQL database: ``LibsqlStore("libsql:///agent.db")``."""

    dialect_cls = LibsqlDialect
    domain_classes: ClassVar[Mapping[str, type[SqlDomain]]] = {
        "memory": LibsqlMemory,
        "workflows": LibsqlWorkflows,
    }
