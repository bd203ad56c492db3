"""``SqlStore``: the domains of one relational database, sharing one engine."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from sqlalchemy.engine import Engine

from composite_store.schema import DEFAULT_PREFIX
from composite_store.sql.database import SqlDatabase
from composite_store.sql.dialect import SqlDialect
from composite_store.sql.domain import SqlDomain
from composite_store.store import Store
from composite_store.urls import split_options

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine

__all__ = ["SqlStore"]


class SqlStore(Store):
    """Every domain a relational backend offers, on one shared engine.

    Options (keywords or URL query parameters): ``prefix`` (table prefix, default ``mastra_``),
    ``schema`` (where the backend has schemas); other keywords go to ``create_engine``.
    """

    dialect_cls: ClassVar[type[SqlDialect]] = SqlDialect
    domain_classes: ClassVar[Mapping[str, type[SqlDomain]]] = {}

    def __init__(
        self,
        url: str | None = None,
        *,
        engine: Engine | AsyncEngine | None = None,
        prefix: str = DEFAULT_PREFIX,
        schema: str | None = None,
        **engine_options: Any,
    ) -> None:
        if url is not None:
            url, query = split_options(url, ("prefix", "schema"))
            prefix = query.get("prefix", prefix)
            schema = query.get("schema", schema)
        self.database = SqlDatabase(
            self.dialect_cls(),
            url,
            engine=engine,
            prefix=prefix,
            schema=schema,
            engine_options=engine_options,
        )
        self.backend = self.dialect_cls.name
        super().__init__(
            {name: cls(database=self.database) for name, cls in self.domain_classes.items()}
        )

    async def _close(self) -> None:
        await self.database.dispose()
